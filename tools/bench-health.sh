#!/usr/bin/env bash
# make bench (health part): failover under load. kxdpgun sends a geo name at a steady rate across a
# veth pair to nearcastd (XDP fast path, threaded NAPI pinned to SERVER_CPU) while an operator's
# CLI flips the client's nearest node down and up FLIPS times (force-down / undrain through the
# management API, each one a health change the monitor turns into map writes). Figures: queries
# sent and answered (target: none lost), the XDP verdicts over the run, and the daemon's own
# distribution of the time from each state decision to its map write (GET /v1/stats; target: p99
# <= 1 ms). Then the same changes timed from outside (tools/health-latency.py, in the client
# namespace: API request to the first XDP answer that shows the change) and by the daemon, on a
# whole GeoLite2-City (tools/fetch-geolite2.sh), at rest and while RELOADS reloads that each compile
# and write it anew run back to back (targets: daemon p99 <= 1 ms in both; the slowest change
# during reloads within 20 ms of the slowest at rest). Writes BENCHMARKS.md between the
# bench-health markers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone (not from make), build first: a stale program or binary would be measured otherwise.
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

RATE=${RATE:-100000}
DURATION=${DURATION:-10}
FLIPS=${FLIPS:-2000}
RELOADS=${RELOADS:-3}
REST_FLIPS=${REST_FLIPS:-1000}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
ZONE=$PWD/Tests/Fixtures/example.test.zone
P=nch
TOKEN=0123456789abcdef0123456789abcdef
. tools/bench-netns.sh

counters() { # the XDP verdicts summed over CPUs, as "name=value" lines
	bpftool -j map dump pinned "$work/bpffs/nearcast/nc_stats" |
		python3 -c 'import json,sys
t={}
for e in json.load(sys.stdin):
    for v in e.get("formatted", e)["values"]:
        for k, x in v["value"].items():
            if isinstance(x, int): t[k]=t.get(k,0)+x  # the verdicts, not the array by type
for k, x in t.items(): print(f"{k}={x}")'
}
nc() { ip netns exec "$SRV" .build/release/nearcast "$@" --api 127.0.0.1:8053 --token-file "$work/tokens"; }
# The flips: one kept-alive HTTP connection from bash (/dev/tcp), so that flipping costs the busy
# cores next to nothing (a CLI process per flip would take CPU from the load and muddle the
# figures). Alternates force-down and undrain of fra1 FLIPS times, spread evenly over the load's
# first DURATION - 1.5 s; prints "flips refused".
cat >"$work/flipper" <<F
exec 3<>/dev/tcp/127.0.0.1/8053
mkfifo "$work/tick" && exec 4<>"$work/tick"   # never written: read -t on it is a sleep without a fork
start=\${EPOCHREALTIME/./}
span=\$((($DURATION * 1000 - 1500) * 1000))   # microseconds, spread evenly over the flips
n=0 bad=0
while [ \$n -lt $FLIPS ] && [ \$((\${EPOCHREALTIME/./} - start)) -lt \$span ] || [ \$((n % 2)) -eq 1 ]; do
	wait=\$((start + n * span / $FLIPS - \${EPOCHREALTIME/./}))
	[ \$wait -gt 0 ] && read -t "\$(printf '0.%06d' \$wait)" -u 4 _
	if [ \$((n % 2)) -eq 0 ]; then path=/v1/nodes/fra1/force-down; else path=/v1/nodes/fra1/undrain; fi
	# One write per request: bash's printf writes in pieces, and Nagle's algorithm with the server's
	# delayed ACK then holds each request 40 ms.
	req="POST \$path HTTP/1.1"\$'\\r\\n'"Host: api"\$'\\r\\n'"Authorization: Bearer $TOKEN"\$'\\r\\n'"Content-Length: 0"\$'\\r\\n\\r\\n'
	echo -n "\$req" >&3
	IFS= read -r status <&3
	len=0
	while IFS= read -r line <&3; do
		line=\${line%\$'\\r'}
		[ -z "\$line" ] && break
		case "\${line,,}" in content-length:*) len=\${line#*: } ;; esac
	done
	[ "\$len" -gt 0 ] && read -r -N "\$len" body <&3
	case "\$status" in "HTTP/1.1 200"*) ;; *) bad=\$((bad + 1)) ;; esac
	n=\$((n + 1))
done
echo \$n \$bad
F

# The geo name of bench_geo_yaml, whose client's nearest node is fra1, and the API to flip it by.
echo "write $TOKEN" >"$work/tokens"
{
	echo "api: { listen: \"127.0.0.1:8053\", tokens: $work/tokens }"
	bench_geo_yaml
} >"$work/geo.yaml"
echo "geo.example.test A" >"$work/queries"
start_nearcastd "$work/nearcastd.log" --config "$work/geo.yaml"
for _ in $(seq 100); do nc stats >/dev/null 2>&1 && break; sleep 0.1; done
pin_napi "$SRV" "$SIF" "$SERVER_CPU"

