#!/usr/bin/env bash
# Installs, idempotently, every Debian package nearcast needs to build, test and benchmark.
# Runs `apt-get update` only when a package is missing and apt cannot find it in its current lists.
# Usage: tools/install-deps.sh [--check]   (--check: exit 1 if something is missing, install nothing)
set -euo pipefail

PACKAGES=(
	# build: the BPF object, libbpf and libmaxminddb for the Swift system-library targets
	clang llvm pkg-config libbpf-dev libelf-dev zlib1g-dev bpftool linux-libc-dev
	libmaxminddb-dev mmdb-bin libmaxmind-db-writer-perl
	# the release binaries link the Swift runtime statically; the tests' URLSession needs libcurl
	libcurl4-openssl-dev
	# test and benchmark tools: real DNS clients, load generators, network namespaces
	dnsutils knot-dnsutils dnsperf iproute2 ethtool curl
	# certificates for the HTTPS health-check tests
	openssl
	# reference servers for the differential tests and the benchmarks; ldns-read-zone, another
	# reader of zone files, for the presentation-format tests; faketime, for a client whose clock
	# is off (the TSIG time checks)
	nsd knot ldnsutils faketime
	# the shared store of a fleet (issue 18): etcd v3 and etcdctl
	etcd-server etcd-client
	# the dashboard's tests (issue 20): a real headless browser, driven through WebDriver
	chromium chromium-driver python3-selenium
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
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
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod +x "$policy"
	own_policy=1
fi
trap '[ $own_policy -eq 1 ] && rm -f "$policy"' EXIT

# The reference servers running before the install (an operator's own NSD or Knot, say) are
# left alone: only a server process that the install itself started is stopped below.
declare -A before
for daemon in nsd knotd; do
	before[$daemon]=" $(pgrep -x "$daemon" | tr '\n' ' ') "
done

install() { apt-get install -y --no-install-recommends "${missing[@]}"; }
if ! install; then
	apt-get update
	install
fi
# A maintainer script may still have started a server (where a policy-rc.d of the host's own lets
# it): stop the processes that were not there before.
for daemon in nsd knotd; do
	for pid in $(pgrep -x "$daemon" || true); do
		case "${before[$daemon]}" in
		*" $pid "*) ;;
		*) kill "$pid" 2>/dev/null || true ;;
		esac
	done
done
