#!/usr/bin/env bash
# Where the server core's time goes while it answers from XDP over veth: kxdpgun sends one hot name
# at RATE q/s across the veth pair (the same set-up as bench-xdp-throughput.sh: the server veth's
# NAPI threaded and pinned to SERVER_CPU), and `perf record -e cpu-clock` samples that core for
# DURATION seconds (a software clock: this VM has no hardware counters). Prints the busy time per reply
# and the top symbols, the XDP program's own share among them.
#
#   tools/profile-xdp-server.sh reflect|nearcast      # RATE=200000 DURATION=3; needs perf (linux-perf)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "profile-xdp-server: needs perf: apt-get install linux-perf" >&2; exit 1; }
[ -n "${MAKELEVEL:-}" ] || make -s build >/dev/null
TARGET=${1:?usage: tools/profile-xdp-server.sh reflect|nearcast}
RATE=${RATE:-200000}
DURATION=${DURATION:-3}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
ZONE=$PWD/Tests/Fixtures/example.test.zone
P=ncp
. tools/bench-netns.sh

echo "www.example.test A" >"$work/queries"
case "$TARGET" in
reflect) ip -n "$SRV" link set dev "$SIF" xdpdrv obj .build/bpf/reflect.bpf.o sec xdp ;;
nearcast) start_nearcastd "$work/nearcastd.log" ;;
*) echo "profile-xdp-server: reflect or nearcast, not $TARGET" >&2; exit 2 ;;
esac
wait_xdp
sleep 0.5
pin_napi "$SRV" "$SIF" "$SERVER_CPU"
ip netns exec "$CLI" kxdpgun -t $((DURATION + 3)) -Q "$RATE" -i "$work/queries" -I "$CIF" -F "$CLIENT_CPU" "$ADDR" \
	>"$work/kx.out" 2>&1 &
kpid=$!
sleep 0.5
pin_napi "$CLI" "$CIF" "$CLIENT_CPU"
sleep 1
perf record -q -e cpu-clock -F 20000 -C "$SERVER_CPU" -o "$work/perf.data" -- sleep "$DURATION" >/dev/null 2>&1
wait "$kpid" || true
report() { perf report -i "$work/perf.data" --no-children --sort sym --stdio 2>/dev/null; }
busy=$(report | awk '/Event count/ {print $NF}')
echo "$TARGET at $RATE q/s: server core busy $(awk -v b="$busy" -v s="$DURATION" -v r="$RATE" 'BEGIN { printf "%.2f us per reply (%.0f %% of the core)", b / 1000 / (s * r), b / 1e7 / s }')"
report | grep -E '^ +[0-9.]+%' | sed -n 1,12p
echo "the XDP program and its helpers:"
report | grep -E '^ +[0-9.]+%' | grep -E 'bpf_prog_|bpf_xdp_adjust|__pi_memset' || true
