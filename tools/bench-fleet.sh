#!/usr/bin/env bash
# make bench-fleet: three nearcastd, each in a network namespace of its own (tools/fleet-netns.sh),
# the first with XDP, following one etcd on the host (issue 18). Figures:
#   1. from a record change's acknowledgement by one server's API to every server answering it,
#      over CHANGES changes made through the servers in turn (tools/fleet-latency.py);
#   2. from a node's failure (its check's target stopped in every namespace) to the last server
#      answering without it, and back, FAILURES times (check: TCP every 0.1 s, fall 1, rise 1);
#   3. etcd requests (gRPC calls etcd counts, the JSON gateway's included) per second per server
#      at rest over REST seconds, and per change during part 1;
#   5. REGISTRATIONS nodes registering over REGISTER_SECONDS s through the agent's API: from each
#      acknowledgement to every server answering the node's discovery name, and etcd's traffic;
#   4. queries lost by server 0 (XDP) under kxdpgun at RATE q/s for DURATION s while etcd is stopped
#      and started again (target: 0).
# ZONE_NAMES=N: the test zone with N generated names more (tools/scale-zone.py's: an A at each, an
# AAAA at every fourth, MX and TXT at every tenth), to measure the same at a zone's real size; its
# import is timed and etcd's database size given.
# Writes BENCHMARKS.md between the bench-fleet markers.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/fleet-lib.sh
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

CHANGES=${CHANGES:-200}
ZONE_NAMES=${ZONE_NAMES:-0}
REGISTRATIONS=${REGISTRATIONS:-5000}
REGISTER_SECONDS=${REGISTER_SECONDS:-60}
FAILURES=${FAILURES:-20}
REST=${REST:-30}
RATE=${RATE:-20000}
DURATION=${DURATION:-12}
P=ncb N=3
TOKEN=0123456789abcdef0123456789abcdef
CHECK_PORT=7070
work=$(mktemp -d)
pids=()
etcd_pid=""

cleanup() {
	for p in "${pids[@]}" $etcd_pid; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	umount "$work/bpffs" 2>/dev/null || true
	tools/fleet-netns.sh down "$P" "$N"
	rm -rf "$work"
}
trap cleanup EXIT
tools/fleet-netns.sh up "$P" "$N" .build/bpf/xdp_pass.bpf.o
mkdir -p "$work/bpffs"
mount -t bpf bpf "$work/bpffs"

start_etcd

# The shared state: the test zone, four nodes (fra1 checked on 127.0.0.1:CHECK_PORT, which is each
# namespace's own loopback), one geo name that answers every node that is up.
seed_config "$(test_zone)"
import_seed
echo "import: $IMPORT_S s, etcd database $DB_MB MB"
echo "write $TOKEN" >"$work/tokens"
servers=""
for i in $(seq 0 $((N - 1))); do
	server_config "$i"
	xdp=()
	[ "$i" -eq 0 ] && xdp=(--xdp "$P-n0:native" --pin-root "$work/bpffs/nearcast" --bpf-object .build/bpf/nearcast.bpf.o)
	ip netns exec "$P-$i" .build/release/nearcastd --config "$work/s$i.yaml" --threads 1 "${xdp[@]}" \
		--log-level notice >"$work/s$i.out" 2>"$work/s$i.log" &
	pids+=($!)
	servers+="${servers:+,}198.19.$i.2"
done
for i in $(seq 0 $((N - 1))); do
	wait_ready "$i" 600
done

# 2 first (it starts the check's targets; fra1 is down until then), then 3 at rest.
failures=$(python3 tools/fleet-latency.py failures "$servers" "$FAILURES" "$P" "$CHECK_PORT")
echo "failures: $failures"
sleep 2
c0=$(etcd_calls)
sleep "$REST"
c1=$(etcd_calls)
REST_RATE=$(awk -v a="$c0" -v b="$c1" -v t="$REST" -v n="$N" 'BEGIN { printf "%.2f", (b - a) / t / n }')
echo "at rest: $REST_RATE etcd calls/s per server"

# 1, with 3 per change.
c0=$(etcd_calls)
b0=$(etcd_sent)
changes=$(python3 tools/fleet-latency.py changes "$servers" "$TOKEN" "$CHANGES")
c1=$(etcd_calls)
b1=$(etcd_sent)
echo "changes: $changes"
PER_CHANGE=$(awk -v a="$c0" -v b="$c1" -v c="$CHANGES" 'BEGIN { printf "%.1f", (b - a) / c }')
BYTES_PER_CHANGE=$(awk -v a="$b0" -v b="$b1" -v c="$CHANGES" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / c / n }')

# 5: nodes registering through the agent's API, REGISTRATIONS of them over REGISTER_SECONDS.
c0=$(etcd_calls)
b0=$(etcd_sent)
registrations=$(python3 tools/fleet-latency.py registrations "$servers" "$TOKEN" "$REGISTRATIONS" "$REGISTER_SECONDS")
c1=$(etcd_calls)
b1=$(etcd_sent)
echo "registrations: $registrations"
REG_CALLS=$(awk -v a="$c0" -v b="$c1" -v c="$REGISTRATIONS" 'BEGIN { printf "%.1f", (b - a) / c }')
REG_BYTES=$(awk -v a="$b0" -v b="$b1" -v c="$REGISTRATIONS" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / c / n }')

