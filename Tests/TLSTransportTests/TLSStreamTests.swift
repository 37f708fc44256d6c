import BessSystem
import Glibc
import Outstation
import TestSupport
import Testing
import TLSTransport

/// The outstation's TLS stream (`TLSStream`, a `ByteStream`) over its own TCP listener, with
/// `openssl s_client` as the control centre: the handshake runs inside the server's reads, the peer
/// is then named by its certificate, and a refused client ends the stream with the coded error.
@Suite("IEC 104 over TLS: the outstation's byte stream", .timeLimit(.minutes(1)))
struct TLSStreamTests {
    init() { signal(SIGPIPE, SIG_IGN) }

    /// Accepts one connection on an outstation listener while s_client (`client` past `-connect`)
    /// connects, and reads from its TLS stream until bytes, the end or a failure.
    private func serveOne(_ fixture: TLSFixture, client: [String], input: String) throws -> (first: StreamRead, peer: String, echoed: Bool) {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let peer = try PeerProcess(["s_client", "-connect", "127.0.0.1:\(listener.port)", "-ign_eof", "-quiet"] + client,
                                   input: input, directory: fixture.directory)
        defer { peer.stop() }
        var accepted: TCPStream?
        #expect(waitFor(seconds: 10) {
            accepted = listener.accept()
            return accepted != nil
        }, "s_client did not connect: \(peer.text)")
        let tcp = try #require(accepted)
        let stream = try TLSStream(over: tcp, context: try fixture.serverContext())
        defer { stream.close() }
        #expect(stream.peer.hasPrefix("127.0.0.1:"), "before the handshake the peer is its address: \(stream.peer)")
        var first = StreamRead.wouldBlock
        _ = waitFor(seconds: 10) {
            if first == .wouldBlock { first = stream.read(limit: 64) }
            return first != .wouldBlock
        }
        var echoed = false
        if case .bytes(let bytes) = first {
            echoed = waitFor(seconds: 10) { stream.write(bytes[...]) == bytes.count }
        }
        return (first, stream.peer, echoed)
    }

    @Test("a control centre with a certificate from the CA is served, named by its subject")
    func served() throws {
        let fixture = try TLSFixture()
        let client = ["-cert", fixture.path("client.pem"), "-key", fixture.path("client.key"), "-CAfile", fixture.path("ca.pem")]
        let (first, peer, echoed) = try serveOne(fixture, client: client, input: "68 04 07\n")
        #expect(first == .bytes(Array("68 04 07\n".utf8)))
        #expect(peer == "\"O=Grid Operator,CN=scada-client\"")
        #expect(echoed)
    }

    @Test("a control centre from another CA ends the stream with TLS_PEER_UNTRUSTED")
    func refused() throws {
        let fixture = try TLSFixture()
        let client = ["-cert", fixture.path("foreign.pem"), "-key", fixture.path("foreign.key"), "-CAfile", fixture.path("ca.pem")]
        let (first, peer, _) = try serveOne(fixture, client: client, input: "68 04 07\n")
        guard case .failed(let reason) = first else {
            Issue.record("expected a failure, got \(first)")
            return
        }
        #expect(reason.hasPrefix("TLS_PEER_UNTRUSTED: "), "\(reason)")
        #expect(peer.hasPrefix("127.0.0.1:"), "an unauthenticated peer keeps its address as its name: \(peer)")
    }
}
