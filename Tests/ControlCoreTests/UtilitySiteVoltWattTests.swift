import ControlCore
import GridSupport
import TestSupport
import Testing

/// The utility's volt-watt (2030.5 `opModVoltWatt`, `UtilityLimits.voltWatt`) at the connection point:
/// while in force it replaces a volt-watt configured in `site.reactive_power`, as it replaces each
/// unit's (UtilityVoltWattTests); when it ends the configured one returns.
@Suite("UtilitySiteVoltWattTests: the utility's volt-watt replaces the connection point's", .serialized)
struct UtilitySiteVoltWattTests {
    typealias Law = ReactiveSiteLawTests

    /// 1.09 p.u. 100 % → 1.10 p.u. 0 %, 1 s: looser than Category B's 1.06 → 1.10 at 1.08 p.u.
    static let utility = VoltWattSettings(curve: try! GridCurve([(1.09, 100), (1.10, 0)]), responseTime: .seconds(1))

    @Test("at 1.08 p.u. at the meter the configured curve caps Σ units at 100 kW, the utility's not; the configured returns")
    func replacesConnectionPoint() {
        let rig = Law.Rig(GridSupportSettings(reactive: nil, voltWatt: Law.catB.voltWatt), meter: true)
        rig.powerW = [90_000, 90_000]
        rig.meterPU = 1.08
        rig.run(60)
        func sum() -> Double { rig.site.decision(unit: 0).setpoint.value + rig.site.decision(unit: 1).setpoint.value }
        #expect(abs(sum() - 100_000) <= 2_000 && rig.site.siteDecision.voltWattLimited, "configured 1.06/100 → 1.10/0: \(sum())")
        var limits = UtilityLimits()
        limits.voltWatt = Self.utility
        rig.site.utilityLimits = limits
        rig.run(60)
        #expect(abs(sum() - 180_000) <= 1, "the utility's 1.09/100 → 1.10/0 in its place: \(sum())")
        #expect(!rig.site.siteDecision.voltWattLimited)
        rig.site.utilityLimits = nil
        rig.run(60)
        #expect(abs(sum() - 100_000) <= 2_000 && rig.site.siteDecision.voltWattLimited, "the configured volt-watt again: \(sum())")
    }

    @Test("a stricter utility curve at the meter caps Σ units by its own limit")
    func stricterAtConnectionPoint() {
        let rig = Law.Rig(GridSupportSettings(reactive: nil, voltWatt: Law.catB.voltWatt), meter: true)
        rig.powerW = [90_000, 90_000]
        rig.meterPU = 1.08
        var limits = UtilityLimits()
        // 1.05 p.u. 100 % → 1.09 p.u. 20 %: 40 % of 200 kW at 1.08 p.u. (the units read 1.00 p.u.: their own curve lets all through).
        limits.voltWatt = VoltWattSettings(curve: try! GridCurve([(1.05, 100), (1.09, 20)]), responseTime: .seconds(1))
        rig.site.utilityLimits = limits
        rig.run(60)
        let sum = rig.site.decision(unit: 0).setpoint.value + rig.site.decision(unit: 1).setpoint.value
        #expect(abs(sum - 80_000) <= 2_000 && rig.site.siteDecision.voltWattLimited, "\(sum)")
    }
}
