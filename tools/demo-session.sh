#!/usr/bin/env bash
# An operator's session against a running nearcastd with XDP, printed as a transcript: nearcastd on
# the server end of a veth pair (network namespaces ncd-srv / ncd-cli, tools/netns.sh), the CLI in
# the server namespace, dig from the client. It drains a node, adds one by editing the config and
# reloading, explains an answer, has a bad reload refused, adds a record (and asks its AAAA: NODATA),
# is refused a delete with a read token, and ends with the stats and the audit log. As root, after
# `make` (and the test City database: `make .build/geo/test-city.mmdb`).
#
#   tools/demo-session.sh            # the transcript on stdout; nearcastd's log in its work dir
set -uo pipefail
R=$(cd "$(dirname "$0")/.." && pwd)
B=$R/.build/release
for f in "$B/nearcastd" "$B/nearcast" "$R/.build/bpf/nearcast.bpf.o" "$R/.build/bpf/xdp_pass.bpf.o" "$R/.build/geo/test-city.mmdb"; do
	[ -e "$f" ] || { echo "demo-session: $f is missing: run make (and make .build/geo/test-city.mmdb) first" >&2; exit 1; }
done
D=$(mktemp -d /tmp/nearcast-demo.XXXXXX)
cd "$D"
"$R/tools/netns.sh" up ncd
mkdir -p bpffs state && mount -t bpf bpf bpffs
cleanup() {
	[ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	umount "$D/bpffs" 2>/dev/null
	"$R/tools/netns.sh" down ncd
	echo "demo-session: config, state and nearcastd's log are in $D" >&2
}
trap cleanup EXIT
cp "$R/examples/demo/demo.nearcast.test.zone" zone.db
cp "$R/examples/demo/tokens" tokens
cat > nearcast.yaml <<Y
listen: ["198.18.0.1:53", "127.0.0.1:53"]
zones:
  - { origin: demo.nearcast.test., file: zone.db }
xdp: { interfaces: ["ncd-s:native"], pin-root: $D/bpffs/nearcast, object: $R/.build/bpf/nearcast.bpf.o }
api: { listen: 127.0.0.1:8053, tokens: tokens }
state-dir: state
geo:
  database: $R/.build/geo/test-city.mmdb
  nodes:
    - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68, country: DE, region: HE }
    - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35, country: FR, region: IDF }
    - { id: nyc1, ipv4: 192.0.2.30, latitude: 40.71, longitude: -74.01, country: US, region: NY }
  pools:
    - { id: edge, members: [fra1, par1, nyc1] }
  names:
    - { name: edge.demo.nearcast.test, type: A, pool: edge, answers: 1, ttl: 30 }
Y
# XDP_TX frames reach the client end of a veth only when it has an XDP program (ARCHITECTURE §9).
ip -n ncd-cli link set dev ncd-c xdpdrv obj "$R/.build/bpf/xdp_pass.bpf.o" sec xdp
ip netns exec ncd-srv "$B/nearcastd" --config nearcast.yaml --log-level notice 2> daemon.log &
daemon=$!
S="ip netns exec ncd-srv" C="ip netns exec ncd-cli"
export NEARCAST_TOKEN=demo0admin0token0not0a0secret000
for _ in $(seq 100); do $S "$B/nearcast" status > /dev/null 2>&1 && break; sleep 0.2; done
run() { # prints the command as an operator types it (no namespaces, no paths), then its output
	local shown="$*"
	shown=${shown//"$S $B/"/}
	shown=${shown//"$C "/}
	echo "\$ $shown"
	"$@" 2>&1
	echo
}
say() { echo "# $*"; }
paris="dig +noall +answer +subnet=198.51.100.0/24 @198.18.0.1 edge.demo.nearcast.test A"

run $S "$B/nearcast" status
run $C $paris
run $S "$B/nearcast" node drain par1 --for 10m
run $C $paris
say "nearcast.yaml edited: node lon1 (London) added, pool edge = [fra1, par1, lon1]"
python3 - <<P
s = open('nearcast.yaml').read()
s = s.replace("    - { id: nyc1", "    - { id: lon1, ipv4: 192.0.2.50, latitude: 51.51, longitude: -0.13, country: GB, region: ENG }\n    - { id: nyc1")
s = s.replace("members: [fra1, par1, nyc1]", "members: [fra1, par1, lon1]")
open('nearcast.yaml', 'w').write(s)
P
run $S "$B/nearcast" reload
run $S "$B/nearcast" nodes
run $C $paris
run $S "$B/nearcast" explain edge.demo.nearcast.test A --client 198.18.0.2 --ecs 198.51.100.0/24
say "nearcast.yaml edited: pool edge = [fra1, par1, ams1], a node that does not exist"
sed -i 's/members: \[fra1, par1, lon1\]/members: [fra1, par1, ams1]/' nearcast.yaml
run $S "$B/nearcast" reload
sed -i 's/members: \[fra1, par1, ams1\]/members: [fra1, par1, lon1]/' nearcast.yaml
run $C $paris
run $S "$B/nearcast" record add demo.nearcast.test. shop A 192.0.2.99 --ttl 60
run $C dig +noall +answer @198.18.0.1 shop.demo.nearcast.test A
say "AAAA of an IPv4-only name: NODATA with the zone's SOA, answered by XDP too"
run $C dig +norecurse +noall +comments +authority @198.18.0.1 shop.demo.nearcast.test AAAA
say "with a read token"
NEARCAST_TOKEN=demo0read0token0not0a0secret0000 run $S "$B/nearcast" record delete demo.nearcast.test. shop A 192.0.2.99
run $S "$B/nearcast" stats
echo "\$ tail -n 4 state/audit.log"
tail -n 4 state/audit.log
