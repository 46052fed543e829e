#!/usr/bin/env bash
# make bench-defence (issue 19): nearcast's defences under attack, beside Knot DNS in its XDP mode
# (with mod-rrl), on the veth bench, one after the other in one run.
#
# 1. A forged-source flood for a hot name, every query from another address of one /24 (kxdpgun
#    -l), with response rate limiting on (RRL_RATE a second, slip 2): the replies that leave for
#    that /24 a second and their bytes, against the configured rate plus the slipped TC=1 replies;
#    and a second client elsewhere (its own namespace and veth pair) asking LEGIT_RATE a second,
#    below the limit, which must be answered at >= 99 %.
# 2. A random-subdomain flood (names that do not exist, NXDOMAIN) at the highest rate kxdpgun
#    reaches, rate limiting off, with a steady 50,000 legitimate queries a second beside it from
#    the second client, half hot names and half legitimate NXDOMAINs: both answered at >= 95 %;
#    and the CPU time of the slow path (the server process) against the fast path's (the NAPI
#    kthread where XDP runs).
# 3. The fuzzer: FUZZ_FRAMES frames through the program, its rate and its failures (must be 0).
#
# Writes BENCHMARKS.md between the bench-defence markers.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

DURATION=${DURATION:-5}
FLOOD_RATE=${FLOOD_RATE:-1000000}
RRL_RATE=${RRL_RATE:-200}
LEGIT_RATE=${LEGIT_RATE:-100}
LEGIT_NX_RATE=${LEGIT_NX_RATE:-50000}
FUZZ_FRAMES=${FUZZ_FRAMES:-2000000}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
ZONE=$PWD/Tests/Fixtures/example.test.zone
P=ncd
. tools/bench-netns.sh

# The second client: a namespace of its own on a second veth pair, 198.19.0.0/24.
CLI2=$P-cli2 SIF2=$P-s2 CIF2=$P-c2 ADDR2=198.19.0.1
trap 'ip netns del "$CLI2" 2>/dev/null || true; bench_cleanup' EXIT
ip netns add "$CLI2"
ip link add "$SIF2" type veth peer name "$CIF2"
ip link set "$SIF2" netns "$SRV"
ip link set "$CIF2" netns "$CLI2"
ip -n "$SRV" addr add "$ADDR2/24" dev "$SIF2"
ip -n "$CLI2" addr add 198.19.0.2/24 dev "$CIF2"
ip -n "$CLI2" link set lo up
ip -n "$SRV" link set "$SIF2" up
ip -n "$CLI2" link set "$CIF2" up
ip -n "$CLI2" neigh replace "$ADDR2" lladdr "$(ip -n "$SRV" link show dev "$SIF2" | awk '/link\/ether/ {print $2}')" \
	dev "$CIF2" nud permanent
ip -n "$SRV" neigh replace 198.19.0.2 lladdr "$(ip -n "$CLI2" link show dev "$CIF2" | awk '/link\/ether/ {print $2}')" \
	dev "$SIF2" nud permanent

