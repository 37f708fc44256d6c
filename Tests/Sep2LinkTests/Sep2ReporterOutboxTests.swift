import ControlCore
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The review's findings on the response outbox and on controls refused alone.
extension Sep2ReporterTests {
    static func filler(_ count: Int) -> [Sep2Request] {
        (0..<count).map { Sep2Request(method: .post, path: "/r", body: Array("\($0)".utf8), purpose: .post("DERControlResponse")) }
    }

    @Test("a response dropped on a full outbox is not marked sent: the next round makes it again")
    func droppedResponseMadeAgain() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        #expect(reporter.enqueue(Self.filler(ResponseLedger.outboxCapacity)) == 0)
        let programs = [ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.control("A1", required: 0x02)])]
        #expect(reporter.enqueue(reporter.track(programs, serverTime: 1000)) == 1, "A1 active: its started made, no room")
        let head = try #require(reporter.nextResponse(now: .at(0)))
        let taken = reporter.handleResponse(Sep2Reply(status: 201), to: head, now: .at(0), wall: 0)
        #expect(taken)
        #expect(reporter.enqueue(reporter.track(programs, serverTime: 1001)) == 0)
        #expect(try Self.statuses(Array(reporter.pendingResponses.suffix(1))) == ["2 A1"], "made again once there is room")
        #expect(reporter.track(programs, serverTime: 1002).isEmpty, "and once only")
    }

    @Test("a 1xx or 3xx answer is a failure: the response is kept and sent again after the back-off")
    func redirectKeepsResponse() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        reporter.enqueue(reporter.respond(to: Self.control("A1", required: 0x01), .state(.scheduled), serverTime: 1))
        let first = try #require(reporter.nextResponse(now: .at(100)))
        let redirected = reporter.handleResponse(Sep2Reply(status: 307), to: first, now: .at(100), wall: 100)
        #expect(!redirected)
        #expect(reporter.nextResponse(now: .at(101)) == nil && reporter.nextResponse(now: .at(102)) == first, "kept, after 2 s")
        let informational = reporter.handleResponse(Sep2Reply(status: 100), to: first, now: .at(102), wall: 102)
        #expect(!informational)
        #expect(reporter.pendingResponses == [first])
        #expect(reporter.takeGivenUp().isEmpty, "nothing dropped")
    }

    @Test("a response answered 5xx eight times is dropped, reported once; no answer is retried without end")
    func answeredFailuresBounded() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        reporter.enqueue(reporter.respond(to: Self.control("A1", required: 0x01), .state(.scheduled), serverTime: 1)
                         + reporter.respond(to: Self.control("B2", required: 0x01), .state(.scheduled), serverTime: 1))
        let first = try #require(reporter.nextResponse(now: .at(0)))
        var now: Int64 = 0
        for _ in 0..<30 {
            let unanswered = reporter.handleResponse(nil, to: first, now: .at(now), wall: now)
            #expect(!unanswered)
            now += 400
        }
        #expect(reporter.nextResponse(now: .at(now)) == first, "an outage: kept after 30 attempts")
        for attempt in 1...8 {
            let taken = reporter.handleResponse(Sep2Reply(status: 500), to: first, now: .at(now), wall: now)
            #expect(taken == (attempt == 8), "attempt \(attempt)")
            now += 400
        }
        #expect(try Self.statuses(reporter.pendingResponses) == ["1 B2"], "the head dropped, the next one first")
        let givenUp = reporter.takeGivenUp()
        #expect(givenUp.count == 1 && givenUp.first?.contains("\"/edev/1/rsps/1/rsp\"") == true && givenUp.first?.contains("HTTP 500") == true,
                "\(givenUp)")
        #expect(reporter.takeGivenUp().isEmpty)
    }

    @Test("a refused control's mRID is not forgotten when the sent ledger is pruned: not answered again")
    func pruningKeepsRefused() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        let refusal = RefusedControl(mRID: "BAD1", replyTo: "/edev/1/rsps/1/rsp", responseRequired: 0x03, status: .invalidEvent, reason: "x")
        #expect(reporter.respond(refused: [refusal], serverTime: 1).count == 1)
        for i in 0...ResponseLedger.capacity {
            _ = reporter.respond(to: Self.control(String(i, radix: 16), required: 0x01), .state(.scheduled), serverTime: 1)
        }
        _ = reporter.track([], serverTime: 2, refused: ["BAD1"])
        #expect(reporter.respond(refused: [refusal], serverTime: 3).isEmpty, "still answered once")
    }

    static func listControl(_ mRID: String, _ base: String, extra: String = "") -> String {
        #"<DERControl replyTo="/rsps/1/rsp" responseRequired="03"><mRID>\#(mRID)</mRID>\#(extra)"#
            + "<creationTime>1</creationTime><EventStatus><currentStatus>0</currentStatus><dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>"
            + "<interval><duration>60</duration><start>1000</start></interval><DERControlBase>\(base)</DERControlBase></DERControl>"
    }

    @Test("a control with an unknown-namespace element is refused alone (253); at list level the whole list is")
    func vendorElementRefusedAlone() throws {
        let limit = "<csipaus:opModExpLimW><multiplier>0</multiplier><value>1500</value></csipaus:opModExpLimW>"
        let head = #"<DERControlList xmlns="urn:ieee:std:2030.5:ns" xmlns:csipaus="https://csipaus.org/ns/v1.3" all="2" results="2">"#
        let xml = head + Self.listControl("A1", limit) + Self.listControl("B2", limit + #"<x:foo xmlns:x="urn:vendor"/>"#) + "</DERControlList>"
        let document = try DERControlList.read(Array(xml.utf8))
        #expect(document.resource.controls.map(\.mRID) == ["A1"])
        #expect(document.resource.refused.map { $0.mRID ?? "-" } == ["B2"])
        #expect(document.resource.refused.map(\.status) == [.invalidEvent])
        #expect(document.resource.refused.first?.code == SEP2ErrorCode.namespaceUnknown.description)
        #expect(document.resource.refused.first?.reason.contains("SEP2_NAMESPACE_UNKNOWN") == true)
        #expect(document.csipaus == .v1_3, "the controls' CSIP-AUS namespace still found")
        var reporter = Sep2Reporter(settings: Self.settings())
        #expect(try Self.statuses(reporter.respond(refused: document.resource.refused, serverTime: 5)) == ["253 B2"])
        let whole = head + Self.listControl("A1", limit) + #"<x:foo xmlns:x="urn:vendor"/></DERControlList>"#
        #expect(throws: SEP2Error.self) { try DERControlList.read(Array(whole.utf8)) }
    }

    @Test("a control setting a CSIP-AUS limit in the 2030.5 namespace sets nothing bessd applies: refused 252")
    func limitInWrongNamespace() throws {
        let wrong = "<opModExpLimW><multiplier>0</multiplier><value>1500</value></opModExpLimW>"
        let xml = #"<DERControlList xmlns="urn:ieee:std:2030.5:ns" all="1" results="1">"# + Self.listControl("C3", wrong) + "</DERControlList>"
        let list = try DERControlList.read(Array(xml.utf8)).resource
        #expect(list.controls.isEmpty)
        #expect(list.refused.map(\.status) == [.notApplicable], "\(list.refused)")
    }
}