# One load run: kxdpgun for DURATION s, with the flips during it when $1 is "flips". Sets SENT,
# REPLIES, GEO (XDP geo answers), PASSED (pass_geo), LIMITED, FLIPPED and SPAN.
load() {
	counters >"$work/before"
	ip netns exec "$CLI" kxdpgun -t "$DURATION" -Q "$RATE" -i "$work/queries" -I "$CIF" -F "$CLIENT_CPU" "$ADDR" >"$work/kx.out" 2>&1 &
	local kx_pid=$! t0 t1
	sleep 0.5
	pin_napi "$CLI" "$CIF" "$CLIENT_CPU"
	FLIPPED=0
	t0=$(date +%s.%N)
	if [ "$1" = flips ]; then
		ip netns exec "$SRV" taskset -c "$CLIENT_CPU" bash "$work/flipper" >"$work/flipper.out"
		read -r FLIPPED bad <"$work/flipper.out"
		[ "$bad" -eq 0 ] || { echo "the API refused $bad flips" >&2; exit 1; }
	fi
	t1=$(date +%s.%N)
	SPAN=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	wait "$kx_pid" || true
	counters >"$work/after"
	read -r SENT REPLIES <<<"$(awk '/total queries:/ {s=$3} /total replies:/ {r=$3} END {print s+0, r+0}' "$work/kx.out")"
	GEO=$(delta answered_geo)
	PASSED=$(delta pass_geo)
	LIMITED=$(($(delta limit_truncated) + $(delta limit_dropped)))
	echo "$1: kxdpgun sent $SENT, replies $REPLIES; XDP answered_geo $GEO, pass_geo $PASSED, limited $LIMITED; $FLIPPED flips in $SPAN s"
}
delta() { echo $(($(grep "^$1=" "$work/after" | cut -d= -f2) - $(grep "^$1=" "$work/before" | cut -d= -f2))); }

# The same load without flips first: what the veth pair and the two cores lose anyway.
# LATENCY_ONLY=1 skips both load runs (and leaves BENCHMARKS.md as it is): for work on the
# GeoLite2 part alone.
if [ -z "${LATENCY_ONLY:-}" ]; then
	load steady
	B_SENT=$SENT B_REPLIES=$REPLIES B_GEO=$GEO B_PASSED=$PASSED B_LIMITED=$LIMITED
	load flips
	stats=$(nc stats | grep '^health: ' || echo "health: (none)")
	echo "$stats"
fi

# Health changes seen from outside, at rest and during GeoLite2-wide reloads: a daemon of its own
# for each, so that its figures are of that run alone. The API listens on the server's veth address,
# so that the prober in the client namespace reaches it; the prober's queries are answered by XDP,
# whose replies reach the client end only with an XDP program there (a pass-through one).
GEOLITE=$PWD/$(tools/fetch-geolite2.sh)
kill "$server_pid" && wait "$server_pid" || true
server_pid=""
ip -force -n "$CLI" link set dev "$CIF" xdpdrv obj .build/bpf/xdp_pass.bpf.o sec xdp
# NAPI back in softirq context on both ends: the load runs above pinned each end's NAPI thread to
# one core, where a thread of that core's busy reload (or the prober) would make it wait its turn.
for end in "$SRV $SIF" "$CLI $CIF"; do
	set -- $end
	ip netns exec "$1" sh -c "echo 0 > /sys/class/net/$2/threaded" 2>/dev/null || true
done
echo "admin $TOKEN" >"$work/admin-tokens"
geolite_yaml() { # tyo1's latitude: two values are two compiles
	cat <<C
api: { listen: "$ADDR:8053", tokens: $work/admin-tokens }
geo:
  database: $GEOLITE
  nodes:
    - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68, weight: 10 }
    - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35 }
    - { id: nyc1, ipv4: 192.0.2.30, latitude: 40.71, longitude: -74.01 }
    - { id: tyo1, ipv4: 192.0.2.40, latitude: $1, longitude: 139.65 }
  pools: [{ id: web, members: [fra1, par1, nyc1, tyo1] }]
  names: [{ name: geo.example.test, type: A, pool: web, answers: 2 }]
