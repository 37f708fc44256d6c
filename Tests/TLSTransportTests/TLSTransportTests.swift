import BessBase
import ControlCore
import Foundation
import Glibc
import TestSupport
import Testing
import TLSTransport

/// The grid links' TLS against the `openssl` command as the independent peer, on loopback ports the
/// tests pick, with certificates made at test time: mutual authentication, the allow-list, the CRL,
/// TLS 1.2 as the floor, no NULL cipher, and IEEE 2030.5's CCM8 suite on the client side.
@Suite("TLS transport over OpenSSL", .timeLimit(.minutes(1)))
struct TLSTransportTests {
    init() {
        // A peer that resets while we write must not end the test process (bessd's worker threads
        // block SIGPIPE; the test runner does not).
        signal(SIGPIPE, SIG_IGN)
    }

    /// Serves one connection on a fresh listener while `client` (s_client's arguments past
    /// `-connect`) connects: the handshake's outcome, the connection when it succeeded, and the peer.
    private func serveOne(_ context: TLSServerContext, fixture: TLSFixture, client: [String], input: String = "",
                          after: (TLSConnection, PeerProcess) throws -> Void = { _, _ in }) throws -> (result: Result<TLSPeer, TLSError>, peer: PeerProcess) {
        let (listener, port) = try TestSocket.listen()
        defer { close(listener) }
        let peer = try PeerProcess(["s_client", "-connect", "127.0.0.1:\(port)", "-ign_eof"] + client, input: input,
                                   directory: fixture.directory)
        // The caller stops s_client (after checking that it ended by itself); here only on a throw.
        do {
            return (try handshake(on: listener, context, peer: peer, after: after), peer)
        } catch {
            peer.stop()
            throw error
        }
    }

    /// Accepts s_client's connection and runs the handshake (then `after`); closes the connection.
    private func handshake(on listener: Int32, _ context: TLSServerContext, peer: PeerProcess,
                           after: (TLSConnection, PeerProcess) throws -> Void) throws -> Result<TLSPeer, TLSError> {
        let fd = try #require(TestSocket.accept(listener), "s_client did not connect: \(peer.text)")
        let connection: TLSConnection
        do {
            connection = try TLSConnection(accepted: fd, context: context)
        } catch {
            close(fd)
            throw error
        }
        defer { connection.close() }
        do {
            let done = try TestSocket.handshake(connection)
            try #require(done, "the handshake did not end in time: \(peer.text)")
            let identity = try #require(connection.peer)
            try after(connection, peer)
            return .success(identity)
        } catch let error as TLSError {
            return .failure(error)
        }
    }

    @Test("data echoes over mutual TLS with openssl s_client, and the peer's subject names it")
    func echoWithMutualAuthentication() throws {
        let fixture = try TLSFixture()
        // The allow-list holds the client's fingerprint as the openssl command prints it.
        let context = try fixture.serverContext(allowedPeers: [try fixture.fingerprint("client")], crl: true)
        var echoed: [UInt8] = []
        var cipher: String?
        let (result, peer) = try serveOne(
            context, fixture: fixture,
            client: ["-cert", fixture.path("client.pem"), "-key", fixture.path("client.key"), "-CAfile", fixture.path("ca.pem"),
                     "-verify_return_error", "-quiet"],
            input: "hello bessd\n"
        ) { connection, peer in
            echoed = try TestSocket.read(connection)
            #expect(try TestSocket.write(connection, echoed))
            // Seen by s_client while the connection is still open.
            #expect(waitFor(seconds: 10) { peer.text.contains("hello bessd") }, "s_client printed: \(peer.text)")
            cipher = connection.negotiatedCipher
            #expect(connection.negotiatedVersion == "TLSv1.3")
        }
        defer { peer.stop() }
        let identity = try result.get()
        #expect(String(decoding: echoed, as: UTF8.self) == "hello bessd\n")
        #expect(peer.ended(), "s_client still runs after the server closed")
        #expect(cipher != nil)
        #expect(identity.subject == "O=Grid Operator,CN=scada-client")
        #expect(identity.identity == "\"O=Grid Operator,CN=scada-client\"")
        #expect(TLSPeer.normalizedFingerprint(try fixture.fingerprint("client")) == identity.fingerprint)
    }

