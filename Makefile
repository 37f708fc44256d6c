# bessd — the two commands a fresh Debian 12 machine needs:
#   make sim     run bessd against the built-in simulated site (Ctrl-C stops; DURATION=60 stops after 60 s)
#   make check   build everything and run every test
# Both install missing Debian packages first (as root), or print the apt-get line to run.

SHELL := /bin/bash
# The Swift toolchain: on PATH, or the usual install location.
SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)

# Build-time packages: the C libraries bessd links (OpenSSL for the grid links' TLS, CBC for the optimiser), and pkg-config to find them.
DEBIAN_PACKAGES := pkg-config libmodbus-dev libsocketcan-dev libsystemd-dev libmosquitto-dev libssl-dev coinor-libcbc-dev
# Test-time peers no one here wrote: mbpoll (Modbus client), can-utils, socat (RTU pty pairs, and the OpenSSL
# client in front of c104 for the 104 outstation's TLS), python3-pip; gnuplot renders the scenario plots;
# mosquitto (+ clients), postgresql and openssl are the real broker, database and certificates of the
# MQTT and TLS tests (started on loopback ports the tests pick, stopped by them);
# chromium renders bess-aggregator's status page; xmllint (libxml2-utils) validates the 2030.5 documents;
# strace shows DurabilityTests the order of each durable writer's fsyncs and renames.
TEST_PACKAGES := mbpoll can-utils socat python3-pip systemd dpkg-dev gnuplot-nox mosquitto mosquitto-clients postgresql openssl curl chromium libxml2-utils strace

.PHONY: all deps build sim sim-mqtt check test config-check clean install deb bench bench-compare bench-fleet tsan fuzz soak scenarios-long

PREFIX ?= /usr
DESTDIR ?=
SYSCONFDIR ?= /etc
VERSION := $(shell sed -n 's/.*static let string = "\(.*\)"/\1/p' Sources/ControlProtocol/Version.swift)
STATIC_BUILD := .build-static/release

all: build

deps:
	@scripts/ensure-debian-packages.sh $(DEBIAN_PACKAGES)
	@test -x "$(SWIFT)" || { echo "Swift 6 toolchain not found (set SWIFT=/path/to/swift)" >&2; exit 1; }

build: deps
	$(SWIFT) build -c release

## The main job on its embedded default: bessd against the simulated site (config/simulation.yaml).
## bess-aggregator runs beside it on 127.0.0.1:8700 (status page there; stopped with bessd).
sim: deps
	$(SWIFT) build -c release --product bessd
	$(SWIFT) build -c release --product bess-aggregator
	@.build/release/bess-aggregator --listen 127.0.0.1:8700 --database /tmp/bessd-sim-aggregator.sqlite \
	    > /tmp/bess-aggregator.log 2>&1 & AGGREGATOR=$$!; trap 'kill $$AGGREGATOR 2>/dev/null' EXIT INT TERM; \
	  echo "bess-aggregator: status page http://127.0.0.1:8700/ (log /tmp/bess-aggregator.log)"; \
	  .build/release/bessd run $(if $(DURATION),--duration $(DURATION)) $(if $(CONFIG),--config $(CONFIG))

## The same against a local Mosquitto (127.0.0.1:18830) with bess-aggregator consuming over MQTT 5.
sim-mqtt: deps
	@scripts/ensure-debian-packages.sh mosquitto
	$(SWIFT) build -c release --product bessd
	$(SWIFT) build -c release --product bess-aggregator
	@mkdir -p /tmp/bessd-sim-mqtt-broker && chmod 777 /tmp/bessd-sim-mqtt-broker; \
	  printf 'listener 18830 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location /tmp/bessd-sim-mqtt-broker/\n' \
	    > /tmp/bessd-sim-mqtt-broker/mosquitto.conf; \
	  mosquitto -c /tmp/bessd-sim-mqtt-broker/mosquitto.conf > /tmp/bessd-sim-mosquitto.log 2>&1 & BROKER=$$!; \
	  .build/release/bess-aggregator --listen 127.0.0.1:8700 --database /tmp/bessd-sim-aggregator.sqlite \
	    --mqtt mqtt://127.0.0.1:18830 > /tmp/bess-aggregator.log 2>&1 & AGGREGATOR=$$!; \
	  trap 'kill $$AGGREGATOR $$BROKER 2>/dev/null' EXIT INT TERM; \
	  echo "mosquitto on 127.0.0.1:18830; bess-aggregator: status page http://127.0.0.1:8700/ (log /tmp/bess-aggregator.log)"; \
	  .build/release/bessd run --config config/simulation-mqtt.yaml $(if $(DURATION),--duration $(DURATION))

