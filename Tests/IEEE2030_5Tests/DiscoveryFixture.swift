import ControlCore
import Foundation
import IEEE2030_5
import TestSupport
import Testing

/// The discovery chain as envoy-schema's models write it (hil/peers/sep2_discovery.py on
/// `Package.sep2Python`), made once per test run: the values given and three servers (A; B with the
/// assignments changed; C with other poll rates), each a dictionary of request path → document.
struct DiscoveryFixture: @unchecked Sendable {
    /// The device: the standard's example LFDI and SFDI (2030.5-2018 §6.3.4).
    static let lfdi = "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5"
    static let sfdi: UInt64 = 167_261_211_391
    static let pin: UInt32 = 111_115
    /// Items per page: the EndDeviceList of 7 comes in 3 pages.
    static let pageSize: UInt32 = 3

    let given: [String: Any]
    let servers: [String: [String: String]]

    static let shared: Result<DiscoveryFixture, any Error> = Result {
        let run = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_discovery.py", lfdi, String(sfdi), String(pageSize)])
        guard run.status == 0, let object = try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any],
              let given = object["given"] as? [String: Any], let servers = object["servers"] as? [String: [String: String]] else {
            throw Package.RunFailure(message: "sep2_discovery.py: \(run.status) \(run.err.suffix(800))")
        }
        return DiscoveryFixture(given: given, servers: servers)
    }

    static func load() throws -> DiscoveryFixture { try shared.get() }

    /// A document of server `name` as bytes.
    func document(_ name: String, _ path: String) throws -> [UInt8] {
        Array(try #require(servers[name]?[path], "no \(path) in server \(name)").utf8)
    }

    /// The values one resource was built from.
    func section(_ key: String) -> [String: Any] { given[key] as? [String: Any] ?? [:] }

    /// A JSON number as an Int.
    static func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }

    /// The limits the fixture is paged with.
    static var limits: DiscoveryLimits {
        var limits = DiscoveryLimits()
        limits.pageSize = pageSize
        return limits
    }
}

/// A server that answers from a dictionary of request path → document, scripted replies first.
struct FakeServer {
    var documents: [String: String]
    /// Replies given before the documents, in order, per request path.
    var scripted: [String: [Sep2Reply]] = [:]
    /// Every request path asked, in order, with the monotonic second it was asked at.
    var log: [(path: String, at: Int64)] = []
    /// Every POST and PUT, in order, with the second it was sent at.
    var writes: [(request: Sep2Request, at: Int64)] = []

    init(_ documents: [String: String]) { self.documents = documents }

    mutating func answer(_ request: Sep2Request, at now: Int64) -> Sep2Reply {
        log.append((request.path, now))
        if request.method != .get { writes.append((request, now)) }
        // What is PUT is kept, as a server keeps it (the ConnectionPoint read back gives it).
        if request.method == .put { documents[request.path] = String(decoding: request.body, as: UTF8.self) }
        if var queue = scripted[request.path], !queue.isEmpty {
            let reply = queue.removeFirst()
            scripted[request.path] = queue
            return reply
        }
        guard let body = documents[request.path] else { return Sep2Reply(status: 404) }
        return Sep2Reply(status: 200, body: Array(body.utf8))
    }

    /// The paths asked from `start` on.
    func asked(since start: Int) -> [String] { log[start...].map(\.path) }
}

/// A monotonic clock and a session driven against a `FakeServer`.
struct Drive {
    var session: DiscoverySession
    var server: FakeServer
    var now: Int64 = 1_000
    /// The local wall clock is this far behind the monotonic one's seconds (so the server's offset is known).
    var wallBase: Int64 = 1_759_999_000
    var errors: [SEP2Error] = []

    static func session(pin: UInt32? = DiscoveryFixture.pin, entry: String = "/dcap", limits: DiscoveryLimits? = nil,
                        options: DiscoveryOptions = DiscoveryOptions()) -> DiscoverySession {
        DiscoverySession(entryPath: entry, lfdi: DiscoveryFixture.lfdi.lowercased(), sfdi: DiscoveryFixture.sfdi, pin: pin,
                         pollSeconds: 300, limits: limits ?? DiscoveryFixture.limits, options: options)
    }

    init(_ documents: [String: String], pin: UInt32? = DiscoveryFixture.pin, entry: String = "/dcap", limits: DiscoveryLimits? = nil,
         options: DiscoveryOptions = DiscoveryOptions()) {
        session = Self.session(pin: pin, entry: entry, limits: limits, options: options)
        server = FakeServer(documents)
    }

    /// One request if one is due now: asked, answered, handled. False when none is due.
    mutating func step() -> Bool {
        guard let request = session.nextRequest(now: .at(now)) else { return false }
        let reply = server.answer(request, at: now)
        do { try session.handle(reply, to: request, now: .at(now), wallClock: now + wallBase) } catch { errors.append(error) }
        return true
    }

    /// Requests as they fall due, the clock moved on to each `nextDue`, until `until` (at most 5000 requests).
    mutating func run(until: Int64) {
        var steps = 0
        while steps < 5_000 {
            if step() { steps += 1; continue }
            guard let due = session.nextDue?.second, due > now, due <= until else { return }
            now = due
        }
        Issue.record("more than 5000 requests before \(until)")
    }

    /// Requests due now until none is (the chain read as far as it goes at this instant).
    mutating func settle() {
        var steps = 0
        while step() && steps < 5_000 { steps += 1 }
    }
}

extension DiscoverySession {
    /// The request `nextRequest` would give at `now`, this session left as it is.
    func peek(now: Int64) -> Sep2Request? {
        var copy = self
        return copy.nextRequest(now: .at(now))
    }
}

extension MonotonicInstant {
    /// The instant `second` whole seconds from the clock's origin (held at the ends): the tests count whole seconds.
    static func at(_ second: Int64) -> MonotonicInstant {
        let (nanoseconds, overflow) = second.multipliedReportingOverflow(by: 1_000_000_000)
        return MonotonicInstant(nanoseconds: overflow ? (second < 0 ? .min : .max) : nanoseconds)
    }

    /// The whole seconds from the clock's origin.
    var second: Int64 { nanoseconds / 1_000_000_000 }
}
