import BessBase
import BessSystem
import ControlCore
import Glibc
@testable import Config
@testable import Scada
import Synchronization
import TestSupport
import Testing

/// Whom the SCADA server admits is BessSystem's `TCPListener.Admission` (issue 58: one listener),
/// with the journal lines the server wrote before it shared the house's listener.
@Suite("SCADA: admission through the shared TCP listener")
struct ScadaAdmissionTests {
    @Test("the listener's admission is allow_from (loopback when empty), max_clients and idle_timeout_s")
    func admissionFromSettings() throws {
        func a(_ text: String) -> UInt32 { IPv4Network.parse(text)! }
        let open = ScadaServer.admission(ScadaConfiguration(host: "127.0.0.1", port: 502, idleTimeout: .seconds(7), maxClients: 2))
        #expect(open.refusal(of: a("127.0.0.1"), open: 1) == nil)
        #expect(open.refusal(of: a("127.0.0.1"), open: 2) == .full(2))
        #expect(open.refusal(of: a("10.0.0.1"), open: 0) == .notAllowed)
        #expect(open.idleTimeout == .seconds(7))
        let listed = ScadaServer.admission(ScadaConfiguration(host: "0.0.0.0", port: 502, allowFrom: [try #require(IPv4Network("10.0.0.0/8"))]))
        #expect(listed.refusal(of: a("10.9.8.7"), open: 0) == nil)
        #expect(listed.refusal(of: a("127.0.0.1"), open: 0) == .notAllowed)
        // Not allowed is said before full: a stranger is never told how many are connected.
        #expect(listed.refusal(of: a("192.168.0.1"), open: 32) == .notAllowed)
    }

    @Test("a client beyond max_clients and one outside allow_from are refused, journalled as before")
    func refusalsThroughListener() throws {
        let said = Mutex<[Notice]>([])
        let settings = ScadaConfiguration(host: "127.0.0.1", port: 0, allowFrom: [try #require(IPv4Network("127.0.0.1"))], maxClients: 1)
        let (server, _) = try ScadaTests().server(settings) { notice in said.withLock { $0.append(notice) } }
        defer { server.stop() }
        let scada = ScadaTests()
        let first = try connect(from: "127.0.0.1", to: server.port)
        defer { close(first.fd) }
        #expect(waitFor(seconds: 5) { server.connected.load(ordering: .relaxed) == 1 })
        let second = try connect(from: "127.0.0.1", to: server.port)
        defer { close(second.fd) }
        #expect(scada.closedByPeer(second.fd, within: 5))
        let stranger = try connect(from: "127.0.0.2", to: server.port)
        defer { close(stranger.fd) }
        #expect(scada.closedByPeer(stranger.fd, within: 5))
        #expect(server.connectionsRefused.load(ordering: .relaxed) == 2)
        let notices = said.withLock { $0 }
        #expect(notices.map(\.code) == ["SCADA_CLIENTS_FULL", "SCADA_PEER_REFUSED"])
        #expect(notices.map(\.message) == [
            "SCADA connection from \(second.peer) refused: 1 clients already connected (scada.max_clients)",
            "SCADA connection from \(stranger.peer) refused: not in scada.allow_from",
        ])
        #expect(notices.map { $0.fields[.peer] } == [second.peer, stranger.peer])
        #expect(!scada.closedByPeer(first.fd, within: 0.2))
        #expect(server.connected.load(ordering: .relaxed) == 1)
    }

    @Test("a client silent for idle_timeout_s is closed by the server with its journal line as before")
    func idleCloseLine() throws {
        let said = Mutex<[Notice]>([])
        let settings = ScadaConfiguration(host: "127.0.0.1", port: 0, idleTimeout: .seconds(1))
        let (server, _) = try ScadaTests().server(settings) { notice in said.withLock { $0.append(notice) } }
        defer { server.stop() }
        let client = try connect(from: "127.0.0.1", to: server.port)
        defer { close(client.fd) }
        #expect(ScadaTests().closedByPeer(client.fd, within: 10))
        #expect(server.idleClosed.load(ordering: .relaxed) == 1)
        #expect(said.withLock { $0 }.map(\.message) == ["SCADA client \(client.peer) closed after 1.0 s without a request"])
        #expect(waitFor(seconds: 5) { server.connected.load(ordering: .relaxed) == 0 })
    }

    /// A blocking TCP connection from `source` (any loopback address) to 127.0.0.1:`port`: its
    /// descriptor and `address:port` as the server sees it.
    func connect(from source: String, to port: Int) throws -> (fd: Int32, peer: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(host)
            return address
        }
        var local = address(source, 0)
        var remote = address("127.0.0.1", UInt16(port))
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) } }
        try #require(bound == 0 && connected == 0, "errno \(errno)")
        var name = sockaddr_in()
        var size = length
        _ = withUnsafeMutablePointer(to: &name) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) } }
        return (fd, "\(source):\(UInt16(bigEndian: name.sin_port))")
    }
}
