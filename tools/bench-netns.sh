# Sourced by the benchmarks that run over a veth pair (bench-xdp-throughput.sh, bench-health.sh,
# bench-slowpath.sh): with P set to a namespace prefix, builds the two namespaces (tools/netns.sh),
# a work directory with a bpffs mounted in it (for pinned maps), and a trap that kills the server
# (server_pid) and tears everything down on exit. Defines SRV CLI SIF CIF ADDR, pin_napi and
# wait_xdp.
SRV=$P-srv CLI=$P-cli SIF=$P-s CIF=$P-c
ADDR=198.18.0.1
work=$(mktemp -d)
server_pid=""

bench_cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
	umount "$work/bpffs" 2>/dev/null || true
	tools/netns.sh down "$P"
	rm -rf "$work"
}
trap bench_cleanup EXIT
tools/netns.sh up "$P"
mkdir -p "$work/bpffs"
mount -t bpf bpf "$work/bpffs"

# Threaded NAPI on one end of the veth, its kthread pinned to a CPU. The flag can be set only while
# the veth has NAPI (an XDP program attached) and it persists across re-attachments, each of which
# starts a new kthread, so pinning is done again after each attachment.
pin_napi() { # namespace interface cpu
	ip netns exec "$1" sh -c "echo 1 > /sys/class/net/$2/threaded" 2>/dev/null || true
	local pid
	for pid in $(pgrep -f "napi/$2-" || true); do taskset -pc "$3" "$pid" >/dev/null; done
}

# Waits until the server end has an XDP program.
wait_xdp() {
	for _ in $(seq 100); do ip -n "$SRV" link show "$SIF" | grep -q "prog/xdp" && return 0; sleep 0.1; done
	echo "no XDP program on $SIF" >&2
	exit 1
}

# The geo name the XDP benchmarks ask for, as a config's `geo:` section: the four nodes of
# Tests/Fixtures/four-nodes.yaml; the client, 198.18.0.2, is in Strasbourg in the test City
# database, so fra1 is its nearest node.
bench_geo_yaml() {
	cat <<C
geo:
  database: $PWD/.build/geo/test-city.mmdb
$(grep -v '^#' Tests/Fixtures/four-nodes.yaml | sed 's/^/  /')
  names: [{ name: geo.example.test, type: A, pool: web, answers: 2 }]
C
}

# Starts nearcastd (the release build) on the server end, XDP native, one thread on SERVER_CPU,
# serving ZONE as example.test.; its log goes to $1, further arguments are nearcastd's. Sets
# server_pid.
start_nearcastd() { # log [nearcastd arguments...]
	local log=$1
	shift
	ip netns exec "$SRV" taskset -c "$SERVER_CPU" .build/release/nearcastd "$@" --zone "example.test=$ZONE" \
		--listen "$ADDR:53" --threads 1 --xdp "$SIF:native" --pin-root "$work/bpffs/nearcast" \
		--bpf-object .build/bpf/nearcast.bpf.o --log-level notice 2>"$log" &
	server_pid=$!
}
