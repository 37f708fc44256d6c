import BessBase
import ControlCore
import Testing

/// The grid operator's AGC in the control law (docs/design/0008-agc.md): it replaces the
/// aggregator's schedule while in service and fresh, inside the declared band, at the schedule
/// ramp; it expires back to the schedule; droop, the grid operator's limit, the local operator and
/// the interlocks all still outrank it.
@Suite("AGC")
struct AGCTests {
    /// A band of −150 … +200 kW and the 12 s expiry (three 4 s AGC periods).
    static let limits = AGCLimits(upper: 200_000, lower: -150_000, expiry: .seconds(12))

    /// Three 100 kW units (300 kW); limits and schedules ramp at 10 %/s (30 kW/s for the site).
    static func site() -> SiteController {
        SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 10, scheduleRampPercentPerSecond: 10),
            units: (0..<3).map { _ in UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000)) },
            startedAt: .zero)
    }

    static func sum(_ site: SiteController) -> Double {
        site.units.indices.reduce(0) { $0 + site.decision(unit: $1).setpoint.value }
    }

    /// Applies `order` at `t` as the control centre's write would, and expects it accepted.
    static func write(_ site: SiteController, _ order: AGCOrder, at t: Double) {
        do {
            site.agc = try site.agc.applying(order, at: Fixture.instant(t), local: false)
        } catch {
            Issue.record("\(order) refused: \(error)")
        }
    }

    /// An aggregator dispatch of 10 kW per unit (30 kW for the site).
    static func dispatch(_ i: Int, _ unit: inout UnitInputs, _ now: MonotonicInstant) {
        unit.dispatch = PowerCommand(power: .kilowatts(10), expiresAt: Fixture.instant(1000))
    }

    /// The dispatch, with `change` made to unit `unit`'s inputs.
    static func dispatch(changing unit: Int, _ change: @escaping (inout UnitInputs) -> Void)
        -> (Int, inout UnitInputs, MonotonicInstant) -> Void
    {
        { i, inputs, now in
            dispatch(i, &inputs, now)
            if i == unit { change(&inputs) }
        }
    }

    /// A site warmed up on the dispatch (limits risen, schedule at 30 kW), AGC in service at 15 s
    /// with a 150 kW target, reached by 21 s and refreshed then.
    static func following(_ meter: inout MeteredSite) -> SiteController {
        let site = Self.site()
        site.agc = AGCCommand(limits: limits)
        meter.run(site, from: 0, seconds: 15, extra: dispatch)
        write(site, .inService(true), at: 15)
        write(site, .target(150_000), at: 15)
        meter.run(site, from: 15, seconds: 6, extra: dispatch)
        #expect(abs(sum(site) - 150_000) < 1, "at the target: \(sum(site))")
        write(site, .target(150_000), at: 21)
        return site
    }

    @Test("a fresh in-service AGC target replaces dispatch, outranks SCADA, and moves at the schedule ramp")
    func replacesDispatchAtTheScheduleRamp() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.site()
        site.agc = AGCCommand(limits: Self.limits)
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch)
        #expect(abs(Self.sum(site) - 30_000) < 1, "the schedule: \(Self.sum(site))")
        #expect(site.agcInForce == nil && site.agcFollowed == nil)
        // A SCADA setpoint of 90 kW stands too: AGC outranks it.
        var setpoint = ExpiringCommand(value: 90_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(1000)
        site.commands.setpoint = setpoint
        Self.write(site, .inService(true), at: 15)
        Self.write(site, .target(150_000), at: 15)
        meter.run(site, from: 15, seconds: 1, extra: Self.dispatch)
        // 30 kW/s from the schedule's 30 kW: no jump to the target.
        #expect(site.agcInForce == 150_000)
        #expect(Self.sum(site) > 55_000 && Self.sum(site) < 65_000, "one second of ramp: \(Self.sum(site))")
        meter.run(site, from: 16, seconds: 4, extra: Self.dispatch)
        #expect(abs(Self.sum(site) - 150_000) < 1, "at the target: \(Self.sum(site))")
        #expect(abs((site.agcFollowed ?? 0) - 150_000) < 1)
        #expect(site.siteDecision.scadaSetpoint == 90_000, "the setpoint stands, waiting under AGC")
    }

    /// Outside the band, while out of service, not numbers, undeclared or in local control.
    @Test("bad AGC orders are refused, never clamped")
    func refusals() throws {
        let now = Fixture.instant(1)
        #expect(throws: AGCRefusal.notConfigured) { try AGCCommand().applying(.inService(true), at: now, local: false) }
        let idle = AGCCommand(limits: Self.limits)
        #expect(throws: AGCRefusal.notInService) { try idle.applying(.target(100_000), at: now, local: false) }
        #expect(throws: AGCRefusal.localControl) { try idle.applying(.inService(true), at: now, local: true) }
        let on = try idle.applying(.inService(true), at: now, local: false)
        #expect(throws: AGCRefusal.outsideRegulationBand(target: 200_001, lower: -150_000, upper: 200_000)) {
            try on.applying(.target(200_001), at: now, local: false)
        }
        #expect(throws: AGCRefusal.outsideRegulationBand(target: -150_001, lower: -150_000, upper: 200_000)) {
            try on.applying(.target(-150_001), at: now, local: false)
        }
        #expect(throws: AGCRefusal.notANumber) { try on.applying(.target(.nan), at: now, local: false) }
        #expect(throws: AGCRefusal.localControl) { try on.applying(.target(50_000), at: now, local: true) }
        #expect(try on.applying(.target(-150_000), at: now, local: false).target == -150_000)
        // The codes the journal and the wire name are the stable ones.
        #expect(["\(AGCRefusal.notConfigured.code)", "\(AGCRefusal.notInService.code)", "\(AGCRefusal.notANumber.code)",
                 "\(AGCRefusal.outsideRegulationBand(target: 1, lower: 0, upper: 0).code)", "\(AGCRefusal.localControl.code)"]
            == ["AGC_NOT_CONFIGURED", "AGC_NOT_IN_SERVICE", "AGC_TARGET_INVALID", "AGC_OUTSIDE_BAND", "AGC_LOCAL_CONTROL"])
        // Out of service is always accepted, local or not, and forgets the target.
        let off = try on.applying(.target(50_000), at: now, local: false).applying(.inService(false), at: now, local: true)
        #expect(!off.inService && off.target == nil && off.following(at: now) == nil)
    }

    @Test("the law keeps a followed target inside the band should the band narrow after it was accepted")
    func boundedByTheBand() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        site.agc.limits?.upper = 120_000
        meter.run(site, from: 21, seconds: 2, extra: Self.dispatch)
        #expect(site.agcInForce == 120_000)
        #expect(abs(Self.sum(site) - 120_000) < 1, "inside the narrowed band: \(Self.sum(site))")
    }

    /// AGC_SIGNAL_LOST once.
    @Test("AGC unrefreshed within expiry_s falls back to the schedule at its ramp; a fresh target resumes")
    func expiresToTheSchedule() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        var lost = 0, restored = 0
        func count() {
            site.events.drain {
                if $0.kind == .agcSignalLost { lost += 1 }
                if $0.kind == .agcSignalRestored { restored += 1 }
            }
        }
        // Refreshed at 21 s and 25 s (the 4 s AGC period), then silent: fresh until 37 s.
        meter.run(site, from: 21, seconds: 4, extra: Self.dispatch)
        Self.write(site, .target(150_000), at: 25)
        meter.run(site, from: 25, seconds: 11.9, extra: Self.dispatch)
        count()
        #expect(lost == 0 && !site.agcSignalLost && abs(Self.sum(site) - 150_000) < 1)
        meter.run(site, from: 36.9, seconds: 1.1, extra: Self.dispatch)
        count()
        #expect(lost == 1 && site.agcSignalLost && site.agc.inService, "lost, still in service")
        #expect(site.agcInForce == nil)
        #expect(Self.sum(site) > 110_000 && Self.sum(site) < 130_000, "ramping back: \(Self.sum(site))")
        meter.run(site, from: 38, seconds: 6, extra: Self.dispatch)
        count()
        #expect(lost == 1, "one event per loss")
        #expect(abs(Self.sum(site) - 30_000) < 1, "back on the schedule: \(Self.sum(site))")
        Self.write(site, .target(60_000), at: 44)
        meter.run(site, from: 44, seconds: 2, extra: Self.dispatch)
        count()
        #expect(restored == 1 && !site.agcSignalLost && site.agcInForce == 60_000)
        #expect(abs(Self.sum(site) - 60_000) < 1)
    }

    @Test("an in-service order after AGC_SIGNAL_LOST does not revive the stale target; the schedule stays")
    func inServiceDoesNotReviveAStaleTarget() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        // Refreshed at 21 s: fresh until 33 s, lost by 34 s.
        meter.run(site, from: 21, seconds: 13, extra: Self.dispatch)
        #expect(site.agcSignalLost && site.agcInForce == nil)
        Self.write(site, .inService(true), at: 34)
        #expect(site.agc.target == nil && site.agc.following(at: Fixture.instant(34)) == nil, "the old target is forgotten")
        meter.run(site, from: 34, seconds: 6, extra: Self.dispatch)
        #expect(site.agcInForce == nil && site.agcSignalLost, "still lost: only a target refreshes")
        #expect(abs(Self.sum(site) - 30_000) < 1, "on the schedule, not the old target: \(Self.sum(site))")
    }

    @Test("repeated in-service orders do not keep a target alive past its expiry")
    func inServiceDoesNotRefresh() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        // The target written at 21 s expires at 33 s, whatever in-service orders arrive meanwhile.
        var last = 21.0
        for t in [25.0, 29, 32] {
            meter.run(site, from: last, seconds: t - last, extra: Self.dispatch)
            Self.write(site, .inService(true), at: t)
            #expect(site.agc.following(at: Fixture.instant(t)) == 150_000, "fresh at \(t) s")
            last = t
        }
        #expect(site.agc.following(at: Fixture.instant(33)) == nil, "expired at 33 s")
        meter.run(site, from: 32, seconds: 2, extra: Self.dispatch)
        #expect(site.agcSignalLost && site.agcInForce == nil)
    }

    @Test("droop acts on top of the AGC target during a frequency dip, and holds the AGC base latched meanwhile")
    func droopOnTop() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        meter.run(site, from: 21, seconds: 1, frequency: 49.7, extra: Self.dispatch)
        let droop = site.units.indices.reduce(0) { $0 + site.decision(unit: $1).droop.value }
        #expect(droop > 10_000, "under-frequency adds discharge: \(droop) W")
        #expect(abs(Self.sum(site) - (150_000 + droop)) < 1, "AGC base + droop: \(Self.sum(site))")
        // A new target during the event waits (IEEE 1547's latched pre-disturbance power).
        Self.write(site, .target(60_000), at: 22)
        meter.run(site, from: 22, seconds: 2, frequency: 49.7, extra: Self.dispatch)
        #expect(abs((site.agcFollowed ?? 0) - 150_000) < 1, "base latched: \(site.agcFollowed ?? .nan)")
        meter.run(site, from: 24, seconds: 4, frequency: 50, extra: Self.dispatch)
        #expect(abs(Self.sum(site) - 60_000) < 1, "after the event it ramps to the new target: \(Self.sum(site))")
    }

    @Test("the grid operator's limit bounds the AGC target")
    func operatorLimitBounds() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        var limit = ExpiringCommand(value: 30, revertValue: 100)
        limit.enabled = true
        limit.expiresAt = Fixture.instant(1000)
        site.commands.limit = limit
        meter.run(site, from: 21, seconds: 2, extra: Self.dispatch)
        #expect(site.agcInForce == 150_000)
        #expect(abs(Self.sum(site) - 90_000) < 1 && site.siteDecision.operatorLimited, "30 % of 300 kW: \(Self.sum(site))")
    }

    @Test("the local operator outranks AGC: an override holds its unit, a site standby zeroes the site")
    func localOperatorOutranks() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        let inputs = Self.dispatch(changing: 0) { $0.override = PowerCommand(power: .kilowatts(-20), expiresAt: Fixture.instant(1000)) }
        // Unit 0 moves from 50 to −20 kW, units 1 and 2 from 50 to 75 kW each, at 10 kW/s.
        meter.run(site, from: 21, seconds: 8, extra: inputs)
        #expect(abs(site.decision(unit: 0).setpoint.value + 20_000) < 1, "the override holds unit 0")
        #expect(abs(site.decision(unit: 1).setpoint.value - 75_000) < 1 && abs(site.decision(unit: 2).setpoint.value - 75_000) < 1)
        Self.write(site, .target(150_000), at: 29)
        site.setOperatorMode(.standby)
        meter.run(site, from: 29, seconds: 0.2, extra: inputs)
        #expect(site.agcInForce == 150_000)
        #expect(site.units.indices.allSatisfy { site.decision(unit: $0).setpoint.value == 0 }, "standby: \(Self.sum(site))")
    }

    @Test("an interlock's zero outranks AGC: a silent-BMS unit gives nothing, the others take its share")
    func interlockZeroOutranks() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = Self.following(&meter)
        let silent = Self.dispatch(changing: 1) { $0.bms = Fixture.healthyBMS(at: Fixture.instant(21)) }
        meter.run(site, from: 21, seconds: 4, extra: silent)
        #expect(site.decision(unit: 1).setpoint.value == 0, "stale BMS: \(site.decision(unit: 1).setpoint.value)")
        #expect(site.decision(unit: 1).allowedDischarge.value == 0)
        #expect(abs(Self.sum(site) - 150_000) < 1, "the others take its share: \(Self.sum(site))")
    }
}
