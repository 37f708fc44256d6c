@testable import bess_hil
import BessBase
import Config
import Foundation
import TestSupport
import Testing
import Yams

/// The scenario file's keys for the reactive axis: a dispatch's `dispatch_kvar`, the control
/// centre's 3003 and 3004, the per-unit and written var signals, and a `scada:` block served for its
/// `max_hold_s`.
@Suite("Scenario files: dispatch_kvar, IEC 104 3003/3004 and the var signals")
struct ScenarioReactiveFileTests {
    @Test("dispatch_kvar rides on a dispatch; 3003 and 3004 are sent after the others; the var signals are judged")
    func reactiveKeys() throws {
        let scenario = try ScenarioIEC104FileTests.load("""
            timeline:
              - {at_s: 2, dispatch_kw: 30, dispatch_kvar: -20, for_s: 40}
              - {at_s: 3, iec104: {site_power_factor: -0.95, site_var_setpoint_mvar: 0.04, site_setpoint_mw: 0.01}, confirm: positive}
            expect:
              - {from_s: 5, to_s: 9, unit_reactive_kvar: -20, tolerance: 1, reactive_setpoint_kvar_max: -19}
            """).get()
        #expect(scenario.needsAggregator && scenario.needsIEC104)
        guard case .dispatch(let kw, _, let unit, let kvar) = scenario.actions[0].kind,
              case .iec104(let orders) = scenario.actions[1].kind else {
            Issue.record("not a dispatch and an iec104 action: \(scenario.actions.map(\.label))")
            return
        }
        #expect(kw == 30 && kvar == -20 && unit == nil)
        #expect(scenario.actions[0].label == "dispatch 30.0 kW, -20.0 kvar")
        #expect(orders == [.siteSetpoint(0.01), .siteVarSetpoint(0.04), .sitePowerFactor(-0.95)])
        #expect(scenario.actions[1].label == "104 setpoint 10 kW, 104 var setpoint 40 kvar, 104 power factor -0.95")
        #expect(scenario.expectations[0].numeric.map(\.signal) == ["unit_reactive_kvar"])
        #expect(scenario.expectations[0].bounds.map(\.signal) == ["reactive_setpoint_kvar"])
        var sample = Sample(t: 6, frequency: 50, setpointKW: 30, powerKW: 30, socPercent: 60, reverted: false, bessdUp: true)
        sample.unitReactiveKVAr = -20.4
        sample.reactiveSetpointKVAr = -20
        #expect(sample.check(scenario.expectations[0]) == nil)
        sample.reactiveSetpointKVAr = -18
        #expect(sample.check(scenario.expectations[0])?.contains("reactive_setpoint_kvar") == true)
    }

    @Test("a dispatch_kvar that is not a number and a 3003 that is not a number are refused, each named")
    func refused() throws {
        let result = try ScenarioIEC104FileTests.load("""
            timeline:
              - {at_s: 2, dispatch_kw: 30, dispatch_kvar: lots, for_s: 40}
              - {at_s: 3, iec104: {site_var_setpoint_mvar: some}}
            expect:
              - {from_s: 5, to_s: 9, reactive_kvar: 0}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        #expect(error.message.contains("timeline[0].dispatch_kvar: a number (kvar)"), "\(error)")
        #expect(error.message.contains("timeline[1].iec104.site_var_setpoint_mvar: a number (Mvar, + = injecting)"), "\(error)")
    }

    @Test("a scada: block without listen is served on loopback, its max_hold_s kept")
    func scadaServedForItsHold() throws {
        let scenario = try ScenarioIEC104FileTests.load("""
            config: {scada: {max_hold_s: 10}}
            timeline:
              - {at_s: 3, iec104: {site_var_setpoint_mvar: 0.04}}
            expect:
              - {from_s: 5, to_s: 9, reactive_kvar: 40}
            """).get()
        let directory = NSTemporaryDirectory() + "bess-scenario-scada-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var config = ScenarioConfig(scenario: scenario, runDirectory: directory)
        try config.prepare(controlSocket: directory + "/control.sock", canInterface: "vcan0", pmu: nil, sep2Server: nil)
        let scada = try #require(config.config["scada"])
        #expect(config.scadaPort > 0)
        #expect(scada["listen"]?.string == "127.0.0.1:\(config.scadaPort)")
        #expect(scada["max_hold_s"]?.int == 10)
        let loaded = try ScenarioConfig.load(config.write("bessd.yaml", offset: 0, aggregatorPort: 0))
        #expect(loaded.scada?.maxHold == .seconds(10))
    }
}
