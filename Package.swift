// swift-tools-version: 6.1
// bessd — real-time edge controller for battery energy storage systems.

import PackageDescription

/// The same language mode and upcoming features on every target (../shared/STYLE.md: one dialect).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "bessd",
    products: [
        .executable(name: "bessd", targets: ["bessd"]),
        .executable(name: "bessctl", targets: ["bessctl"]),
        .executable(name: "bess-hil", targets: ["bess-hil"]),
        .executable(name: "bess-aggregator", targets: ["bess-aggregator"]),
        .library(name: "ControlCore", targets: ["ControlCore"]),
        // For the nested benchmark package (Benchmarks/Package.swift).
        .library(name: "Cycle", targets: ["Cycle"]),
        .library(name: "Simulation", targets: ["Simulation"]),
        .library(name: "Config", targets: ["Config"]),
        .library(name: "Planning", targets: ["Planning"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // C at the edge: one system library module per C library, a modulemap and a shim header only.
        .systemLibrary(
            name: "CModbus", pkgConfig: "libmodbus",
            providers: [.apt(["libmodbus-dev"])]),
        .systemLibrary(
            name: "CSocketCAN", pkgConfig: "libsocketcan",
            providers: [.apt(["libsocketcan-dev"])]),
        .systemLibrary(
            name: "CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        // Debian's OpenSSL 3 for the grid links' TLS (IEC 62351-3, IEEE 2030.5's CCM8 suite, which
        // swift-nio-ssl's BoringSSL lacks); BoringSSL's symbols are prefixed, so both link side by side.
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        // COIN-OR CBC (EPL-1.0, Debian's coinor-libcbc-dev): the optimiser's MILP solver, on its own thread.
        .systemLibrary(
            name: "CCbc", pkgConfig: "cbc",
            providers: [.apt(["coinor-libcbc-dev"])]),

        // Pure control law: no I/O, no Foundation, an injected clock.
        // `rounded()` lowers to libm's round(); link libm so the library stands alone.
        .target(name: "ControlCore", dependencies: ["BessBase", "GridSupport"], swiftSettings: swiftSettings, linkerSettings: [.linkedLibrary("m")]),
        // What every module shares that is not control law: the coded error, text quoting, the identifier
        // rule, the JSON lexer and string scanner, the utility control record, the listen address and IPv4
        // network values; stdlib only.
        .target(name: "BessBase", swiftSettings: swiftSettings),
        // System primitives outside the three C libraries: system calls, the clock (ControlCore's
        // instants and durations), the priority-inheriting lock, and every thread (worker threads,
        // real-time placement, names and CPU pins).
        // Linux headers the Glibc module leaves out (eventfd); header only.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .target(name: "BessSystem", dependencies: ["BessBase", "ControlCore", "CLinux"], swiftSettings: swiftSettings),
        // What bessctl needs and nothing more: the control socket's client and the version.
        .target(name: "ControlProtocol", dependencies: ["BessBase", "ControlCore", "BessSystem"], swiftSettings: swiftSettings),
        .target(
            name: "Fieldbus",
            dependencies: ["BessBase", "ControlCore", "BessSystem", "CModbus", "CSocketCAN"],
            swiftSettings: swiftSettings),
        // Configuration: the YAML schema, its diagnostics and the mapping to control settings (the only Yams user).
        .target(
            name: "Config",
            dependencies: ["BessBase", "ControlCore", "BessSystem", "Fieldbus", "Cycle", "IEC104", "IEEE2030_5", "GridSupport", "Planning", .product(name: "Yams", package: "Yams")],
            swiftSettings: swiftSettings),
        // The real-time cycle and the bus workers behind the SiteIO seam; never imports the simulator,
        // nor Config: it defines the settings it runs on (CycleSettings), and Config maps the YAML into them.
        .target(name: "Cycle", dependencies: ["BessBase", "ControlCore", "BessSystem", "Fieldbus"], swiftSettings: swiftSettings),
        // The simulated site bessd injects in modes simulation and hil: battery, inverter, meter and grid
        // models, fault schedules, and SimulatedSite (a SiteIO).
        .target(name: "Simulation", dependencies: ["ControlCore", "Fieldbus", "Config", "Cycle"], swiftSettings: swiftSettings),
        // The plant only bess-hil serves: SunSpec devices on Modbus TCP/RTU (a libmodbus server) and the rig
        // that drives them from the simulation.
        .target(
            name: "HILPlant", dependencies: ["BessBase", "Simulation", "ControlCore", "BessSystem", "Fieldbus", "CModbus", "Config", "Cycle"],
            swiftSettings: swiftSettings),
        // The site as a SunSpec device for plant SCADA (Modbus TCP server on its own thread).
        .target(
            name: "Scada", dependencies: ["BessBase", "ControlCore", "BessSystem", "Fieldbus", "CModbus", "Config", "Cycle"],
            swiftSettings: swiftSettings),
        // The IEC 60870-5-104 outstation for the grid operator's control centres (its own thread).
        .target(
            name: "Outstation", dependencies: ["BessBase", "IEC104", "ControlCore", "BessSystem", "Cycle", "TLSTransport"],
            swiftSettings: swiftSettings),
        // bessd as a service: lifecycle, watchdog, control socket, metrics, journal, latches, uplink recorder.
        .target(
            name: "Service",
            dependencies: [
                "BessBase", "ControlCore", "BessSystem", "ControlProtocol", "Config", "Cycle", "Fieldbus", "Uplink", "CSystemd", "Scada", "Outstation",
                "Sep2Link", "PMULink", "IEEE2030_5", "TLSTransport", "Planning", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),

        .target(
            name: "Uplink",
            dependencies: [
                "BessBase", "ControlCore", "BessSystem", "CMosquitto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings),
        // IEC 60870-5-104 as pure protocol (APCI, ASDU, CP56Time2a, the link state machine) and the
        // station's settings (points, command rights, redundancy groups: OutstationSettings, which Config
        // maps without linking the outstation or TLS): no sockets, no threads, no Foundation; ControlCore
        // for the monotonic instant only.
        .target(name: "IEC104", dependencies: ["BessBase", "ControlCore"], swiftSettings: swiftSettings),
        // IEEE C37.118.2-2011 synchrophasor frames as pure protocol (CRC, header, commands, CFG-1/2/3, data
        // frames): no sockets, no clock, no Foundation; ControlCore for the coded error only.
        .target(name: "Synchrophasor", dependencies: ["BessBase", "ControlCore"], swiftSettings: swiftSettings),
        // IEEE 2030.5 (CSIP, CSIP-AUS) as pure protocol: LFDI/SFDI from a certificate's SHA-256 (which the
        // caller's TLSTransport computes), a bounded namespace-aware XML reader, the DER control resources
        // and the event rules; no sockets, no OpenSSL.
        .target(name: "IEEE2030_5", dependencies: ["BessBase", "ControlCore"], swiftSettings: swiftSettings),
        // The aggregator's side of the uplink: reading and checking the batches gateways send.
        .target(name: "UplinkIngest", dependencies: ["BessBase", "Uplink", "ControlCore", "BessSystem"], swiftSettings: swiftSettings),
        // TLS over a non-blocking socket for the grid links (the 104 outstation's TLS port, the 2030.5
        // client): contexts with mutual authentication, allow-list and CRL; a connection in poll steps.
        .target(name: "TLSTransport", dependencies: ["BessBase", "ControlCore", "BessSystem", "COpenSSL"], swiftSettings: swiftSettings),
        // The IEEE 2030.5 client's I/O: HTTP/1.1 over TLSTransport on its own worker thread, the worker and its
        // durable schedule store.
        .target(
            name: "Sep2Link", dependencies: ["BessBase", "BessSystem", "ControlCore", "Cycle", "IEEE2030_5", "TLSTransport"],
            swiftSettings: swiftSettings),
        // The PMU's link: the reader thread following a C37.118.2 stream over TCP or UDP (Synchrophasor
        // decodes); it publishes into Cycle's FrequencySampleSlot, the cycle's seam.
        .target(name: "PMULink", dependencies: ["BessBase", "ControlCore", "BessSystem", "Cycle", "Synchrophasor"], swiftSettings: swiftSettings),
        // IEEE 1547-2018's reactive power and volt-watt control law (constant PF, constant var, volt-var,
        // watt-var, volt-watt, the response filter, the VAMax bound): pure, no Foundation, no allocation.
        .target(name: "GridSupport", dependencies: ["BessBase"], swiftSettings: swiftSettings),
        // The optimiser's pure half: the plan's problem (docs/optimiser.md), its MILP on CBC, the tariff,
        // the forecasts. No sockets, no threads of its own: Service runs it on the optimiser's worker.
        .target(name: "Planning", dependencies: ["BessBase", "CCbc"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "bessd",
            dependencies: [
                "Service", "Cycle", "Config", "Simulation", "ControlCore", "ControlProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "bessctl",
            // No NIO, TLS session or HTTP client: a socket client, the protocol, the trip-code table, the
            // field-bus decoders for `bessctl probe` (timed on BessSystem's clock), the 2030.5 LFDI/SFDI
            // of a certificate (TLSTransport's SHA-256, no TLS session) for `bessctl ieee2030-5 --cert`,
            // and Config for the device-profile reader (`bessctl profiles`, `probe`): the same strict
            // reader bessd runs, so the two never disagree about a profile.
            dependencies: [
                "BessBase", "ControlProtocol", "ControlCore", "Fieldbus", "BessSystem", "IEEE2030_5", "TLSTransport", "Config",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "bess-hil",
            dependencies: [
                "BessBase", "Simulation", "HILPlant", "Cycle", "Config", "ControlCore", "ControlProtocol", "Uplink", "Fieldbus", "BessSystem", "CLinux", "Scada", "IEC104",
                "Outstation",
                "Synchrophasor", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings),

        .executableTarget(
            name: "bess-aggregator",
            dependencies: [
                "BessBase", "Uplink", "UplinkIngest", "BessSystem", "ControlCore", "ControlProtocol",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ControlCoreTests",
            dependencies: [
                "BessBase", "ControlCore", "GridSupport", "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings),
        // The grid-support law against EPRI OpenDER (PyPI opender) and its own properties.
        .testTarget(
            name: "GridSupportTests", dependencies: ["GridSupport", "BessBase", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "FieldbusTests",
            dependencies: [
                "BessBase", "Fieldbus", "ControlCore", "CModbus", "CSocketCAN",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings),
        // The optimiser against HiGHS (scipy's milp, PyPI): the objective of every kept case within 0.1 %.
        .testTarget(name: "PlanningTests", dependencies: ["BessBase", "Planning", "TestSupport"], exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(name: "UplinkTests", dependencies: ["BessBase", "Uplink", "UplinkIngest", "ControlCore", "BessSystem"], swiftSettings: swiftSettings),
        .testTarget(name: "BessSystemTests", dependencies: ["BessBase", "BessSystem", "ControlCore", "TestSupport"], swiftSettings: swiftSettings),
        // TLS against the openssl command as the independent peer, certificates made at test time.
        .testTarget(name: "TLSTransportTests", dependencies: ["BessBase", "TLSTransport", "BessSystem", "TestSupport", "Outstation", "ControlCore"], swiftSettings: swiftSettings),
        // The 104 codec and link byte-exact from the standard, and against c104 and iec60870-parser (PyPI).
        .testTarget(name: "IEC104Tests", dependencies: ["BessBase", "IEC104", "ControlCore", "TestSupport"], swiftSettings: swiftSettings),
        // The C37.118 codec from the standard, against binascii.crc_hqx and pyPMU (PyPI synchrophasor).
        .testTarget(name: "SynchrophasorTests", dependencies: ["BessBase", "Synchrophasor", "ControlCore", "TestSupport"], swiftSettings: swiftSettings),
        // LFDI/SFDI against sep2cert, documents from envoy-schema's models, event rules against sep2tools (PyPI).
        .testTarget(name: "IEEE2030_5Tests", dependencies: ["BessBase", "IEEE2030_5", "ControlCore", "TestSupport", "TLSTransport"], swiftSettings: swiftSettings),
        // The HTTPS client against a Python TLS peer (CCM8, client certificate required); the worker.
        .testTarget(
            name: "Sep2LinkTests", dependencies: ["BessBase", "Sep2Link", "TLSTransport", "IEEE2030_5", "Config", "Cycle", "BessSystem", "ControlCore", "TestSupport", "Uplink", "UplinkIngest"],
            swiftSettings: swiftSettings),
        .testTarget(name: "OutstationTests", dependencies: ["Outstation", "IEC104", "Config", "Cycle", "ControlCore", "BessSystem", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PlantTests", dependencies: ["BessBase", "Simulation", "HILPlant", "ControlCore", "BessSystem", "Fieldbus", "Config", "Cycle", "TestSupport"],
            swiftSettings: swiftSettings),
        // What every test target that runs a process or waits shares: the package's paths, running its
        // executables and peers, waiting on a condition, loopback ports, a raw IEC 104 station, OpenDER.
        .target(name: "TestSupport", dependencies: ["BessSystem", "ControlCore", "GridSupport", "IEC104"], path: "Tests/TestSupport", swiftSettings: swiftSettings),
        .testTarget(
            name: "ConfigTests", dependencies: ["Config", "ControlCore", "BessSystem", "Fieldbus", "TestSupport", "Outstation"],
            swiftSettings: swiftSettings),
        // The cycle, its poller and workers against SunSpec peers (the HIL plant's server among them).
        .testTarget(
            name: "CycleTests", dependencies: ["BessBase", "Cycle", "PMULink", "Config", "ControlCore", "Fieldbus", "BessSystem", "HILPlant", "TestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ScadaTests", dependencies: ["Scada", "Cycle", "Config", "ControlCore", "BessSystem", "TestSupport"],
            swiftSettings: swiftSettings),
        // The service and the daemon, in and out of process; the programs end to end.
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "BessBase", "Service", "Cycle", "Config", "ControlCore", "ControlProtocol", "Fieldbus", "Simulation", "HILPlant", "Uplink", "UplinkIngest", "CSystemd", "BessSystem",
                "Scada", "bess-hil", "TestSupport", "IEC104", "Outstation", "Sep2Link", "PMULink",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The fuzz harnesses (Fuzz/FuzzTargets, through the link Tests/FuzzTests/Harnesses) over every
        // target's seeds and Tests/FuzzRegressions: the same code make fuzz runs under libFuzzer.
        .testTarget(
            name: "FuzzTests",
            dependencies: [
                "BessBase", "ControlCore", "ControlProtocol", "BessSystem", "Fieldbus", "Config", "Cycle", "Simulation", "HILPlant", "Scada", "Service", "Uplink", "UplinkIngest",
                "IEC104", "Outstation", "Synchrophasor", "IEEE2030_5", "Sep2Link", "Planning", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
    ]
)

// The fuzz harnesses as libFuzzer targets (Fuzz/; docs/fuzzing.md): targets only when BESS_FUZZ is
// set, as make fuzz sets it for its own build in .build-fuzz, so `swift build` never compiles them.
// They stay in this package because they use its `package` API (the daemon's shared state, the
// control verbs, the dispatch intake).
if Context.environment["BESS_FUZZ"] != nil {
    package.targets += [
        .target(
            name: "FuzzTargets",
            dependencies: [
                "BessBase", "ControlCore", "ControlProtocol", "BessSystem", "Fieldbus", "Config", "Cycle", "Simulation", "HILPlant", "Scada", "Service", "Uplink", "UplinkIngest",
                "IEC104", "Outstation", "Synchrophasor", "IEEE2030_5", "Sep2Link", "Planning", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Fuzz/FuzzTargets",
            swiftSettings: swiftSettings),
        .systemLibrary(name: "CFuzzer", path: "Fuzz/CFuzzer"),
        .executableTarget(name: "bess-fuzz", dependencies: ["FuzzTargets", "CFuzzer"], path: "Fuzz/bess-fuzz", swiftSettings: swiftSettings),
    ]
}
