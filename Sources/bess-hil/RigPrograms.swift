import Foundation

/// The programs a scenario runs beside the plant: bessd, bess-aggregator, gnuplot.
enum RigPrograms {
    /// `name` on PATH, when it is an executable file.
    static func program(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The programs a scenario needs, checked before the first second of it runs: a missing one
    /// costs the verdict at once (`SCENARIO_BESSD_MISSING`, `SCENARIO_AGGREGATOR_MISSING`), not at
    /// the end of the run.
    static func missingPrograms(for scenario: Scenario, bessdPath: String, aggregatorPath: String) -> ScenarioError? {
        if !FileManager.default.isExecutableFile(atPath: bessdPath) {
            return ScenarioError(.bessdMissing, "no bessd at \(bessdPath) (build it: swift build, or pass --bessd PATH)")
        }
        if scenario.needsAggregator, !FileManager.default.isExecutableFile(atPath: aggregatorPath)
        {
            return ScenarioError(.aggregatorMissing,
                                 "this scenario needs bess-aggregator and there is none at \(aggregatorPath) (pass --aggregator PATH)")
        }
        return nil
    }
}
