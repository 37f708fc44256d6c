@testable import Config
import ControlCore
import Testing

/// The voltage interlocks as the configuration shapes them: `interlocks.AC_OVERVOLTAGE` and the
/// others overridable as every row, within 0.5–1.5 p.u.; each level's `nominal_voltage_v` carried into
/// the settings the cycle runs on.
@Suite("Voltage interlocks (configuration)")
struct VoltageInterlockConfigTests {
    static let unit = ResponseSettingsConfigTests.unit

    @Test("AC_OVERVOLTAGE and GRID_UNDERVOLTAGE overridden: threshold, delay, hold, severity")
    func overrides() throws {
        let c = try ConfigLoader.parse(Self.unit + """
            interlocks:
              ac_overvoltage: {threshold: 1.05, delay_s: 1, hold_s: 5, severity: latch}
              grid_undervoltage: {threshold: 0.9, hysteresis: 0.01, severity: warn}
              AC_UNDERVOLTAGE: {enabled: false}
            """, file: "v.yaml")
        let rules = c.unitSettings[0].rules
        let over = try #require(rules.first { $0.code == .acOvervoltage })
        #expect(over.metric == .acVoltage && over.threshold == 1.05 && over.delay == .seconds(1) && over.hold == .seconds(5))
        #expect(over.severity == .latch)
        let under = try #require(rules.first { $0.code == .gridUndervoltage })
        #expect(under.severity == .warn && under.threshold == 0.9 && under.hysteresis == 0.01 && under.delay == .seconds(21))
        #expect(!rules.contains { $0.code == .acUndervoltage })
        #expect(rules.contains { $0.code == .gridOvervoltage && $0.threshold == 1.10 })
    }

    @Test("a threshold outside 0.5–1.5 p.u. is refused: such a reading is absent, so the row would never act")
    func physicalRange() {
        do {
            _ = try ConfigLoader.parse(Self.unit + "interlocks:\n  grid_overvoltage: {threshold: 1.6}\n", file: "r.yaml")
            Issue.record("accepted a threshold of 1.6 p.u.")
        } catch {
            #expect(error.diagnostics.map(\.keyPath) == ["interlocks.grid_overvoltage.threshold"], "\(error.diagnostics)")
            #expect(error.diagnostics.first?.description.contains("p.u.") == true, "\(error.diagnostics)")
        }
    }

    @Test("each level's nominal_voltage_v reaches the settings the cycle runs on")
    func nominals() throws {
        var c = try ConfigLoader.parse(Self.unit, file: "n.yaml")
        #expect(c.unitSettings[0].nominalVoltageV == nil && c.siteSettings.nominalVoltageV == nil)
        c.grid.reactivePower.nominalVoltageV = 230
        c.site.reactivePower.nominalVoltageV = 6350
        #expect(c.unitSettings[0].nominalVoltageV == 230)
        #expect(c.siteSettings.nominalVoltageV == 6350)
    }
}
