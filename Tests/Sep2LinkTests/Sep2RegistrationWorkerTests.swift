import BessBase
import BessSystem
import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import Testing

/// The worker's whole in-band path (no TLS): the session's POST and PUT go out through the transport
/// with their bodies and media type, the answer's `Location` (an absolute URL) is followed, a refusal is
/// journalled once and sent again after the back-off, and the schedule below the registered device
/// reaches the slot.
@Suite("2030.5 worker: in-band registration")
struct Sep2RegistrationWorkerTests {
    /// The fixture's chain, whose EndDeviceList lacks the device until the server has taken its POST and
    /// then still only gives it at its Location.
    final class RegisteringServer: Sep2Transport, @unchecked Sendable {
        struct Sent { var method: String; var path: String; var contentType: String?; var body: [UInt8] }
        let documents: [String: String]
        let sent = Mutex<[Sent]>([])
        /// Statuses the POST gets before it is taken.
        let refusals = Mutex<[Int]>([])

        init(refusing: [Int], controls: [Sep2Fixture.Control] = []) {
            var documents = Sep2Fixture.chain(controls: controls)
            let ns = Sep2Fixture.ns, identity = Sep2Fixture.identity
            documents["/edev"] = #"<EndDeviceList \#(ns) href="/edev" all="1" results="1"><EndDevice href="/edev/9"><sFDI>5</sFDI><changedTime>0</changedTime></EndDevice></EndDeviceList>"#
            documents["/edev/1"] = #"<EndDevice \#(ns) href="/edev/1"><lFDI>\#(identity.lfdi)</lFDI><sFDI>\#(identity.sfdi)</sFDI><changedTime>0</changedTime>"#
                + #"<FunctionSetAssignmentsListLink href="/edev/1/fsa" all="1"/><RegistrationLink href="/edev/1/rg"/><csipaus:ConnectionPointLink href="/edev/1/cp"/></EndDevice>"#
            self.documents = documents
            refusals.withLock { $0 = refusing }
        }

        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
            sent.withLock { $0.append(Sent(method: request.method, path: request.path, contentType: request.contentType, body: request.body)) }
            switch (request.method, request.path) {
            case ("POST", "/edev"):
                if let status = refusals.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return HTTPResponse(status: status) }
                return HTTPResponse(status: 201, headers: [("Location", "https://test:443/edev/1")])
            case ("PUT", "/edev/1/cp"):
                return HTTPResponse(status: 204)
            case ("GET", _):
                let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
                guard let document = documents[path] else { return HTTPResponse(status: 404) }
                return HTTPResponse(status: 200, body: Array(document.utf8))
            default:
                return HTTPResponse(status: 405)
            }
        }

        func close() {}
    }

    /// Journalled once, sent again after 2 and 4 s.
    @Test("refused twice then registered: Location followed, ConnectionPoint PUT, the default in the slot")
    func wholePath() throws {
        let server = RegisteringServer(refusing: [403, 403])
        let slot = UtilityLimitSlot()
        let log = LogLines()
        let settings = Sep2WorkerSettings(entryPath: "/dcap", pin: 111_115, pollSeconds: 30, siteRatingW: 200_000, timeout: .seconds(10),
                                          serverName: "test:443", discovery: DiscoveryOptions(inBandRegistration: true, connectionPointId: "4102345678"))
        let client = Sep2Client(settings: settings, identity: Sep2Fixture.identity, transport: server, slot: slot, store: nil, log: log.sink)
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var now = start
        client.restore(now: now, wall: Double(Sep2Fixture.t0))
        for _ in 0..<200 where now - start < .seconds(20) {
            let due = client.round(now: now, wall: Double(Sep2Fixture.t0) + now.seconds(since: start))
            if due > now { now = min(due, now + .seconds(1)) }
        }
        let sent = server.sent.withLock { $0 }
        let posts = sent.filter { $0.method == "POST" }
        #expect(posts.count == 3 && posts.allSatisfy { $0.contentType == "application/sep+xml" })
        let body = String(decoding: try #require(posts.last).body, as: UTF8.self)
        #expect(body.hasPrefix("<EndDevice xmlns=\"urn:ieee:std:2030.5:ns\"><deviceCategory>02000000</deviceCategory><lFDI>\(Sep2Fixture.identity.lfdi.uppercased())</lFDI>"), "\(body)")
        #expect(log.codes("SEP2_REGISTRATION_REFUSED").count == 1, "\(log.all)")
        #expect(log.codes("SEP2_REGISTRATION_REFUSED").first?.contains("HTTP 403 for the EndDevice POSTed to \"/edev\"") == true, "\(log.all)")
        // After the POST: the device where the Location put it, its Registration, then the ConnectionPoint.
        let afterPost = sent.drop(while: { !($0.method == "POST" && $0 == posts.last) }).dropFirst().map { "\($0.method) \($0.path)" }
        #expect(Array(afterPost.prefix(3)) == ["GET /edev/1", "GET /edev/1/rg", "PUT /edev/1/cp"], "\(afterPost)")
        let put = try #require(sent.first { $0.method == "PUT" })
        #expect(String(decoding: put.body, as: UTF8.self).contains("<csipaus:connectionPointId>4102345678</csipaus:connectionPointId>")
                && put.contentType == "application/sep+xml")
        #expect(sent.filter { $0.method == "PUT" }.count == 1 && slot.read()?.exportLimitW == 5000)
        #expect(client.state.withLock { $0.source } == .live)
    }

    /// A transport whose every exchange fails as bessd's does when the device certificate cannot be read.
    final class TornCertificate: Sep2Transport, @unchecked Sendable {
        let sent = Mutex(0)
        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
            sent.withLock { $0 += 1 }
            throw HTTPClientError(.tls, message: "SEP2_CERTIFICATE_INVALID: client.pem: torn")
        }
        func close() {}
    }

    /// Its identity from the EndDevice stored at its Location.
    @Test("a restart with an unreadable certificate runs the in-band device's stored schedule")
    func restartFromInBandStore() throws {
        let dir = NSTemporaryDirectory() + "sep2-inband-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let t0 = Sep2Fixture.t0
        let server = RegisteringServer(refusing: [], controls: [Sep2Fixture.Control(mRID: "A1", start: t0 + 100, duration: 60, exportW: 1500)])
        let settings = Sep2WorkerSettings(entryPath: "/dcap", pin: 111_115, pollSeconds: 30, siteRatingW: 200_000, timeout: .seconds(10),
                                          serverName: "test:443", discovery: DiscoveryOptions(inBandRegistration: true, connectionPointId: "4102345678"))
        let first = Sep2Client(settings: settings, identity: Sep2Fixture.identity, transport: server, slot: UtilityLimitSlot(), store: ScheduleStore(stateDirectory: dir),
                               log: LogLines().sink)
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var now = start
        first.restore(now: now, wall: Double(t0))
        for _ in 0..<200 where now - start < .seconds(20) {
            let due = first.round(now: now, wall: Double(t0) + now.seconds(since: start))
            if due > now { now = min(due, now + .seconds(1)) }
        }
        try #require(first.state.withLock { $0.source } == .live)
        let stored = try #require(try ScheduleStore(stateDirectory: dir).load())
        // The list the server gives never names the device: only its Location's EndDevice does.
        #expect(stored.documents["/edev/1"] != nil && !stored.documents.values.contains { body in
            (try? EndDeviceList.read(body))?.resource.endDevices.contains { $0.lFDI != nil } == true
        }, "\(stored.documents.keys.sorted())")
        let found = stored.deviceIdentity
        #expect(found == Sep2Fixture.identity)

        // The restart with the certificate torn: the identity is the store's, every exchange fails, the control runs.
        let identity = try #require(stored.deviceIdentity)
        let slot = UtilityLimitSlot()
        let log = LogLines()
        let torn = TornCertificate()
        let second = Sep2Client(settings: settings, identity: identity, transport: torn, slot: slot, store: ScheduleStore(stateDirectory: dir), log: log.sink)
        second.restore(now: start, wall: Double(t0 + 120))
        #expect(slot.read()?.exportLimitW == 1500, "\(log.all)")
        #expect(second.state.withLock { $0.source } == .cached && log.codes("SEP2_SCHEDULE_CACHED").count == 1, "\(log.all)")
        _ = second.round(now: start, wall: Double(t0 + 120))
        #expect(torn.sent.withLock { $0 } >= 1 && slot.read()?.exportLimitW == 1500, "\(log.all)")
    }
}

extension Sep2RegistrationWorkerTests.RegisteringServer.Sent: Equatable {}