# 4: kxdpgun on the host end of server 0's veth (its own XDP program replaces the pass-through one).
ip link set dev "$P-h0" xdpdrv off
printf 'www.example.test A\ngeo.example.test A\n' >"$work/queries"
kxdpgun -t "$DURATION" -Q "$RATE" -i "$work/queries" -I "$P-h0" 198.19.0.2 >"$work/kx.out" 2>&1 &
kx=$!
sleep 3
kill "$etcd_pid" && wait "$etcd_pid" 2>/dev/null || true
sleep 4
start_etcd
wait "$kx" || true
read -r SENT REPLIES <<<"$(awk '/total queries:/ {s=$3} /total replies:/ {r=$3} END {print s+0, r+0}' "$work/kx.out")"
echo "kxdpgun with etcd stopped and started: sent $SENT, replies $REPLIES"
degraded=$(grep -c "store out of reach" "$work/s0.log" || true)
# The import's ceiling: etcd's own put rate as etcdctl measures it (1,000 clients putting one key
# each at a time for 60 s, its xl load; its keys are deleted after), last: its 400,000 writes
# and their history would weigh on what is measured after them.
PUT_RATE=""
if [ "$ZONE_NAMES" -gt 0 ]; then
	rate=$(etcdctl --endpoints "127.0.0.1:$EP" check perf --load=xl --prefix /nearcast-bench-perf/ 2>&1 |
		grep -oE '[0-9]+ writes/s' | head -1 || true)
	echo "etcdctl check perf: $rate"
	PUT_RATE="; etcd's own put rate beside it (\`etcdctl check perf --load=xl\`: 1,000 clients, a key a put): $rate"
fi

C50=$(field "$changes" '["acknowledged_to_served_everywhere"]["p50_ms"]')
C99=$(field "$changes" '["acknowledged_to_served_everywhere"]["p99_ms"]')
CMAX=$(field "$changes" '["acknowledged_to_served_everywhere"]["max_ms"]')
CN=$(field "$changes" '["acknowledged_to_served_everywhere"]["n"]')
CREF=$(field "$changes" '["refused"]')
F50=$(field "$failures" '["failure_to_last_server"]["p50_ms"]')
F99=$(field "$failures" '["failure_to_last_server"]["p99_ms"]')
FMAX=$(field "$failures" '["failure_to_last_server"]["max_ms"]')
R50=$(field "$registrations" '["to_served_everywhere"]["p50_ms"]')
R99=$(field "$registrations" '["to_served_everywhere"]["p99_ms"]')
RMAX=$(field "$registrations" '["to_served_everywhere"]["max_ms"]')
RREF=$(field "$registrations" '["refused"]')
RSEC=$(field "$registrations" '["seconds_to_send"]')
RNEVER=$(field "$registrations" '["not_served_within_120_s"]')
B50=$(field "$failures" '["recovery_to_last_server"]["p50_ms"]')
B99=$(field "$failures" '["recovery_to_last_server"]["p99_ms"]')
BMAX=$(field "$failures" '["recovery_to_last_server"]["max_ms"]')
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
kernel=$(uname -r)
block=$(
	cat <<T
<!-- bench-fleet:start (written by tools/bench-fleet.sh; do not edit by hand) -->
Measured $(date +%F) on $cpu, kernel $kernel, $(nproc) cores. Command: \`make bench-fleet\`
($N servers in network namespaces, server 0 with XDP, one etcd $(etcd --version | awk '/etcd Version/ {print $3}') on the host),
the test zone with $ZONE_NAMES generated names more (\`ZONE_NAMES=$ZONE_NAMES\`): imported in $IMPORT_S s, etcd's database $DB_MB MB$PUT_RATE.

| | p50 | p99 | max |
|---|---:|---:|---:|
| record change: API acknowledgement to every server answering it ($CN changes, $CREF refused) | $C50 ms | $C99 ms | $CMAX ms |
| node failure (its check's target stopped everywhere) to the last server answering without it ($FAILURES failures; check every 0.1 s, fall 1) | $F50 ms | $F99 ms | $FMAX ms |
| the node back to the last server answering with it (rise 1) | $B50 ms | $B99 ms | $BMAX ms |
| node registration (the agent's API) to every server answering its name ($REGISTRATIONS in $RSEC s, $RREF refused, $RNEVER not served everywhere within 120 s) | $R50 ms | $R99 ms | $RMAX ms |

etcd requests (gRPC calls etcd started, its JSON gateway's included): $REST_RATE per second per
server at rest over $REST s; $PER_CHANGE per record change for the whole fleet of $N; etcd sent
$BYTES_PER_CHANGE bytes per record change per server; per registration, $REG_CALLS requests for
the fleet and $REG_BYTES bytes per server.

kxdpgun at $RATE q/s for $DURATION s at server 0 (XDP) while etcd was stopped for 4 s and started
again: $SENT sent, $REPLIES replies, $((SENT - REPLIES)) lost; server 0 logged the outage $degraded time(s).
<!-- bench-fleet:end -->
T
)
echo "$block"
echo "$block" | tools/benchmarks-section.py bench-fleet
