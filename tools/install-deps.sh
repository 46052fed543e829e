#!/usr/bin/env bash
# Installs, idempotently, the Debian packages nearcast needs: `build`, those to build it (what
# `make` and `make install` need, whose run-time libraries the daemon links: libbpf, libelf,
# libmaxminddb, zlib, libcurl, libfstrm, libprotobuf-c, libcap); `all` (the default), those and what the tests, the demo and the
# benchmarks need (DNS clients, load generators, reference servers, etcd, a browser).
# Runs `apt-get update` only when a package is missing and apt cannot find it in its current lists.
# Installs nothing else, and stops nothing it did not start: a server a package's install started
# is stopped, one that ran before is left alone.
# `demo`: those and what `make run` needs (the demo's geo database is written with MaxMind's writer;
# the commands it prints use dig). `package`: `build`'s and what `make deb` needs (debhelper, lintian).
# Usage: tools/install-deps.sh [build|demo|package|all] [--check]   (--check: exit 1 if something is missing, install nothing)
set -euo pipefail

BUILD_PACKAGES=(
	# the BPF object, libbpf and libmaxminddb for the Swift system-library targets
	clang llvm pkg-config libbpf-dev libelf-dev zlib1g-dev bpftool linux-libc-dev libmaxminddb-dev
	# the release binaries link the Swift runtime statically, and Foundation's networking libcurl
	libcurl4-openssl-dev
	# the query log: dnstap's Frame Streams and protobuf messages, as Knot and BIND write them
	libfstrm-dev libprotobuf-c-dev
	# the capabilities the daemon drops once started
	libcap-dev
)
DEMO_PACKAGES=(
	# the demo's (and the tests') geo database, written with MaxMind's own writer; dig
	libmaxmind-db-writer-perl dnsutils
)
PACKAGING_PACKAGES=(
	# `make deb`: debhelper builds the Debian package, lintian checks it
	debhelper lintian
)
TEST_PACKAGES=(
	# the package's test installs it into a Debian of its own (debootstrap)
	debootstrap
	# mmdblookup, to read the test geo databases back
	mmdb-bin
	# test and benchmark tools: real DNS clients, load generators, network namespaces
	knot-dnsutils dnsperf iproute2 ethtool curl
	# a dnstap collector on a Unix socket (fstrm_capture); dnstap-read comes with dnsutils
	fstrm-bin
	# certificates for the HTTPS health-check tests
	openssl
	# reference servers for the differential tests and the benchmarks; ldnsutils (ldns-read-zone,
	# another reader of zone files, for the presentation-format tests; ldns-keygen and
	# ldns-signzone, which sign the signed zones' fixtures, and ldns-verify-zone); faketime, for a
	# client whose clock is off (the TSIG time checks); unbound, the validating resolver the
	# signed zones' tests trust
	nsd knot ldnsutils faketime unbound
	# the shared store of a fleet (issue 18): etcd v3 and etcdctl
	etcd-server etcd-client
	# the dashboard's tests (issue 20): a real headless browser, driven through WebDriver
	chromium chromium-driver python3-selenium
)

set_=all check=0
for arg in "$@"; do
	case "$arg" in
	build | demo | package | all) set_=$arg ;;
	--check) check=1 ;;
	*)
		echo "usage: $0 [build|demo|package|all] [--check]" >&2
		exit 2
		;;
	esac
done
PACKAGES=("${BUILD_PACKAGES[@]}")
case "$set_" in
demo) PACKAGES+=("${DEMO_PACKAGES[@]}") ;;
package) PACKAGES+=("${PACKAGING_PACKAGES[@]}") ;;
all) PACKAGES+=("${DEMO_PACKAGES[@]}" "${PACKAGING_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ $check -eq 1 ]; then
	echo "missing Debian packages: ${missing[*]}" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Reference servers (nsd, knot) must not start as system services on port 53 when installed:
# the tests and benchmarks start them by hand on their own ports. policy-rc.d says "don't start".
# (POLICY_RC_D: elsewhere, for the test of this script, which must not touch the host's.)
policy=${POLICY_RC_D:-/usr/sbin/policy-rc.d}
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod +x "$policy"
	own_policy=1
fi
trap '[ $own_policy -eq 1 ] && rm -f "$policy"' EXIT

# The reference servers running before the install (an operator's own NSD or Knot, say) are
# left alone: only a server process that the install itself started is stopped below.
# (By the program they run: NSD names its processes "nsd: main", "nsd: xfrd", so pgrep -x finds none.)
pids_of() {
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		exe=${exe% (deleted)}
		[ "${exe##*/}" = "$1" ] && echo "${p#/proc/}"
	done
	return 0
}
# The parent of a process (the fields after its name, which may hold spaces: "(nsd: main)").
ppid_of() {
	local stat rest
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	rest=${stat##*) }
	set -- $rest
	echo "${2:-}"
}
declare -A before
for daemon in nsd knotd; do
	before[$daemon]=" $(pids_of "$daemon" | tr '\n' ' ') "
done

install() { apt-get install -y --no-install-recommends "${missing[@]}"; }
if ! install; then
	apt-get update
	install
fi
# A maintainer script may still have started a server (where a policy-rc.d of the host's own lets
# it): stop the processes that were not there before and that run as daemons (their parent is
# PID 1: systemd, or an init script's daemonized child). One another program runs in the
# foreground (a test's, an operator's `nsd -d`) is not the install's.
for daemon in nsd knotd; do
	for pid in $(pids_of "$daemon"); do
		case "${before[$daemon]}" in
		*" $pid "*) ;;
		*)
			[ "$(ppid_of "$pid")" = 1 ] || continue
			echo "install-deps: stopping $daemon (pid $pid), which the install started"
			kill "$pid" 2>/dev/null || true
			;;
		esac
	done
done
echo "install-deps: installed ${missing[*]}"