echo "www.example.test A" >"$work/hot"
python3 -c '
import random
r = random.Random(19)
for _ in range(200000):
    print("%s.example.test A" % "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12)))
' >"$work/random"
printf '%s\n' "www.example.test A" "mail.example.test A" "example.test MX" "nope.example.test A" \
	"missing.example.test AAAA" "gone.example.test A" >"$work/legit"

# kxdpgun in namespace $1 on interface $2 at rate $3 from file $4 (further arguments are its):
# its summary into $work/kx-$1.out.
kx() {
	local ns=$1 ifc=$2 rate=$3 file=$4
	shift 4
	ip netns exec "$ns" kxdpgun -t "$DURATION" -Q "$rate" -i "$file" -I "$ifc" -F "$CLIENT_CPU" "$@" \
		"$([ "$ns" = "$CLI2" ] && echo "$ADDR2" || echo "$ADDR")" >"$work/kx-$ns.out" 2>&1
}
sent() { awk '/total queries:/ {print $3}' "$work/kx-$1.out"; }
replies() { awk '/total replies:/ {print $3}' "$work/kx-$1.out"; }
reply_size() { awk '/average DNS reply size:/ {print $5}' "$work/kx-$1.out"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b ? 100 * a / b : 0 }'; }

# CPU time in ns: the server's NAPI kthreads (XDP), and the server process (its threads).
napi_ns() {
	local total=0 pid
	for pid in $(pgrep -f "napi/$SIF" || true); do total=$((total + $(awk '{print $1}' "/proc/$pid/schedstat"))); done
	echo "$total"
}
process_ns() { # user and system time of the process, its ended threads included (clock ticks)
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000000000 / hz }' "/proc/$server_pid/stat"
}
# nearcast's XDP counters, summed over CPUs: "NAME NAME..." -> "value value..."
xdp_counters() {
	bpftool -j map dump pinned "$work/bpffs/nearcast/nc_stats" | python3 -c '
import json, sys
names = sys.argv[1:]
entries = json.load(sys.stdin)
print(" ".join(str(sum(v["value"][n] for e in entries for v in e.get("formatted", e)["values"])) for n in names))
' "$@"
}

declare -A R
# Scenario 1 for target $1: the flood and the second client at once.
flood_rrl() {
	local name=$1 c0=(0 0 0) c1=(0 0 0)
	[ "$name" = nearcast ] && read -r -a c0 <<<"$(xdp_counters answered rrl_slipped rrl_dropped)"
	kx "$CLI" "$CIF" "$FLOOD_RATE" "$work/hot" -l 198.18.0.0/24 &
	local f=$!
	sleep 0.3
	pin_napi "$CLI" "$CIF" "$CLIENT_CPU"
	kx "$CLI2" "$CIF2" "$LEGIT_RATE" "$work/hot"
	wait "$f" || true
	local s r size
	s=$(sent "$CLI")
	r=$(replies "$CLI")
	size=$(reply_size "$CLI")
	R[$name.flood_sent]=$((s / DURATION))
	R[$name.flood_replies]=$((r / DURATION))
	R[$name.flood_bytes]=$((r * size / DURATION))
	R[$name.flood_expected]=$((s / DURATION / 2))
	R[$name.legit]=$(pct "$(replies "$CLI2")" "$(sent "$CLI2")")
	R[$name.reply_size]=$size
	R[$name.full]="n/a" R[$name.slipped]="n/a" R[$name.dropped]="n/a"
	if [ "$name" = nearcast ]; then
		read -r -a c1 <<<"$(xdp_counters answered rrl_slipped rrl_dropped)"
		# The second client's answers are counted too: less than LEGIT_RATE a second.
		R[$name.full]=$(((c1[0] - c0[0]) / DURATION))
		R[$name.slipped]=$(((c1[1] - c0[1]) / DURATION))
		R[$name.dropped]=$(((c1[2] - c0[2]) / DURATION))
	fi
	echo "$name, scenario 1: flood $((s / DURATION)) q/s, $((r / DURATION)) replies/s ($size B avg), second client $(replies "$CLI2")/$(sent "$CLI2")"
}
# Scenario 2 for target $1: the random-subdomain flood and 50k/s of legitimate queries.
flood_nx() {
	local name=$1 n0 p0 n1 p1 x0=0 x1=0
	[ "$name" = nearcast ] && x0=$(xdp_counters answered_nxdomain)
	n0=$(napi_ns)
	p0=$(process_ns)
	kx "$CLI" "$CIF" "$FLOOD_RATE" "$work/random" &
	local f=$!
	sleep 0.3
	pin_napi "$CLI" "$CIF" "$CLIENT_CPU"
	kx "$CLI2" "$CIF2" "$LEGIT_NX_RATE" "$work/legit"
	wait "$f" || true
	n1=$(napi_ns)
	p1=$(process_ns)
	R[$name.nx_sent]=$(($(sent "$CLI") / DURATION))
	R[$name.nx_answered]=$(pct "$(replies "$CLI")" "$(sent "$CLI")")
	R[$name.nx_legit]=$(pct "$(replies "$CLI2")" "$(sent "$CLI2")")
	R[$name.nx_legit_sent]=$(($(sent "$CLI2") / DURATION))
	R[$name.nx_slow_ms]=$(((p1 - p0) / 1000000))
	R[$name.nx_xdp_ms]=$(((n1 - n0) / 1000000))
	R[$name.nx_xdp]="n/a"
	[ "$name" = nearcast ] && x1=$(xdp_counters answered_nxdomain) && R[$name.nx_xdp]=$(((x1 - x0) / DURATION))
	echo "$name, scenario 2: flood ${R[$name.nx_sent]} q/s answered ${R[$name.nx_answered]} %, legitimate ${R[$name.nx_legit]} %, server process ${R[$name.nx_slow_ms]} ms, NAPI ${R[$name.nx_xdp_ms]} ms"
}

