import ControlCore
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import Testing

/// The reporter inside the worker: what discovery reads (the DER's links) and the schedule it
/// resolves turn into PUTs and responses sent through the worker's transport.
@Suite("2030.5 worker reports")
struct Sep2ReporterWorkerTests {
    static let t0 = Sep2Fixture.t0

    /// The worker tests' chain with a DERList on the EndDevice and a control that asks for every response.
    static func server() -> FakeSep2Server { FakeSep2Server(documents()) }

    /// The documents of `server()`.
    static func documents() -> [String: String] {
        var chain = Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA])
        chain["/edev"] = chain["/edev"]?.replacingOccurrences(of: "<RegistrationLink", with: #"<DERListLink href="/edev/1/der" all="1"/><RegistrationLink"#)
        chain["/derp/1/derc"] = chain["/derp/1/derc"]?.replacingOccurrences(of: "<DERControl>", with: #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03">"#)
        chain["/edev/1/der"] = #"<DERList \#(Sep2Fixture.ns) href="/edev/1/der" all="1" results="1"><DER href="/edev/1/der/1">"#
            + #"<DERStatusLink href="/edev/1/der/1/ders"/></DER></DERList>"#
        chain["/edev/1/der/1/ders"] = ""
        chain["/rsps/1/rsp"] = ""
        return chain
    }

    /// A control whose export limit (99999 W) is outside Int16: refused alone with 253.
    static let badControl = #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03"><mRID>BAD1</mRID><creationTime>1</creationTime><EventStatus><currentStatus>0</currentStatus>"#
        + #"<dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus><interval><duration>60</duration>"#
        + "<start>\(t0 + 100)</start></interval><DERControlBase>\(Sep2Fixture.exportLimit(99_999))</DERControlBase></DERControl>"

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

    /// 503 or no answer: sent again after the back-off, in order, until taken; 400 journalled and dropped; a control refused alone is answered 253, journalled once quoted, its sibling taken.
    @Test("refused responses retried in order after back-off; a 400 dropped; a control refused alone gets 253")
    func responsesRetriedAndRefusals() throws {
        let server = Self.server()
        let bad = Self.badControl
        let list = Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA])["/derp/1/derc"]!
            .replacingOccurrences(of: "<DERControl>", with: #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03">"#)
            .replacingOccurrences(of: "</DERControlList>", with: bad + "</DERControlList>").replacingOccurrences(of: #"all="1" results="1""#, with: #"all="2" results="2""#)
        server.set("/derp/1/derc", list)
        server.scripted.withLock { $0["/rsps/1/rsp"] = [503, 0] }
        let rig = Sep2WorkerTests.Rig(server: server)
        var sample = Sep2SiteSample()
        sample.connected = true
        let fixed = sample
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { fixed })
        func responses() -> [String] {
            server.posted.withLock { $0 }.filter { $0.path == "/rsps/1/rsp" }.compactMap { post in
                (try? XMLDocument.parse(post.body)).map { "\(Sep2ReporterTests.text($0, "status") ?? "?") \(Sep2ReporterTests.text($0, "subject") ?? "?")" }
            }
        }
        rig.settle()
        for _ in 0..<8 {
            rig.advance(1)
            rig.settle()
        }
        // The list's refusal is known when its page is read, before the whole schedule is: it goes first.
        #expect(responses() == ["253 BAD1", "253 BAD1", "253 BAD1", "1 A1"], "503, no answer, then taken; A1's received after it: \(responses())")
        #expect(rig.export == 5000, "the default until A1 starts: BAD1's 99999 W never applies")
        let refusals = rig.log.codes("SEP2_CONTROL_REFUSED")
        #expect(refusals.count == 1 && refusals.first?.contains("control \"BAD1\"") == true && refusals.first?.contains("SEP2_VALUE_INVALID") == true,
                "\(refusals)")
        rig.advance(100)
        rig.settle()
        #expect(responses().suffix(1) == ["2 A1"], "A1 started: \(responses())")
        #expect(rig.export == 1500)
        #expect(rig.log.codes("SEP2_CONTROL_REFUSED").count == 1, "journalled once while the list carries it")
        // A 400 is the server refusing that document: journalled, dropped, not sent again.
        server.scripted.withLock { $0["/rsps/1/rsp"] = [400] }
        rig.advance(60)
        rig.settle()
        rig.advance(10)
        rig.settle()
        #expect(responses().filter { $0 == "3 A1" }.count == 1, "completed, once: \(responses())")
        #expect(rig.log.codes("SEP2_RESPONSE_REFUSED").count == 1, "\(rig.log.all)")
    }

    /// The worker's responses to `/rsps/1/rsp` as "status subject".
    static func responses(_ server: FakeSep2Server) -> [String] {
        server.posted.withLock { $0 }.filter { $0.path == "/rsps/1/rsp" }.compactMap { post in
            (try? XMLDocument.parse(post.body)).map { "\(Sep2ReporterTests.text($0, "status") ?? "?") \(Sep2ReporterTests.text($0, "subject") ?? "?")" }
        }
    }

    @Test("a response answered 500 eight times is dropped, journalled with its path; the next is posted")
    func answeredFailuresDropTheHead() throws {
        var chain = Self.documents()
        let later = Sep2Fixture.Control(mRID: "A2", start: Self.t0 + 20_000, duration: 60, exportW: 1500)
        var first = Sep2WorkerTests.controlA
        first.start = Self.t0 + 10_000
        chain["/derp/1/derc"] = Sep2Fixture.controlList([first, later])
            .replacingOccurrences(of: "<DERControl>", with: #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03">"#)
        let server = FakeSep2Server(chain)
        server.scripted.withLock { $0["/rsps/1/rsp"] = [Int](repeating: 500, count: 40) }
        let rig = Sep2WorkerTests.Rig(server: server)
        let fixed = Sep2SiteSample()
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { fixed })
        rig.settle()
        for _ in 0..<40 {
            rig.advance(10)
            rig.settle()
        }
        let sent = Self.responses(server)
        #expect(Array(sent.prefix(9)) == [String](repeating: "1 A1", count: 8) + ["1 A2"], "\(sent)")
        let dropped = rig.log.codes("SEP2_RESPONSE_DROPPED")
        #expect(dropped.count == 1 && dropped.first?.contains("\"/rsps/1/rsp\"") == true && dropped.first?.contains("HTTP 500") == true, "\(dropped)")
    }

    @Test("a refused control is journalled once while its page carries it, even with another inserted before")
    func refusalJournalledOnceAcrossShift() throws {
        let server = Self.server()
        let bad = Self.badControl
        func list(_ controls: [Sep2Fixture.Control]) -> String {
            Sep2Fixture.controlList(controls)
                .replacingOccurrences(of: "</DERControlList>", with: bad + "</DERControlList>")
                .replacingOccurrences(of: #"all="\#(controls.count)" results="\#(controls.count)""#, with: #"all="\#(controls.count + 1)" results="\#(controls.count + 1)""#)
        }
        server.set("/derp/1/derc", list([Sep2WorkerTests.controlA]))
        let rig = Sep2WorkerTests.Rig(server: server)
        let fixed = Sep2SiteSample()
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { fixed })
        rig.settle()
        rig.advance(1)
        rig.settle()
        #expect(rig.log.codes("SEP2_CONTROL_REFUSED").count == 1)
        let reads = server.requests.filter { $0.hasPrefix("/derp/1/derc") }.count
        let inserted = Sep2Fixture.Control(mRID: "A0", start: Self.t0 + 5000, duration: 60, exportW: 2500)
        server.set("/derp/1/derc", list([inserted, Sep2WorkerTests.controlA]))
        for _ in 0..<4 {
            rig.advance(31)
            rig.settle()
        }
        #expect(server.requests.filter { $0.hasPrefix("/derp/1/derc") }.count > reads, "the page read again")
        #expect(rig.log.codes("SEP2_CONTROL_REFUSED").count == 1, "\(rig.log.codes("SEP2_CONTROL_REFUSED"))")
    }
}
