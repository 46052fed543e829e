#!/usr/bin/env bash
# Where the XDP program's nanoseconds go: xdpbench runs one packet row through the program with
# BPF_PROG_TEST_RUN over and over (--profile), and `perf record -e cpu-clock` samples it (a software
# clock: this VM has no hardware counters, so `bpftool prog profile` cannot run). Samples are
# counted by function: the program's own (its main part and each global function, which the JIT
# names apart), the kernel's helpers it calls, and the test-run harness around it. Debian's perf
# and bpftool have no libbfd, so neither can put a sample on a JITed instruction's source line;
# the global functions are what splits the program's time.
#
#   tools/profile-xdp-program.sh ["A, IPv4"] [--defences]    # RUNS=200000000 SAMPLE_SECONDS=20
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "profile-xdp-program: needs perf: apt-get install linux-perf" >&2; exit 1; }
ROW=${1:-"A, IPv4"}
shift || true
RUNS=${RUNS:-200000000}
SECONDS_SAMPLED=${SAMPLE_SECONDS:-20}
[ -n "${MAKELEVEL:-}" ] || make -s bpf .build/geo/test-city.mmdb >/dev/null
swift build -c release --product xdpbench >/dev/null 2>&1
work=$(mktemp -d)
trap 'kill "$bench" 2>/dev/null || true; rm -rf "$work"' EXIT

taskset -c "${CPU:-1}" .build/release/xdpbench --profile "$ROW" --runs "$RUNS" "$@" >"$work/bench.out" 2>&1 &
bench=$!
for _ in $(seq 200); do grep -q '^profiling:' "$work/bench.out" && break; sleep 0.1; done
grep -q '^profiling:' "$work/bench.out" || { cat "$work/bench.out" >&2; exit 1; }
perf record -q -e cpu-clock -F 49999 -C "${CPU:-1}" -o "$work/perf.data" -- sleep "$SECONDS_SAMPLED" >/dev/null 2>&1 || true
perf script -i "$work/perf.data" -F ip,sym,symoff 2>/dev/null >"$work/samples.txt"
python3 - "$work/samples.txt" "$ROW" "$*" <<'PY'
import collections, re, sys
samples, row, flags = sys.argv[1:4]
by_sym = collections.Counter()
total = 0
for l in open(samples):
    parts = l.split()
    if len(parts) < 2:
        continue
    total += 1
    m = re.match(r"bpf_prog_[0-9a-f]+_(\w+)", parts[1])
    by_sym["program: " + m.group(1) if m else re.sub(r"\+0x[0-9a-f]+$", "", parts[1])] += 1
prog = sum(n for s, n in by_sym.items() if s.startswith("program: "))
print(f"where the time goes: '{row}' {flags}".rstrip())
print(f"{total} samples; {prog} ({100 * prog / max(total, 1):.0f} %) in the JITed program's own code")
print("\n| function | share of samples |\n|---|---:|")
for s, n in by_sym.most_common(int(__import__("os").environ.get("TOP", "18"))):
    print(f"| {s} | {100 * n / total:.1f} % |")
PY
