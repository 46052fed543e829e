#!/usr/bin/env bash
# make bench (throughput part): replies per second over a veth pair for nearcast's XDP fast path,
# the reflect ceiling (tools/bpf/reflect.bpf.c) and Knot DNS in its XDP mode, serving the same zone,
# one after the other in one run. kxdpgun (AF_XDP, open loop, its own XDP program on the client end)
# sweeps offered rates; the figure is the highest rate answered at >= 95 %. The server veth runs
# threaded NAPI with its kthread pinned to SERVER_CPU, so the XDP work is the server core's (on veth
# it would otherwise run on the sender's core); the server's CPU time per reply (its NAPI kthread and
# its process, from schedstat) is measured at one rate all three sustain (CPU_RATE), three times;
# then dnsperf. Writes BENCHMARKS.md between the bench-xdp-throughput markers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone (not from make), build first: a stale program or binary would be measured otherwise.
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

KX_DURATION=${KX_DURATION:-5}
KX_RATES=${KX_RATES:-"100000 200000 300000 400000 500000 600000 650000 700000 750000 800000 1000000"}
CPU_RATE=${CPU_RATE:-200000}
DP_DURATION=${DP_DURATION:-5}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
ZONE=$PWD/Tests/Fixtures/example.test.zone
P=ncx
. tools/bench-netns.sh

# Hot names every target answers from memory.
printf '%s\n' "www.example.test A" "www.example.test AAAA" "mail.example.test A" "example.test MX" \
	"ns1.example.test A" "alias.example.test A" >"$work/queries"