## Every test: unit, property and integration tests (suites in parallel processes); then the HIL
## scenarios, the SocketCAN suite on vcan (in a VM when this kernel has no CAN) and the .deb side by
## side; then every shipped configuration file. Prints where the time went (docs/testing.md).
check: deps
	@scripts/ensure-debian-packages.sh $(TEST_PACKAGES)
	@scripts/ensure-python-peers.sh
	SWIFT=$(SWIFT) scripts/check.sh

## Benchmarks against the targets and this machine's limits (cyclictest beside the cycle): writes
## hil/results/benchmarks.md and its plots. About an hour; BENCH_QUICK=1 for a short run;
## BENCH_ONLY="jitter resources" retakes only those sections into the last run's table (no fleet).
bench: deps
	scripts/bench.sh
	@if [ -z "$$BENCH_ONLY" ]; then scripts/fleet-bench.sh; fi

## Two builds interleaved on the same host: BEFORE's release bessd (a worktree under .build-compare/)
## against the work tree's, R rounds alternating on the same plant: CPU share at 10 ms (8 units) and at
## 100 ms (32 units), RSS with 8 units. Writes hil/results/bench-compare.md. About 20 minutes for R=3;
## COMPARE_SKIP_BUILD=1 measures the binaries already built.
BEFORE ?= a00b027
R ?= 3
bench-compare: deps
	BEFORE=$(BEFORE) R=$(R) scripts/bench-compare.sh

## The soak: plant + release bessd at 10 ms for 30 minutes, every fault kind in turn every 30 s,
## an uplink outage and a reload every 5 minutes; judges RSS, descriptors, overruns, faults and the
## uplink (hil/results/soak/soak.md). In a VM when this kernel has no vcan. Not part of make check.
soak: deps
	@scripts/ensure-debian-packages.sh gnuplot-nox
	scripts/soak.sh

