#!/usr/bin/env bash
# make bench-fleet-wide: a wide fleet (issue 31): SERVERS nearcastd (50) without XDP, each in a
# network namespace of its own (tools/fleet-netns.sh), following one etcd on the host, serving the
# test zone with ZONE_NAMES generated names more (100,000). Figures:
#   1. what one server costs: its resident memory once ready, and its CPU and etcd requests at
#      rest over REST seconds; the time from starting them all to the last one ready;
#   2. from a record change's acknowledgement by one server's API to every server answering it,
#      over CHANGES changes made through the servers in turn (tools/fleet-latency.py), and etcd's
#      requests and bytes per change per server;
#   3. churn: REGISTRATIONS nodes registering through the agent's API over REGISTER_SECONDS, then
#      leaving over as long again, while CHURN_CHANGES record changes are made and timed as in 2.
# Writes BENCHMARKS.md between the bench-fleet-wide markers.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/fleet-lib.sh
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null

N=${SERVERS:-50}
ZONE_NAMES=${ZONE_NAMES:-100000}
CHANGES=${CHANGES:-200}
CHURN_CHANGES=${CHURN_CHANGES:-100}
REGISTRATIONS=${REGISTRATIONS:-5000}
REGISTER_SECONDS=${REGISTER_SECONDS:-60}
REST=${REST:-30}
P=ncw
TOKEN=0123456789abcdef0123456789abcdef
work=$(mktemp -d)
pids=()
etcd_pid=""

cleanup() {
	for p in "${pids[@]}" $etcd_pid; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	tools/fleet-netns.sh down "$P" "$N"
	rm -rf "$work"
}
trap cleanup EXIT
tools/fleet-netns.sh up "$P" "$N"
start_etcd
seed_config "$(test_zone)"
import_seed
echo "import: $IMPORT_S s, etcd database $DB_MB MB"
echo "write $TOKEN" >"$work/tokens"

servers=""
t0=$(date +%s.%N)
for i in $(seq 0 $((N - 1))); do
	server_config "$i"
	ip netns exec "$P-$i" .build/release/nearcastd --config "$work/s$i.yaml" --threads 1 \
		--log-level notice >"$work/s$i.out" 2>"$work/s$i.log" &
	pids+=($!)
	servers+="${servers:+,}198.19.$i.2"
done
for i in $(seq 0 $((N - 1))); do wait_ready "$i" 900; done
READY_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
echo "$N servers ready in $READY_S s"

# 1. Resident memory of each (MiB), then CPU (clock ticks) and etcd's requests over REST s at rest.
rss() { awk '/^VmRSS/ {printf "%.0f\n", $2 / 1024}' "/proc/$1/status"; }
ticks() { local t=0 p; for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
sleep 5
read -r RSS_MED RSS_MAX RSS_SUM <<<"$(for p in "${pids[@]}"; do rss "$p"; done | sort -n |
	awk '{a[NR] = $1; s += $1} END {print a[int((NR + 1) / 2)], a[NR], s}')"
ETCD_RSS=$(rss "$etcd_pid")
c0=$(etcd_calls) k0=$(ticks)
sleep "$REST"
c1=$(etcd_calls) k1=$(ticks)
HZ=$(getconf CLK_TCK)
REST_RATE=$(awk -v a="$c0" -v b="$c1" -v t="$REST" -v n="$N" 'BEGIN { printf "%.2f", (b - a) / t / n }')
REST_CPU=$(awk -v a="$k0" -v b="$k1" -v t="$REST" -v n="$N" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz / t / n * 100 }')
echo "per server: RSS median $RSS_MED MiB, max $RSS_MAX MiB; at rest $REST_CPU% of a core, $REST_RATE etcd calls/s"

# 2. Record changes through the servers in turn.
c0=$(etcd_calls) b0=$(etcd_sent)
changes=$(python3 tools/fleet-latency.py changes "$servers" "$TOKEN" "$CHANGES")
c1=$(etcd_calls) b1=$(etcd_sent)
echo "changes: $changes"
PER_CHANGE=$(awk -v a="$c0" -v b="$c1" -v c="$CHANGES" -v n="$N" 'BEGIN { printf "%.2f", (b - a) / c / n }')
BYTES_PER_CHANGE=$(awk -v a="$b0" -v b="$b1" -v c="$CHANGES" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / c / n }')

