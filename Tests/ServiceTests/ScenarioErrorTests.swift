@testable import bess_hil
import BessBase
import ControlCore
import Foundation
import TestSupport
import Testing

@Suite("Scenario error codes: typed, with the names make scenarios prints")
struct ScenarioErrorCodeTests {
    static let rows: [(ScenarioError.Code, String)] = [
        (.invalid, "SCENARIO_INVALID"),
        (.unreadable, "SCENARIO_UNREADABLE"),
        (.io, "SCENARIO_IO"),
        (.configInvalid, "SCENARIO_CONFIG_INVALID"),
        (.bessdMissing, "SCENARIO_BESSD_MISSING"),
        (.bessdFailed, "SCENARIO_BESSD_FAILED"),
        (.aggregatorMissing, "SCENARIO_AGGREGATOR_MISSING"),
        (.aggregatorFailed, "SCENARIO_AGGREGATOR_FAILED"),
        (.plantFailed, "SCENARIO_PLANT_FAILED"),
        (.plotFailed, "SCENARIO_PLOT_FAILED"),
        (.iec104, "SCENARIO_IEC104_FAILED"),
    ]

    @Test("each code prints its stable name", arguments: rows)
    func names(code: ScenarioError.Code, name: String) {
        #expect(code.description == name)
        #expect(ScenarioError(code, "m").description == "\(name): m")
    }

    @Test("every code has a name of its own")
    func distinct() {
        #expect(Set(Self.rows.map(\.1)).count == Self.rows.count)
        #expect(Set(Self.rows.map(\.0)).count == Self.rows.count)
    }
}

@Suite("Scenario files: the control centre's iec104 actions and journal expectations")
struct ScenarioIEC104FileTests {
    static func load(_ body: String) throws -> Result<Scenario, ScenarioError> {
        let path = NSTemporaryDirectory() + "bess-scenario-\(UInt32.random(in: 0...UInt32.max)).yaml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rig = Package.root.appendingPathComponent("hil/rigs/scenario.yaml").path
        try "name: t\nrig: \(rig)\nduration_s: 20\n\(body)".write(toFile: path, atomically: true, encoding: .utf8)
        do { return .success(try Scenario.load(path)) } catch { return .failure(error) }
    }

    @Test("an iec104 action sends in service before the target, and keeps the confirmation the file expects")
    func orders() throws {
        let scenario = try Self.load("""
            timeline:
              - {at_s: 2, iec104: {agc_setpoint_mw: 0.15, agc_in_service: true}, confirm: negative}
              - {at_s: 3, iec104: {site_setpoint_mw: -0.05}}
            expect:
              - {from_s: 10, to_s: 12, journal: AGC_SIGNAL_LOST}
              - {from_s: 0, to_s: 9, no_journal: [AGC_SIGNAL_LOST, IEC104_PROTOCOL_ERROR]}
              - {at_s: 5, agc_target_kw: 100, agc_followed_kw_max: 90, agc_following: "true", agc_signal_lost: "false"}
            """).get()
        #expect(scenario.needsIEC104)
        guard case .iec104(let first) = scenario.actions[0].kind, case .iec104(let second) = scenario.actions[1].kind else {
            Issue.record("not iec104 actions: \(scenario.actions.map(\.label))")
            return
        }
        #expect(first == [.agcInService(true), .agcSetpoint(0.15)])
        #expect(scenario.actions[0].wantPositive == false)
        #expect(second == [.siteSetpoint(-0.05)])
        #expect(scenario.actions[1].wantPositive == nil)
        #expect(scenario.expectations[0].journal.map(\.text) == ["AGC_SIGNAL_LOST"])
        #expect(scenario.expectations[1].journal.map(\.present) == [false, false])
        #expect(scenario.expectations[2].numeric.map(\.signal) == ["agc_target_kw"])
        #expect(scenario.expectations[2].bounds.map(\.signal) == ["agc_followed_kw"])
        #expect(scenario.expectations[2].flags.map(\.signal) == ["agc_following", "agc_signal_lost"])
    }

    @Test("an unknown command, a confirm elsewhere and a journal mixed with samples are refused, each named")
    func refused() throws {
        let result = try Self.load("""
            timeline:
              - {at_s: 2, iec104: {agc_setpoint: 0.15}}
              - {at_s: 3, frequency_hz: 49.5, confirm: positive}
              - {at_s: 4, iec104: {agc_in_service: maybe}}
            expect:
              - {from_s: 10, to_s: 12, journal: AGC_SIGNAL_LOST, site_power_kw: 3}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        #expect(error.code == .invalid)
        #expect(error.message.contains("timeline[0].iec104.agc_setpoint: unknown command"), "\(error)")
        #expect(error.message.contains("timeline[1].confirm: positive or negative, on an iec104 action"), "\(error)")
        #expect(error.message.contains("timeline[2].iec104.agc_in_service: true or false"), "\(error)")
        #expect(error.message.contains("expect[0]: journal / no_journal stand alone"), "\(error)")
    }
}
