@testable import Config
import ControlCore
import Testing

/// The frequency-response settings of issue 47 as the configuration file states them.
@Suite("Response settings (configuration)")
struct ResponseSettingsConfigTests {
    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n"

    @Test("GRID_ROCOF is configurable: threshold, and trip or derate")
    func rocofRule() throws {
        let derate = try ConfigLoader.parse(Self.unit + """
            interlocks:
              grid_rocof: {severity: derate, derate_start: 0.5, threshold: 1.0, delay_s: 0.2}
            """, file: "r.yaml")
        let rule = try #require(derate.unitSettings[0].rules.first { $0.code == .gridRocof })
        #expect(rule.metric == .rocof)
        #expect(rule.severity == .derate(start: 0.5) && rule.threshold == 1.0 && rule.delay == .milliseconds(200))
        let trip = try ConfigLoader.parse(Self.unit + "interlocks:\n  grid_rocof: {threshold: 0.8}\n", file: "t.yaml")
        let tripRule = try #require(trip.unitSettings[0].rules.first { $0.code == .gridRocof })
        #expect(tripRule.severity == .trip && tripRule.threshold == 0.8)
    }
}
