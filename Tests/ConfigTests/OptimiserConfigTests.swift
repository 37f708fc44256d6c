@testable import Config
import Foundation
import Planning
import TestSupport
import Testing

/// `optimiser:` as the configuration file states it (config/bessd.yaml, docs/optimiser.md).
@Suite("Optimiser (configuration)")
struct OptimiserConfigTests {
    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\nschedule: {block_s: 900}\n"
    static let tariff = """
        optimiser:
          enabled: true
          time_zone: Asia/Kolkata
          tariff:
            weekdays:
              - {from: "00:00", to: "09:00", import_per_kwh: 6.0, export_per_kwh: 3.0}
              - {from: "09:00", to: "17:00", import_per_kwh: 4.8, export_per_kwh: 3.0}
              - {from: "17:00", to: "24:00", import_per_kwh: 7.2, export_per_kwh: 3.0}
            weekends:
              - {from: "00:00", to: "24:00", import_per_kwh: 5.0, export_per_kwh: 2.5}

        """

    @Test("left out: none; every key reaches the configuration, the tariff priced in its zone")
    func keys() throws {
        #expect(try ConfigLoader.parse(Self.unit, file: "n.yaml").optimiser == nil)
        let c = try ConfigLoader.parse(Self.unit + Self.tariff + """
              horizon_blocks: 192
              forecast_file: /var/lib/bessd/forecast.csv
              wear_per_kwh: 0.5
              demand_charge_per_kw: 300
              demand_threshold_kw: 80
              value_end_per_kwh: 4
              end_soc_percent: 50
              efficiency: {charge: 0.96, discharge: 0.94}
            """, file: "o.yaml")
        let o = try #require(c.optimiser)
        #expect(o.enabled && o.horizonBlocks == 192 && o.forecastFile == "/var/lib/bessd/forecast.csv")
        #expect(o.wearPerKWh == 0.5 && o.demandChargePerKW == 300 && o.demandThresholdKW == 80 && o.valueEndPerKWh == 4)
        #expect(o.endSOCPercent == 50 && o.chargeEfficiency == 0.96 && o.dischargeEfficiency == 0.94)
        #expect(o.timeZone.identifier == "Asia/Kolkata")
        // Monday 2026-12-07 18:30 IST = 13:00 UTC: the evening band; Sunday the weekend's.
        let tariff = try #require(o.tariff)
        #expect(tariff.price(atUnixSeconds: 1_796_648_400).importPerKWh == 7.2)
        #expect(tariff.price(atUnixSeconds: 1_796_648_400 - 86_400).importPerKWh == 5.0)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var yaml: String
        var keyPath: String
        var message: String
        var testDescription: String { "\(keyPath): \(message)" }
    }

    static let badCases: [Bad] = [
        Bad(yaml: "optimiser:\n  horizon_blocks: 0\n", keyPath: "optimiser.horizon_blocks", message: "must be from 1 to 672"),
        Bad(yaml: "optimiser:\n  efficiency: {charge: 0}\n", keyPath: "optimiser.efficiency.charge", message: "greater than 0"),
        Bad(yaml: "optimiser:\n  time_zone: Mars/Olympus\n", keyPath: "optimiser.time_zone", message: "IANA time zone"),
        Bad(yaml: "optimiser:\n  forecast_file: forecast.csv\n", keyPath: "optimiser.forecast_file", message: "absolute path"),
        Bad(yaml: "optimiser:\n  wear: 1\n", keyPath: "optimiser.wear", message: "unknown key"),
        Bad(yaml: "optimiser:\n  tariff:\n    weekdays:\n      - {from: \"00:00\", to: \"12:00\", import_per_kwh: 5, export_per_kwh: 2}\n"
                + "    weekends:\n      - {from: \"00:00\", to: \"24:00\", import_per_kwh: 5, export_per_kwh: 2}\n",
            keyPath: "optimiser.tariff", message: "PLAN_TARIFF_INVALID: weekdays: no band covers 12:00"),
        Bad(yaml: "optimiser:\n  tariff:\n    weekdays:\n      - {from: \"7am\", to: \"24:00\", import_per_kwh: 5, export_per_kwh: 2}\n"
                + "    weekends:\n      - {from: \"00:00\", to: \"24:00\", import_per_kwh: 5, export_per_kwh: 2}\n",
            keyPath: "optimiser.tariff.weekdays[0]", message: "is not HH:MM"),
        Bad(yaml: "optimiser:\n  tariff:\n    weekdays:\n      - {from: \"00:00\", to: \"24:00\", import_per_kwh: 5}\n"
                + "    weekends:\n      - {from: \"00:00\", to: \"24:00\", import_per_kwh: 5, export_per_kwh: 2}\n",
            keyPath: "optimiser.tariff.weekdays[0].export_per_kwh", message: "is required"),
        Bad(yaml: "optimiser:\n  tariff:\n    weekdays:\n      - {from: \"00:00\", to: \"24:00\", import_per_kwh: 5, export_per_kwh: 2}\n",
            keyPath: "optimiser.tariff.weekends", message: "is required"),
    ]

    @Test("a wrong value, a tariff that leaves part of the day bare or an unknown key is refused with its key path",
          arguments: badCases)
    func refused(bad: Bad) {
        let error = #expect(throws: ConfigurationError.self) {
            _ = try ConfigLoader.parse(Self.unit + bad.yaml, file: "bad.yaml")
        }
        let diagnostics = error?.diagnostics ?? []
        #expect(diagnostics.count == 1, "\(String(describing: error))")
        #expect(diagnostics.first?.keyPath == bad.keyPath, "\(String(describing: error))")
        #expect(diagnostics.first?.line != nil, "\(String(describing: error))")
        #expect(diagnostics.first?.message.contains(bad.message) == true, "\(String(describing: error))")
    }

    @Test("enabled without a schedule: section is refused: the plan runs as a block schedule")
    func needsSchedule() {
        let yaml = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n" + Self.tariff
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(yaml, file: "s.yaml") }
        #expect(error?.diagnostics.first?.keyPath == "optimiser.enabled", "\(String(describing: error))")
    }

    @Test("enabled without a tariff or an aggregator is refused: nothing would price the plan")
    func needsPrices() {
        let error = #expect(throws: ConfigurationError.self) {
            _ = try ConfigLoader.parse(Self.unit + "optimiser: {enabled: true}\n", file: "p.yaml")
        }
        #expect(error?.diagnostics.first?.keyPath == "optimiser.tariff", "\(String(describing: error))")
    }

    @Test("config/bessd.yaml documents the section with every key")
    func reference() throws {
        let text = try String(contentsOf: Package.root.appendingPathComponent("config/bessd.yaml"), encoding: .utf8)
        #expect(text.contains("# optimiser:\n"))
        for key in OptimiserConfiguration.keys.names { #expect(text.contains("#   \(key):"), "\(key)") }
    }
}
