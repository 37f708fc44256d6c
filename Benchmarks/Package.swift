// swift-tools-version: 6.1
// Allocation benchmarks for the control cycle, in a package of their own so that building bessd
// never builds the benchmark framework. Run with `make bench` (or, here,
// `swift package --allow-writing-to-directory .benchmarkBaselines benchmark`).
import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder: the checkout's, whatever it is called
/// (`main` in CI, anything in a developer's clone).
let bessd = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

let package = Package(
    name: "bessd-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CycleAllocations",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Cycle", package: bessd),
                .product(name: "Simulation", package: bessd),
                .product(name: "Config", package: bessd),
                .product(name: "ControlCore", package: bessd),
            ],
            path: "Benchmarks/CycleAllocations",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The optimiser's solve times (Planning, which the Config product links).
        .executableTarget(
            name: "PlanSolve",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Config", package: bessd),
            ],
            path: "Benchmarks/PlanSolve",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // What a BMS costs its worker per frame: today's Pylontech decoder against the same frames
        // through the profile compiled from its YAML, and a Modbus rack BMS (issue 61).
        .executableTarget(
            name: "BMSDecode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Config", package: bessd),
                .product(name: "ControlCore", package: bessd),
            ],
            path: "Benchmarks/BMSDecode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