## The full-length forms of scenarios make check runs shortened (hil/scenarios/long/: the 2030.5 server
## out for 15 minutes across a scheduled change, CSIP-AUS ALL-21's 24 back-to-back 60 s controls), side
## by side, about 26 minutes; plots and CSVs in hil/results/scenarios/. Not part of make check.
scenarios-long: deps
	@scripts/ensure-debian-packages.sh gnuplot-nox
	@scripts/ensure-python-peers.sh
	$(SWIFT) build --product bessd
	$(SWIFT) build --product bess-hil
	scripts/scenarios.sh .build/debug hil/scenarios/long/*.yaml

## The fleet rows alone: 10,000 simulated gateways over MQTT, two aggregators, PostgreSQL (hil/results/fleet.md).
bench-fleet: deps
	scripts/fleet-bench.sh

## Every decoder under libFuzzer + AddressSanitizer, 10^6 executions each (Fuzz/, targets only with
## BESS_FUZZ set; its own build in .build-fuzz; results in hil/results/fuzz.md; docs/fuzzing.md).
## FUZZ_RUNS=N to change the count.
fuzz: deps
	scripts/fuzz.sh

## The daemon, service-thread and runtime tests under ThreadSanitizer (its own build in .build-tsan;
## any report fails the run, in the test process and in every bessd it starts).
TSAN_TESTS := DaemonTests|ServiceThreadsTests|AuthorityTests|SiteRunnerTests|EndpointWorkerTests|SystemdNotify|MetricsTests
tsan: deps
	@scripts/ensure-debian-packages.sh $(TEST_PACKAGES)
	@scripts/ensure-python-peers.sh
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter '$(TSAN_TESTS)'

config-check:
	@for f in config/*.yaml; do .build/debug/bessd check-config --quiet "$$f" || exit 1; done
	@echo "config: every file in config/ is valid"

test: check

## The daemon and CLIs with the Swift runtime linked in, for gateways without a Swift toolchain.
static: deps
	for p in bessd bessctl bess-hil; do \
	  $(SWIFT) build -c release --static-swift-stdlib --build-path .build-static --product $$p || exit 1; done

## make install [PREFIX=/usr] [DESTDIR=…]: binaries, unit, udev rules, networkd file, config, device
## profiles (devices/*.yaml into PREFIX/share/bessd/devices), docs.
install: static
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/lib/systemd/network \
	  $(DESTDIR)$(PREFIX)/lib/udev/rules.d $(DESTDIR)$(SYSCONFDIR)/bessd $(DESTDIR)$(PREFIX)/share/doc/bessd \
	  $(DESTDIR)$(PREFIX)/share/bessd/devices
	install -m 0644 devices/*.yaml $(DESTDIR)$(PREFIX)/share/bessd/devices/
	for b in bessd bessctl bess-hil; do install -m 0755 -s $(STATIC_BUILD)/$$b $(DESTDIR)$(PREFIX)/bin/$$b; done
	sed 's|/usr/bin/|$(PREFIX)/bin/|g; s|/etc/bessd/|$(SYSCONFDIR)/bessd/|g' systemd/bessd.service \
	  > $(DESTDIR)$(PREFIX)/lib/systemd/system/bessd.service
	install -m 0644 systemd/80-can-bms.network $(DESTDIR)$(PREFIX)/lib/systemd/network/
	install -m 0644 udev/80-bess-can.rules udev/80-bess-rs485.rules $(DESTDIR)$(PREFIX)/lib/udev/rules.d/
	test -e $(DESTDIR)$(SYSCONFDIR)/bessd/bessd.yaml || install -m 0640 config/gateway.yaml $(DESTDIR)$(SYSCONFDIR)/bessd/bessd.yaml
	install -m 0644 README.md CHANGELOG.md config/bessd.yaml docs/operations.md docs/interlocks.md docs/control.md \
	  docs/sunspec.md docs/scada.md docs/uplink.md docs/uplink-mqtt.md docs/devices.md $(DESTDIR)$(PREFIX)/share/doc/bessd/

## make deb: dist/bessd_VERSION_amd64.deb (Debian 12 gateways).
deb:
	rm -rf dist/deb && mkdir -p dist/deb/DEBIAN
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/dist/deb PREFIX=/usr SYSCONFDIR=/etc
	install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm dist/deb/DEBIAN/
	echo /etc/bessd/bessd.yaml > dist/deb/DEBIAN/conffiles
	{ echo "Package: bessd"; echo "Version: $(VERSION)"; echo "Architecture: amd64"; \
	  echo "Maintainer: bessd maintainers <maintainers@users.noreply.b-seed-3140e5a0.example>"; \
	  echo "Depends: libc6, libgcc-s1, libstdc++6, libmodbus5, libsocketcan2, libsystemd0, libmosquitto1, libssl3, coinor-libcbc3, adduser"; \
	  echo "Recommends: can-utils"; echo "Section: misc"; echo "Priority: optional"; \
	  echo "Installed-Size: $$(du -sk dist/deb | cut -f1)"; \
	  echo "Description: battery energy storage edge controller"; \
	  echo " bessd reads BMS over CAN and inverters over Modbus, applies safety interlocks and 5 % droop"; \
	  echo " frequency response, and commands one safe setpoint per battery unit. bessctl and bess-hil included."; \
	} > dist/deb/DEBIAN/control
	dpkg-deb --root-owner-group --build dist/deb dist/bessd_$(VERSION)_amd64.deb
	@echo "built dist/bessd_$(VERSION)_amd64.deb"

clean:
	rm -rf .build .build-static .build-tsan dist
