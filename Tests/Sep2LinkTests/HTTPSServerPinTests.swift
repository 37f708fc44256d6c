import BessBase
import Config
import ControlCore
import Cycle
import Foundation
import Glibc
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import TestSupport
import Testing
import TLSTransport

/// The 2030.5 server pin (`ieee2030_5.server_certificate_sha256`, `server_lfdi`; issue 57 §4): two
/// `hil/peers/https_peer.py` under one CA (the SERCA), the utility's with the fixture's server
/// certificate and an impostor with another device's (the fixture's `revoked`, valid here: no CRL):
/// a pinned client refuses the impostor in the handshake, before any request, and is served by the
/// pinned server.
@Suite("IEEE 2030.5 server pin against two Python TLS servers under one CA")
struct HTTPSServerPinTests {
    init() { signal(SIGPIPE, SIG_IGN) }

    /// https_peer.py serving with `certificate` of `pki`.
    static func server(_ pki: TLSFixture, _ certificate: String, input: Pipe) throws -> UnitsPeer {
        let peer = try UnitsPeer(arguments: [try Package.sep2Python(), "hil/peers/https_peer.py", "--cert", pki.path("\(certificate).pem"),
                                             "--key", pki.path("\(certificate).key"), "--ca", pki.path("ca.pem")], input: input)
        guard peer.port > 0 else { throw FixtureFailure("https_peer.py did not say its port: \(peer.all)") }
        return peer
    }

    /// A client of `port` whose context the TLS transport makes from the configuration's files and
    /// pins (as the service does, Service/TLSContexts.swift).
    static func client(_ pki: TLSFixture, port: Int, fingerprints: [String]? = nil, lfdi: String? = nil) throws -> HTTPSClient {
        let settings = IEEE2030_5Settings(serverHost: "127.0.0.1", serverPort: UInt16(port), deviceCapabilityPath: "/dcap",
                                          certificateFile: pki.path("client.pem"), keyFile: pki.path("client.key"), caFile: pki.path("ca.pem"),
                                          serverCertificates: fingerprints, serverLFDI: lfdi)
        let pinned = settings.acceptsServer
        let context = try TLSClientContext(certificateFile: settings.certificateFile, privateKeyFile: settings.keyFile, caFile: settings.caFile,
                                           cipherList: settings.cipherList, acceptsServer: pinned.map { pinned in { @Sendable (peer: TLSPeer) in pinned(peer.fingerprint) } })
        return HTTPSClient(host: "127.0.0.1", port: UInt16(port), context: context, timeout: .seconds(10))
    }

