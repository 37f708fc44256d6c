# bessd — the two commands a fresh Debian 12 machine needs:
#   make sim     run bessd against the built-in simulated site (Ctrl-C stops; DURATION=60 stops after 60 s)
#   make check   build everything and run every test
# Both install missing Debian packages first (as root), or print the apt-get line to run.

SHELL := /bin/bash
# The Swift toolchain: on PATH, or the usual install location.
SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)

# Build-time packages: the three C libraries bessd links, and pkg-config to find them.
DEBIAN_PACKAGES := pkg-config libmodbus-dev libsocketcan-dev libsystemd-dev
# Test-time peers no one here wrote: mbpoll (Modbus client), can-utils, socat (RTU pty pairs), python3-pip.
TEST_PACKAGES := mbpoll can-utils socat python3-pip

.PHONY: all deps build sim check test config-check clean

all: build

deps:
	@scripts/ensure-debian-packages.sh $(DEBIAN_PACKAGES)
	@test -x "$(SWIFT)" || { echo "Swift 6 toolchain not found (set SWIFT=/path/to/swift)" >&2; exit 1; }

build: deps
	$(SWIFT) build -c release

## The main job on its embedded default: bessd against the simulated site (config/simulation.yaml).
sim: deps
	$(SWIFT) build -c release --product bessd
	.build/release/bessd run $(if $(DURATION),--duration $(DURATION)) $(if $(CONFIG),--config $(CONFIG))

## Every test: unit, property and integration tests; the SocketCAN suite on vcan (in a VM when this
## kernel has no CAN); then every shipped configuration file.
check: deps
	@scripts/ensure-debian-packages.sh $(TEST_PACKAGES)
	@scripts/ensure-python-peers.sh
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	scripts/can-tests.sh
	$(MAKE) --no-print-directory config-check

config-check:
	@for f in config/*.yaml; do .build/debug/bessd check-config --quiet "$$f" || exit 1; done
	@echo "config: every file in config/ is valid"

test: check

clean:
	rm -rf .build
