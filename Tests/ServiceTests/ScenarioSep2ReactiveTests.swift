@testable import bess_hil
import BessBase
import Foundation
import Testing

/// A scenario's 2030.5 reactive controls (hil/README.md): a `sep2` control's `opModFixedVar` and
/// `opModTargetVar` as the file states them, and as the admin channel carries them to sep2_server.py.
@Suite("Scenario files: a 2030.5 control's opModFixedVar and opModTargetVar")
struct ScenarioSep2ReactiveTests {
    @Test("a control carries opModFixedVar (refType, hundredths of a percent) and opModTargetVar (var), with or without limits")
    func read() throws {
        let scenario = try ScenarioSep2Tests.load("""
            sep2: {poll_s: 1}
            timeline:
              - {at_s: 1, sep2: {control: F1, start_s: 10, duration_s: 12, opModFixedVar: {refType: 1, value: 3000}}}
              - {at_s: 2, sep2: {control: A2, duration_s: 30, opModTargetVar: -15000, opModExpLimW: 5000}}
            expect:
              - {from_s: 12, to_s: 19, reactive_kvar: 30}
            """).get()
        let orders = scenario.actions.compactMap { if case .sep2(let order) = $0.kind { order } else { nil } }
        #expect(orders == [
            .control(mrid: "F1", start: 10, duration: 12, limits: [:], reactive: .init(fixedVar: .init(refType: 1, hundredthsPercent: 3000))),
            .control(mrid: "A2", start: nil, duration: 30, limits: ["opModExpLimW": 5000], reactive: .init(targetVar: -15000)),
        ])
        #expect(scenario.actions.map(\.label) == ["2030.5 F1: fixed var 30 % of setMaxW from 10 s", "2030.5 A2: export 5 kW, target var -15 kvar"])
    }

    @Test("a fixed var outside its types, a target var not whole, and a control that sets nothing are refused, each named")
    func refused() throws {
        let result = try ScenarioSep2Tests.load("""
            sep2: {poll_s: 1}
            timeline:
              - {at_s: 1, sep2: {control: F1, duration_s: 12, opModFixedVar: {refType: 9, value: 3000}}}
              - {at_s: 2, sep2: {control: F2, duration_s: 12, opModFixedVar: {refType: 1, value: 10001}}}
              - {at_s: 3, sep2: {control: F3, duration_s: 12, opModFixedVar: {refType: 1}}}
              - {at_s: 4, sep2: {control: A4, duration_s: 12, opModTargetVar: 1.5}}
              - {at_s: 5, sep2: {control: A5, duration_s: 12}}
            expect:
              - {at_s: 2, setpoint_kw: 5}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        for text in ["timeline[0].sep2.opModFixedVar: {refType: 0–7", "timeline[1].sep2.opModFixedVar: {refType: 0–7",
                     "timeline[2].sep2.opModFixedVar: {refType: 0–7", "timeline[3].sep2.opModTargetVar: whole var",
                     "timeline[4].sep2: names no limit"] {
            #expect(error.message.contains(text), "\(text) in \(error)")
        }
    }

    @Test("the admin channel's base: limits in W, opModFixedVar as {refType, value}, opModTargetVar in var")
    func adminBase() throws {
        var command = Sep2AdminCommand()
        command.control = "F1"
        command.base = Sep2AdminBase(limits: ["opModExpLimW": 5000], fixedVar: .init(refType: 2, hundredthsPercent: -2500), targetVar: 12000)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(command), as: UTF8.self)
        #expect(text == #"{"base":{"opModExpLimW":5000,"opModFixedVar":{"refType":2,"value":-2500},"opModTargetVar":12000},"control":"F1"}"#)
        command.base = Sep2AdminBase(limits: ["opModImpLimW": 0])
        #expect(String(decoding: try encoder.encode(command), as: UTF8.self) == #"{"base":{"opModImpLimW":0},"control":"F1"}"#)
    }
}
