@testable import bess_hil
import BessBase
import ControlCore
import Foundation
import TestSupport
import Testing

/// The scenarios' utility (hil/README.md): the `sep2:` section, `sep2` steps and the `reversals`
/// expectation as a file states them, and the limits read from bessd's status.
@Suite("Scenario files and the plant's 2030.5 server: sep2 steps, limits, outage, reversals")
struct ScenarioSep2Tests {
    static func load(_ body: String) throws -> Result<Scenario, ScenarioError> { try ScenarioIEC104FileTests.load(body) }

    /// Control: limits, start, duration.
    @Test("a sep2: section and its steps are read: control, cancel, default, server stop/start")
    func steps() throws {
        let scenario = try Self.load("""
            sep2: {poll_s: 3, default: {opModExpLimW: 20000}}
            timeline:
              - {at_s: 1, sep2: {control: E1, start_s: 10, duration_s: 20, opModExpLimW: 5000}}
              - {at_s: 2, sep2: {control: A2, duration_s: 30, opModImpLimW: 50000, opModLoadLimW: 10000}}
              - {at_s: 3, sep2: {cancel: E1}}
              - {at_s: 4, sep2: {default: {opModGenLimW: 0}}}
              - {at_s: 5, sep2: {server: stop}}
              - {at_s: 6, sep2: {server: silent}}
              - {at_s: 7, sep2: {server: start}}
            expect:
              - {from_s: 12, to_s: 19, sep2_export_limit_kw: 5, grid_kw_min: -5.3}
              - {from_s: 12, to_s: 19, reversals: {signal: grid_kw, max: 2, deadband: 0.5}}
            """).get()
        #expect(scenario.sep2?.pollSeconds == 3 && scenario.sep2?.defaultLimits == ["opModExpLimW": 20000])
        #expect(scenario.sep2?.peersDirectory.hasSuffix("/peers") == true)
        let orders = scenario.actions.compactMap { if case .sep2(let order) = $0.kind { order } else { nil } }
        #expect(orders == [
            .control(mrid: "E1", start: 10, duration: 20, limits: ["opModExpLimW": 5000]),
            .control(mrid: "A2", start: nil, duration: 30, limits: ["opModImpLimW": 50000, "opModLoadLimW": 10000]),
            .cancel("E1"), .defaultControl(["opModGenLimW": 0]), .answering(.stop), .answering(.silent), .answering(.start),
        ])
        #expect(scenario.actions.map(\.label) == [
            "2030.5 E1: export 5 kW from 10 s", "2030.5 A2: import 50 kW, load 10 kW", "2030.5 cancel E1", "2030.5 default: generation 0 kW",
            "2030.5 server outage", "2030.5 server silent", "2030.5 server answers",
        ])
        #expect(scenario.expectations[0].numeric.map(\.signal) == ["sep2_export_limit_kw"])
        #expect(scenario.expectations[1].reversals == Scenario.Reversals(signal: "grid_kw", max: 2, deadband: 0.5))
        #expect(try Self.load("expect:\n  - {at_s: 2, setpoint_kw: 5}").get().sep2 == nil)
    }

    @Test("bad sep2 steps, sections and reversals are refused, each named")
    func refused() throws {
        let result = try Self.load("""
            sep2: {poll_s: 0, default: {opModFixedW: 5}, pin: 1}
            timeline:
              - {at_s: 1, sep2: {control: X-1, duration_s: 20, opModExpLimW: 5000}}
              - {at_s: 2, sep2: {control: E2, opModExpLimW: 5000}}
              - {at_s: 3, sep2: {control: E3, duration_s: 20, opModExpLimW: -1}}
              - {at_s: 4, sep2: {cancel: E1, opModExpLimW: 1}}
              - {at_s: 5, sep2: {server: pause}}
              - {at_s: 6, sep2: {control: E4, cancel: E4, duration_s: 5}}
            expect:
              - {from_s: 1, to_s: 4, reversals: {signal: grid_kw, max: 2, deadband: 0.5}, grid_kw: 0}
              - {at_s: 3, reversals: {signal: grid_kw, max: 2, deadband: 0.5}}
              - {from_s: 1, to_s: 4, reversals: {signal: nothing, max: 2, deadband: 0.5}}
              - {from_s: 1, to_s: 4, rate: {signal: grid_kw, max_per_s: 0}}
              - {at_s: 3, rate: {signal: grid_kw, max_per_s: 5}}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        #expect(error.code == .invalid)
        for text in ["sep2.poll_s: whole seconds, 1–300", "sep2.default.opModFixedW: unknown limit", "sep2.pin: unknown key",
                     "timeline[0].sep2.control: an mRID: 1–32 hex digits", "timeline[1].sep2.duration_s: is required, ≥ 1 s",
                     "timeline[2].sep2.opModExpLimW: whole watts", "timeline[3].sep2.opModExpLimW: unknown key with cancel",
                     "timeline[4].sep2.server: stop, silent or start", "timeline[5].sep2: names one of control, cancel, default, server",
                     "expect[0]: reversals stands alone", "expect[1]: reversals stands alone", "expect[2].reversals: {signal: a numeric signal",
                     "expect[3].rate: {signal: a numeric signal, max_per_s: > 0}", "expect[4]: rate stands alone"] {
            #expect(error.message.contains(text), "\(text) in \(error)")
        }
        let orphan = try Self.load("timeline:\n  - {at_s: 1, sep2: {cancel: E1}}\nexpect:\n  - {at_s: 2, setpoint_kw: 5}")
        guard case .failure(let missing) = orphan else {
            Issue.record("a sep2 step without a sep2: section loaded")
            return
        }
        #expect(missing.message.contains("timeline[0].sep2: needs the scenario's sep2: section"), "\(missing)")
    }

    @Test("reversals: noise below the deadband counts none; hunting around the limit counts every turn")
    func reversals() {
        let rule = Scenario.Reversals(signal: "grid_kw", max: 2, deadband: 0.5)
        let held: [Double] = (0..<100).map { (i: Int) -> Double in -1.5 + 0.2 * sin(Double(i)) }
        #expect(rule.count(held) == 0)
        let approach: [Double] = (0..<50).map { (i: Int) -> Double in -20.0 + 18.5 * (1.0 - exp(-Double(i) / 5.0)) }
        let settling = approach + held
        #expect(rule.count(settling) == 0, "one move to the limit, then holding")
        let hunting: [Double] = (0..<40).map { (i: Int) -> Double in i % 4 < 2 ? -0.5 : -2.5 }
        #expect(rule.count(hunting) == 18, "\(rule.count(hunting))")
        let rising: [Double] = (0..<40).map { (i: Int) -> Double in Double(i) * 0.1 }
        let slowDrift = rising + rising.map { 4.0 - $0 }
        #expect(rule.count(slowDrift) == 1, "small steps summed past the deadband: one turn")
    }

    @Test("limits in force come from status's ieee2030_5.controls in kW; other types or no section give none")
    func statusLimits() {
        let json = #"{"ieee2030_5":{"controls":[{"type":"opModExpLimW","value":"1500 W","program":"B1","control":"E1","until_unix":5},"#
            + #"{"type":"opModLoadLimW","value":"10000 W","program":"B1","control":null,"until_unix":null},"#
            + #"{"type":"opModConnect","value":"false","program":"B1","control":null,"until_unix":null}]},"ok":true}"#
        #expect(ScenarioRun.sep2Limits(statusJSON: Array(json.utf8)) == ["sep2_export_limit_kw": 1.5, "sep2_load_limit_kw": 10])
        #expect(ScenarioRun.sep2Limits(statusJSON: Array(#"{"ok":true}"#.utf8)).isEmpty)
    }
}
