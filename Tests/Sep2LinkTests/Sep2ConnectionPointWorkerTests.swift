import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import Testing

/// The ConnectionPoint read back (CSIP-AUS ALL-03) as the worker journals it: a failing read-back is said
/// once while it backs off, again after an answer was taken, and a 405 once before it is never read again.
@Suite("2030.5 worker: the ConnectionPoint read back")
struct Sep2ConnectionPointWorkerTests {
    static let id = "4102345678"

    /// The worker tests' chain whose EndDevice has a ConnectionPointLink; the server holds the configured id there.
    static func server() throws -> FakeSep2Server {
        var chain = Sep2Fixture.chain(controls: [])
        chain["/edev"] = chain["/edev"]?.replacingOccurrences(of: "</EndDevice>", with: #"<csipaus:ConnectionPointLink href="/edev/1/cp"/></EndDevice>"#)
        chain["/edev/1/cp"] = String(decoding: try ConnectionPointReport(connectionPointId: id).xml(csipaus: .v1_3), as: UTF8.self)
        return FakeSep2Server(chain)
    }

    /// SEP2_HTTP_STATUS, quoted; a 405 once, then never read back.
    @Test("a read-back answered 500 is journalled once while backing off, again after a 200; 405 stops it")
    func readBackJournalled() throws {
        let server = try Self.server()
        let log = LogLines()
        let settings = Sep2WorkerSettings(entryPath: "/dcap", pin: 111_115, pollSeconds: 30, siteRatingW: 200_000, timeout: .seconds(10),
                                          serverName: "test:443", discovery: DiscoveryOptions(connectionPointId: Self.id))
        let client = Sep2Client(settings: settings, identity: Sep2Fixture.identity, transport: server, slot: UtilityLimitSlot(), store: nil, log: log.sink)
        let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var now = start
        func run(_ seconds: Int64) {
            let end = now + .seconds(seconds)
            for _ in 0..<(seconds * 4 + 50) where now < end {
                let due = client.round(now: now, wall: Double(Sep2Fixture.t0) + now.seconds(since: start))
                if due > now { now = min(due, now + .seconds(1), end) }
            }
        }
        func gets() -> Int {
            server.requests.filter { $0 == "/edev/1/cp" }.count - server.posted.withLock { $0 }.filter { $0.path == "/edev/1/cp" }.count
        }
        func lines() -> [String] { log.codes("SEP2_HTTP_STATUS").filter { $0.contains("ConnectionPoint") } }
        run(5)
        try #require(server.posted.withLock { $0 }.map(\.path) == ["/edev/1/cp"] && client.state.withLock { $0.source } == .live, "\(log.all)")
        // The EndDevice is read every 30 s: its next read asks for the read-back, which fails 5 times (2, 4, 8, 16 s apart), then is taken.
        server.scripted.withLock { $0["/edev/1/cp"] = [Int](repeating: 500, count: 5) }
        let before = gets()
        run(90)
        #expect(gets() - before >= 6, "5 failures and the answer taken: \(gets() - before)")
        #expect(lines().count == 1, "\(log.all)")
        #expect(lines().first?.contains("HTTP 500 for the ConnectionPoint read back from \"/edev/1/cp\"") == true
                && lines().first?.contains("(\"/edev/1/cp\" of test:443)") == true, "\(lines())")
        #expect(log.codes("SEP2_SERVER_UNREACHABLE").isEmpty && client.state.withLock { $0.source } == .live)
        // Taken, then failing again: said again.
        server.scripted.withLock { $0["/edev/1/cp"] = [500] }
        run(40)
        #expect(lines().count == 2, "\(lines())")
        // 405: said once; the EndDevice is read on, the ConnectionPoint never again.
        server.scripted.withLock { $0["/edev/1/cp"] = [405] }
        run(40)
        let refused = gets()
        let reads = server.requests.filter { $0.hasPrefix("/edev?") || $0 == "/edev" }.count
        run(150)
        #expect(gets() == refused, "not read back after the 405")
        #expect(server.requests.filter { $0.hasPrefix("/edev?") || $0 == "/edev" }.count >= reads + 4, "the EndDevice read on")
        #expect(lines().count == 3 && lines().last?.contains("HTTP 405 for the ConnectionPoint read back from \"/edev/1/cp\": the server does not offer it; not read back again this session") == true,
                "\(lines())")
        #expect(server.posted.withLock { $0 }.count == 1, "the PUT stands")
    }
}
