import ArgumentParser

/// The bessd a wire bench starts: its control period and its binary (`--period-ms`, `--bessd`),
/// the same in every bench.
struct BenchBessdOptions: ParsableArguments {
    @Option(help: "bessd's control period, ms.") var periodMs = 100
    @Option(name: .customLong("bessd"), help: "The bessd binary (default: next to bess-hil).") var binary: String?

    /// The binary to run.
    var path: String { binary ?? sibling("bessd") }
}

/// The programs a scenario or a soak runs beside the plant, and the CAN interface its BMS sends
/// on (`--bessd`, `--aggregator`, `--can-interface`).
struct ScenarioPrograms: ParsableArguments {
    @Option(name: .customLong("bessd"), help: "The bessd binary (default: next to bess-hil).") var bessd: String?
    @Option(name: .customLong("aggregator"), help: "The bess-aggregator binary, for runs that dispatch (default: next to bess-hil).")
    var aggregator: String?
    @Option(help: "The CAN interface the plant's BMS sends on, for runs that need one.") var canInterface = "vcan0"

    var bessdPath: String { bessd ?? sibling("bessd") }
    var aggregatorPath: String { aggregator ?? sibling("bess-aggregator") }
}
