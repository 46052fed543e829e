#!/usr/bin/env bash
# make bench-geo: the geo compile of a whole GeoLite2-City database (tools/fetch-geolite2.sh) for
# 24 nodes in two pools (Sources/geobench): time, peak memory, prefix counts, and the geo maps written
# into the kernel with their memory (root), and the variants of 1,000 geo names' answers signed (issue 34).
# Writes BENCHMARKS.md between the bench-geo markers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone (not from make), build first: a stale program or binary would be measured otherwise.
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null
db=$(tools/fetch-geolite2.sh)
out=$(.build/release/geobench --database "$db" --maps .build/bpf/nearcast.bpf.o --signed-names 1000)
echo "$out"
block=$(
	cat <<T
<!-- bench-geo:start (written by tools/bench-geo.sh; do not edit by hand) -->
Measured $(date -u +%Y-%m-%d), $(nproc) cores, release build. Command: \`make bench-geo\` (or \`tools/bench-geo.sh\`).

$out
<!-- bench-geo:end -->
T
)
echo "$block" | tools/benchmarks-section.py bench-geo
