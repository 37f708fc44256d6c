import Foundation
import Glibc
import IEC104
import TestSupport
import Testing

/// socat's OpenSSL client in front of a plain IEC 104 client (c104 2.2.1's own TLS client fails its
/// hostname check, docs/iec104.md): it listens on a loopback port of its own, takes one connection
/// and carries it over TLS to bessd's outstation with the certificate it was given, verifying
/// bessd's against the fixture's CA.
final class TLSBridge {
    let process = Process()
    /// The plain port a client connects to.
    let port = Loopback.freePort()
    /// What socat said (`-d -d`), for a failure's message.
    let log: String

    /// - Parameter certificate: the fixture's name of the client certificate and key socat shows
    ///   (`client`, `foreign`); nil for none.
    init(to target: Int, pki: TLSFixture, certificate: String?) throws {
        log = pki.path("socat-\(port).log")
        var tls = "OPENSSL:127.0.0.1:\(target),cafile=\(pki.path("ca.pem")),verify=1,commonname=bessd-test-server"
        if let certificate { tls += ",cert=\(pki.path("\(certificate).pem")),key=\(pki.path("\(certificate).key"))" }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["socat", "-d", "-d", "-lf", log, "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr", tls]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Not probed by connecting: without fork socat serves the one connection that would be.
        guard waitFor(seconds: 10, { Self.listens(port) }) else { throw FixtureFailure("socat does not listen on \(port): \(said)") }
    }

    /// What socat logged so far.
    var said: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// True when a socket listens on 127.0.0.1:`port` (from /proc/net/tcp, without connecting).
    static func listens(_ port: Int) -> Bool {
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        let local = "0100007F:" + String(format: "%04X", port)
        return table.split(separator: "\n").contains { line in
            let columns = line.split(separator: " ")
            return columns.count > 3 && columns[1] == local && columns[3] == "0A"
        }
    }

