import Foundation
import Glibc
import TestSupport
import Testing

/// bessd as the client of a utility's IEEE 2030.5 server: hil/peers/sep2_server.py (envoy-schema's
/// documents, TLS 1.2 with ECDHE-ECDSA-AES128-CCM8 only, client certificate required) on a loopback
/// port; certificates made by `TLSFixture` at test time.
@Suite("bessd following a 2030.5 server", .serialized)
struct Sep2DaemonTests {
    /// The LFDI and SFDI `bessctl ieee2030-5 --cert` prints for `pem` (no bessd running).
    static func offlineIdentity(_ pem: String) throws -> (lfdi: String, sfdi: UInt64) {
        let run = try Package.run("bessctl", ["ieee2030-5", "--cert", pem, "--json"])
        #expect(run.status == 0, "\(run.err)")
        let object = try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any] ?? [:]
        return (object["lfdi"] as? String ?? "", (object["sfdi"] as? NSNumber)?.uint64Value ?? 0)
    }

    /// sep2_server.py for the device of `identity` with `fixture`'s certificates, control A1 (1500 W from
    /// `now` − 5 for an hour) and the `extra` arguments.
    static func startServer(_ fixture: TLSFixture, _ identity: (lfdi: String, sfdi: UInt64), now: Int, _ extra: [String]) throws -> UnitsPeer {
        try UnitsPeer(arguments: [
            try Package.sep2Python(), "hil/peers/sep2_server.py", "--port", "0", "--cert", fixture.path("server.pem"),
            "--key", fixture.path("server.key"), "--ca", fixture.path("ca.pem"), "--lfdi", identity.lfdi, "--sfdi", String(identity.sfdi),
            "--control", "A1:\(now - 5):3600:1500",
        ] + extra)
    }

    /// bessd's configuration following the server on `port` (PIN 111115, poll 10 s, timeout 5 s), with the
    /// `extra` keys of the `ieee2030_5` block.
    static func yaml(_ fixture: TLSFixture, port: Int, _ extra: [String] = []) -> String {
        let block = ["server: https://127.0.0.1:\(port)/dcap", "cert_file: \(fixture.path("client.pem"))", "key_file: \(fixture.path("client.key"))",
                     "ca_file: \(fixture.path("ca.pem"))", "pin: \"111115\""] + extra + ["poll_s: 10", "timeout_s: 5"]
        return daemonYAML + "\nieee2030_5:\n" + block.map { "  " + $0 }.joined(separator: "\n")
    }

    @Test("bessctl ieee2030-5 --cert derives LFDI and SFDI without bessd; an unreadable file is refused")
    func offlineIdentityMatchesSep2cert() throws {
        let fixture = try TLSFixture()
        let ours = try Self.offlineIdentity(fixture.path("client.pem"))
        let peer = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_peer.py", "identity", fixture.path("client.pem")])
        #expect(peer.status == 0, "\(peer.err)")
        let theirs = try JSONSerialization.jsonObject(with: Data(peer.out.utf8)) as? [String: Any] ?? [:]
        #expect(ours.lfdi.count == 40 && ours.lfdi == (theirs["lfdi"] as? String)?.uppercased(), "\(ours) vs \(theirs)")
        #expect(ours.sfdi == (theirs["sfdi"] as? NSNumber)?.uint64Value, "\(ours) vs \(theirs)")
        let text = try Package.run("bessctl", ["ieee2030-5", "--cert", fixture.path("client.pem")])
        #expect(text.out.contains("LFDI  \(ours.lfdi)") && text.out.contains("SFDI  \(ours.sfdi)"), "\(text.out)")
        let bad = try Package.run("bessctl", ["ieee2030-5", "--cert", fixture.path("client.key")])
        #expect(bad.status != 0 && bad.err.contains("SEP2_CERTIFICATE_INVALID"), "\(bad.err)")
    }

    /// sep2_server.py: opModExpLimW shows in the journal, status ieee2030_5 and bessctl; the restarts include one with the certificate damaged.
    @Test("over TLS CCM8 an export-limit DERControl is taken and stored; restarts run the stored schedule")
    func daemonTakesExportLimit() throws {
        let fixture = try TLSFixture()
        let identity = try Self.offlineIdentity(fixture.path("client.pem"))
        let now = Int(Date().timeIntervalSince1970)
        let server = try Self.startServer(fixture, identity, now: now, ["--default-exp-w", "5000"])
        defer { server.stop() }
        #expect(server.port > 0, "sep2_server.py printed no port")
        let yaml = Self.yaml(fixture, port: server.port)
        let daemon = try RunningDaemon(yaml: yaml)
        var section: [String: Any] = [:]
        let taken = waitFor(seconds: 60) {
            section = ((try? daemon.request(["verb": "status"])) ?? [:])["ieee2030_5"] as? [String: Any] ?? [:]
            let controls = section["controls"] as? [[String: Any]] ?? []
            return controls.contains { $0["type"] as? String == "opModExpLimW" && $0["control"] as? String == "A1" }
        }
        #expect(taken, "\(section) \(server.all.suffix(10))")
        #expect(section["lfdi"] as? String == identity.lfdi && (section["sfdi"] as? NSNumber)?.uint64Value == identity.sfdi)
        #expect(section["source"] as? String == "live" && section["last_status"] as? Int == 200 && section["reachable"] as? Bool == true,
                "\(section)")
        let control = (section["controls"] as? [[String: Any]] ?? []).first { $0["type"] as? String == "opModExpLimW" } ?? [:]
        #expect(control["value"] as? String == "1500 W" && control["program"] as? String == "B1"
                && (control["until_unix"] as? NSNumber)?.intValue == now - 5 + 3600, "\(control)")
        // Every exchange on the suite 2030.5 requires, with bessd's certificate.
        #expect(server.all.contains { $0.contains("\"/derp/1/derc") && $0.contains("ECDHE-ECDSA-AES128-CCM8") && $0.contains("\"client\": \"scada-client\"") },
                "\(server.all.suffix(10))")
        let text = try Package.run("bessctl", ["ieee2030-5", "--socket", daemon.socket])
        #expect(text.status == 0 && text.out.contains("LFDI    \(identity.lfdi)") && text.out.contains("opModExpLimW  1500 W"), "\(text.out)")
        #expect(FileManager.default.fileExists(atPath: daemon.stateDirectory + "/ieee2030_5-schedule.bin"))

        daemon.signal(SIGTERM)
        let (status, journal) = daemon.finish()
        #expect(status == 0)
        #expect(journal.contains("SEP2_CONTROL_TAKEN: opModExpLimW 1500 W from control \"A1\" of program \"B1\""), "\(journal.suffix(3000))")
        #expect(journal.contains("stopped in order: operator server → cycle → IEEE 2030.5 → bus workers → journal"), "\(journal.suffix(800))")

        // A restart mid-event with the server gone: the stored schedule runs on, said in the journal.
        server.stop()
        let restarted = try RunningDaemon(yaml: yaml, directory: daemon.directory)
        let cached = waitFor(seconds: 60) {
            section = ((try? restarted.request(["verb": "status"])) ?? [:])["ieee2030_5"] as? [String: Any] ?? [:]
            let controls = section["controls"] as? [[String: Any]] ?? []
            return section["source"] as? String == "cached" && section["reachable"] as? Bool == false
                && controls.contains { $0["type"] as? String == "opModExpLimW" && $0["control"] as? String == "A1" && $0["value"] as? String == "1500 W" }
        }
        #expect(cached, "\(section)")
        restarted.signal(SIGTERM)
        let (again, rerun) = restarted.finish()
        #expect(again == 0)
        #expect(rerun.contains("SEP2_SCHEDULE_CACHED") && rerun.contains("SEP2_SERVER_UNREACHABLE"), "\(rerun.suffix(3000))")

        // A power cut that damaged the device certificate: the stored schedule still runs, as the
        // stored EndDevice's LFDI, and every exchange fails with the certificate's coded error.
        try Data("-----BEGIN CERTIFICATE-----\ntorn\n".utf8).write(to: URL(fileURLWithPath: fixture.path("client.pem")))
        let damaged = try RunningDaemon(yaml: yaml, directory: daemon.directory)
        let follows = waitFor(seconds: 60) {
            section = ((try? damaged.request(["verb": "status"])) ?? [:])["ieee2030_5"] as? [String: Any] ?? [:]
            let controls = section["controls"] as? [[String: Any]] ?? []
            return section["source"] as? String == "cached" && (section["last_error"] as? String ?? "").contains("SEP2_CERTIFICATE_INVALID")
                && controls.contains { $0["type"] as? String == "opModExpLimW" && $0["control"] as? String == "A1" && $0["value"] as? String == "1500 W" }
        }
        #expect(follows, "\(section)")
        #expect(section["lfdi"] as? String == identity.lfdi, "\(section)")
        let shown = try Package.run("bessctl", ["ieee2030-5", "--socket", damaged.socket])
        #expect(shown.out.contains("SEP2_CERTIFICATE_INVALID") && shown.out.contains("opModExpLimW  1500 W"), "\(shown.out)")
        damaged.signal(SIGTERM)
        let (third, journal3) = damaged.finish()
        #expect(third == 0)
        #expect(journal3.contains("SEP2_CERTIFICATE_INVALID") && journal3.contains("the stored schedule runs as the stored EndDevice's LFDI")
                && journal3.contains("SEP2_SCHEDULE_CACHED"), "\(journal3.suffix(3000))")
    }

    /// lfdi, sfdi null; unknown, never zeros.
    @Test("an unreadable certificate with nothing stored: bessd runs, reports it, and shows no identity")
    func tornCertificateNothingStored() throws {
        let fixture = try TLSFixture()
        try Data("-----BEGIN CERTIFICATE-----\ntorn\n".utf8).write(to: URL(fileURLWithPath: fixture.path("client.pem")))
        let daemon = try RunningDaemon(yaml: Self.yaml(fixture, port: 9))
        var section: [String: Any] = [:]
        let shown = waitFor(seconds: 60) {
            section = ((try? daemon.request(["verb": "status"])) ?? [:])["ieee2030_5"] as? [String: Any] ?? [:]
            return (section["last_error"] as? String ?? "").contains("SEP2_CERTIFICATE_INVALID")
        }
        #expect(shown, "\(section)")
        #expect(section["lfdi"] is NSNull && section["sfdi"] is NSNull && section["source"] as? String == "none", "\(section)")
        let zeros = String(repeating: "0", count: 40)
        let text = try Package.run("bessctl", ["ieee2030-5", "--socket", daemon.socket])
        #expect(text.out.contains("LFDI    unknown (") && text.out.contains("SFDI    unknown") && !text.out.contains(zeros), "\(text.out)")
        let json = try Package.run("bessctl", ["ieee2030-5", "--socket", daemon.socket, "--json"])
        let printed = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any] ?? [:]
        #expect(printed["lfdi"] is NSNull && printed["sfdi"] is NSNull && !json.out.contains(zeros), "\(json.out)")
        daemon.signal(SIGTERM)
        let (status, journal) = daemon.finish()
        #expect(status == 0)
        #expect(journal.contains("SEP2_CERTIFICATE_INVALID") && journal.contains("none is stored: no utility control") && !journal.contains(zeros),
                "\(journal.suffix(3000))")
    }

    /// bessd POSTs its EndDevice to sep2_server.py's empty list over CCM8 and finds itself.
    @Test("ALL-02, ALL-03: in-band registration over TLS, then ConnectionPoint PUT and the control taken")
    func daemonRegistersInBand() throws {
        let fixture = try TLSFixture()
        let identity = try Self.offlineIdentity(fixture.path("client.pem"))
        let server = try Self.startServer(fixture, identity, now: Int(Date().timeIntervalSince1970), ["--in-band"])
        defer { server.stop() }
        #expect(server.port > 0, "sep2_server.py printed no port")
        let yaml = Self.yaml(fixture, port: server.port, ["registration: in_band", "connection_point_id: \"4102345678\""])
        let daemon = try RunningDaemon(yaml: yaml)
        var section: [String: Any] = [:]
        let taken = waitFor(seconds: 60) {
            section = ((try? daemon.request(["verb": "status"])) ?? [:])["ieee2030_5"] as? [String: Any] ?? [:]
            let controls = section["controls"] as? [[String: Any]] ?? []
            return controls.contains { $0["type"] as? String == "opModExpLimW" && $0["control"] as? String == "A1" }
                && server.all.contains { $0.contains("\"connection_point\"") }
        }
        #expect(taken, "\(section) \(server.all.suffix(12))")
        let lines = server.all
        let registered = try #require(lines.firstIndex { $0.contains("\"registered\"") }, "\(lines.suffix(12))")
        #expect(lines[registered].contains("\"lFDI\": \"\(identity.lfdi)\"") && lines[registered].contains("\"deviceCategory\": \"02000000\""),
                "\(lines[registered])")
        #expect(lines.filter { $0.contains("\"registered\"") }.count == 1 && !lines.contains { $0.contains("_refused") }, "\(lines.suffix(12))")
        let point = try #require(lines.firstIndex { $0.contains("\"connection_point\"") })
        #expect(lines[point].contains("\"connection_point\": \"4102345678\"") && point > registered, "\(lines[point])")
        // Found in the list read after the POST, its Registration agreed before the PUT.
        #expect(lines[registered..<point].contains { $0.contains("\"path\": \"/edev/1/rg\"") }, "\(lines[registered...point])")
        daemon.signal(SIGTERM)
        let (status, journal) = daemon.finish()
        #expect(status == 0)
        #expect(journal.contains("SEP2_CONTROL_TAKEN: opModExpLimW 1500 W from control \"A1\"") && !journal.contains("SEP2_REGISTRATION_REFUSED"),
                "\(journal.suffix(3000))")
    }
}
