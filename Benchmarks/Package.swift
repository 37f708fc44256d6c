// swift-tools-version: 6.1
// Allocation benchmarks for the control cycle, in a package of their own so that building bessd
// never builds the benchmark framework. Run with `make bench` (or, here,
// `swift package --allow-writing-to-directory .benchmarkBaselines benchmark`).
import PackageDescription

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
                .product(name: "Cycle", package: "main"),
                .product(name: "Simulation", package: "main"),
                .product(name: "Config", package: "main"),
                .product(name: "ControlCore", package: "main"),
            ],
            path: "Benchmarks/CycleAllocations",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
