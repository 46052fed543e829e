# nearcast — `make` builds release binaries; `make run` starts the demo; `make test` runs every test but
# the Debian package's (`make test-package`); `make unit` the suites that need neither root nor a network.
SWIFT ?= swift
BIN := .build/release
CLANG ?= clang
BPF_OBJ := .build/bpf/nearcast.bpf.o
PASS_OBJ := .build/bpf/xdp_pass.bpf.o
REFLECT_OBJ := .build/bpf/reflect.bpf.o
REFLECT_GROW_OBJ := .build/bpf/reflect_grow.bpf.o
KIT_OBJ := .build/bpf/kit_maps.bpf.o
# nearcast's program with replies always grown at the head (see NC_TAILROOM_FIRST), for tests.
HEAD_OBJ := .build/bpf/nearcast-headroom.bpf.o
# The test City database, written by MaxMind's own writer from tools/geo/test-city.json.
GEO_DB := .build/geo/test-city.mmdb
BPF_SRC := bpf/nearcast.bpf.c $(wildcard bpf/include/*.h) Sources/CNearcastABI/include/nearcast_abi.h
ARCH := $(shell uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
BPF_CFLAGS := -O2 -g -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-Ibpf/include -ISources/CNearcastABI/include -idirafter /usr/include/$(shell uname -m)-linux-gnu

.PHONY: all build bpf deps demo-deps test-deps run test test-build test-package unit lint format bench bench-xdp bench-slowpath bench-geo bench-health bench-fleet bench-fleet-wide bench-defence bench-ui bench-scale bench-transfer bench-catalog bench-fleet-secondary bench-fleet-keys bench-dnssec bench-image fuzz-xdp fuzz-parsers verifier-stats verifier-profile dnstap-proto deb install uninstall clean

all: build

# Installs the Debian packages the project needs, only when one is missing.
# The Debian packages to build (`deps`: all that `make` and `make install` need), and those and the
# test, demo and benchmark tools (`test-deps`).
deps:
	@tools/install-deps.sh build --check >/dev/null 2>&1 || tools/install-deps.sh build

# What `make run` needs: those and MaxMind's writer for the demo's geo database (no etcd, no browser).
demo-deps:
	@tools/install-deps.sh demo --check >/dev/null 2>&1 || tools/install-deps.sh demo

test-deps:
	@tools/install-deps.sh all --check >/dev/null 2>&1 || tools/install-deps.sh all

# Release binaries with the Swift runtime linked in, so that they run where no toolchain is.
build: deps bpf
	$(SWIFT) build -c release --static-swift-stdlib
	cp $(BPF_OBJ) $(BIN)/nearcast.bpf.o

# The XDP program, with BTF (-g) so maps and counters carry field names for bpftool.
bpf: $(BPF_OBJ) $(PASS_OBJ) $(REFLECT_OBJ) $(REFLECT_GROW_OBJ) $(KIT_OBJ) $(HEAD_OBJ)

$(BPF_OBJ): $(BPF_SRC)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(HEAD_OBJ): $(BPF_SRC)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -DNC_TAILROOM_FIRST=0 -c $< -o $@

# Programs for tests and benchmarks only: the pass-through one a test veth's client end needs,
# the reflect ceiling (and the same growing the frame as a reply must), and maps for BPFKit's tests.
.build/bpf/%.bpf.o: tools/bpf/%.bpf.c
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(REFLECT_GROW_OBJ): tools/bpf/reflect.bpf.c

$(GEO_DB): tools/geo/test-city.json tools/make-test-mmdb.pl | demo-deps
	@mkdir -p $(dir $@)
	perl tools/make-test-mmdb.pl $< $@

# Loads the program through the kernel's verifier and prints the instructions it processed.
verifier-stats: $(BPF_OBJ)
	tools/verifier-stats.sh $(BPF_OBJ)

# Where the verifier's steps go: by source file, and the lines it walked most (its whole log read).
verifier-profile: $(BPF_OBJ)
	tools/verifier-profile.py $(BPF_OBJ)

# The dnstap message code, protoc-c's output for dnstap.proto (CC0, from the dnstap project; Debian:
# golang-github-dnstap-golang-dnstap-dev), committed so that a build needs no protobuf compiler.
dnstap-proto:
	@command -v protoc-c >/dev/null || { echo "protoc-c is missing: apt-get install protobuf-c-compiler" >&2; exit 1; }
	cd Sources/CDnstap && protoc-c --c_out=. dnstap.proto

# The demo runs the debug build: from a fresh clone it answers minutes sooner than a release build
# would (the demo has no XDP, and its speed is not what it shows), and after `make test` it is
# there already.
DEBUG_BIN = $$($(SWIFT) build --show-bin-path)
run: demo-deps $(GEO_DB)
	$(SWIFT) build --product nearcastd
	$(SWIFT) build --product nearcast
	@echo "nearcastd is starting on the demo config (examples/demo/nearcast.yaml). In another shell:"
	@echo "    dig @127.0.0.1 -p 5300 www.demo.nearcast.test A"
	@echo "    dig @127.0.0.1 -p 5300 edge.demo.nearcast.test A +subnet=198.51.100.0/24   # a client in Paris"
	@echo "    $(DEBUG_BIN)/nearcast explain edge.demo.nearcast.test A --client 127.0.0.1 --ecs 198.51.100.0/24 \\"
	@echo "        --api 127.0.0.1:8053 --token-file examples/demo/tokens"
	@echo "    $(DEBUG_BIN)/nearcast stats --api 127.0.0.1:8053 --token-file examples/demo/tokens"
	@echo "Stop it with Ctrl-C."
	@exec $(DEBUG_BIN)/nearcastd --config examples/demo/nearcast.yaml

# The test binary of the debug build, which holds every suite.
TEST_BIN = "$$($(SWIFT) build --show-bin-path)/nearcastPackageTests.xctest"
# The Debian package's test: it needs the release build and the .deb, and a Debian from the mirror.
PACKAGE_TESTS := \.DebianPackageTests/

# Every test but the package's, on the one debug build (with tests). The integration tests start
# its nearcastd and real dig/kdig/nsd. tools/run-tests.sh runs the suites as a few processes, so
# that those that compute never stall the others; --verbose there prints each test's start, so a
# run stopped by tools/test-watchdog.sh says which tests were still running.
test: test-build
	tools/run-tests.sh $(TEST_BIN) --skip '$(PACKAGE_TESTS)'

test-build: test-deps bpf $(GEO_DB)
	$(SWIFT) build --build-tests

# The package as shipped: the release build, the .deb and lintian (`make deb`), then the test that
# installs it into a Debian of its own (debootstrap), starts, upgrades, removes and purges it.
test-package: test-build deb
	$(TEST_BIN) --testing-library swift-testing --verbose --filter '$(PACKAGE_TESTS)'

# The suites that need neither root nor a network (no BPF, no namespaces, no reference servers, no
# package installed by it): the wire codec, zones, DNSSEC, geo policy and config, answers, health.
# The demo's packages must be there (`make demo-deps`, as root, once): the build's, and MaxMind's
# writer for the test City database that the geo and answer suites read.
UNIT_SUITES := ^(DNSWireTests|NearcastZonesTests|NearcastDNSSECTests|NearcastGeoTests|NearcastConfigurationTests|NearcastAnswersTests|NearcastHealthTests|MaxMindDBTests|NearcastTestSupportTests)\.
unit: demo-deps $(GEO_DB)
	$(SWIFT) build --build-tests
	$(TEST_BIN) --testing-library swift-testing --filter '$(UNIT_SUITES)'

# The Swift code as .swift-format says (swift-format comes with the toolchain); CI runs `lint`.
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Package.swift

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift

# Every benchmark; each writes its section of BENCHMARKS.md (root: namespaces, XDP).
bench: bench-xdp bench-slowpath bench-geo bench-health bench-fleet bench-fleet-wide bench-defence bench-ui bench-scale bench-transfer bench-catalog bench-fleet-secondary bench-fleet-keys bench-dnssec

bench-xdp: test-deps build $(GEO_DB)
	tools/bench-xdp.sh
	tools/bench-xdp-throughput.sh

bench-slowpath: test-deps build
	tools/bench-slowpath.sh

bench-geo: test-deps build
	tools/bench-geo.sh

bench-health: test-deps build
	tools/bench-health.sh

# Under attack (issue 19): a forged-source flood with rate limiting, a random-subdomain flood beside
# legitimate traffic, beside Knot DNS (XDP, mod-rrl); and the fuzzer's rate.
bench-defence: test-deps build
	tools/bench-defence.sh

# The dashboard's own cost: its bytes, its first render with 1,000 nodes, the daemon's CPU for 20 open pages.
bench-ui: test-deps build
	tools/bench-ui.sh

bench-fleet: test-deps build
	tools/bench-fleet.sh

bench-fleet-wide: test-deps build
	tools/bench-fleet-wide.sh

# Zones of real size (issue 29): 10k, 100k and 1M names beside Knot and NSD serving the same file: load
# time, memory, record changes to answered, memory after many changes.
bench-scale: test-deps build
	tools/bench-scale.py
	tools/bench-scale.py --xdp

bench-transfer: test-deps build
	tools/bench-transfer.py

bench-catalog: test-deps build
	tools/bench-catalog.py

bench-dnssec: test-deps build
	tools/bench-dnssec.py

bench-fleet-secondary: test-deps build
	tools/bench-fleet-secondary.py

bench-fleet-keys: test-deps build
	tools/bench-fleet-keys.py

# The CPU of a fast path's start, quieter than whole starts (issue 29): a zone file's load, then its
# answer image made ROUNDS times in one process. ZONE defaults to 1M names from tools/scale-zone.py.
ROUNDS ?= 5
bench-image: test-deps build
	@test -n "$(ZONE)" || { test -f /tmp/nearcast-scale1m.zone || python3 tools/scale-zone.py 1000000 /tmp/nearcast-scale1m.zone; }
	$(BIN)/imagebench $(or $(ZONE),/tmp/nearcast-scale1m.zone) $(or $(ORIGIN),scale.test.) --rounds $(ROUNDS)

# The XDP program fuzzed against the slow path (root): FRAMES generated and mutated frames, SEED;
# with ZONE and ORIGIN, a zone file of one's own instead of the test fixture (e.g. one of 1M names
# from tools/scale-zone.py).
FRAMES ?= 10000000
SEED ?= 1
fuzz-xdp: bpf
	$(SWIFT) build -c release --product xdpfuzz
	.build/release/xdpfuzz xdp --frames $(FRAMES) --seed $(SEED) --object $(BPF_OBJ) \
		$(if $(ZONE),--zone $(ZONE) --origin $(ORIGIN))

# The slow path's wire and zone parsers fuzzed: FRAMES mutated messages, FRAMES / 100 master files.
fuzz-parsers: bpf
	$(SWIFT) build -c release --product xdpfuzz
	.build/release/xdpfuzz wire --frames $(FRAMES) --seed $(SEED) --object $(BPF_OBJ)
	.build/release/xdpfuzz zone --frames $$(( $(FRAMES) / 100 )) --seed $(SEED) --object $(BPF_OBJ)

# The Debian package, .build/deb/nearcast_VERSION_ARCH.deb (debian/rules: the release build, manual
# pages from the binaries' --help and the sample config), then checked by lintian. Made again only
# when what goes into it is newer, so that `make deb` then `make test-package` builds it once. The
# Swift toolchain is not a Debian package, so this runs debian/rules itself rather than
# dpkg-buildpackage, which would ask for it among the Build-Depends.
DEB_VERSION = $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
DEB_ARCH = $(shell dpkg --print-architecture)
DEB = .build/deb/nearcast_$(DEB_VERSION)_$(DEB_ARCH).deb
deb: deps build
	@command -v dh >/dev/null && command -v lintian >/dev/null || tools/install-deps.sh package
	@$(MAKE) --no-print-directory $(DEB)

# What goes into it: the binaries, the program, the packaging (not what debian/rules itself writes
# there) and the files it ships.
DEB_INPUTS = $(BIN)/nearcastd $(BIN)/nearcast $(BPF_OBJ) tools/config-manpage.py \
	$(wildcard debian/changelog debian/control debian/copyright debian/rules debian/source/format \
		debian/nearcast.lintian-overrides debian/nearcast.postinst debian/nearcast.postrm) \
	$(wildcard dist/* dist/zones/*)
$(DEB): $(DEB_INPUTS)
	rm -rf .build/deb debian/nearcast debian/.debhelper debian/files debian/*.substvars debian/*.debhelper debian/debhelper-build-stamp
	mkdir -p .build/deb
	debian/rules build
	debian/rules binary
	lintian --fail-on error,warning $@
	@ls .build/deb/*.deb

# Installs the binaries, the XDP program, the systemd unit and, where there are none yet, a
# commented sample config, a sample zone and a tokens file with one new admin token. DESTDIR
# stages it elsewhere (packaging); PREFIX, SYSCONFDIR and UNITDIR place it.
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= /lib/systemd/system
BINDIR := $(PREFIX)/bin
LIBDIR := $(PREFIX)/lib/nearcast
ETC := $(DESTDIR)$(SYSCONFDIR)/nearcast

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(UNITDIR) $(ETC)/zones
	@# Stripped: 157 -> 81 MB for nearcastd (the build's own copies keep their symbols for debugging).
	install -s -m 755 $(BIN)/nearcastd $(BIN)/nearcast $(DESTDIR)$(BINDIR)/
	install -m 644 $(BPF_OBJ) $(DESTDIR)$(LIBDIR)/nearcast.bpf.o
	sed -e 's|@SBINDIR@|$(BINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' dist/nearcastd.service >$(DESTDIR)$(UNITDIR)/nearcastd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/nearcastd.service
	@# An operator's own files are never overwritten.
	[ -e $(ETC)/nearcast.yaml ] || install -m 644 dist/nearcast.yaml $(ETC)/nearcast.yaml
	[ -e $(ETC)/zones/example.net.zone ] || install -m 644 dist/zones/example.net.zone $(ETC)/zones/example.net.zone
	[ -e $(ETC)/tokens ] || { install -m 600 dist/tokens $(ETC)/tokens && echo "admin $$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >>$(ETC)/tokens; }
	@# The unit runs as the user nearcast: it reads the tokens and writes the zones' directory. Staged
	@# (DESTDIR), the package's own scripts do this where it is installed.
	@if [ -z "$(DESTDIR)" ]; then \
		id -u nearcast >/dev/null 2>&1 || useradd --system --user-group --no-create-home --home-dir /var/lib/nearcast --shell /usr/sbin/nologin nearcast; \
		chgrp nearcast $(ETC)/tokens && chmod 640 $(ETC)/tokens; \
		chown -R nearcast:nearcast $(ETC)/zones; \
	fi
	@echo "installed; next: edit $(SYSCONFDIR)/nearcast/nearcast.yaml, then systemctl daemon-reload && systemctl enable --now nearcastd"

# Removes what install put in place, but the config, zones, tokens and state.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/nearcastd $(DESTDIR)$(BINDIR)/nearcast $(DESTDIR)$(LIBDIR)/nearcast.bpf.o $(DESTDIR)$(UNITDIR)/nearcastd.service
	-rmdir $(DESTDIR)$(LIBDIR)

clean:
	rm -rf .build
