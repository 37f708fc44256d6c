import ControlCore
import Testing

/// The four voltage rules of issue 59 (design 0010, "Voltage interlocks"): the unit's AC voltage
/// (`acVoltage`, 701 `LNV` in p.u. of `grid_integration.reactive_power.nominal_voltage_v`) and the
/// connection point's (`gridVoltage`, the fresh meter's in p.u. of `site.reactive_power.nominal_voltage_v`).
@Suite("Voltage interlocks")
struct VoltageInterlockTests {
    static let voltageCodes: [TripCode] = [.acOvervoltage, .acUndervoltage, .gridOvervoltage, .gridUndervoltage]

    /// One 100 kW unit behind a metered connection point, each with its nominal (nil: none).
    static func site(unitNominal: Double? = 230, siteNominal: Double? = 230, rules: [InterlockRule]? = nil) -> SiteController {
        var unit = UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000), rules: rules)
        unit.nominalVoltageV = unitNominal
        var connection = SiteSettings(hasMeter: true)
        connection.nominalVoltageV = siteNominal
        return SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: [unit], startedAt: .zero, site: connection)
    }

    /// Steps `site` every 100 ms from `start` for `seconds` at 50 Hz with a healthy BMS: the inverter
    /// reads `unit(t)` volts, the meter `grid(t)` volts (a reading taken `meterAge` s before the step).
    @discardableResult
    static func run(
        _ site: SiteController, from start: Double, seconds: Double, unit: (Double) -> Double?,
        grid: (Double) -> Double? = { _ in 230 }, meterAge: Double = 0
    ) -> UnitDecision {
        var t = start
        for _ in 0..<Int((seconds / 0.1).rounded()) {
            t += 0.1
            let now = Fixture.instant(t)
            var inputs = Fixture.healthyInputs(at: now)
            inputs.inverter = Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating, voltage: unit(t)), at: now)
            let meter = Timestamped(MeterReading(gridPower: .zero, voltage: grid(t)), at: Fixture.instant(t - meterAge))
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [inputs], now: now, wallClock: 1_800_000_000 + t,
                      meter: meter)
        }
        return site.decision(unit: 0)
    }

    static func volts(_ pu: Double) -> Double { pu * 230 }

    @Test("the defaults: 1547 Category III's OV1/UV1 per metric, after GRID_ROCOF and before the comm-lost rules")
    func defaultRows() throws {
        let table = InterlockRule.defaultTable()
        let codes = table.map(\.code)
        let rocof = try #require(codes.firstIndex(of: .gridRocof))
        let commLost = try #require(codes.firstIndex(of: .bmsCommLost))
        let rows = try Self.voltageCodes.map { code in try #require(table.first { $0.code == code }) }
        #expect(Self.voltageCodes.map { codes.firstIndex(of: $0)! } == Array(rocof + 1..<commLost))
        for rule in rows {
            #expect(rule.severity == .trip && rule.direction == .both && rule.hysteresis == 0.02 && rule.hold == .seconds(60), "\(rule.code)")
        }
        #expect(rows[0].metric == .acVoltage && rows[0].comparison == .above && rows[0].threshold == 1.10 && rows[0].delay == .seconds(13))
        #expect(rows[1].metric == .acVoltage && rows[1].comparison == .below && rows[1].threshold == 0.88 && rows[1].delay == .seconds(21))
        #expect(rows[2].metric == .gridVoltage && rows[2].comparison == .above && rows[2].threshold == 1.10 && rows[2].delay == .seconds(13))
        #expect(rows[3].metric == .gridVoltage && rows[3].comparison == .below && rows[3].threshold == 0.88 && rows[3].delay == .seconds(21))
        #expect("\(InterlockMetric.acVoltage.unitSymbol)" == "p.u." && "\(TripCode.gridUndervoltage.name)" == "GRID_UNDERVOLTAGE")
    }

    @Test("AC_OVERVOLTAGE: 1.12 p.u. trips after 13 s, holds inside the hysteresis, clears 60 s after 1.07 p.u.")
    func unitOvervoltage() {
        let site = Self.site()
        let before = Self.run(site, from: 0, seconds: 12.8, unit: { _ in Self.volts(1.12) })
        #expect(!before.activeCodes.contains(.acOvervoltage), "pending for 13 s")
        #expect(before.allowedDischarge.value > 50_000)
        #expect(abs((before.voltagePU ?? 0) - 1.12) < 1e-9)
        let tripped = Self.run(site, from: 12.8, seconds: 0.5, unit: { _ in Self.volts(1.12) })
        #expect(tripped.activeCodes.contains(.acOvervoltage) && tripped.latchedCodes.isEmpty)
        #expect(tripped.allowedDischarge == .zero && tripped.allowedCharge == .zero && tripped.setpoint == .zero)
        #expect(tripped.state == .tripped)
        #expect(!tripped.activeCodes.contains(.gridOvervoltage), "the meter reads 1.0 p.u.")
        // 1.09 p.u. is below the threshold but not past its 0.02 hysteresis: the rule keeps acting.
        let inside = Self.run(site, from: 13.3, seconds: 70, unit: { _ in Self.volts(1.09) })
        #expect(inside.activeCodes.contains(.acOvervoltage))
        // 1.07 p.u.: gone, held 60 s before it clears.
        let holding = Self.run(site, from: 83.3, seconds: 59, unit: { _ in Self.volts(1.07) })
        #expect(holding.activeCodes.contains(.acOvervoltage), "hold 60 s")
        let cleared = Self.run(site, from: 142.3, seconds: 2, unit: { _ in Self.volts(1.07) })
        #expect(!cleared.activeCodes.contains(.acOvervoltage))
        #expect(cleared.allowedDischarge.value > 50_000)
    }

    @Test("AC_UNDERVOLTAGE: 0.86 p.u. trips after 21 s, not before")
    func unitUndervoltage() {
        let site = Self.site()
        let before = Self.run(site, from: 0, seconds: 20.8, unit: { _ in Self.volts(0.86) })
        #expect(!before.activeCodes.contains(.acUndervoltage))
        let tripped = Self.run(site, from: 20.8, seconds: 0.5, unit: { _ in Self.volts(0.86) })
        #expect(tripped.activeCodes.contains(.acUndervoltage))
        #expect(tripped.allowedDischarge == .zero && tripped.allowedCharge == .zero)
    }

    @Test("GRID_OVERVOLTAGE and GRID_UNDERVOLTAGE read the fresh meter against the site's nominal")
    func gridRules() {
        let over = Self.site(siteNominal: 240)
        let high = Self.run(over, from: 0, seconds: 13.5, unit: { _ in 230 }, grid: { _ in 240 * 1.12 })
        #expect(abs((over.site.gridVoltagePU ?? 0) - 1.12) < 1e-9, "in p.u. of the site's nominal, not the unit's")
        #expect(high.activeCodes.contains(.gridOvervoltage) && !high.activeCodes.contains(.acOvervoltage))
        #expect(high.allowedDischarge == .zero && high.allowedCharge == .zero)
        let under = Self.site()
        let low = Self.run(under, from: 0, seconds: 21.5, unit: { _ in 230 }, grid: { _ in Self.volts(0.86) })
        #expect(low.activeCodes.contains(.gridUndervoltage) && !low.activeCodes.contains(.acUndervoltage))
        #expect(low.allowedDischarge == .zero)
    }

    @Test("absent is inert: no nominal, 0 V, a ×10 scale factor, a stale meter move no rule")
    func absentIsInert() {
        // No nominal at either level: 1.3 × 230 V means nothing.
        let unset = Self.site(unitNominal: nil, siteNominal: nil)
        let none = Self.run(unset, from: 0, seconds: 30, unit: { _ in 300 }, grid: { _ in 300 })
        #expect(Self.voltageCodes.allSatisfy { !none.activeCodes.contains($0) })
        #expect(none.voltagePU == nil && unset.site.gridVoltagePU == nil)
        #expect(none.allowedDischarge.value > 50_000)
        // A ×10 scale factor at the unit (10 p.u.) and 0 V at the meter: outside 0.5–1.5 p.u., absent.
        let nonsense = Self.site()
        let scaled = Self.run(nonsense, from: 0, seconds: 30, unit: { _ in 2300 }, grid: { _ in 0 })
        #expect(Self.voltageCodes.allSatisfy { !scaled.activeCodes.contains($0) })
        #expect(scaled.voltagePU == nil && nonsense.site.gridVoltagePU == nil)
        // A meter reading 1.2 p.u. but older than its 3 s stale limit.
        let stale = Self.site()
        let old = Self.run(stale, from: 0, seconds: 30, unit: { _ in 230 }, grid: { _ in Self.volts(1.2) }, meterAge: 4)
        #expect(!old.activeCodes.contains(.gridOvervoltage) && stale.site.gridVoltagePU == nil)
        // An acting rule is not cleared by a reading that turns to nonsense: only a plausible voltage
        // back inside the band clears it.
        let acting = Self.site()
        Self.run(acting, from: 0, seconds: 14, unit: { _ in Self.volts(1.12) })
        let garbled = Self.run(acting, from: 14, seconds: 70, unit: { _ in 2300 })
        #expect(garbled.activeCodes.contains(.acOvervoltage))
    }

    @Test("an overridden row acts as configured: a latch at 1.05 p.u. after 1 s")
    func overriddenRow() {
        let rules = InterlockRule.defaultTable().map { rule in
            guard rule.code == .acOvervoltage else { return rule }
            var rule = rule
            rule.threshold = 1.05
            rule.delay = .seconds(1)
            rule.severity = .latch
            return rule
        }
        let site = Self.site(rules: rules)
        let latched = Self.run(site, from: 0, seconds: 1.5, unit: { _ in Self.volts(1.06) })
        #expect(latched.latchedCodes.contains(.acOvervoltage) && latched.disconnectRequested)
    }
}