    /// A client the server must refuse: how s_client is told to connect, and the code it is refused with.
    struct Refusal: CustomTestStringConvertible, Sendable {
        var name: String
        var client: @Sendable (TLSFixture) -> [String]
        var allowList: Bool = false
        var crl: Bool = false
        var code: TLSError.Code
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal(name: "no client certificate", client: { f in ["-CAfile", f.path("ca.pem")] }, code: .peerNoCertificate),
        Refusal(name: "a certificate from another CA",
                client: { f in ["-cert", f.path("foreign.pem"), "-key", f.path("foreign.key"), "-CAfile", f.path("ca.pem")] },
                code: .peerUntrusted),
        Refusal(name: "a certificate not on the allow-list",
                client: { f in ["-cert", f.path("revoked.pem"), "-key", f.path("revoked.key"), "-CAfile", f.path("ca.pem")] },
                allowList: true, code: .peerNotAllowed),
        Refusal(name: "a revoked certificate (CRL)",
                client: { f in ["-cert", f.path("revoked.pem"), "-key", f.path("revoked.key"), "-CAfile", f.path("ca.pem")] },
                crl: true, code: .peerRevoked),
        Refusal(name: "TLS 1.1 forced by the client",
                client: { f in ["-cert", f.path("client.pem"), "-key", f.path("client.key"), "-CAfile", f.path("ca.pem"),
                                "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"] },
                code: .protocolVersion),
        Refusal(name: "a NULL cipher forced by the client",
                client: { f in ["-cert", f.path("client.pem"), "-key", f.path("client.key"), "-CAfile", f.path("ca.pem"),
                                "-tls1_2", "-cipher", "ECDHE-ECDSA-NULL-SHA:NULL-SHA256:@SECLEVEL=0"] },
                code: .noSharedCipher),
    ]

    @Test("refused with its coded error", arguments: refusals)
    func refused(_ refusal: Refusal) throws {
        let fixture = try TLSFixture()
        // The allow-list names the good client only; the CRL lists the revoked one.
        let allowed = refusal.allowList ? [try fixture.fingerprint("client")] : nil
        let context = try fixture.serverContext(allowedPeers: allowed, crl: refusal.crl)
        let (result, peer) = try serveOne(context, fixture: fixture, client: refusal.client(fixture))
        defer { peer.stop() }
        switch result {
        case .success(let identity):
            Issue.record("\(refusal.name) was accepted as \(identity.identity); s_client: \(peer.text)")
        case .failure(let error):
            #expect(error.code == refusal.code, "\(error)")
            #expect(error.message.contains("("), "the message carries OpenSSL's reason: \(error)")
        }
        #expect(peer.ended(), "s_client still runs after the refusal: \(peer.text)")
    }

