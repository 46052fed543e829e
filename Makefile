# nearcast — `make` builds release binaries; `make run` starts the demo; `make test` runs every test.
SWIFT ?= swift
BIN := .build/release

.PHONY: all build deps run test test-unit bench-slowpath clean

all: build

# Installs the Debian packages the project needs, only when one is missing.
deps:
	@tools/install-deps.sh --check >/dev/null 2>&1 || tools/install-deps.sh

build: deps
	$(SWIFT) build -c release

run: build
	@echo "nearcastd is starting on the demo config (examples/demo/nearcast.yaml). In another shell:"
	@echo "    dig @127.0.0.1 -p 5300 www.demo.nearcast.test A"
	@echo "Stop it with Ctrl-C."
	@exec $(BIN)/nearcastd --config examples/demo/nearcast.yaml

# The integration tests start the debug nearcastd binary and real dig/kdig/nsd, so build all first.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

bench-slowpath: build
	tools/bench-slowpath.sh

clean:
	rm -rf .build
