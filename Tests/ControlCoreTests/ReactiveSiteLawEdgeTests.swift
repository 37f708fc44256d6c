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
}
