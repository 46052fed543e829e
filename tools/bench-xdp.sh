#!/usr/bin/env bash
# make bench (XDP part): nanoseconds per packet of nearcast's XDP program beside the reflect
# ceiling and an empty program, by single BPF_PROG_TEST_RUN calls (see Sources/xdpbench), and the
# verifier's instruction count. Writes the table into BENCHMARKS.md between the bench-xdp markers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone (not from make), build first: a stale program or binary would be measured otherwise.
[ -n "${MAKELEVEL:-}" ] || make -s build .build/geo/test-city.mmdb >/dev/null
RUNS=${RUNS:-200000}
out=$(.build/release/xdpbench --runs "$RUNS")
echo "$out"
block=$(
	cat <<T
<!-- bench-xdp:start (written by tools/bench-xdp.sh; do not edit by hand) -->
Measured $(date -u +%Y-%m-%d), kernel $(uname -r), $(clang --version | head -1); $RUNS single runs per cell,
interquartile mean (the middle half) of the kernel's per-run durations. Command: \`make bench\` (or \`tools/bench-xdp.sh\`).

$(echo "$out" | grep '^|')

$(echo "$out" | grep -v '^|')
<!-- bench-xdp:end -->
T
)
echo "$block" | tools/benchmarks-section.py bench-xdp
