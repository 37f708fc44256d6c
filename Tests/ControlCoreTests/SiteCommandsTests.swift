import ControlCore
import Testing

/// SCADA's commands in the control law: the grid operator's percent limit (704 WMaxLimPct) and the
/// site setpoint (704 WSet), their reversion, and where they stand in the order of authority.
@Suite("SCADA commands")
struct SiteCommandsTests {
    /// Three 100 kW units (300 kW), limits ramp at 10 %/s, schedules at 1000 %/s (so commands act
    /// in a step and what is seen is the site's layers, not the schedule ramp).
    static func site(_ settings: SiteSettings = .none) -> SiteController {
        SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 10, scheduleRampPercentPerSecond: 1000),
            units: (0..<3).map { _ in UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000)) },
            startedAt: .zero, site: settings)
    }

    static func sum(_ site: SiteController) -> Double {
        site.units.indices.reduce(0) { $0 + site.decision(unit: $1).setpoint.value }
    }

    static func limit(_ percent: Double, until t: Double, revert: (Bool, Double) = (false, 100)) -> ExpiringCommand {
        var command = ExpiringCommand(value: percent, revertValue: revert.1)
        command.enabled = true
        command.revertEnabled = revert.0
        command.expiresAt = Fixture.instant(t)
        return command
    }

    /// Applies in the next step, both directions.
    @Test("WMaxLimPct caps the units' sum at a percent of ratings; unrefreshed it reverts and lifts at the ramp")
    func limitCapsAndLifts() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        // Every unit overridden to full discharge: 300 kW.
        func overrides(_ kw: Double) -> (Int, inout UnitInputs, MonotonicInstant) -> Void {
            { _, inputs, _ in inputs.override = PowerCommand(power: .kilowatts(kw), expiresAt: Fixture.instant(1000)) }
        }
        // The units' allowed power rises from zero at the limit ramp (10 %/s) first.
        meter.run(site, from: 0, seconds: 12, extra: overrides(100))
        #expect(abs(Self.sum(site) - 300_000) < 1)
        site.commands.limit = Self.limit(30, until: 22)
        meter.run(site, from: 12, seconds: 0.1, extra: overrides(100))
        #expect(Self.sum(site) <= 90_000 + 1, "one step after the write: \(Self.sum(site)) W")
        #expect(site.siteDecision.operatorLimited && site.siteDecision.operatorCap == 90_000)
        // Charging is capped the same.
        meter.run(site, from: 12.1, seconds: 1, extra: overrides(-100))
        #expect(Self.sum(site) >= -90_000 - 1 && Self.sum(site) < -89_000)
        // At 22 s the limit reverts (disabled): the cap rises 30 kW/s (10 %/s of 300 kW), not at once.
        meter.run(site, from: 13.1, seconds: 8.8, extra: overrides(100))
        #expect(abs(Self.sum(site) - 90_000) < 1, "still limited at 21.9 s")
        var reverted = 0
        site.events.drain { if $0.kind == .operatorLimitReverted { reverted += 1 } }
        #expect(reverted == 0)
        meter.run(site, from: 21.9, seconds: 1.1, extra: overrides(100))
        site.events.drain { if $0.kind == .operatorLimitReverted { reverted += 1 } }
        #expect(reverted == 1)
        #expect(!site.commands.limit.enabled && site.operatorLimitPercent(at: Fixture.instant(23)) == nil)
        #expect(Self.sum(site) > 100_000 && Self.sum(site) < 125_000, "a second after: \(Self.sum(site)) W")
        meter.run(site, from: 23, seconds: 8, extra: overrides(100))
        #expect(abs(Self.sum(site) - 300_000) < 1)
        #expect(site.operatorCap == .infinity)
    }

    @Test("the grid operator's limit outranks the import limit; between contacts and SCADA the lower applies")
    func limitOutranksGridLimits() {
        // A 400 kW load behind a 200 kW import limit asks the batteries for 200 kW.
        let site = Self.site(SiteSettings(hasMeter: true, importMax: .kilowatts(200), meterMaxLag: .seconds(1)))
        var meter = MeteredSite(units: 3) { _ in 400_000 }
        meter.run(site, from: 0, seconds: 15)
        #expect(abs(Self.sum(site) - 200_000) < 2_000)
        site.commands.limit = Self.limit(20, until: 100)
        meter.run(site, from: 15, seconds: 0.1)
        #expect(Self.sum(site) <= 60_000 + 1)
        meter.run(site, from: 15.1, seconds: 3)
        #expect(abs(Self.sum(site) - 60_000) < 1 && site.siteDecision.operatorLimited)
        // The relay contacts ask 10 %: the lower limit applies.
        site.inputLimitPercent = 10
        meter.run(site, from: 18.1, seconds: 0.1)
        #expect(abs(Self.sum(site) - 30_000) < 1)
        site.inputLimitPercent = nil
        meter.run(site, from: 18.2, seconds: 0.1)
        #expect(Self.sum(site) > 30_000 && Self.sum(site) <= 33_000 + 1, "lifts at the ramp: \(Self.sum(site))")
    }

    @Test("WSet moves units no override holds, outranks dispatch, and ends on expiry")
    func setpointMovesTheUnits() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        func inputs(_ i: Int, _ unit: inout UnitInputs, _ now: MonotonicInstant) {
            unit.dispatch = PowerCommand(power: .kilowatts(10), expiresAt: Fixture.instant(1000))
            if i == 0 { unit.override = PowerCommand(power: .kilowatts(-20), expiresAt: Fixture.instant(1000)) }
        }
        meter.run(site, from: 0, seconds: 12, extra: inputs)
        #expect(abs(Self.sum(site) - 0) < 1)  // −20 + 10 + 10
        var setpoint = ExpiringCommand(value: 150_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(17)
        site.commands.setpoint = setpoint
        meter.run(site, from: 12, seconds: 0.2, extra: inputs)
        #expect(abs(site.decision(unit: 0).setpoint.value + 20_000) < 1, "the override holds unit 0")
        #expect(abs(site.decision(unit: 1).setpoint.value - 75_000) < 1 && abs(site.decision(unit: 2).setpoint.value - 75_000) < 1)
        #expect(site.siteDecision.scadaSetpoint == 150_000)
        meter.run(site, from: 12.2, seconds: 4.7, extra: inputs)
        #expect(abs(site.decision(unit: 1).setpoint.value - 75_000) < 1)
        var reverted = 0
        meter.run(site, from: 16.9, seconds: 0.3, extra: inputs)
        site.events.drain { if $0.kind == .siteSetpointReverted { reverted += 1 } }
        #expect(reverted == 1)
        #expect(abs(site.decision(unit: 1).setpoint.value - 10_000) < 1, "dispatch again: \(site.decision(unit: 1).setpoint.value)")
        #expect(site.siteDecision.scadaSetpoint == nil)
    }

    @Test("frequency response outranks the SCADA setpoint: over-frequency takes power off a WSet discharge")
    func droopOutranksSetpoint() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        var setpoint = ExpiringCommand(value: 150_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(100)
        site.commands.setpoint = setpoint
        meter.run(site, from: 0, seconds: 12)
        #expect(abs(Self.sum(site) - 150_000) < 1)
        meter.run(site, from: 12, seconds: 2, frequency: 50.2)
        let droop = site.units.indices.reduce(0) { $0 + site.decision(unit: $1).droop.value }
        #expect(droop < -1_000, "droop \(droop) W")
        #expect(abs(Self.sum(site) - (150_000 + droop)) < 1_000)
    }

    @Test("reversion: WMaxLimPctRvrt stands until rewritten; WSetRvrt holds for max_hold_s, then ends")
    func reversion() {
        var commands = SiteCommands(maxHold: .seconds(60))
        commands.limit = Self.limit(30, until: 10, revert: (true, 50))
        var setpoint = ExpiringCommand(value: 80_000, revertValue: 20_000)
        setpoint.enabled = true
        setpoint.revertEnabled = true
        setpoint.expiresAt = Fixture.instant(10)
        commands.setpoint = setpoint
        let t9 = commands.settled(at: Fixture.instant(9.9))
        #expect(t9.limit.active(at: Fixture.instant(9.9)) == 30 && t9.setpoint.active(at: Fixture.instant(9.9)) == 80_000)
        let t10 = commands.settled(at: Fixture.instant(10))
        #expect(t10.limit.active(at: Fixture.instant(10)) == 50 && t10.setpoint.active(at: Fixture.instant(10)) == 20_000)
        #expect(t10.limit.expiresAt == nil && t10.setpoint.remaining(at: Fixture.instant(10)) == .seconds(60))
        let t70 = t10.settled(at: Fixture.instant(70))
        #expect(t70.limit.active(at: Fixture.instant(1e6)) == 50, "the fallback limit stands")
        #expect(t70.setpoint.active(at: Fixture.instant(70)) == nil && !t70.setpoint.enabled)
        // Settling is idempotent.
        #expect(t70.settled(at: Fixture.instant(80)) == t70)
        // Without reversion enabled, both end at their time.
        var plain = SiteCommands()
        plain.limit = Self.limit(30, until: 10)
        let ended = plain.settled(at: Fixture.instant(10))
        #expect(ended.limit.active(at: Fixture.instant(10)) == nil && ended.limit.value == 100)
    }
}

