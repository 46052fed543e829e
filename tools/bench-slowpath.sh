#!/usr/bin/env bash
# make bench-slowpath: queries per second of nearcastd's slow path against NSD serving the same zone,
# in the same run, on the same two-namespace veth topology (tools/netns.sh).
#
# Each server runs alone, pinned to one core (SERVER_CPU) with one thread; the load generator is
# pinned to the other core (CLIENT_CPU). Two generators:
#   - dnsperf (socket-based, closed loop: its own core caps it near 150k q/s here);
#   - kxdpgun (AF_XDP, open loop): a sweep of offered rates; the figure is the highest rate answered
#     at >= 95 %. It attaches its own XDP program to the client veth while it runs.
# The server's CPU time is read from /proc during the dnsperf run (user+system per answered query).
# Results go to stdout and into BENCHMARKS.md between the bench-slowpath markers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone (not from make), build first: a stale program or binary would be measured otherwise.
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

DURATION=${DURATION:-10}
KX_DURATION=${KX_DURATION:-5}
KX_RATES=${KX_RATES:-"25000 50000 100000 150000 200000 300000 400000"}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
ZONE=$PWD/Tests/Fixtures/example.test.zone
NEARCASTD=$PWD/.build/release/nearcastd
P=ncb
[ -x "$NEARCASTD" ] || { echo "build first: make build" >&2; exit 1; }
. tools/bench-netns.sh

# The query mix: hot positive answers, a CNAME chain, a wildcard, NODATA and NXDOMAIN.
cat >"$work/queries" <<'Q'
www.example.test A
www.example.test AAAA
alias.example.test A
example.test MX
x.wild.example.test A
www.example.test MX
nope.example.test A
_dns._udp.example.test SRV
Q

start_nearcast() {
	ip netns exec "$SRV" taskset -c "$SERVER_CPU" "$NEARCASTD" --zone "example.test=$ZONE" \
		--listen "$ADDR:53" --threads 1 --log-level warning &
	server_pid=$!
}
start_nsd() {
	cat >"$work/nsd.conf" <<C
server:
  ip-address: $ADDR
  username: ""
  chroot: ""
  zonesdir: "$work"
  pidfile: "$work/nsd.pid"
  database: ""
  zonelistfile: "$work/zone.list"
  xfrdfile: "$work/xfrd.state"
  xfrdir: "$work"
  server-count: 1
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
  verbosity: 0
remote-control:
  control-enable: no
zone:
  name: example.test
  zonefile: "$ZONE"
C
	ip netns exec "$SRV" taskset -c "$SERVER_CPU" nsd -d -c "$work/nsd.conf" &
	server_pid=$!
}
wait_ready() {
	for _ in $(seq 100); do
		ip netns exec "$CLI" dig +time=1 +tries=1 @"$ADDR" example.test SOA +short >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "server did not start" >&2
	exit 1
}
stop_server() {
	kill "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}
cpu_ticks() { # user+system clock ticks of every process in the server namespace (NSD forks workers)
	local total=0 pid
	for pid in $(ip netns pids "$SRV"); do
		# Fields after "pid (comm) ": comm may hold spaces ("nsd: server 1"); utime and stime
		# are the 12th and 13th fields after it.
		local t
		t=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13}') || continue
		total=$((total + ${t:-0}))
	done
	echo "$total"
}

declare -A QPS CPU KX
measure() { # name
	local name=$1
	local t0 t1 out
	t0=$(cpu_ticks)
	out=$(ip netns exec "$CLI" taskset -c "$CLIENT_CPU" dnsperf -s "$ADDR" -d "$work/queries" -l "$DURATION" -c 8 -q 256 2>&1)
	t1=$(cpu_ticks)
	QPS[$name]=$(echo "$out" | awk '/Queries per second:/ {printf "%d", $4}')
	local completed
	completed=$(echo "$out" | awk '/Queries completed:/ {print $3}')
	local hz
	hz=$(getconf CLK_TCK)
	CPU[$name]=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$completed" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	echo "$name dnsperf: ${QPS[$name]} q/s, server CPU ${CPU[$name]} us/query"
	local best=0 r replies sent
	for r in $KX_RATES; do
		out=$(ip netns exec "$CLI" kxdpgun -t "$KX_DURATION" -Q "$r" -i "$work/queries" -I "$CIF" -F "$CLIENT_CPU" "$ADDR" 2>&1 || true)
		sent=$(echo "$out" | awk '/total queries:/ {print $3}')
		replies=$(echo "$out" | awk '/total replies:/ {print $3}')
		[ -n "$sent" ] && [ -n "$replies" ] && [ "$sent" -gt 0 ] || { echo "kxdpgun failed: $out" >&2; break; }
		local pct=$((replies * 100 / sent))
		echo "$name kxdpgun offered $r q/s: $pct % answered"
		if [ "$pct" -ge 95 ]; then best=$r; else break; fi
	done
	KX[$name]=$best
}

start_nsd
wait_ready
measure nsd
stop_server
start_nearcast
wait_ready
measure nearcast
stop_server

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
kernel=$(uname -r)
cpu=$(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//')
nsdv=$( (nsd -v 2>&1 || true) | head -1)
table=$(
	cat <<T
<!-- bench-slowpath:start (written by tools/bench-slowpath.sh; do not edit by hand) -->
Measured $(date -u +%Y-%m-%d) on $cpu, kernel $kernel, $(nproc) cores; $nsdv. Command: \`make bench-slowpath\`
(DURATION=$DURATION s for dnsperf, ${KX_DURATION} s per kxdpgun rate, rates: $KX_RATES).

| | nearcast | NSD | nearcast / NSD |
|---|---:|---:|---:|
| dnsperf, queries/s (closed loop, 8 clients, 256 outstanding) | ${QPS[nearcast]} | ${QPS[nsd]} | $(ratio "${QPS[nearcast]}" "${QPS[nsd]}") |
| kxdpgun, highest offered rate answered at >= 95 % (q/s) | ${KX[nearcast]} | ${KX[nsd]} | $(ratio "${KX[nearcast]}" "${KX[nsd]}") |
| server CPU per query during dnsperf (us, user+system) | ${CPU[nearcast]} | ${CPU[nsd]} | $(ratio "${CPU[nearcast]}" "${CPU[nsd]}") |
<!-- bench-slowpath:end -->
T
)
echo "$table"
echo "$table" | tools/benchmarks-section.py bench-slowpath
