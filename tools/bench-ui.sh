#!/usr/bin/env bash
# make bench-ui: the dashboard's own cost (issue 20), against a release nearcastd with NODES geo
# nodes (default 1000) on the test City database: the bytes of the page's files, the time to
# first render in headless Chromium (navigation to every node drawn in its state, token already
# given: tools/ui/bench-page.py), and the daemon's CPU while PAGES event streams (default 20)
# are open, against none, over MEASURE_SECONDS each (default 30). Writes BENCHMARKS.md between
# the bench-ui markers.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null
make -s .build/geo/test-city.mmdb
NODES=${NODES:-1000}
PAGES=${PAGES:-20}
SECONDS_EACH=${MEASURE_SECONDS:-30}
work=$(mktemp -d)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	jobs -p | xargs -r kill 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

read_token=$(openssl rand -hex 16)
printf 'read %s\n' "$read_token" >"$work/tokens"
printf '$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\nns1 A 192.0.2.53\n' >"$work/z.zone"
python3 - "$NODES" "$PWD/.build/geo/test-city.mmdb" >"$work/c.yaml" <<'PY'
import random, sys
n, db = int(sys.argv[1]), sys.argv[2]
r = random.Random(20)
print('listen: ["127.0.0.1:0"]\nzones: [{ origin: example.test., file: z.zone }]\ngeo:\n  database: %s\n  nodes:' % db)
for i in range(n):
    print('    - { id: n%04d, ipv4: 10.%d.%d.%d, latitude: %.2f, longitude: %.2f }'
          % (i, i // 65536, (i // 256) % 256, i % 256, r.uniform(-55, 70), r.uniform(-180, 180)))
print('  pools: [{ id: web, members: [%s] }]' % ", ".join("n%04d" % i for i in range(n)))
print('  names: [{ name: geo.example.test, type: A, pool: web, answers: 2 }]')
PY
.build/release/nearcastd --config "$work/c.yaml" --api 127.0.0.1:0 --api-tokens "$work/tokens" >"$work/log" 2>&1 &
daemon=$!
for _ in $(seq 300); do grep -q "nearcastd: api listening on" "$work/log" && break; sleep 0.1; done
port=$(sed -n 's/^nearcastd: api listening on .*:\([0-9]*\)$/\1/p' "$work/log" | head -1)
[ -n "$port" ] || { cat "$work/log" >&2; exit 1; }

cpu() { awk '{ print $14 + $15 }' "/proc/$daemon/stat"; }
ticks=$(getconf CLK_TCK)
measure() { # CPU ms of the daemon over SECONDS_EACH
	local before after
	before=$(cpu)
	sleep "$SECONDS_EACH"
	after=$(cpu)
	echo $(((after - before) * 1000 / ticks))
}

bytes=$(cat Sources/NearcastServer/UI/* | wc -c)
gzipped=$(cat Sources/NearcastServer/UI/* | gzip -9 | wc -c)
render=$(timeout 180 /usr/bin/python3 tools/ui/bench-page.py --api "http://127.0.0.1:$port" --token "$read_token" --nodes "$NODES")
idle=$(measure)
for _ in $(seq "$PAGES"); do
	curl -s -N -o /dev/null -H "Authorization: Bearer $read_token" "http://127.0.0.1:$port/v1/events" &
done
sleep 2
open=$(measure)
stream=$(timeout 5 curl -s -N -H "Authorization: Bearer $read_token" "http://127.0.0.1:$port/v1/events" | wc -c || true)

out=$(
	cat <<T
Measured $(date -u +%Y-%m-%d), $(nproc) cores, release build, $NODES geo nodes. Command: \`make bench-ui\` (or \`tools/bench-ui.sh\`).

| figure | value |
|---|---:|
| the page's files (HTML, script, style sheet, world outline) | $bytes B ($gzipped B gzipped; served as they are) |
| $render
| daemon CPU over ${SECONDS_EACH} s, no page open | $idle ms |
| daemon CPU over ${SECONDS_EACH} s, $PAGES event streams open | $open ms |
| one stream's first 5 s (history, nodes, pools, samples) | $stream B |
T
)
echo "$out"
printf '<!-- bench-ui:start (written by tools/bench-ui.sh; do not edit by hand) -->\n## The dashboard: its own cost\n\n%s\n<!-- bench-ui:end -->\n' "$out" |
	tools/benchmarks-section.py bench-ui
