import Config
import ControlCore
import Cycle
import Planning

/// YAML text into the configuration loader (what `bessd check-config` runs). Invariants: a refusal
/// says `FILE:LINE: key.path: …` for every problem, never nothing; an accepted configuration is one
/// check-config's own rules allow: units present with unique ids, ratings and capacities positive and
/// finite, the period in range, nothing simulated in hardware mode, no latching rule downgraded or
/// disabled; a `schedule:` section's block length 60–3600 s and its gate in range; an `optimiser:`
/// section's horizon 1–672 blocks, its efficiencies in (0, 1], its costs finite and ≥ 0, and its
/// tariff a finite price for every minute of a week in its zone.
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
        if let s = c.schedule {
            violations.check((60...3600).contains(s.blockSeconds), "accepted schedule.block_s \(s.blockSeconds)")
            violations.check(s.revisionGateBlocks >= 0 && s.revisionGateAlign >= 1, "accepted a gate of \(s.revisionGateBlocks), align \(s.revisionGateAlign)")
        }
        if let o = c.optimiser { check(o, into: &violations) }
    }

    static func check(_ o: OptimiserConfiguration, into violations: inout Violations) {
        violations.check((1...672).contains(o.horizonBlocks), "accepted optimiser.horizon_blocks \(o.horizonBlocks)")
        violations.check([o.chargeEfficiency, o.dischargeEfficiency].allSatisfy { $0 > 0 && $0 <= 1 },
                         "accepted efficiencies \(o.chargeEfficiency), \(o.dischargeEfficiency)")
        violations.check([o.wearPerKWh, o.demandChargePerKW, o.demandThresholdKW, o.valueEndPerKWh].allSatisfy { $0.isFinite && $0 >= 0 },
                         "accepted a cost that is negative or not finite")
        violations.check(o.endSOCPercent.map { (0...100).contains($0) } ?? true, "accepted end_soc_percent \(o.endSOCPercent ?? 0)")
        guard let tariff = o.tariff else { return }
        // Every 7 minutes of a week from 2026-11-29T00:00Z (a Sunday): every minute of the day meets
        // every weekday and hour over the week's steps.
        for step in stride(from: Int64(0), to: 7 * 86_400, by: 420) {
            let price = tariff.price(atUnixSeconds: 1_795_910_400 + step)
            guard price.importPerKWh.isFinite && price.exportPerKWh.isFinite else {
                violations.list.append("the tariff prices \(step) s into the week at \(price)")
                return
            }
        }
    }

    /// The embedded configuration, and the same with a block schedule and the optimiser (a tariff
    /// whose weekday bands wrap past midnight, a forecast file) as issue 60 reads them.
    static func seeds() -> [[UInt8]] {
        let schedule = """

            schedule:
              block_s: 900
              fallback: zero
              revision_gate_blocks: 6
              revision_gate_align: 2
            optimiser:
              enabled: true
              horizon_blocks: 96
              time_zone: Asia/Kolkata
              tariff:
                weekdays:
                  - {from: "22:00", to: "06:00", import_per_kwh: 6.5, export_per_kwh: 3.00}
                  - {from: "06:00", to: "09:00", import_per_kwh: 7.50, export_per_kwh: 3.00}
                  - {from: "09:00", to: "17:00", import_per_kwh: 6.00, export_per_kwh: -0.25}
                  - {from: "17:00", to: "22:00", import_per_kwh: 9.00, export_per_kwh: 3.00}
                weekends:
                  - {from: "00:00", to: "24:00", import_per_kwh: 7.50, export_per_kwh: 3.00}
              forecast_file: /var/lib/bessd/forecast.csv
              wear_per_kwh: 0.5
              demand_charge_per_kw: 250
              demand_threshold_kw: 300
              value_end_per_kwh: 0
              end_soc_percent: 50
              efficiency: {charge: 0.95, discharge: 0.95}

            """
        return [Array(EmbeddedConfiguration.simulationYAML.utf8), Array((EmbeddedConfiguration.simulationYAML + schedule).utf8)]
    }
}
