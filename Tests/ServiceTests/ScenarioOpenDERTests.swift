@testable import bess_hil
import BessBase
import Foundation
import GridSupport
import TestSupport
import Testing

/// The scenarios' `opender` expectation (hil/README.md): its parsing, and its comparison of a
/// recorded trace with EPRI OpenDER's (hil/peers/opender_reactive_peer.py) on synthetic traces made
/// by bessd's own law (GridSupportController), one as bessd runs it, and ones that must fail.
@Suite("Scenario opender check: parsing, and a synthetic trace against OpenDER", .serialized)
struct ScenarioOpenDERTests {
    static func load(_ body: String) throws -> Result<Scenario, ScenarioError> { try ScenarioIEC104FileTests.load(body) }

    static let voltVar = """
        config:
          grid_integration:
            reactive_power: {mode: volt_var, nominal_voltage_v: 230, volt_var: {olrt_s: 1}}

        """

    static func check(_ config: String = voltVar, _ entry: String = "{from_s: 4, to_s: 18, opender: {tolerance_pct: 1}}") throws
        -> OpenDERCheck
    {
        let scenario = try load(config + "expect:\n  - \(entry)").get()
        var check = try #require(scenario.expectations.first?.opender)
        check.peersDirectory = Package.root.appendingPathComponent("hil/peers").path  // the file is in a temporary directory
        return check
    }

    @Test("opender reads the unit's law, rating and period from the scenario's configuration")
    func parsed() throws {
        let check = try Self.check()
        #expect(check.tolerancePercent == 1 && check.demandKW == nil)
        #expect(check.rating.apparentPowerVA == 100_000 && check.period == 0.1 && check.nominalV == 230 && check.start == 0)
        guard case .voltVar(let s) = check.settings.reactive else {
            Issue.record("not volt-var: \(String(describing: check.settings.reactive))")
            return
        }
        #expect(s.responseTime == .seconds(1) && s.curve.points.map(\.y) == [44, 0, 0, -44])
        let reloaded = try Self.load(Self.voltVar + """
            timeline:
              - {at_s: 5, reload: {grid_integration: {reactive_power: {mode: constant_var, var_percent: 20}}}}
            expect:
              - {from_s: 8, to_s: 18, opender: {tolerance_pct: 2, p_kw: 60}}
            """).get().expectations[0].opender
        #expect(reloaded?.start == 5 && reloaded?.demandKW == 60)
        guard case .constantVar(let c) = reloaded?.settings.reactive else {
            Issue.record("the reload's mode not taken: \(String(describing: reloaded?.settings.reactive))")
            return
        }
        #expect(c.percent == 20)
    }

    @Test("a malformed opender entry is refused, saying what it wants", arguments: [
        ("{from_s: 4, to_s: 8, opender: 1}", "expect[0].opender"),
        ("{from_s: 4, to_s: 8, opender: {tolerance_pct: 0}}", "expect[0].opender"),
        ("{from_s: 4, to_s: 8, opender: {tolerance_pct: 1, olrt: 2}}", "expect[0].opender"),
        ("{from_s: 4, to_s: 8, opender: {tolerance_pct: 1, p_kw: fast}}", "expect[0].opender"),
        ("{at_s: 4, opender: {tolerance_pct: 1}}", "from_s + to_s"),
        ("{from_s: 4, to_s: 8, reactive_kvar: 0, opender: {tolerance_pct: 1}}", "stands alone"),
    ])
    func refused(entry: String, says: String) throws {
        let result = try Self.load(Self.voltVar + "expect:\n  - \(entry)")
        guard case .failure(let error) = result else {
            Issue.record("loaded: \(entry)")
            return
        }
        #expect(error.message.contains(says), "\(error)")
    }

    @Test("opender is refused without a unit law to compare, and across a reload")
    func refusedConfigurations() throws {
        for (body, says) in [
            ("expect:\n  - {from_s: 4, to_s: 8, opender: {tolerance_pct: 1}}", "one unit's law"),
            (Self.voltVar + "timeline:\n  - {at_s: 6, reload: {grid_integration: {reactive_power: {mode: constant_var}}}}\n"
                + "expect:\n  - {from_s: 4, to_s: 8, opender: {tolerance_pct: 1}}", "inside the window"),
        ] {
            guard case .failure(let error) = try Self.load(body) else {
                Issue.record("loaded: \(body)")
                continue
            }
            #expect(error.message.contains(says), "\(error)")
        }
    }

