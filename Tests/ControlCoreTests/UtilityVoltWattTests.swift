import ControlCore
import GridSupport
import TestSupport
import Testing

/// The utility's volt-watt (2030.5 `opModVoltWatt`, `UtilityLimits.voltWatt`) in the cycle: while in
/// force it replaces each unit's configured volt-watt (docs/design/0010-reactive-power.md, the
/// authority table), a unit with none configured included; when it ends the configured one returns.
@Suite("UtilityVoltWattTests: the utility's volt-watt replaces the configured one")
struct UtilityVoltWattTests {
    typealias Cycle = ReactiveCycleTests
    /// 1.05 p.u. 100 % → 1.07 p.u. 0 %, 1 s: stricter than Category B's 1.06 → 1.10.
    static let utility = VoltWattSettings(curve: try! GridCurve([(1.05, 100), (1.07, 0)]), responseTime: .seconds(1))

    static func limits(_ curve: VoltWattSettings?) -> UtilityLimits {
        var limits = UtilityLimits()
        limits.voltWatt = curve
        return limits
    }

    @Test("at 1.08 p.u. the configured curve allows half the rating, the utility's none; the configured returns when it ends")
    func replacesConfigured() throws {
        let configured = GridSupportProfile.ieee1547_2018_cat_b.settings(reactive: Cycle.constantVar(0), voltWatt: true)
        let site = Cycle.site(configured)
        let before = Cycle.run(site, seconds: 60, period: 0.5, powerW: 100_000, voltagePU: 1.08)
        #expect(abs(before.setpoint.value - 50_000) < 1_000, "configured 1.06/100 → 1.10/0 at 1.08: \(before.setpoint.value)")
        site.utilityLimits = Self.limits(Self.utility)
        let during = Cycle.run(site, from: 60, seconds: 30, period: 0.5, powerW: 100_000, voltagePU: 1.08)
        #expect(abs(during.setpoint.value) < 1_000, "the utility's 1.05/100 → 1.07/0 at 1.08: \(during.setpoint.value)")
        #expect(during.reactiveSource == .constantVar, "volt-watt is not a request: the configured mode keeps Q")
        site.utilityLimits = nil
        let after = Cycle.run(site, from: 90, seconds: 60, period: 0.5, powerW: 100_000, voltagePU: 1.08)
        #expect(abs(after.setpoint.value - 50_000) < 1_000, "the configured volt-watt again: \(after.setpoint.value)")
    }

    @Test("a unit with no configured law: the utility's volt-watt lowers P and leaves Q alone")
    func unconfiguredUnit() throws {
        let site = Cycle.site(nil)
        let free = Cycle.run(site, seconds: 10, period: 0.5, powerW: 100_000, voltagePU: 1.06)
        #expect(abs(free.setpoint.value - 100_000) < 1)
        site.utilityLimits = Self.limits(Self.utility)
        let limited = Cycle.run(site, from: 10, seconds: 30, period: 0.5, powerW: 100_000, voltagePU: 1.06)
        #expect(abs(limited.setpoint.value - 50_000) < 1_000, "1.06 p.u. on 1.05/100 → 1.07/0: \(limited.setpoint.value)")
        #expect(limited.reactive == nil, "Q left alone: \(String(describing: limited.reactive))")
    }

    /// 1.06 p.u. 100 % → 1.10 p.u. −50 %: a storage unit's curve that charges at high voltage.
    static let charging = VoltWattSettings(curve: try! GridCurve([(1.06, 100), (1.10, -50)]), responseTime: .seconds(1))

    @Test("a negative volt-watt point charges only into the site's import headroom, configured or the utility's")
    func chargeBoundedByImportLimit() throws {
        // At 1.09 p.u. the curve asks 100 − 150 × 3/4 = −12.5 % of the 100 kW rating: 12.5 kW of charge.
        let configured = GridSupportSettings(reactive: Cycle.constantVar(0), voltWatt: Self.charging)
        for (support, utility) in [(configured, nil), (nil, Self.charging)] as [(GridSupportSettings?, VoltWattSettings?)] {
            let site = Cycle.site(support)
            site.utilityLimits = utility.map { Self.limits($0) }
            let free = Cycle.run(site, seconds: 30, period: 0.5, powerW: 20_000, voltagePU: 1.09)
            #expect(abs(free.setpoint.value + 12_500) < 500, "no import limit: the curve's charge, \(free.setpoint.value)")
            var limits = Self.limits(utility)
            limits.importLimitW = 5_000
            site.utilityLimits = limits
            let bounded = Cycle.run(site, from: 30, seconds: 30, period: 0.5, powerW: 20_000, voltagePU: 1.09)
            #expect(bounded.setpoint.value >= -5_000 - 1e-6 && bounded.setpoint.value < -4_900,
                    "an import limit of 5 kW: charge up to it and no further, \(bounded.setpoint.value)")
            // Lowering discharge is never held back: at 1.08 p.u. the curve's 25 % is the setpoint whatever the import.
            let lowered = Cycle.run(site, from: 60, seconds: 30, period: 0.5, powerW: 50_000, voltagePU: 1.08)
            #expect(abs(lowered.setpoint.value - 25_000) < 500, "\(lowered.setpoint.value)")
        }
    }

    @Test("with a meter, a negative volt-watt point charges only down to the connection point's import floor")
    func chargeBoundedAtTheMeter() throws {
        var unit = UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000))
        unit.gridSupport = GridSupportSettings(reactive: Cycle.constantVar(0), voltWatt: Self.charging)
        unit.nominalVoltageV = Cycle.nominalV
        var settings = SiteSettings(hasMeter: true, meterStaleAfter: .seconds(3), meterMaxLag: .milliseconds(200))
        settings.importMax = Watts(8_000)
        let site = SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: [unit], startedAt: .zero, site: settings)
        // 5 kW of load and an 8 kW import limit: the batteries may charge 3 kW. At 1.09 p.u. the curve
        // asks 12.5 kW of charge (17.5 kW of import).
        let load = 5_000.0
        var measured = 0.0
        var worstImport = -Double.infinity
        for step in 1...600 {
            let t = Double(step) * 0.1
            let now = Fixture.instant(t)
            let inputs = UnitInputs(
                bms: Fixture.healthyBMS(at: now),
                inverter: Timestamped(InverterReading(activePower: Watts(measured), ratedPower: Fixture.rating, voltage: 1.09 * Cycle.nominalV), at: now),
                dispatch: PowerCommand(power: Watts(20_000), expiresAt: now + .seconds(5), pinned: true))
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [inputs], now: now, wallClock: 1_800_000_000 + t,
                      meter: Timestamped(MeterReading(gridPower: Watts(load - measured)), at: now))
            // The inverter follows its setpoint in one period.
            measured = site.decision(unit: 0).setpoint.value
            if t > 30 { worstImport = max(worstImport, load - measured) }
        }
        #expect(abs(measured + 3_000) < 200, "charge down to the import floor: \(measured)")
        #expect(worstImport <= 8_000 + 200, "import at most the limit (and the meter's deadband): \(worstImport)")
    }
}
