import ControlCore
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The reporter inside the worker: what discovery reads (the DER's links) and the schedule it
/// resolves turn into PUTs and responses sent through the worker's transport.
@Suite("2030.5 worker reports")
struct Sep2ReporterWorkerTests {
    static let t0 = Sep2Fixture.t0

    /// The worker tests' chain with a DERList on the EndDevice and a control that asks for every response.
    static func server() -> FakeSep2Server {
        var chain = Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA])
        chain["/edev"] = chain["/edev"]?.replacingOccurrences(of: "<RegistrationLink", with: #"<DERListLink href="/edev/1/der" all="1"/><RegistrationLink"#)
        chain["/derp/1/derc"] = chain["/derp/1/derc"]?.replacingOccurrences(of: "<DERControl>", with: #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03">"#)
        chain["/edev/1/der"] = #"<DERList \#(Sep2Fixture.ns) href="/edev/1/der" all="1" results="1"><DER href="/edev/1/der/1">"#
            + #"<DERStatusLink href="/edev/1/der/1/ders"/></DER></DERList>"#
        chain["/edev/1/der/1/ders"] = ""
        chain["/rsps/1/rsp"] = ""
        return FakeSep2Server(chain)
    }

    @Test("the worker PUTs the DER's status once and posts received, then started at the control's start")
    func workerSendsReports() throws {
        let rig = Sep2WorkerTests.Rig(server: Self.server())
        var sample = Sep2SiteSample()
        sample.connected = true
        sample.available = true
        sample.socPercent = 50
        let fixed = sample
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { fixed })
        rig.client.restore(now: rig.now, wall: rig.wall)
        rig.settle()
        rig.advance(1)
        rig.settle()
        #expect(rig.server.requests.filter { $0 == "/edev/1/der/1/ders" }.count == 1, "\(rig.server.requests)")
        #expect(rig.server.requests.filter { $0 == "/rsps/1/rsp" }.count == 1, "received, once")
        rig.advance(30)
        rig.settle()
        #expect(rig.server.requests.filter { $0 == "/rsps/1/rsp" }.count == 1, "nothing new before the start")
        #expect(rig.server.requests.filter { $0 == "/edev/1/der/1/ders" }.count == 1, "the same status: not PUT again")
        rig.advance(70)
        rig.settle()
        #expect(rig.server.requests.filter { $0 == "/rsps/1/rsp" }.count == 2, "started at the control's start")
    }
}