    /// `openssl s_server` with `certificate` at TLS 1.2 and ECDHE-ECDSA-AES128-CCM8 only (plus
    /// `arguments`), and a connection of the client context (the fixture's client certificate, its CA,
    /// the default cipher list) to it, before the handshake.
    private func connectToServer(_ fixture: TLSFixture, certificate: String,
                                 _ arguments: [String]) throws -> (server: PeerProcess, connection: TLSConnection) {
        let port = Loopback.freePort()
        let server = try PeerProcess(
            ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", fixture.path("\(certificate).pem"),
             "-key", fixture.path("\(certificate).key"), "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-CCM8"] + arguments,
            keepInputOpen: true, directory: fixture.directory)
        do {
            try #require(waitFor(seconds: 10) { server.text.contains("ACCEPT") }, "s_server did not start: \(server.text)")
            let context = try TLSClientContext(certificateFile: fixture.path("client.pem"), privateKeyFile: fixture.path("client.key"),
                                               caFile: fixture.path("ca.pem"))
            let fd = try TestSocket.connect(port)
            do {
                return (server, try TLSConnection(connected: fd, context: context))
            } catch {
                close(fd)
                throw error
            }
        } catch {
            server.stop()
            throw error
        }
    }

    @Test("the client context negotiates ECDHE-ECDSA-AES128-CCM8 at TLS 1.2 with openssl s_server, mutual auth")
    func clientNegotiatesCCM8() throws {
        let fixture = try TLSFixture()
        // s_server asks for a client certificate from the CA and refuses the handshake without one.
        let (server, connection) = try connectToServer(fixture, certificate: "server",
                                                       ["-CAfile", fixture.path("ca.pem"), "-Verify", "1", "-verify_return_error", "-rev"])
        defer { server.stop() }
        defer { connection.close() }
        #expect(try TestSocket.handshake(connection))
        #expect(connection.negotiatedCipher == "ECDHE-ECDSA-AES128-CCM8")
        #expect(connection.negotiatedVersion == "TLSv1.2")
        #expect(connection.peer?.subject == "CN=bessd-test-server")
        // s_server -rev answers each line reversed: application data flows both ways.
        #expect(try TestSocket.write(connection, Array("bessd\n".utf8)))
        let answer = String(decoding: try TestSocket.read(connection), as: UTF8.self)
        #expect(answer.contains("dsseb"), "s_server answered \(answer); it printed: \(server.text)")
    }

    @Test("the client refuses a server whose chain does not verify against its CA")
    func clientRefusesUntrustedServer() throws {
        let fixture = try TLSFixture()
        let (server, connection) = try connectToServer(fixture, certificate: "foreign", [])
        defer { server.stop() }
        defer { connection.close() }
        let error = #expect(throws: TLSError.self) { try TestSocket.handshake(connection) }
        #expect(error?.code == .peerUntrusted, "\(String(describing: error)); s_server: \(server.text)")
    }

    @Test("a context refuses what it cannot use with TLS_CONTEXT_FAILED")
    func contextFailures() throws {
        let fixture = try TLSFixture()
        let missing = #expect(throws: TLSError.self) {
            try TLSServerContext(certificateFile: fixture.path("absent.pem"), privateKeyFile: fixture.path("server.key"),
                                 caFile: fixture.path("ca.pem"))
        }
        #expect(missing?.code == .contextFailed && missing?.message.contains("absent.pem") == true, "\(String(describing: missing))")
        let mismatched = #expect(throws: TLSError.self) {
            try TLSServerContext(certificateFile: fixture.path("server.pem"), privateKeyFile: fixture.path("client.key"),
                                 caFile: fixture.path("ca.pem"))
        }
        #expect(mismatched?.code == .contextFailed, "\(String(describing: mismatched))")
        let badEntry = #expect(throws: TLSError.self) { try fixture.serverContext(allowedPeers: ["not-a-fingerprint\u{1b}[2J"]) }
        #expect(badEntry?.code == .contextFailed && badEntry?.message.contains("\u{1b}") == false, "\(String(describing: badEntry))")
        // A configuration that asks for NULL ciphers only is left with nothing: they are always struck.
        let nullOnly = #expect(throws: TLSError.self) {
            try TLSServerContext(certificateFile: fixture.path("server.pem"), privateKeyFile: fixture.path("server.key"),
                                 caFile: fixture.path("ca.pem"), cipherList: "eNULL:aNULL")
        }
        #expect(nullOnly?.code == .contextFailed, "\(String(describing: nullOnly))")
    }

    @Test("close acts once; the connection is then refused with TLS_CLOSED")
    func closeOnce() throws {
        let fixture = try TLSFixture()
        let context = try fixture.serverContext()
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
        defer { close(pair[1]) }
        let connection = try TLSConnection(accepted: pair[0], context: context)
        #expect(try connection.handshake() == .wantRead)
        connection.close()
        #expect(fcntl(pair[0], F_GETFD) == -1, "the socket is closed")
        connection.close()
        // A connection that does not own its socket (a TLS stream over a TCP stream) leaves it open.
        var kept: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &kept) == 0)
        defer { close(kept[0]); close(kept[1]) }
        let borrowing = try TLSConnection(accepted: kept[0], context: context, ownsDescriptor: false)
        borrowing.close()
        #expect(fcntl(kept[0], F_GETFD) != -1, "the socket stays its owner's")
        var buffer = [UInt8](repeating: 0, count: 8)
        let error = #expect(throws: TLSError.self) {
            try buffer.withUnsafeMutableBytes { (raw) throws(TLSError) -> TLSTransfer in try connection.read(into: raw) }
        }
        #expect(error?.code == .closed)
    }
}