C
}
ncg() { ip netns exec "$SRV" .build/release/nearcast "$@" --api "$ADDR:8053" --token-file "$work/admin-tokens"; }
# One run: "rest" (REST_FLIPS changes) or "reloads" (changes until RELOADS reloads are done). The
# client's location is unknown to GeoLite2 (a benchmarking range), so its answer is the pool's
# order by weight: fra1 first. Sets LAT_<run> (p50 p99 max n, ms) and DAEMON_<run> (its stats).
latency() {
	geolite_yaml 35.68 >"$work/geolite.yaml"
	# Both cores: a node's nearcastd shares its cores between its reload and its health changes.
	SERVER_CPU=0-1 start_nearcastd "$work/nearcastd-$1.log" --config "$work/geolite.yaml"
	for _ in $(seq 600); do ncg stats >/dev/null 2>&1 && break; sleep 0.1; done
	ncg stats >/dev/null || { cat "$work/nearcastd-$1.log" >&2; exit 1; }
	rm -f "$work/reloads-done"
	local reloader=""
	if [ "$1" = reloads ]; then
		(
			for i in $(seq "$RELOADS"); do
				geolite_yaml "35.6$((8 + i % 2))" >"$work/geolite.yaml.new" && mv "$work/geolite.yaml.new" "$work/geolite.yaml"
				ncg reload | grep -q "geo section changed" || { echo "reload $i did not compile anew" >&2; exit 1; }
			done
			touch "$work/reloads-done"
		) &
		reloader=$!
	fi
	local until=() flips=$REST_FLIPS
	[ "$1" = reloads ] && until=(--until "$work/reloads-done") flips=100
	ip netns exec "$CLI" taskset -c "$CLIENT_CPU" python3 tools/health-latency.py --api "$ADDR:8053" --token "$TOKEN" \
		--dns "$ADDR" --name geo.example.test --node fra1 --address 192.0.2.10 --flips "$flips" "${until[@]}" >"$work/lat-$1.json"
	[ -z "$reloader" ] || wait "$reloader"
	local figures
	figures=$(python3 -c 'import json,sys
t=sorted(json.load(open(sys.argv[1]))["ms"])
q=lambda p: t[min(len(t)-1, int(len(t)*p))]
print(f"{q(0.5):.2f} {q(0.99):.2f} {t[-1]:.2f} {len(t)}")' "$work/lat-$1.json")
	printf -v "LAT_$1" '%s' "$figures"
	printf -v "DAEMON_$1" '%s' "$(ncg stats | sed -n 's/^health: //p')"
	kill "$server_pid" && wait "$server_pid" || true
	server_pid=""
	[ -z "${KEEP_LATENCY:-}" ] || cp "$work/lat-$1.json" "$work/nearcastd-$1.log" "$KEEP_LATENCY/"
	echo "$1: from outside p50 p99 max n (ms): $figures; daemon: $(eval echo "\$DAEMON_$1")"
}
latency rest
latency reloads
[ -z "${LATENCY_ONLY:-}" ] || exit 0
read -r R50 R99 RMAX RN <<<"$LAT_rest"
read -r L50 L99 LMAX LN <<<"$LAT_reloads"

kernel=$(uname -r)
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo | awk '{print $1, $2}')
block=$(
	cat <<T
<!-- bench-health:start (written by tools/bench-health.sh; do not edit by hand) -->
Measured $(date +%F) on $cpu, kernel $kernel, $(nproc) cores. Command: \`make bench-health\`
(RATE=$RATE q/s of one geo name for DURATION=$DURATION s; FLIPS=$FLIPS asked).

| | steady (no flips) | during flips |
|---|---:|---:|
| health flips (force-down / undrain of the client's nearest node, through the API) | 0 | $FLIPPED in $SPAN s |
| queries sent by kxdpgun | $B_SENT | $SENT |
| replies received | $B_REPLIES | $REPLIES |
| lost | $((B_SENT - B_REPLIES)) | $((SENT - REPLIES)) |
| answered by XDP as geo answers | $B_GEO | $GEO |
| left to the slow path (pass_geo) / limited | $B_PASSED / $B_LIMITED | $PASSED / $LIMITED |

Daemon's own figures (\`nearcast stats\`): ${stats#health: }

Health changes on a whole GeoLite2-City (REST_FLIPS=$REST_FLIPS at rest; RELOADS=$RELOADS reloads,
each a new compile written beside the live maps and switched in, back to back):

| | at rest | during $RELOADS GeoLite2 reloads |
|---|---:|---:|
| changes timed | $RN | $LN |
| API request to the first XDP answer that shows it, p50 / p99 / max (ms) | $R50 / $R99 / $RMAX | $L50 / $L99 / $LMAX |

Daemon's own figures, at rest: ${DAEMON_rest}

Daemon's own figures, during reloads: ${DAEMON_reloads}
<!-- bench-health:end -->
T
)
echo "$block"
echo "$block" | tools/benchmarks-section.py bench-health
