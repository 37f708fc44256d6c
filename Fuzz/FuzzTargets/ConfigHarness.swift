import Config
import ControlCore
import Cycle

/// YAML text into the configuration loader (what `bessd check-config` runs). Invariants: a refusal
/// says `FILE:LINE: key.path: …` for every problem, never nothing; an accepted configuration is one
/// check-config's own rules allow: units present with unique ids, ratings and capacities positive and
/// finite, the period in range, nothing simulated in hardware mode, no latching rule downgraded or
/// disabled.
enum ConfigHarness {
    static let file = "fuzz.yaml"

    static func run(_ input: inout FuzzInput) -> [String] {
        let text = String(decoding: input.rest(), as: UTF8.self)
        var violations = Violations()
        let configuration: BessdConfiguration
        do {
            configuration = try ConfigLoader.parse(text, file: file)
        } catch {
            violations.check(!error.diagnostics.isEmpty && !error.diagnostics.contains { $0.code == .unexplained },
                             "refused with no diagnostic")
            for d in error.diagnostics {
                violations.check(d.description.hasPrefix(file) && !d.message.isEmpty,
                                 "diagnostic without file or message: \(d.description)")
            }
            return violations.list
        }
        check(configuration, into: &violations)
        return violations.list
    }

    static func check(_ c: BessdConfiguration, into violations: inout Violations) {
        violations.check(!c.units.isEmpty, "accepted with no bess_units")
        violations.check(Set(c.units.map(\.id)).count == c.units.count, "accepted with duplicate unit ids \(c.units.map(\.id))")
        violations.check(c.units.allSatisfy { !$0.id.isEmpty }, "accepted with an empty unit id")
        violations.check((10...1000).contains(c.periodMs), "accepted period_ms \(c.periodMs)")
        for unit in c.units {
            violations.check(unit.maxPowerKW.isFinite && unit.maxPowerKW > 0, "unit \(unit.id): accepted max_power_kw \(unit.maxPowerKW)")
            violations.check(unit.capacityKWh.isFinite && unit.capacityKWh > 0, "unit \(unit.id): accepted capacity_kwh \(unit.capacityKWh)")
            violations.check(unit.inverterStaleAfter > .zero,
                             "unit \(unit.id): accepted inverter stale_after_s \(unit.inverterStaleAfter)")
        }
        violations.check(c.limitRampPercentPerSecond.isFinite && c.limitRampPercentPerSecond > 0,
                         "accepted limit ramp \(c.limitRampPercentPerSecond) %/s")
        violations.check(c.scheduleRampPercentPerSecond.isFinite && c.scheduleRampPercentPerSecond > 0,
                         "accepted schedule ramp \(c.scheduleRampPercentPerSecond) %/s")
        if c.mode == .hardware { violations.check(!c.usesSimulation, "mode hardware accepted with a simulated input") }
        let latching = Set(InterlockRule.defaultTable().filter { $0.severity == .latch }.map(\.code))
        for (code, override) in c.interlocks where latching.contains(code) {
            violations.check(override.enabled, "latching rule \(code.name) accepted disabled")
            violations.check(override.severity == nil || override.severity == "latch",
                             "latching rule \(code.name) accepted as \(override.severity ?? "")")
        }
    }

    static func seeds() -> [[UInt8]] {
        [Array(EmbeddedConfiguration.simulationYAML.utf8)]
    }
}
