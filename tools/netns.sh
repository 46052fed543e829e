#!/usr/bin/env bash
# Builds (or removes) a two-host test topology: network namespaces <prefix>-srv and <prefix>-cli
# joined by a veth pair. Addresses live only inside the namespaces: 198.18.0.1 / 198.18.0.2 and
# 2001:2::1 / 2001:2::2 (the benchmarking ranges of RFC 2544 and RFC 5180).
#
#   tools/netns.sh up [prefix]     # default prefix: nc
#   tools/netns.sh down [prefix]
#   ip netns exec nc-srv …         # run a command on the server host
set -euo pipefail

action=${1:-}
p=${2:-nc}
srv=$p-srv cli=$p-cli
sif=$p-s cif=$p-c

case "$action" in
up)
	"$0" down "$p" 2>/dev/null || true
	ip netns add "$srv"
	ip netns add "$cli"
	ip link add "$sif" type veth peer name "$cif"
	ip link set "$sif" netns "$srv"
	ip link set "$cif" netns "$cli"
	ip -n "$srv" addr add 198.18.0.1/24 dev "$sif"
	ip -n "$cli" addr add 198.18.0.2/24 dev "$cif"
	ip -n "$srv" addr add 2001:2::1/64 dev "$sif" nodad
	ip -n "$cli" addr add 2001:2::2/64 dev "$cif" nodad
	for ns in "$srv" "$cli"; do ip -n "$ns" link set lo up; done
	ip -n "$srv" link set "$sif" up
	ip -n "$cli" link set "$cif" up
	# Static neighbour entries: load generators that read the tables (kxdpgun) find the peer at once.
	smac=$(ip -n "$srv" link show dev "$sif" | awk '/link\/ether/ {print $2}')
	cmac=$(ip -n "$cli" link show dev "$cif" | awk '/link\/ether/ {print $2}')
	ip -n "$cli" neigh replace 198.18.0.1 lladdr "$smac" dev "$cif" nud permanent
	ip -n "$cli" neigh replace 2001:2::1 lladdr "$smac" dev "$cif" nud permanent
	ip -n "$srv" neigh replace 198.18.0.2 lladdr "$cmac" dev "$sif" nud permanent
	ip -n "$srv" neigh replace 2001:2::2 lladdr "$cmac" dev "$sif" nud permanent
	;;
down)
	ip netns del "$srv" 2>/dev/null || true
	ip netns del "$cli" 2>/dev/null || true
	;;
*)
	echo "usage: $0 up|down [prefix]" >&2
	exit 2
	;;
esac