# 3. Nodes registering and leaving while records change.
c0=$(etcd_calls) b0=$(etcd_sent) k0=$(ticks)
python3 tools/fleet-latency.py changes "$servers" "$TOKEN" "$CHURN_CHANGES" >"$work/churn-changes.json" &
changer=$!
churn=$(python3 tools/fleet-latency.py churn "$servers" "$TOKEN" "$REGISTRATIONS" "$REGISTER_SECONDS")
wait "$changer"
c1=$(etcd_calls) b1=$(etcd_sent) k1=$(ticks)
during=$(cat "$work/churn-changes.json")
echo "churn: $churn"
echo "changes meanwhile: $during"
CHURN_CALLS=$(awk -v a="$c0" -v b="$c1" -v c="$REGISTRATIONS" 'BEGIN { printf "%.1f", (b - a) / c / 2 }')
# What a server spent (CPU) per registration or departure: what it would take on a machine of its own.
CHURN_CPU=$(awk -v a="$k0" -v b="$k1" -v c="$REGISTRATIONS" -v n="$N" -v hz="$HZ" 'BEGIN { printf "%.0f", (b - a) / hz / n / c / 2 * 1000 }')
CHURN_BYTES=$(awk -v a="$b0" -v b="$b1" -v c="$REGISTRATIONS" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / c / 2 / n }')

row() { # JSON, path to a latency object, label
	echo "| $3 | $(field "$1" "$2[\"p50_ms\"]") ms | $(field "$1" "$2[\"p99_ms\"]") ms | $(field "$1" "$2[\"max_ms\"]") ms |"
}
c='["acknowledged_to_served_everywhere"]'
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
block=$(
	cat <<T
<!-- bench-fleet-wide:start (written by tools/bench-fleet-wide.sh; do not edit by hand) -->
Measured $(date +%F) on $cpu, kernel $(uname -r), $(nproc) cores. Command: \`make bench-fleet-wide\`
($N servers without XDP in network namespaces, one etcd $(etcd --version | awk '/etcd Version/ {print $3}') on the host),
the test zone with $ZONE_NAMES generated names more: imported in $IMPORT_S s, etcd's database $DB_MB MB;
the $N servers started at once were all ready in $READY_S s.

One server: $RSS_MED MiB resident (median; max $RSS_MAX MiB, $RSS_SUM MiB for all $N; etcd $ETCD_RSS MiB),
$REST_CPU% of a core and $REST_RATE etcd requests per second at rest.

| | p50 | p99 | max |
|---|---:|---:|---:|
$(row "$changes" "$c" "record change: API acknowledgement to every server answering it ($(field "$changes" "$c[\"n\"]") changes, $(field "$changes" '["refused"]') refused)")
$(row "$churn" '["registered"]["to_served_everywhere"]' "node registration to every server answering its name ($REGISTRATIONS in $(field "$churn" '["registered"]["seconds_to_send"]') s, $(field "$churn" '["registered"]["refused"]') refused, $(field "$churn" '["registered"]["not_served_within_120_s"]') not served everywhere within 120 s)")
$(row "$churn" '["left"]["to_served_everywhere"]' "the same nodes leaving, to every server answering without them ($(field "$churn" '["left"]["refused"]') refused, $(field "$churn" '["left"]["not_served_within_120_s"]') not gone everywhere within 120 s)")
$(row "$during" "$c" "record change meanwhile ($(field "$during" "$c[\"n\"]") changes, $(field "$during" '["refused"]') refused)")

etcd requests (gRPC calls etcd started, its JSON gateway's included) and bytes it sent: per record
change $PER_CHANGE requests and $BYTES_PER_CHANGE bytes per server; per registration or departure,
$CHURN_CALLS requests for the fleet and $CHURN_BYTES bytes per server. Each server spent $CHURN_CPU ms of
CPU per registration or departure (the record changes meanwhile included); the $N servers share
$(nproc) cores here.
<!-- bench-fleet-wide:end -->
T
)
echo "$block"
echo "$block" | tools/benchmarks-section.py bench-fleet-wide
