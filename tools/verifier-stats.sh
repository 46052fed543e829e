#!/usr/bin/env bash
# Prints the verifier's instruction count for a BPF object: `make verifier-stats`.
# Record the figure in BENCHMARKS.md whenever the program changes.
set -euo pipefail
obj=${1:?usage: $0 OBJECT.bpf.o [LOG]}
bin=$(dirname "$obj")/verifier-stats
src=$(dirname "$0")/verifier-stats.c
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
	cc -O2 -Wall -o "$bin" "$src" -lbpf
fi
echo "kernel $(uname -r), $(clang --version | head -1)"
"$bin" "$@"