    /// SIGKILL: a child inherits the test runner's signal mask, in which SIGTERM may be blocked.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// The outstation of a running bessd over TLS (IEC 62351-3, issue 46 §4): c104 through socat,
/// refusals of untrusted, certificate-less, plain, silent, revoked and unlisted peers, each closing
/// its own connection only.
@Suite("IEC 104 over TLS: a running bessd's outstation", .serialized)
struct IEC104TLSDaemonTests {
    /// `IEC104DaemonTests.yaml` with `iec104.tls` from `pki` and a 2 s handshake timeout.
    static func yaml(port: Int, pki: TLSFixture, extra: String = "") -> String {
        IEC104DaemonTests.yaml(port: port).replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.0") + """

              tls:
                cert_file: \(pki.path("server.pem"))
                key_file: \(pki.path("server.key"))
                ca_file: \(pki.path("ca.pem"))
                handshake_timeout_s: 2
            """ + extra + "\n"
    }

    /// A raw station through `bridge` once it accepts; nil when it never did.
    static func station(through port: Int) -> RawControlStation? {
        var station: RawControlStation?
        _ = waitFor(seconds: 10) { station = try? RawControlStation(port: port); return station != nil }
        return station
    }

    /// STARTDT on `station`: true when confirmed and followed by end of initialisation (served).
    static func served(_ station: RawControlStation) -> Bool {
        station.send(.unnumbered(.startDataTransferActivation))
        return station.next() == .unnumbered(.startDataTransferConfirmation) && station.asdu { $0.type == .endOfInitialisation } != nil
    }

    /// Whether a client showing the fixture's `certificate` through a bridge of its own is served,
    /// and the end of what socat said.
    static func served(as certificate: String, to port: Int, pki: TLSFixture) throws -> (served: Bool, said: String) {
        let bridge = try TLSBridge(to: port, pki: pki, certificate: certificate)
        let served = station(through: bridge.port).map(Self.served) ?? false
        return (served, String(bridge.said.suffix(400)))
    }

    /// Refused: STARTDT gets no confirmation and the connection is closed.
    static func refused(_ station: RawControlStation) -> Bool {
        station.send(.unnumbered(.startDataTransferActivation))
        var confirmed = false
        let closed = waitFor(seconds: 10) {
            if station.next(seconds: 0.5) == .unnumbered(.startDataTransferConfirmation) { confirmed = true }
            return station.closed
        }
        return closed && !confirmed
    }

    /// The journal lines with `code`.
    static func lines(_ text: String, _ code: String) -> [Substring] {
        text.split(separator: "\n").filter { $0.contains("BESS_CODE=\(code)") }
    }

    /// c104 through socat's TLS client: interrogation equals bessctl site --json. Another CA's client, one without a certificate, a plain TCP client and a silent one are refused with coded lines; a good client is served afterwards.
    @Test("IEC 104 over TLS serves a good client, audited by subject; bad, missing or plain clients refused")
    func c104OverTLS() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port, pki: pki))
        var site: [String: Any] = [:]
        let running = waitFor(seconds: 15) {
            site = (try? daemon.request(["verb": "site"])) ?? [:]
            return (site["units"] as? [[String: Any]] ?? []).compactMap { $0["soc_percent"] as? Double }.count == 2
        }
        #expect(running, "site: \(site)")

        let bridge = try TLSBridge(to: port, pki: pki, certificate: "client")
        site = try IEC104DaemonTests.c104Checked(port: bridge.port, daemon: daemon, context: "socat: \(bridge.said.suffix(600))").site
        let agc = site["agc"] as? [String: Any] ?? [:]
        #expect(agc["in_service"] as? Bool == true && (agc["target_w"] as? Double).map { abs($0 - 50_000) < 1 } == true, "agc: \(agc)")
        bridge.stop()

        // Refused in the handshake, each closing its own connection.
        let foreign = try TLSBridge(to: port, pki: pki, certificate: "foreign")
        #expect(Self.refused(try #require(Self.station(through: foreign.port))), "another CA's client")
        let anonymous = try TLSBridge(to: port, pki: pki, certificate: nil)
        #expect(Self.refused(try #require(Self.station(through: anonymous.port))), "a client without a certificate")
        #expect(Self.refused(try RawControlStation(port: port)), "a plain TCP client speaking IEC 104")
        // One that connects and says nothing loses its slot after handshake_timeout_s.
        let silent = try RawControlStation(port: port)
        #expect(silent.waitClosed(seconds: 15), "a silent client is closed")

        let again = try TLSBridge(to: port, pki: pki, certificate: "client")
        let served = Self.station(through: again.port).map(Self.served) ?? false
        #expect(served, "a good client is served after the refusals: \(again.said.suffix(400))")

        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let subject = "\"O=Grid Operator,CN=scada-client\""
        let commands = Self.lines(text, "IEC104_COMMAND")
        #expect(commands.count == 4 && commands.allSatisfy { $0.contains("BESS_PEER=\(subject)") }, "commands name the subject: \(commands)")
        let connected = Self.lines(text, "IEC104_CONNECTED")
        #expect(connected.count == 2 && connected.allSatisfy { $0.contains("BESS_PEER=\(subject)") && $0.contains("BESS_PEER_ADDRESS=127.0.0.1:") },
                "authenticated connections: \(connected)")
        #expect(Self.lines(text, "IEC104_CLOCK_SYNC").contains { $0.contains("BESS_PEER=\(subject)") })
        let refusals = Self.lines(text, "IEC104_TLS_REFUSED")
        for code in ["TLS_PEER_UNTRUSTED", "TLS_PEER_NO_CERTIFICATE", "TLS_PROTOCOL_VERSION", "TLS_HANDSHAKE_FAILED"] {
            #expect(refusals.contains { $0.contains("BESS_TLS_ERROR=\(code)") && $0.contains("BESS_PEER=127.0.0.1:") }, "\(code) in \(refusals)")
        }
        #expect(refusals.count == 4, "\(refusals)")
    }

    /// TLS_PEER_NOT_ALLOWED and TLS_PEER_REVOKED.
    @Test("allow_certificates and crl_file refuse unlisted and revoked clients; the listed one is served")
    func allowListAndRevocation() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        // The list names another certificate of the same CA (the server's, which makes a valid client).
        let listed = try pki.fingerprint("server")
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port, pki: pki, extra: """

                allow_certificates: ["\(listed)"]
                crl_file: \(pki.path("crl.pem"))
            """))
        #expect(waitFor(seconds: 15) { Loopback.listening(port) }, "bessd listens")
        let unlisted = try TLSBridge(to: port, pki: pki, certificate: "client")
        #expect(Self.refused(try #require(Self.station(through: unlisted.port))), "the client the list leaves out")
        let revoked = try TLSBridge(to: port, pki: pki, certificate: "revoked")
        #expect(Self.refused(try #require(Self.station(through: revoked.port))), "the revoked client")
        let named = try Self.served(as: "server", to: port, pki: pki)
        #expect(named.served, "the listed certificate is served: \(named.said)")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let refusals = Self.lines(text, "IEC104_TLS_REFUSED")
        #expect(refusals.contains { $0.contains("BESS_TLS_ERROR=TLS_PEER_NOT_ALLOWED") && $0.contains("CN=scada-client") }, "\(refusals)")
        #expect(refusals.contains { $0.contains("BESS_TLS_ERROR=TLS_PEER_REVOKED") }, "\(refusals)")
        #expect(Self.lines(text, "IEC104_CONNECTED").contains { $0.contains("BESS_PEER=\"CN=bessd-test-server\"") })
    }

    /// The site's control never depends on its control-centre link: a key file OpenSSL cannot read
    /// costs the outstation alone at `bessd run`, while `bessd check-config` still fails on it.
    /// bessd run logs IEC104_LISTEN_FAILED with TLS_CONTEXT_FAILED; status answers and cycles count.
    @Test("an unreadable TLS key: the site runs, IEC 104 serves nothing, never plain; check-config names it")
    func brokenKeyFileCostsOnlyTheOutstation() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        // Root reads a mode-000 file: a file OpenSSL cannot read as a key stands for every such file.
        let broken = pki.path("broken.key")
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: broken))
        chmod(broken, 0o600)  // unusable for what it holds, not for who may read it (that is KEY_PERMISSIONS)
        let yaml = Self.yaml(port: port, pki: pki).replacingOccurrences(of: "key_file: \(pki.path("server.key"))", with: "key_file: \(broken)")
        #expect(yaml.contains("key_file: \(broken)"))
        let daemon = try RunningDaemon(yaml: yaml)
        var cycles: [UInt64] = []
        let counting = waitFor(seconds: 15) {
            let cycle = (try? daemon.request(["verb": "status"]))?["cycle"] as? [String: Any]
            if let count = (cycle?["cycles"] as? NSNumber)?.uint64Value { cycles.append(count) }
            return cycles.count >= 2 && cycles.last! > cycles.first!
        }
        #expect(counting, "status answers and the cycle counts: \(cycles)")
        #expect(!Loopback.listening(port), "nothing listens on the outstation's port")

        let check = try Package.run("bessd", ["check-config", daemon.configPath])
        #expect(check.status == 1, "check-config: \(check.status) \(check.out) \(check.err)")
        #expect(check.err.contains("iec104.tls") && check.err.contains("TLS_CONTEXT_FAILED") && check.err.contains(broken), "\(check.err)")

        daemon.signal(SIGTERM)
        let (status, text) = daemon.finish()
        #expect(status == 0, "\(text.suffix(600))")
        let failed = Self.lines(text, "IEC104_LISTEN_FAILED")
        #expect(failed.count == 1 && failed.allSatisfy { $0.contains("BESS_TLS_ERROR=TLS_CONTEXT_FAILED") && $0.contains(broken) }, "\(failed)")
        #expect(Self.lines(text, "IEC104_LISTENING").isEmpty, "\(text.suffix(600))")
    }

    /// Revokes the fixture's `client` certificate in crl.pem, rewritten at the same path.
    static func revokeClient(_ pki: TLSFixture) throws {
        let ca = ["-config", pki.path("ca.cnf"), "-keyfile", pki.path("ca.key"), "-cert", pki.path("ca.pem")]
        try pki.openssl(["ca"] + ca + ["-revoke", pki.path("client.pem")])
        try pki.openssl(["ca"] + ca + ["-gencrl", "-out", pki.path("crl.pem")])
    }

    /// Codes: IEC104_PEER_REVOKED and TLS_PEER_REVOKED on close, TLS_PEER_REVOKED on reconnect, IEC104_TLS_RELOADED in the journal.
    @Test("a CRL rewritten in place applies at reload: the revoked peer closed and refused, a good one served")
    func revocationAtReload() throws {
        let pki = try TLSFixture()
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: Self.yaml(port: port, pki: pki, extra: """

                crl_file: \(pki.path("crl.pem"))
            """))
        #expect(!daemon.notify.collect(seconds: 15) { $0.contains("READY=1") }.isEmpty, "bessd is ready")
        #expect(waitFor(seconds: 15) { Loopback.listening(port) }, "bessd listens")
        let first = try TLSBridge(to: port, pki: pki, certificate: "client")
        let open = try #require(Self.station(through: first.port))
        #expect(Self.served(open), "the client is served before its revocation: \(first.said.suffix(400))")

        try Self.revokeClient(pki)
        let (finished, said) = daemon.reloadAndWait()
        #expect(finished, "the reload finished: \(said)")

        // The connection accepted before the reload is checked against the new CRL and closed.
        #expect(open.waitClosed(seconds: 10), "the revoked client's open connection is closed at the reload")
        let again = try TLSBridge(to: port, pki: pki, certificate: "client")
        #expect(Self.refused(try #require(Self.station(through: again.port))), "the revoked client's new connection")
        let good = try Self.served(as: "server", to: port, pki: pki)
        #expect(good.served, "a good client is served after the reload: \(good.said)")

        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let reloaded = Self.lines(text, "IEC104_TLS_RELOADED")
        #expect(reloaded.count == 1 && reloaded.allSatisfy { $0.contains("BESS_TLS_CRL=\(pki.path("crl.pem"))") }, "\(reloaded)")
        let refusals = Self.lines(text, "IEC104_TLS_REFUSED")
        // (The listening probe above is a refusal of its own, TLS_HANDSHAKE_FAILED.)
        #expect(refusals.filter { $0.contains("BESS_TLS_ERROR=TLS_PEER_REVOKED") }.count == 1, "\(refusals)")
        let revoked = Self.lines(text, "IEC104_PEER_REVOKED")
        #expect(revoked.count == 1 && revoked.allSatisfy { $0.contains("BESS_TLS_ERROR=TLS_PEER_REVOKED") && $0.contains("CN=scada-client") }, "\(revoked)")
        #expect(Self.lines(text, "IEC104_RESTART_NEEDED").isEmpty && Self.lines(text, "IEC104_TLS_RELOAD_FAILED").isEmpty, "\(text.suffix(800))")
    }
}