    /// The code and message of what a GET of /dcap threw, nil when it was answered.
    static func failure(_ client: HTTPSClient) -> (code: String, message: String)? {
        HTTPSClientTests.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "GET", path: "/dcap")) }.map { ($0.0, $0.1) }
    }

    /// The refusal names its fingerprint and LFDI; the pinned server is served; unpinned, both are.
    @Test("a pin by fingerprint or LFDI refuses another device's certificate (SEP2_SERVER_MISMATCH)")
    func pinnedServer() throws {
        let pki = try TLSFixture()
        // Each holds its own standard input open: the peer exits when the test process goes.
        let inputs = (Pipe(), Pipe())
        let genuine = try Self.server(pki, "server", input: inputs.0)
        let impostor = try Self.server(pki, "revoked", input: inputs.1)
        defer {
            genuine.stop()
            impostor.stop()
        }
        let pinned = try #require(TLSPeer.normalizedFingerprint(try pki.fingerprint("server")))
        let presented = try #require(TLSPeer.normalizedFingerprint(try pki.fingerprint("revoked")))
        let pinnedLFDI = try #require(DeviceIdentity(fingerprint: pinned)).lfdi
        let presentedLFDI = try #require(DeviceIdentity(fingerprint: presented)).lfdi
        // As the configuration accepts them: the openssl command's upper case with colons.
        let byFingerprint = [try pki.fingerprint("server")].compactMap(TLSPeer.normalizedFingerprint)
        for (name, fingerprints, lfdi) in [("fingerprint", byFingerprint, nil), ("LFDI", nil, pinnedLFDI)] as [(String, [String]?, String?)] {
            let refused = Self.failure(try Self.client(pki, port: impostor.port, fingerprints: fingerprints, lfdi: lfdi))
            #expect(refused?.code == "SEP2_SERVER_MISMATCH", "pinned by \(name): \(String(describing: refused))")
            #expect(refused?.message.contains(presented) == true && refused?.message.contains(presentedLFDI) == true,
                    "the message names what was presented: \(String(describing: refused))")
            #expect(refused?.message.contains("CN=revoked-client") == true, "\(String(describing: refused))")
            let served = try Self.client(pki, port: genuine.port, fingerprints: fingerprints, lfdi: lfdi)
            defer { served.close() }
            #expect(try served.send(HTTPRequest(method: "GET", path: "/dcap")).status == 200, "pinned by \(name)")
        }
        // The impostor saw the client's alert in its handshake, and never a request.
        #expect(waitFor { impostor.all.filter { $0.hasPrefix("HANDSHAKE-FAILED") }.count == 2 }, "\(impostor.all)")
        #expect(!impostor.all.contains { $0.contains("GET") }, "\(impostor.all)")
        let unpinned = try Self.client(pki, port: impostor.port)
        defer { unpinned.close() }
        #expect(try unpinned.send(HTTPRequest(method: "GET", path: "/dcap")).status == 200, "without a pin the SERCA's chain is all that is checked")
    }

    /// The fake server behind a pin: while `presenting` names a certificate, every exchange fails as
    /// `HTTPSClient` fails a server the pin does not name.
    final class PinnedTransport: Sep2Transport, @unchecked Sendable {
        let server: FakeSep2Server
        let presenting = Mutex<String?>(nil)
        init(_ server: FakeSep2Server) { self.server = server }
        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
            if let certificate = presenting.withLock({ $0 }) {
                throw HTTPClientError(.serverMismatch, message: "test:443 presented a certificate that is not the pinned server's (sha256 \"\(certificate)\")")
            }
            return try server.send(request)
        }
        func close() {}
    }

    /// Not SEP2_SERVER_UNREACHABLE; RESTORED when the pinned server answers.
    @Test("SEP2_SERVER_MISMATCH once per certificate, cached schedule meanwhile, SEP2_SERVER_RESTORED after")
    func mismatchJournalled() {
        let transport = PinnedTransport(FakeSep2Server(Sep2Fixture.chain(controls: [])))
        let log = LogLines()
        let slot = UtilityLimitSlot()
        let client = Sep2Client(settings: Sep2WorkerSettings(entryPath: "/dcap", pin: 111_115, pollSeconds: 30, siteRatingW: 200_000,
                                                            timeout: .seconds(10), serverName: "test:443"),
                                identity: Sep2Fixture.identity, transport: transport, slot: slot, store: nil, log: log.sink)
        var now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        var wall = Double(Sep2Fixture.t0)
        transport.server.clock.withLock { $0 = { Int64(Sep2Fixture.t0) } }
        func run(_ seconds: Int) {
            for _ in 0..<seconds {
                now = now + .seconds(1)
                wall += 1
                for _ in 0..<50 where client.round(now: now, wall: wall) <= now {}
            }
        }
        run(5)
        #expect(slot.read()?.exportLimitW == 5000, "the default taken from the pinned server")
        // The back-off doubles up to 300 s: each window holds at least one attempt.
        transport.presenting.withLock { $0 = "aa11" }
        run(120)
        transport.presenting.withLock { $0 = "bb22" }
        run(320)
        let mismatches = log.codes("SEP2_SERVER_MISMATCH")
        #expect(mismatches.count == 2 && mismatches[0].contains("aa11") && mismatches[1].contains("bb22"), "\(log.all)")
        #expect(log.all.filter { $0.code == "SEP2_SERVER_MISMATCH" }.allSatisfy { $0.warning })
        #expect(log.codes("SEP2_SERVER_UNREACHABLE").isEmpty, "\(log.all)")
        #expect(slot.read()?.exportLimitW == 5000, "the cached default runs on")
        transport.presenting.withLock { $0 = nil }
        run(700)
        #expect(log.codes("SEP2_SERVER_RESTORED").count == 1, "\(log.all)")
    }
}
