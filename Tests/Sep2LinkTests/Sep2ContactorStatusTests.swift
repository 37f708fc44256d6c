import ControlCore
import Cycle
import IEEE2030_5
@testable import Sep2Link
import Testing

/// DERStatus `genConnectStatus` under `opModConnect` false follows the units' contactors (CSIP-AUS
/// ALL-11/ALL-12): cleared once they are opened or being opened, bit 0 kept while a unit cannot open.
@Suite("2030.5 connect status from the contactors")
struct Sep2ContactorStatusTests {
    static func status(_ contactor: ContactorState, connectAllowed: Bool) throws -> String? {
        var reporter = Sep2Reporter(settings: Sep2ReporterTests.settings(post: 60))
        reporter.follow(der: try Sep2ReporterTests.der(), mirrorUsagePointList: nil, postRate: nil)
        var site = SiteStatus()
        site.gridPower = 0
        var units = [UnitStatus(), UnitStatus()]
        for i in units.indices {
            units[i].state = .running
            units[i].inverterOnline = true
            units[i].contactor = contactor
        }
        var sample = Sep2SiteSample(site: site, units: units, frequency: 50, ratings: Sep2ReporterTests.settings().ratings)
        sample.connectAllowed = connectAllowed
        reporter.sample(sample, serverTime: 1000)
        let request = try #require(reporter.dueRequests(now: .at(0), serverTime: 1000).first { $0.path == "/edev/1/der/1/ders" })
        return Sep2ReporterTests.text(try Sep2ReporterTests.root(request), "genConnectStatus", "value")
    }

    @Test("opModConnect false: units opened report 00; units opening or that cannot open stay connected (01)")
    func followsContactors() throws {
        #expect(try Self.status(.open, connectAllowed: false) == "00")
        // Being opened: connected until the open is acknowledged (or the inverter reads open).
        #expect(try Self.status(.opening, connectAllowed: false) == "01")
        #expect(try Self.status(.cannotOpen, connectAllowed: false) == "01")
        // The control ended, the contactors closed: connected, available, operating again.
        #expect(try Self.status(.closed, connectAllowed: true) == "07")
        // Closed again by bessd but the inverter still reports itself open: not connected.
        #expect(try Self.status(.open, connectAllowed: true) == "00")
    }

    @Test("bit 0 follows the inverter's readback where it gives one")
    func followsReadback() throws {
        // bessd opened it, but the inverter reads connected (reverted, rebooted): connected.
        let reported = ContactorState.reported(driven: .open, connected: true)
        #expect(try Self.status(reported, connectAllowed: false) == "01")
        // Being opened, the inverter already reads open: not connected.
        #expect(try Self.status(ContactorState.reported(driven: .opening, connected: false), connectAllowed: false) == "00")
        // No readback: as bessd drives it.
        #expect(ContactorState.reported(driven: .opening, connected: nil) == .opening)
        #expect(ContactorState.reported(driven: .closed, connected: true) == .closed)
    }
}
