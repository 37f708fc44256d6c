@testable import Config
import Foundation
import Glibc
import IEC104
import Outstation
import TestSupport
import Testing

/// Who the utility and the control centre are (issue 57 §4): `ieee2030_5.server_certificate_sha256`
/// and `server_lfdi`, read as `iec104.tls.allow_certificates` is; `iec104.groups[].allow_certificates`.
@Suite("server pins and group certificates")
struct ServerPinConfigTests {
    static let fingerprint = "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
    static let lowered = fingerprint.replacingOccurrences(of: ":", with: "").lowercased()

    static func sep2(_ lines: [String]) -> String {
        IEEE2030_5ConfigTests.yaml(["server: https://sep2.example/dcap"] + lines)
    }

    static func unpinned(_ configuration: BessdConfiguration) -> [ConfigDiagnostic] {
        configuration.notices.filter { $0.message.contains("SEP2_SERVER_UNPINNED") }
    }

    /// With or without colons, any case.
    @Test("server_certificate_sha256 in any form and server_lfdi are read; the pin accepts what they name")
    func pinsRead() throws {
        let set = try ConfigLoader.parse(Self.sep2(["server_certificate_sha256: [\"\(Self.fingerprint)\", \"\(Self.lowered.uppercased())\"]",
                                                    "server_lfdi: 0123456789abcdef0123456789ABCDEF01234567"]), file: "a.yaml").ieee2030_5
        #expect(set?.serverCertificates == [Self.lowered, Self.lowered])
        #expect(set?.serverLFDI == "0123456789ABCDEF0123456789ABCDEF01234567")
        #expect(set?.acceptsServer != nil && set?.serverUnpinned == false)
        let plain = try ConfigLoader.parse(Self.sep2([]), file: "b.yaml").ieee2030_5
        #expect(plain?.serverCertificates == nil && plain?.serverLFDI == nil && plain?.acceptsServer == nil)
    }

    @Test("a bad fingerprint, an empty list or a bad LFDI is an error at its own line", arguments: [
        (["server_certificate_sha256: [\"AB:CD\"]"], "ieee2030_5.server_certificate_sha256[0]", "SHA-256 fingerprint"),
        (["server_certificate_sha256: [\"\(fingerprint)\", \"zz\"]"], "ieee2030_5.server_certificate_sha256[1]", "SHA-256 fingerprint"),
        (["server_certificate_sha256: []"], "ieee2030_5.server_certificate_sha256", "names no certificate"),
        (["server_lfdi: 0123456789"], "ieee2030_5.server_lfdi", "40 hex digits"),
        (["server_lfdi: \"0123456789abcdef0123456789abcdef0123456g\""], "ieee2030_5.server_lfdi", "40 hex digits"),
    ] as [([String], String, String)])
    func pinRefused(lines: [String], keyPath: String, message: String) {
        let text = Self.sep2(lines)
        do {
            _ = try ConfigLoader.parse(text, file: "c.yaml")
            Issue.record("accepted \(lines)")
        } catch {
            #expect(error.diagnostics.count == 1, "\(error)")
            let first = error.diagnostics.first
            #expect(first?.keyPath == keyPath && first?.code == .invalid && first?.message.contains(message) == true, "\(error)")
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(lines[0].prefix { $0 != ":" }) }
            #expect(first?.line == line.map { $0 + 1 }, "at the key's line: \(error)")
        }
    }

    @Test("SEP2_SERVER_UNPINNED: a notice with neither server nor registration pin; check-config prints it")
    func unpinnedNotice() throws {
        let bare = try ConfigLoader.parse(Self.sep2([]), file: "d.yaml")
        let notice = Self.unpinned(bare)
        #expect(notice.count == 1 && notice.first?.keyPath == "ieee2030_5" && notice.first?.severity == .notice, "\(bare.notices)")
        for line in ["pin: \"111115\"", "server_lfdi: 0123456789ABCDEF0123456789ABCDEF01234567",
                     "server_certificate_sha256: [\"\(Self.fingerprint)\"]"] {
            #expect(Self.unpinned(try ConfigLoader.parse(Self.sep2([line]), file: "e.yaml")).isEmpty, "\(line)")
        }
        // check-config reads the files too: the fixture's, keys for their owner alone.
        let pki = try TLSFixture()
        for key in ["client.key", "server.key"] { chmod(pki.path(key), 0o600) }
        let files = "  cert_file: \(pki.path("client.pem"))\n  key_file: \(pki.path("client.key"))\n  ca_file: \(pki.path("ca.pem"))\n"
        let file = pki.path("bessd.yaml")
        try IEEE2030_5ConfigTests.yaml(["server: https://sep2.example/dcap"], files: files).write(toFile: file, atomically: true, encoding: .utf8)
        let check = try Package.run("bessd", ["check-config", file])
        #expect(check.status == 0 && check.out.contains("notice:") && check.out.contains("SEP2_SERVER_UNPINNED"), "\(check.out)\(check.err)")
    }

    static func groups(_ group: String, tls: Bool = true) -> String {
        IEC104ConfigTests.units + "iec104:\n  groups:\n    - \(group)\n"
            + (tls ? "  tls: {cert_file: /etc/b.pem, key_file: /etc/b.key, ca_file: /etc/ca.pem}\n" : "")
    }

    @Test("groups[].allow_certificates reads like the TLS allow-list; absent, any certificate TLS accepts")
    func groupCertificates() throws {
        let listed = try ConfigLoader.parse(Self.groups("{name: sldc, allow_from: [10.0.0.5], commands: [agc], allow_certificates: [\"\(Self.fingerprint)\"]}"),
                                            file: "f.yaml").iec104?.server.groups.first
        #expect(listed?.allowCertificates == [Self.lowered])
        #expect(listed?.admits(certificate: Self.lowered) == true && listed?.admits(certificate: String(repeating: "0", count: 64)) == false)
        let open = try ConfigLoader.parse(Self.groups("{name: sldc, allow_from: [10.0.0.5]}"), file: "g.yaml").iec104?.server.groups.first
        #expect(open?.allowCertificates == nil && open?.admits(certificate: Self.lowered) == true)
    }

    @Test("a bad group fingerprint, or allow_certificates without iec104.tls, is an error at its line", arguments: [
        ("{name: sldc, allow_certificates: [\"AB:CD\"]}", true, "iec104.groups[0].allow_certificates[0]", "SHA-256 fingerprint"),
        ("{name: sldc, allow_certificates: [\"\(fingerprint)\"]}", false, "iec104.groups[0].allow_certificates", "needs iec104.tls"),
    ])
    func groupCertificatesRefused(group: String, tls: Bool, keyPath: String, message: String) {
        do {
            _ = try ConfigLoader.parse(Self.groups(group, tls: tls), file: "h.yaml")
            Issue.record("accepted \(group)")
        } catch {
            #expect(error.diagnostics.count == 1, "\(error)")
            let first = error.diagnostics.first
            #expect(first?.keyPath == keyPath && first?.message.contains(message) == true && first?.line == 6, "\(error)")
        }
    }
}
