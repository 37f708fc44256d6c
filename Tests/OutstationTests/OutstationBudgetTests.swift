import BessBase
import BessSystem
import Config
@testable import Cycle
import Glibc
import IEC104
@testable import Outstation
import Synchronization
import TestSupport
import Testing
import TLSTransport

/// The journal's budget per source address (accept-time lines, reconnects), the audit hook beside
/// it, and the group checked before TLS: docs/iec104.md "The journal's budget per source address".
@Suite("IEC 104 outstation: the journal's budget per source address and the audit beside it", .serialized)
struct OutstationBudgetTests {
    /// Opens a TCP connection to `port` from 127.0.0.1 and closes it at once, `count` times.
    static func connectAndClose(_ port: Int, times count: Int) throws {
        for _ in 0..<count {
            let fd = try #require(Loopback.connect(port), "connect to 127.0.0.1:\(port)")
            Glibc.close(fd)
        }
    }

    /// The one `IEC104_LOG_SUPPRESSED` line of 127.0.0.1 once the window has passed.
    static func summary(_ outstation: SteppedOutstation) -> [CollectedJournal.Line] {
        outstation.advance(by: OutstationServer.journalWindow)
        _ = waitFor { !outstation.journal.lines(.suppressed).isEmpty }
        return outstation.journal.lines(.suppressed)
    }

    /// 50 quick connects from 127.0.0.1 outside every allow_from: 20 IEC104_PEER_REFUSED, one IEC104_LOG_SUPPRESSED with 30; counter 50.
    @Test("refused peers log 20 lines, then one suppression summary per address; the counter counts all")
    func refusedByAllowFrom() throws {
        let outstation = try SteppedOutstation {
            $0.groups = [IEC104Group(name: "sldc", allowFrom: [IPv4Network("10.0.0.0/8")!], commands: [.agc])]
        }
        try Self.connectAndClose(outstation.server.port, times: 50)
        #expect(waitFor { outstation.server.counters.connectionsRefused.load(ordering: .relaxed) == 50 })
        #expect(outstation.journal.lines(.peerRefused).count == OutstationServer.journalLines, "each reconnect is no fresh budget")
        #expect(outstation.journal.lines(.suppressed).isEmpty, "the window is not over")
        let summary = Self.summary(outstation)
        #expect(summary.count == 1 && summary.first?.fields["BESS_SUPPRESSED"] == "30" && summary.first?.fields["BESS_PEER"] == "127.0.0.1",
                "\(summary.map(\.fields))")
    }

    /// max_connections 1 held, then 50 quick connects: one IEC104_CONNECTED, 19 IEC104_CONNECTIONS_FULL, one summary of 31; counter 50.
    @Test("connections past max_connections log 20 lines and one summary; the counter counts all")
    func refusedByTheConnectionLimit() throws {
        let outstation = try SteppedOutstation { $0.maxConnections = 1 }
        let held = try RawStation(port: outstation.server.port)
        #expect(waitFor { outstation.server.counters.connected.load(ordering: .relaxed) == 1 })
        try Self.connectAndClose(outstation.server.port, times: 50)
        #expect(waitFor { outstation.server.counters.connectionsRefused.load(ordering: .relaxed) == 50 })
        #expect(outstation.journal.lines(.connected).count == 1)
        #expect(outstation.journal.lines(.connectionsFull).count == OutstationServer.journalLines - 1)
        let summary = Self.summary(outstation)
        #expect(summary.count == 1 && summary.first?.fields["BESS_SUPPRESSED"] == "31", "\(summary.map(\.fields))")
        #expect(outstation.server.counters.connected.load(ordering: .relaxed) == 1, "the held connection stays")
        withExtendedLifetime(held) {}
    }

    /// IEC104_PEER_REFUSED.
    @Test("with TLS, a peer outside every allow_from is refused on TCP before any TLS session")
    func groupCheckedBeforeTLS() throws {
        let fixture = try TLSFixture()
        let context = try TLSServerContext(certificateFile: fixture.path("server.pem"), privateKeyFile: fixture.path("server.key"),
                                           caFile: fixture.path("ca.pem"), allowedPeers: nil, crlFile: nil)
        var settings = OutstationSettings()
        settings.port = 0
        settings.groups = [IEC104Group(name: "sldc", allowFrom: [IPv4Network("10.0.0.0/8")!], commands: [.agc])]
        let journal = CollectedJournal()
        let server = OutstationServer(settings: settings, description: StationImageTests.description, shared: SharedState(units: 2),
                                      tlsContext: context) { journal.append(CollectedJournal.Line($0)) }
        try server.start()
        defer { server.stop() }
        try Self.connectAndClose(server.port, times: 1)
        #expect(waitFor { server.counters.connectionsRefused.load(ordering: .relaxed) == 1 })
        #expect(journal.lines(.peerRefused).count == 1 && journal.lines(.tlsRefused).isEmpty)
        #expect(server.counters.tlsSessionsBegun.load(ordering: .relaxed) == 0, "SSL_new for a peer no group admits")
    }
}
