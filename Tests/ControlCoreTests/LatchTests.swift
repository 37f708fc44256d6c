import ControlCore
import Testing

@Suite("Latches across restarts and reloads")
struct LatchTests {
    /// A site whose unit 0 has latched BMS_CRITICAL.
    static func latchedSite(rules: [InterlockRule]? = nil) -> SiteController {
        let site = Fixture.site()
        Fixture.run(site, seconds: 1) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, protections: [.systemError])
            return inputs
        }
        return site
    }

    static func table(without code: TripCode) -> [InterlockRule] { InterlockRule.defaultTable().filter { $0.code != code } }

    static func reloaded(_ old: SiteController, rules: [InterlockRule]) -> SiteController {
        let fresh = SiteController(control: old.control, units: [UnitSettings(rating: Fixture.rating, capacity: WattHours(200_000),
                                                                                rules: rules)],
                                   startedAt: Fixture.instant(0))
        fresh.adopt(from: old, mapping: [0])
        return fresh
    }

    @Test("a restored latch holds from the first step: zero, disconnect, reset only once the condition is gone")
    func restored() {
        let site = Fixture.site()
        var codes = TripCodeSet()
        codes.insert(.thermalRunaway)
        site.restoreLatches(codes, unit: 0, since: Fixture.instant(0))
        #expect(site.decision(unit: 0).latchedCodes.contains(.thermalRunaway))  // before any step
        // A reset before any value was seen is refused.
        #expect(site.reset(unit: 0, now: Fixture.instant(0)).first?.outcome.refused.contains(.thermalRunaway) == true)
        // The rise rate needs its window of samples before it is known (and the reset can be judged).
        var decision = Fixture.run(site, seconds: 12, frequency: 49.5)
        #expect(decision.latchedCodes.contains(.thermalRunaway) && decision.disconnectRequested)
        #expect(decision.setpoint == .zero && decision.state == .faulted)
        #expect(site.reset(unit: 0, now: Fixture.instant(12)).first?.outcome.cleared.contains(.thermalRunaway) == true)
        decision = Fixture.run(site, from: 12, seconds: 1, frequency: 49.5)
        #expect(decision.latchedCodes.isEmpty && decision.state == .running)
    }

    @Test("LATCH_STATE_CORRUPT (no rule) holds both directions until an operator reset")
    func corrupt() {
        let site = Fixture.site()
        var codes = TripCodeSet()
        codes.insert(.latchStateCorrupt)
        site.restoreLatches(codes, unit: 0, since: Fixture.instant(0))
        let decision = Fixture.run(site, seconds: 3, frequency: 49.0)
        #expect(decision.latchedCodes.contains(.latchStateCorrupt) && decision.activeCodes.contains(.latchStateCorrupt))
        #expect(decision.allowedCharge == .zero && decision.allowedDischarge == .zero && decision.setpoint == .zero)
        #expect(decision.dischargeLimitedBy == .interlock(.latchStateCorrupt))
        #expect(site.reset(unit: 0, now: Fixture.instant(3)).first?.outcome.cleared.contains(.latchStateCorrupt) == true)
        #expect(Fixture.run(site, from: 3, seconds: 1, frequency: 49.0).latchedCodes.isEmpty)
    }

    @Test("a reload never drops a latch, even when the new table lacks or relaxes the rule")
    func reload() {
        let old = Self.latchedSite()
        #expect(old.decision(unit: 0).latchedCodes.contains(.bmsCritical))
        // The new table lacks BMS_CRITICAL.
        let withoutRule = Self.reloaded(old, rules: Self.table(without: .bmsCritical))
        var decision = Fixture.run(withoutRule, from: 1, seconds: 1)
        #expect(decision.latchedCodes.contains(.bmsCritical) && decision.setpoint == .zero)
        // The new table has it as a trip.
        var tripTable = InterlockRule.defaultTable()
        for i in tripTable.indices where tripTable[i].code == .bmsCritical { tripTable[i].severity = .trip }
        let downgraded = Self.reloaded(Self.latchedSite(), rules: tripTable)
        decision = Fixture.run(downgraded, from: 1, seconds: 1)
        #expect(decision.latchedCodes.contains(.bmsCritical) && decision.setpoint == .zero)
        // A second reload keeps carrying it; the operator's reset clears it.
        let again = Self.reloaded(downgraded, rules: InterlockRule.defaultTable())
        decision = Fixture.run(again, from: 2, seconds: 1)
        #expect(decision.latchedCodes.contains(.bmsCritical))
        #expect(again.reset(unit: 0, now: Fixture.instant(3)).first?.outcome.cleared.contains(.bmsCritical) == true)
        #expect(Fixture.run(again, from: 3, seconds: 1).latchedCodes.isEmpty)
    }
}