@Suite("Relay contacts (ripple-control receiver)")
struct RelayContactsTests {
    static let four = [RelayContacts.Contact(input: 4, limitPercent: 0), .init(input: 5, limitPercent: 30),
                       .init(input: 6, limitPercent: 60), .init(input: 7, limitPercent: 100)]

    /// None asserted: no limit; until read steady once, the lowest configured applies; a bounce shorter than debounce changes nothing.
    @Test("contact inputs: lowest asserted applies, debounced; lowest configured until read; active low inverts")
    func contacts() {
        var relay = RelayContacts(contacts: Self.four, activeHigh: true, debounce: .milliseconds(100))
        #expect(relay.span.first == 4 && relay.span.count == 4)
        #expect(relay.limitPercent == 0, "unknown counts as asserted: the most restrictive")
        relay.update(bits: [false, false, false, false], at: Fixture.instant(0))
        #expect(relay.limitPercent == 0, "read once, not yet steady")
        let changed = relay.update(bits: [false, false, false, false], at: Fixture.instant(0.1))
        #expect(changed)
        #expect(relay.limitPercent == nil)
        relay.update(bits: [false, true, true, false], at: Fixture.instant(0.2))
        #expect(relay.limitPercent == nil, "not yet debounced")
        relay.update(bits: [false, true, true, false], at: Fixture.instant(0.3))
        #expect(relay.limitPercent == 30)
        // A 50 ms bounce on input 4 (0 %) is ignored.
        relay.update(bits: [true, true, true, false], at: Fixture.instant(0.35))
        relay.update(bits: [false, true, true, false], at: Fixture.instant(0.4))
        relay.update(bits: [false, true, true, false], at: Fixture.instant(0.6))
        #expect(relay.limitPercent == 30)
        relay.update(bits: [false, false, true, false], at: Fixture.instant(0.7))
        relay.update(bits: [false, false, true, false], at: Fixture.instant(0.8))
        #expect(relay.limitPercent == 60)
        var low = RelayContacts(contacts: Self.four, activeHigh: false, debounce: .zero)
        low.update(bits: [true, true, false, true], at: Fixture.instant(0))
        #expect(low.limitPercent == 60 && low.asserted == [false, false, true, false])
    }
}
