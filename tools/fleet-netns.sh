#!/usr/bin/env bash
# Builds (or removes) a fleet's test topology: N network namespaces <prefix>-0 … <prefix>-(N-1),
# each joined to the host by a veth pair. Namespace i has 198.19.i.2/24 on <prefix>-n<i>; the host
# has 198.19.i.1/24 on <prefix>-h<i> (RFC 2544's benchmarking range). A server in namespace i
# reaches an etcd on the host at 198.19.i.1; each namespace has its own loopback, so a health
# check of 127.0.0.1 sees something different from each server. Every host end gets a pass-through
# XDP program when one is given, so XDP_TX from a namespace reaches the host (veth needs it).
#
#   tools/fleet-netns.sh up PREFIX N [XDP_PASS_OBJECT]
#   tools/fleet-netns.sh down PREFIX N
set -euo pipefail

action=${1:-}
p=${2:?prefix}
n=${3:?count}
pass=${4:-}

case "$action" in
up)
	"$0" down "$p" "$n" 2>/dev/null || true
	for ((i = 0; i < n; i++)); do
		ns=$p-$i host=$p-h$i inner=$p-n$i
		ip netns add "$ns"
		ip link add "$host" type veth peer name "$inner"
		ip link set "$inner" netns "$ns"
		ip addr add "198.19.$i.1/24" dev "$host"
		ip -n "$ns" addr add "198.19.$i.2/24" dev "$inner"
		ip -n "$ns" link set lo up
		ip link set "$host" up
		ip -n "$ns" link set "$inner" up
		# Static neighbour entries: load generators that read the tables (kxdpgun) find the peer at once.
		hmac=$(ip link show dev "$host" | awk '/link\/ether/ {print $2}')
		imac=$(ip -n "$ns" link show dev "$inner" | awk '/link\/ether/ {print $2}')
		ip neigh replace "198.19.$i.2" lladdr "$imac" dev "$host" nud permanent
		ip -n "$ns" neigh replace "198.19.$i.1" lladdr "$hmac" dev "$inner" nud permanent
		if [[ -n $pass ]]; then ip link set dev "$host" xdpdrv obj "$pass" sec xdp; fi
	done
	;;
down)
	for ((i = 0; i < n; i++)); do
		ip netns del "$p-$i" 2>/dev/null || true
		ip link del "$p-h$i" 2>/dev/null || true
	done
	;;
*)
	echo "usage: $0 up|down PREFIX N [XDP_PASS_OBJECT]" >&2
	exit 2
	;;
esac