# CPU time of the server's work, in ns: its NAPI kthreads (where XDP runs, threaded and pinned)
# and the server process's threads if any (Knot's XDP workers answer in user space), from
# schedstat (nanoseconds on the CPU), so neither other tenants of the machine (steal) nor the
# client's work count.
server_ns() {
	local total=0 pid t
	for pid in $(pgrep -f "napi/$SIF-" || true); do
		t=$(awk '{print $1}' "/proc/$pid/schedstat" 2>/dev/null || echo 0)
		total=$((total + t))
	done
	if [ -n "$server_pid" ]; then
		for t in /proc/"$server_pid"/task/*/schedstat; do
			total=$((total + $(awk '{print $1}' "$t" 2>/dev/null || echo 0)))
		done
	fi
	echo "$total"
}
kx() { # rate -> "sent replies"; the client end's NAPI is pinned once kxdpgun has attached
	ip netns exec "$CLI" kxdpgun -t "$KX_DURATION" -Q "$1" -i "${QUERIES:-$work/queries}" -I "$CIF" -F "$CLIENT_CPU" "$ADDR" \
		>"$work/kx.out" 2>&1 &
	local kpid=$!
	sleep 0.3
	pin_napi "$CLI" "$CIF" "$CLIENT_CPU"
	wait "$kpid" || true
	awk '/total queries:/ {s=$3} /total replies:/ {r=$3} END {print s+0, r+0}' "$work/kx.out"
}
# nearcast's answers from XDP, summed over CPUs. kxdpgun counts any reply, a TC=1 one too (what
# nearcast sends above its pass budget): for nearcast only real answers count.
xdp_answered() {
	bpftool -j map dump pinned "$work/bpffs/nearcast/nc_stats" |
		python3 -c 'import json,sys; print(sum(v["value"]["answered"] + v["value"]["answered_geo"] for e in json.load(sys.stdin) for v in e.get("formatted", e)["values"]))'
}
kx_answers() { # rate -> "sent answers"
	if [ "$TARGET" = nearcast ] || [ "$TARGET" = geo ] || [ "$TARGET" = signed ] || [ "$TARGET" = signed-geo ]; then
		local a0 a1 sent replies
		a0=$(xdp_answered)
		read -r sent replies <<<"$(kx "$1")"
		a1=$(xdp_answered)
		echo "$sent" $((a1 - a0 < replies ? a1 - a0 : replies))
	else
		kx "$1"
	fi
}
# dnsperf (closed loop, sockets): the client end needs a pass-through XDP program for the server's
# XDP_TX frames to arrive (ARCHITECTURE §9). Queries per second over DP_DURATION.
dp() {
	ip -force -n "$CLI" link set dev "$CIF" xdpdrv obj .build/bpf/xdp_pass.bpf.o sec xdp # kxdpgun leaves its own
	pin_napi "$CLI" "$CIF" "$CLIENT_CPU"
	ip netns exec "$CLI" taskset -c "$CLIENT_CPU" dnsperf -s "$ADDR" -d "${QUERIES:-$work/queries}" -l "$DP_DURATION" -c 8 -q 256 \
		>"$work/dp.out" 2>&1 || true
	ip -n "$CLI" link set dev "$CIF" xdpdrv off
	awk '/Queries per second:/ {printf "%d", $4}' "$work/dp.out"
}
declare -A BEST CPU CPUALL DNSPERF
measure() { # name
	local name=$1 r sent replies best=0
	TARGET=$name
	for r in $KX_RATES; do
		read -r sent replies <<<"$(kx_answers "$r")"
		if [ "$sent" -eq 0 ]; then
			# kxdpgun now and then sends nothing (the last one's XDP socket not yet gone): once
			# more after a pause, rather than a ceiling cut short.
			echo "$name: kxdpgun sent nothing at $r q/s, again: $(tr '\n' ' ' <"$work/kx.out")" >&2
			sleep 2
			read -r sent replies <<<"$(kx_answers "$r")"
		fi
		[ "$sent" -gt 0 ] || { echo "$name: kxdpgun sent nothing" >&2; break; }
		echo "$name: offered $r q/s, answered $((replies * 100 / sent)) %"
		if [ $((replies * 100 / sent)) -ge 95 ]; then best=$r; else break; fi
	done
	BEST[$name]=$best
	# Server CPU per reply at one rate all three sustain: three runs, the median.
	local runs=() b0 b1 i
	for i in 1 2 3; do
		b0=$(server_ns)
		read -r sent replies <<<"$(kx_answers "$CPU_RATE")"
		b1=$(server_ns)
		runs+=("$(awk -v ns=$((b1 - b0)) -v n="$replies" 'BEGIN { printf "%.3f", n ? ns / n / 1000 : 0 }')")
	done
	CPU[$name]=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
	CPUALL[$name]="${runs[*]}"
	echo "$name: server CPU ${CPU[$name]} us per reply at $CPU_RATE q/s (runs: ${CPUALL[$name]})"
	# The reflect program leaves the query's UDP checksum (on veth only a partial sum), so a socket
	# drops its replies: it has no dnsperf figure.
	if [ "$name" = reflect ]; then DNSPERF[$name]="n/a"; else DNSPERF[$name]=$(dp); fi
	echo "$name: dnsperf ${DNSPERF[$name]} q/s"
}

# 1. The reflect ceiling.
ip -n "$SRV" link set dev "$SIF" xdpdrv obj .build/bpf/reflect.bpf.o sec xdp
wait_xdp
pin_napi "$SRV" "$SIF" "$SERVER_CPU"
measure reflect
ip -n "$SRV" link set dev "$SIF" xdpdrv off

# 2. nearcast.
start_nearcastd "$work/nearcastd.log"
wait_xdp
pin_napi "$SRV" "$SIF" "$SERVER_CPU"
measure nearcast
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

# 2b. nearcast answering a geo name (bench_geo_yaml).
bench_geo_yaml >"$work/geo.yaml"
echo "geo.example.test A" >"$work/queries-geo"
start_nearcastd "$work/nearcastd-geo.log" --config "$work/geo.yaml"
wait_xdp
pin_napi "$SRV" "$SIF" "$SERVER_CPU"
QUERIES="$work/queries-geo" measure geo
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

# 2c. nearcast answering a signed A, then the signed geo name, with DO from XDP (issue 34): the
# same zone and geo section, the zone signed by nearcastd with a key in its state directory (the
# geo name's variants signed ahead); the queries ask with the DO bit (kxdpgun's D).
.build/release/nearcast dnssec keygen example.test. --state-dir "$work/signed-state" >/dev/null
{
	echo "state-dir: $work/signed-state"
	bench_geo_yaml
} >"$work/signed.yaml"
echo "www.example.test A D" >"$work/queries-signed"
echo "geo.example.test A D" >"$work/queries-signed-geo"
start_nearcastd "$work/nearcastd-signed.log" --config "$work/signed.yaml"
wait_xdp
pin_napi "$SRV" "$SIF" "$SERVER_CPU"
QUERIES="$work/queries-signed" measure signed
QUERIES="$work/queries-signed-geo" measure signed-geo
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

# 3. Knot DNS, XDP mode.
cat >"$work/knot.conf" <<C
server:
    rundir: $work
    user: root
    listen: $ADDR@53
    udp-workers: 1
xdp:
    listen: $SIF@53
    tcp: off
    route-check: off
database:
    storage: $work
zone:
  - domain: example.test
    file: $ZONE
log:
  - target: stderr
    any: warning
C
ip netns exec "$SRV" taskset -c "$SERVER_CPU" knotd -c "$work/knot.conf" 2>"$work/knot.log" &
server_pid=$!
wait_xdp
sleep 0.5
pin_napi "$SRV" "$SIF" "$SERVER_CPU"
measure knot
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "n/a" }'; }
block=$(
	cat <<T
<!-- bench-xdp-throughput:start (written by tools/bench-xdp-throughput.sh; do not edit by hand) -->
Measured $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) cores, $(knotd -V 2>&1 | head -1); server veth threaded
NAPI pinned to CPU $SERVER_CPU, kxdpgun on CPU $CLIENT_CPU; ${KX_DURATION} s per rate, rates: $KX_RATES.
Command: \`make bench\` (or \`tools/bench-xdp-throughput.sh\`).

| | reflect (ceiling) | nearcast | Knot XDP | nearcast / reflect | nearcast / Knot |
|---|---:|---:|---:|---:|---:|
| highest offered rate answered at >= 95 % (q/s) | ${BEST[reflect]} | ${BEST[nearcast]} | ${BEST[knot]} | $(ratio "${BEST[nearcast]}" "${BEST[reflect]}") | $(ratio "${BEST[nearcast]}" "${BEST[knot]}") |
| server CPU per reply at $CPU_RATE q/s, median of 3 (us) | ${CPU[reflect]} | ${CPU[nearcast]} | ${CPU[knot]} | $(ratio "${CPU[nearcast]}" "${CPU[reflect]}") | $(ratio "${CPU[nearcast]}" "${CPU[knot]}") |
| the three runs (us) | ${CPUALL[reflect]} | ${CPUALL[nearcast]} | ${CPUALL[knot]} | | |
| dnsperf, queries/s (closed loop, 8 clients, 256 outstanding; its core is the limit) | ${DNSPERF[reflect]} | ${DNSPERF[nearcast]} | ${DNSPERF[knot]} | $(ratio "${DNSPERF[nearcast]}" "${DNSPERF[reflect]}") | $(ratio "${DNSPERF[nearcast]}" "${DNSPERF[knot]}") |

Geo names (issue 4; target >= 0.8x the ceiling), nearcast answering a geo name from XDP:

| | reflect (ceiling) | nearcast, geo name | geo / reflect |
|---|---:|---:|---:|
| highest offered rate answered at >= 95 % (q/s) | ${BEST[reflect]} | ${BEST[geo]} | $(ratio "${BEST[geo]}" "${BEST[reflect]}") |
| server CPU per reply at $CPU_RATE q/s, median of 3 (us) | ${CPU[reflect]} | ${CPU[geo]} | $(ratio "${CPU[geo]}" "${CPU[reflect]}") |

Signed answers (issue 34; target >= 0.8x the ceiling), nearcast answering \`www.example.test A\` and the geo
name \`geo.example.test A\` with DO from XDP, the zone signed by nearcastd (ECDSA P-256): the addresses and
their RRSIG (the geo name's, its variant's).

| | reflect (ceiling) | nearcast, signed A with DO | signed / reflect | nearcast, signed geo A with DO | signed geo / reflect |
|---|---:|---:|---:|---:|---:|
| highest offered rate answered at >= 95 % (q/s) | ${BEST[reflect]} | ${BEST[signed]} | $(ratio "${BEST[signed]}" "${BEST[reflect]}") | ${BEST[signed-geo]} | $(ratio "${BEST[signed-geo]}" "${BEST[reflect]}") |
| server CPU per reply at $CPU_RATE q/s, median of 3 (us) | ${CPU[reflect]} | ${CPU[signed]} | $(ratio "${CPU[signed]}" "${CPU[reflect]}") | ${CPU[signed-geo]} | $(ratio "${CPU[signed-geo]}" "${CPU[reflect]}") |
<!-- bench-xdp-throughput:end -->
T
)
echo "$block"
echo "$block" | tools/benchmarks-section.py bench-xdp-throughput
