import ControlCore
import GridSupport
import TestSupport
import Testing

/// The law at the connection point at its edges (docs/design/0010-reactive-power.md, "The site
/// path"): stale voltage beside a higher party's var, units that stop carrying Q and come back, a
/// unit's rating that changes, a meter without a voltage. On `ReactiveSiteLawTests.Rig`.
@Suite("ReactiveSiteLawEdgeTests: the site law's edges", .serialized)
struct ReactiveSiteLawEdgeTests {
    typealias Rig = ReactiveSiteLawTests.Rig
    static let voltVar = GridSupportSettings(reactive: .voltVar(GridSupportProfile.ieee1547_2018_cat_b.voltVar))

    @Test("stale voltage: the units the site law drives are at 0 var, the aggregator's var on another unit stands")
    func staleVoltageLeavesTheAggregatorsVar() {
        for meter in [false, true] {
            let rig = Rig(Self.voltVar, meter: meter)
            rig.unitPU = [nil, nil]
            rig.meterPU = meter ? .nan : nil
            rig.dispatchVar = [nil, 10_000]
            rig.run(10)
            #expect(abs(rig.measured[1] - 10_000) <= 1 && rig.site.decision(unit: 1).reactiveSource == .aggregator, "meter \(meter)")
            #expect(rig.measured[0] == 0, "never asked to cancel the aggregator's var, meter \(meter): \(rig.measured)")
            #expect(rig.site.decision(unit: 0).reactiveSource == .staleVoltage)
        }
    }

    @Test("units that stop carrying Q and come back: the site's Q rises again from 0 through its response, not at once")
    func stoppedUnitsRampAgain() throws {
        let rig = Rig(GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: 50, responseTime: .seconds(5)))), meter: false)
        rig.run(30)
        #expect(abs(rig.asked - 100_000) <= 1_000, "\(rig.asked)")
        rig.site.setOperatorMode(.standby)
        rig.run(5)
        #expect(rig.asked == 0 && rig.site.decision(unit: 0).reactiveSource == .stopped)
        rig.site.setOperatorMode(.auto)
        var steps = 0
        repeat {
            rig.step()
            steps += 1
        } while !rig.site.decision(unit: 0).state.mayOperate && steps < 300
        try #require(rig.site.decision(unit: 0).state.mayOperate, "the units run again")
        // One 0.1 s period of a response that takes 5 s to 90 %: under 5 % of the way.
        #expect(rig.asked > 0 && rig.asked < 0.05 * 100_000, "from 0 var, not from where it stood: \(rig.asked)")
        rig.run(30)
        #expect(abs(rig.asked - 100_000) <= 1_000, "\(rig.asked)")
    }

    @Test("a unit's rating that changes (its 702 VarMaxInj arrives) carries the site's Q over: no step back to 0")
    func rerateCarriesQ() {
        let rig = Rig(GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: 40, responseTime: .seconds(5)))), meter: false)
        rig.run(30)
        #expect(abs(rig.asked - 80_000) <= 800, "\(rig.asked)")
        rig.varMaxInjecting = [nil, 60_000]
        for _ in 0..<50 {
            rig.step()
            #expect(abs(rig.asked - 80_000) <= 800, "Q goes on from where it stood: \(rig.asked)")
        }
        #expect(abs(rig.measured[1] - 30_000) <= 300, "unit 1's share within its 60 kvar: \(rig.measured)")
    }

    @Test("a fresh meter that measures var but no voltage: the units' mean voltage, Q held at the meter")
    func meterWithoutVoltage() {
        let rig = Rig(Self.voltVar, meter: true)
        rig.meterPU = nil
        rig.loadVar = 10_000
        rig.unitPU = [1.05, 1.03]
        rig.run(60)
        // 1.04 p.u. on Category B's curve: −44 % × (0.02 / 0.06) of 200 kVA, at the connection point.
        let expected = -0.44 * (0.02 / 0.06) * ReactiveSiteLawTests.siteVA
        #expect(rig.site.siteReactiveSource == .voltVar && rig.site.siteReactiveMetered)
        #expect(abs(rig.net - expected) <= 0.01 * ReactiveSiteLawTests.siteVA, "net \(rig.net), the curve at the units' mean \(expected)")
    }
}
