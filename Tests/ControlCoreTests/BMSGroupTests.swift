import ControlCore
import Testing

/// BMS_GROUP_MISSING: rules whose inputs never arrive say so instead of going silently inert.
@Suite("Missing BMS groups")
struct BMSGroupTests {
    static func dispatch30(_ bms: @escaping (MonotonicInstant) -> BMSSnapshot) -> (MonotonicInstant) -> UnitInputs {
        { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = bms(now)
            inputs.dispatch = PowerCommand(power: .kilowatts(30), expiresAt: Fixture.instant(1000))
            return inputs
        }
    }

    static func raisedEvents(_ site: SiteController) -> [ControlEvent] {
        var raised: [ControlEvent] = []
        site.events.drain { if $0.code == .bmsGroupMissing { raised.append($0) } }
        return raised
    }

    @Test("a genuine Pylontech (no 0x373): a warning naming the cells group after 5 s, and full power")
    func pylontechWithoutCells() {
        let site = Fixture.site()
        let noCells = Self.dispatch30 { now in
            var bms = Fixture.healthyBMS(at: now)
            bms.cells = nil
            return bms
        }
        var d = Fixture.run(site, seconds: 4.5, inputs: noCells)
        #expect(!d.activeCodes.contains(.bmsGroupMissing))  // every group gets 5 s to arrive
        d = Fixture.run(site, from: 4.5, seconds: 1, inputs: noCells)
        #expect(d.activeCodes.contains(.bmsGroupMissing))
        // A warning only: power, limits and state as without it.
        #expect(d.state == .running)
        #expect(abs(d.setpoint.kilowatts - 30) < 1e-6)
        #expect(d.allowedDischarge == Fixture.rating && d.allowedCharge == Fixture.rating)
        let raised = Self.raisedEvents(site).filter { $0.kind == .raised }
        #expect(raised.count == 1)
        #expect(raised.first?.severity == .warn)
        #expect(raised.first?.value == Double(BMSGroups.cells.rawValue))
        // The group arrives: the warning clears.
        d = Fixture.run(site, from: 5.5, seconds: 0.2)
        #expect(!d.activeCodes.contains(.bmsGroupMissing))
        #expect(Self.raisedEvents(site).contains { $0.kind == .cleared })
    }

    @Test("0x359 and 0x35C going stale while the rest is fresh: the mask names both")
    func protectionAndRequestsStale() {
        let site = Fixture.site()
        Fixture.run(site, seconds: 3)
        let stale = Self.dispatch30 { now in
            var bms = Fixture.healthyBMS(at: now)
            bms.protection = Timestamped(BMSProtectionState(), at: Fixture.instant(3))
            bms.requests = Timestamped(BMSRequests(chargeEnabled: true, dischargeEnabled: true), at: Fixture.instant(3))
            return bms
        }
        let d = Fixture.run(site, from: 3, seconds: 9, inputs: stale)
        #expect(d.activeCodes.contains(.bmsGroupMissing))
        #expect(d.state == .running && abs(d.setpoint.kilowatts - 30) < 1e-6)
        let raised = Self.raisedEvents(site).first { $0.kind == .raised }
        #expect(raised?.value == Double(BMSGroups([.protection, .requests]).rawValue))
        #expect(BMSGroups.protection.name.map { "\($0)" } == "0x359 protection")
    }

    @Test("no warning while the BMS as a whole is silent (BMS_COMM_LOST speaks), none with every group")
    func silentBMS() {
        let site = Fixture.site()
        let d = Fixture.run(site, seconds: 20) { now in
            UnitInputs(bms: BMSSnapshot(),
                       inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now))
        }
        #expect(d.activeCodes.contains(.bmsCommLost))
        #expect(!d.activeCodes.contains(.bmsGroupMissing))
        let healthy = Fixture.site()
        #expect(!Fixture.run(healthy, seconds: 20).activeCodes.contains(.bmsGroupMissing))
    }

    @Test("BMS_GROUP_MISSING follows every earlier code (none renumbered), a warning in the default table")
    func codeAndRule() throws {
        #expect(TripCode.bmsGroupMissing.rawValue == TripCode.frequencyLost.rawValue + 1)
        #expect("\(TripCode.bmsGroupMissing.name)" == "BMS_GROUP_MISSING")
        let rule = try #require(InterlockRule.defaultTable().first { $0.code == .bmsGroupMissing })
        #expect(rule.severity == .warn && rule.metric == .bmsGroupsMissing)
    }
}
