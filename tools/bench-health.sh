#!/usr/bin/env bash
# make bench (health part): failover under load. kxdpgun sends a geo name at a steady rate across a
# veth pair to nearcastd (XDP fast path, threaded NAPI pinned to SERVER_CPU) while an operator's
# CLI flips the client's nearest node down and up FLIPS times (force-down / undrain through the
# management API, each one a health change the monitor turns into map writes). Figures: queries
# sent and answered (target: none lost), the XDP verdicts over the run, and the daemon's own
# distribution of the time from each state decision to its map write (GET /v1/stats; target: p99
# <= 1 ms). Writes BENCHMARKS.md between the bench-health markers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone (not from make), build first: a stale program or binary would be measured otherwise.
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

RATE=${RATE:-100000}
DURATION=${DURATION:-10}
FLIPS=${FLIPS:-2000}
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
        for k, x in v["value"].items(): t[k]=t.get(k,0)+x
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
load steady
B_SENT=$SENT B_REPLIES=$REPLIES B_GEO=$GEO B_PASSED=$PASSED B_LIMITED=$LIMITED
load flips
stats=$(nc stats | grep '^health: ' || echo "health: (none)")
echo "$stats"

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
<!-- bench-health:end -->
T
)
echo "$block"
echo "$block" | tools/benchmarks-section.py bench-health