# nearcast: the fast path on both server ends, the slow path on both addresses.
cat >"$work/rrl.yaml" <<C
rrl:
  responses-per-second: $RRL_RATE
  slip: 2
C
nearcast() { # config
	ip netns exec "$SRV" taskset -c "$SERVER_CPU" .build/release/nearcastd --config "$1" --zone "example.test=$ZONE" \
		--listen "$ADDR:53" --listen "$ADDR2:53" --threads 1 --xdp "$SIF:native" --xdp "$SIF2:native" \
		--pin-root "$work/bpffs/nearcast" --bpf-object .build/bpf/nearcast.bpf.o --log-level notice \
		2>>"$work/nearcastd.log" &
	server_pid=$!
	wait_xdp
	sleep 0.5
	pin_napi "$SRV" "$SIF" "$SERVER_CPU"
	pin_napi "$SRV" "$SIF2" "$SERVER_CPU"
}
stop_server() {
	kill "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}
nearcast "$work/rrl.yaml"
flood_rrl nearcast
stop_server
echo "{}" >"$work/plain.yaml"
nearcast "$work/plain.yaml"
flood_nx nearcast
stop_server

# Knot DNS, XDP mode, on both server ends; mod-rrl for scenario 1.
knot() { # rrl: yes|no
	local modules=""
	[ "$1" = yes ] && modules="mod-rrl:
  - id: default
    rate-limit: $RRL_RATE
    slip: 2
template:
  - id: default
    global-module: mod-rrl/default"
	cat >"$work/knot.conf" <<C
server:
    rundir: $work
    user: root
    listen: [ $ADDR@53, $ADDR2@53 ]
    udp-workers: 1
xdp:
    listen: [ $SIF@53, $SIF2@53 ]
    tcp: off
    route-check: off
database:
    storage: $work
$modules
zone:
  - domain: example.test
    file: $ZONE
log:
  - target: stderr
    any: warning
C
	ip netns exec "$SRV" taskset -c "$SERVER_CPU" knotd -c "$work/knot.conf" 2>>"$work/knot.log" &
	server_pid=$!
	wait_xdp
	sleep 0.5
	pin_napi "$SRV" "$SIF" "$SERVER_CPU"
	pin_napi "$SRV" "$SIF2" "$SERVER_CPU"
}
knot yes
flood_rrl knot
stop_server
knot no
flood_nx knot
stop_server

# 3. The fuzzer.
swift build -c release --product xdpfuzz >/dev/null
fuzz=$(.build/release/xdpfuzz xdp --frames "$FUZZ_FRAMES" --seed 19 --object .build/bpf/nearcast.bpf.o | tail -1)
echo "$fuzz"
fuzz_rate=$(echo "$fuzz" | sed -n 's/.* \([0-9]*\) frames\/s.*/\1/p')
fuzz_failures=$(echo "$fuzz" | sed -n 's/.*; \([0-9]*\) failures.*/\1/p')

block=$(
	cat <<T
<!-- bench-defence:start (written by tools/bench-defence.sh; do not edit by hand) -->
Measured $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) cores, $(knotd -V 2>&1 | head -1); the server's NAPI
(both veth ends, threaded) and process on CPU $SERVER_CPU, both kxdpgun on CPU $CLIENT_CPU; ${DURATION} s a run.
Command: \`make bench-defence\` (or \`tools/bench-defence.sh\`).

**1. A forged-source flood** for \`www.example.test A\`, every query from another address of
198.18.0.0/24, offered at $FLOOD_RATE q/s; rate limiting at $RRL_RATE responses a second, slip 2
(nearcast: \`rrl: { responses-per-second: $RRL_RATE, slip: 2 }\`; Knot: \`mod-rrl\`, \`rate-limit: $RRL_RATE\`,
\`slip: 2\`). Expected: the rate plus half of the rest as TC=1 replies. A second client, 198.19.0.2,
asks the same name $LEGIT_RATE times a second meanwhile.

| | nearcast | Knot XDP + mod-rrl |
|---|---:|---:|
| flood sent (q/s) | ${R[nearcast.flood_sent]} | ${R[knot.flood_sent]} |
| replies to the /24 (a second) | ${R[nearcast.flood_replies]} | ${R[knot.flood_replies]} |
| half the flood, as TC=1 (slip 2; a second) | ${R[nearcast.flood_expected]} | ${R[knot.flood_expected]} |
| reply bytes to the /24 (DNS, a second) | ${R[nearcast.flood_bytes]} | ${R[knot.flood_bytes]} |
| average reply (the query: 34 B) | ${R[nearcast.reply_size]} B | ${R[knot.reply_size]} B |
| the program: answered in full, slipped, dropped (a second) | ${R[nearcast.full]}, ${R[nearcast.slipped]}, ${R[nearcast.dropped]} | n/a |
| second client answered (%) | ${R[nearcast.legit]} | ${R[knot.legit]} |

**2. A random-subdomain flood**: 200,000 random names under example.test (NXDOMAIN), offered at
$FLOOD_RATE q/s, rate limiting off; beside it the second client at $LEGIT_NX_RATE q/s, hot names and
NXDOMAINs half and half. CPU: what the server spent in its process (nearcast: the slow path; Knot:
its XDP workers, which answer in user space) and in its NAPI kthread (nearcast: the XDP program).
Where the server's core is saturated, the flood's queries are lost before the server sees them
(kxdpgun counts them unanswered), the legitimate ones with them.

| | nearcast | Knot XDP |
|---|---:|---:|
| flood sent (q/s) | ${R[nearcast.nx_sent]} | ${R[knot.nx_sent]} |
| flood answered (%) | ${R[nearcast.nx_answered]} | ${R[knot.nx_answered]} |
| legitimate queries sent (q/s) | ${R[nearcast.nx_legit_sent]} | ${R[knot.nx_legit_sent]} |
| legitimate answered (%) | ${R[nearcast.nx_legit]} | ${R[knot.nx_legit]} |
| NXDOMAIN answered by XDP (a second) | ${R[nearcast.nx_xdp]} | n/a |
| server process CPU over the run (ms) | ${R[nearcast.nx_slow_ms]} | ${R[knot.nx_slow_ms]} |
| NAPI (XDP) CPU over the run (ms) | ${R[nearcast.nx_xdp_ms]} | ${R[knot.nx_xdp_ms]} |

**3. The fuzzer**: $FUZZ_FRAMES frames through the program (\`xdpfuzz xdp --seed 19\`): $fuzz_rate frames/s,
$fuzz_failures failures.
<!-- bench-defence:end -->
T
)
echo "$block"
echo "$block" | tools/benchmarks-section.py bench-defence