    /// A trace as bessd records it: V0 steps 1.00 → 1.06 at 3 s and → 0.94 at 11 s; the unit's law
    /// (bessd's own GridSupportController) answers each sample's voltage in that sample's setpoint, as
    /// the plant's runs record it (volt-var-step: V0 stepped at 3.0 s, V 1.06 and bessd's first
    /// period's −6.0 kvar both in the 3.1 s sample), or `lag` periods later; its setpoint scaled by
    /// `gain` and moved by `offset` var. Samples every 0.1 s with ±10 ms of jitter, 0–18 s.
    static func trace(_ check: OpenDERCheck, lag: Int = 0, gain: Double = 1, offset: Double = 0) throws
        -> [OpenDERComparison.Point]
    {
        var law = try GridSupportController(settings: check.settings, rating: check.rating)
        let voltages = (0...180).map { i -> Double in i < 30 ? 1.0 : i < 110 ? 1.06 : 0.94 }
        return voltages.indices.map { i in
            let v = voltages[max(0, i - lag)]
            let q = law.step(voltage: v, desiredPowerW: 0, elapsedSeconds: 0.1).reactivePowerVar ?? .nan
            return .init(t: Double(i) / 10 + (i % 3 == 0 ? 0.01 : i % 3 == 1 ? -0.01 : 0), v: voltages[i], p: 0, q: q * gain + offset)
        }
    }

    static func judge(_ check: OpenDERCheck, _ trace: [OpenDERComparison.Point]) throws -> OpenDERComparison.Result {
        let comparison = OpenDERComparison(check: check, recorded: trace, from: 2, to: 18)
        return comparison.judge(try OpenDERPeer.run(check, inputs: comparison.inputs))
    }

    @Test("bessd's law on the recorded voltages is OpenDER's within 1 %, its 90 % instants within a period")
    func matches() throws {
        let check = try Self.check()
        let result = try Self.judge(check, try Self.trace(check))
        print("opender on bessd's law: " + result.figures)
        #expect(result.misses.isEmpty, "\(result.misses)")
        #expect(result.figures.contains("step 3.010 s at") && result.figures.contains("step 11.010 s at"), "\(result.figures)")
        let late = try Self.judge(check, try Self.trace(check, lag: 1))
        #expect(late.misses.isEmpty, "one period late is within the check's period: \(late.misses)")
    }

    @Test("a curve 10 % short or 1.5 % of VAMax off misses the steady state; a response 3 periods late misses the timing")
    func misses() throws {
        let check = try Self.check()
        let short = try Self.judge(check, try Self.trace(check, gain: 0.9))
        print("opender on a curve 10 % short: " + short.figures)
        #expect(short.misses.contains { $0.contains("% of VAMax off") }, "\(short.misses)")
        let late = try Self.judge(check, try Self.trace(check, lag: 3))
        print("opender on a response 3 periods late: " + late.figures)
        #expect(late.misses.contains { $0.contains("at 90 %") }, "\(late.misses)")
        let biased = try Self.judge(check, try Self.trace(check, offset: 1500))
        #expect(biased.misses.count > 100, "1.5 kvar off at every sample: \(biased.figures)")
        #expect(try Self.judge(check, try Self.trace(check, offset: 500)).misses.isEmpty, "0.5 kvar off is within 1 %")
    }

    @Test("late samples around a crossing widen the timing allowance by their gap beyond a period, up to 0.3 s")
    func lateSamples() throws {
        #expect(abs(OpenDERComparison.widestGap([0, 0.1, 0.2, 0.6, 0.7], around: 0.3, 0.5) - 0.4) < 1e-12)
        #expect(abs(OpenDERComparison.widestGap([0, 0.1, 0.2, 0.6, 0.7], around: 0.65, 0.7) - 0.1) < 1e-12)
        #expect(OpenDERComparison.widestGap([0.5], around: 0, 1) == 0)
        let check = try Self.check()
        // Samples missing for 0.4 s where Q crosses 90 % (about 0.95 s after each step; a host that
        // stalled the runner): two periods late is then within what the samples can say.
        func holed(_ trace: [OpenDERComparison.Point]) -> [OpenDERComparison.Point] {
            trace.filter { !($0.t > 3.85 && $0.t < 4.25) && !($0.t > 11.85 && $0.t < 12.25) }
        }
        let regular = try Self.judge(check, try Self.trace(check, lag: 2))
        #expect(regular.misses.contains { $0.contains("at 90 %") }, "two periods late on regular samples: \(regular.misses)")
        let stalled = try Self.judge(check, holed(try Self.trace(check, lag: 2)))
        #expect(!stalled.misses.contains { $0.contains("at 90 %") }, "\(stalled.misses)")
        // The allowance stops at 0.3 s: six periods late misses with the same holes.
        let far = try Self.judge(check, holed(try Self.trace(check, lag: 6)))
        #expect(far.misses.contains { $0.contains("late samples") }, "\(far.misses)")
    }

    @Test("the 90 % instant is interpolated between points, nil without a change or a crossing")
    func crossing() {
        let trace: [(t: Double, value: Double)] = [(0, 0), (1, 50), (2, 100)]
        #expect(OpenDERComparison.crossing(trace, from: 0, to: 100) == 1.8)
        #expect(OpenDERComparison.crossing(trace.map { ($0.t, -$0.value) }, from: 0, to: -100) == 1.8)
        #expect(OpenDERComparison.crossing(trace, from: 0, to: 0) == nil)
        #expect(OpenDERComparison.crossing(Array(trace.prefix(2)), from: 0, to: 100) == nil)
    }
}
