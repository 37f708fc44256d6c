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

    @Test("a genuine Pylontech (no 0x373, not among the groups it is expected to send): no warning, full power")
    func pylontechWithoutCells() {
        let site = Fixture.site()
        let pylontech = Self.dispatch30 { now in
            var bms = Fixture.healthyBMS(at: now)
            bms.cells = nil
            bms.expectedGroups = [.protection, .requests]  // what the Pylontech decoder declares
            return bms
        }
        let d = Fixture.run(site, seconds: 60, inputs: pylontech)
        #expect(!d.activeCodes.contains(.bmsGroupMissing))
        #expect(Self.raisedEvents(site).isEmpty)
        #expect(d.state == .running && abs(d.setpoint.kilowatts - 30) < 1e-6)
    }

    @Test("an expected group never received is warned by name after 5 s, at full power; unexpected ignored")
    func expectedCellsNeverSent() {
        let site = Fixture.site()
        let noCells = Self.dispatch30 { now in
            var bms = Fixture.healthyBMS(at: now)
            bms.cells = nil
            bms.requests = nil
            bms.expectedGroups = [.protection, .cells]  // 0x35C absent too, but not expected
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

    @Test("an extension seen, then silent: the warning names it after 5 s, as for a defined group")
    func extensionSeenThenSilent() {
        let site = Fixture.site()
        let pylontech: BMSGroups = [.protection, .requests]
        // 0x373 arrives for 10 s (so the decoder expects it), then stops; its last value stays.
        let sent = Self.dispatch30 { now in
            var bms = Fixture.healthyBMS(at: now)
            bms.expectedGroups = pylontech.union(.cells)
            return bms
        }
        #expect(!Fixture.run(site, seconds: 10, inputs: sent).activeCodes.contains(.bmsGroupMissing))
        let stopped = Self.dispatch30 { now in
            var bms = Fixture.healthyBMS(at: now)
            bms.cells = Fixture.healthyBMS(at: Fixture.instant(10)).cells
            bms.expectedGroups = pylontech.union(.cells)
            return bms
        }
        var d = Fixture.run(site, from: 10, seconds: 7.5, inputs: stopped)  // stale at 13 s, +5 s delay
        #expect(!d.activeCodes.contains(.bmsGroupMissing))
        d = Fixture.run(site, from: 17.5, seconds: 1, inputs: stopped)
        #expect(d.activeCodes.contains(.bmsGroupMissing))
        #expect(d.state == .running && abs(d.setpoint.kilowatts - 30) < 1e-6)
        #expect(Self.raisedEvents(site).first { $0.kind == .raised }?.value == Double(BMSGroups.cells.rawValue))
    }

    @Test("group lists name each member in bit order")
    func groupList() {
        #expect(BMSGroups([.requests, .cells]).list == "0x373 cells, 0x35C requests")
        #expect(BMSGroups([.requests, .cells]).members == [.cells, .requests])
        #expect(BMSGroups(rawValue: 1 << 5).list == "group bit 5")
        #expect(BMSGroups().list == "")
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
