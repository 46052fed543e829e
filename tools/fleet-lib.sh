# shellcheck shell=bash
# What make bench-fleet and make bench-fleet-wide share (sourced; both set `work`, `P`, `N`).
#
#   start_etcd            one etcd on every host address (a namespace i reaches it at 198.19.i.1),
#                         its data in $work/etcd (kept across a restart); sets EP and etcd_pid
#   seed_config ZONE      the shared state of both benches in $work/seed.yaml: the zone, four nodes
#                         (fra1 checked on 127.0.0.1:$CHECK_PORT, each namespace's own loopback when
#                         CHECK_PORT is set), a pool of them, a geo name and a discovery name
#   import_seed           `nearcast store import`: sets IMPORT_S (seconds) and DB_MB (etcd's database)
#   server_config I       $work/sI.yaml: server I in namespace $P-I, following the store
#   wait_ready I LIMIT_S  until server I says it is ready (its log shown and exit 1 past LIMIT_S)
#   etcd_calls, etcd_sent etcd's count of the gRPC calls it started and of the bytes it sent
#   field JSON EXPR       one field of fleet-latency.py's JSON

start_etcd() {
	if [ -z "${EP:-}" ]; then
		EP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	fi
	local pp=$((EP + 1))
	etcd --name bench --data-dir "$work/etcd" --listen-client-urls "http://0.0.0.0:$EP" \
		--advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$pp" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "bench=http://127.0.0.1:$pp" >>"$work/etcd.log" 2>&1 &
	etcd_pid=$!
	for _ in $(seq 200); do curl -sf "http://127.0.0.1:$EP/health" >/dev/null && return 0; sleep 0.05; done
	echo "etcd did not start" >&2
	exit 1
}

seed_config() {
	local zone=$1 check=""
	[ -n "${CHECK_PORT:-}" ] &&
		check=", checks: [{ type: tcp, host: 127.0.0.1, port: $CHECK_PORT, interval: 0.1, timeout: 0.1, rise: 1, fall: 1 }]"
	cat >"$work/seed.yaml" <<C
zones: [{ origin: example.test., file: $zone }]
geo:
  database: $PWD/.build/geo/test-city.mmdb
  nodes:
    - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68, country: DE$check }
    - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35, country: FR }
    - { id: nyc1, ipv4: 192.0.2.30, latitude: 40.71, longitude: -74.01, country: US }
    - { id: tyo1, ipv4: 192.0.2.40, latitude: 35.68, longitude: 139.65, country: JP }
  pools: [{ id: web, members: [fra1, par1, nyc1, tyo1] }]
  names:
    - { name: geo.example.test, type: A, pool: web, answers: 4, ttl: 20 }
    - { name: _join._udp.example.test, type: SRV, pool: web, answers: 8, port: 7946, targets: nodes.example.test }
store: { etcd: { endpoints: ["http://127.0.0.1:$EP"] } }
C
}

# The test zone, with ZONE_NAMES generated names more (tools/scale-zone.py's: an A at each, an
# AAAA at every fourth, MX and TXT at every tenth); prints the file's path.
test_zone() {
	local zone=$PWD/Tests/Fixtures/example.test.zone
	if [ "${ZONE_NAMES:-0}" -gt 0 ]; then
		python3 tools/scale-zone.py "$ZONE_NAMES" "$work/generated.zone"
		{ cat "$zone"; echo "\$ORIGIN example.test."; tail -n +6 "$work/generated.zone"; } >"$work/example.test.zone"
		zone=$work/example.test.zone
	fi
	echo "$zone"
}

import_seed() {
	local t0
	t0=$(date +%s.%N)
	.build/release/nearcast store import "$work/seed.yaml" >/dev/null
	IMPORT_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	DB_MB=$(curl -s "http://127.0.0.1:$EP/metrics" | awk '/^etcd_mvcc_db_total_size_in_bytes/ {printf "%.0f", $2 / 1048576}')
}

server_config() {
	local i=$1
	cat >"$work/s$i.yaml" <<C
listen: ["198.19.$i.2:53"]
state-dir: $work/state$i
api: { listen: "198.19.$i.2:8053", tokens: $work/tokens }
store:
  etcd: { endpoints: ["http://198.19.$i.1:$EP"] }
  server: s$i
C
}

wait_ready() {
	local i=$1 limit=$2
	for _ in $(seq $((limit * 20))); do grep -q "nearcastd: ready" "$work/s$i.out" && return 0; sleep 0.05; done
	tail -20 "$work/s$i.log" >&2
	echo "server $i not ready within $limit s" >&2
	exit 1
}

etcd_calls() { curl -s "http://127.0.0.1:$EP/metrics" | awk '/^grpc_server_started_total/ {n += $2} END {printf "%d", n}'; }
etcd_sent() { curl -s "http://127.0.0.1:$EP/metrics" | awk '/^etcd_network_client_grpc_sent_bytes_total/ {printf "%d", $2}'; }

field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d$2)" "$1"; }
