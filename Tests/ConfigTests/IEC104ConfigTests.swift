import ControlCore
@testable import Config
import Foundation
import IEC104
import Outstation
import TestSupport
import Testing

/// `iec104.agc`: the regulation band and expiry a site declares to the grid operator's AGC.
@Suite("iec104.agc")
struct IEC104ConfigTests {
    static let units = "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n  - {id: U2, capacity_kwh: 250, max_power_kw: 50}\n"

    @Test("no iec104: nil; agc empty: 12 s and band ± summed rating; written: as written, in W")
    func defaultsAndValues() throws {
        #expect(try ConfigLoader.parse(Self.units, file: "a.yaml").iec104 == nil)
        let empty = try ConfigLoader.parse(Self.units + "iec104:\n  agc: {}\n", file: "b.yaml")
        #expect(empty.iec104?.agc?.limits == AGCLimits(upper: 150_000, lower: -150_000, expiry: .seconds(12)))
        let set = try ConfigLoader.parse(Self.units + "iec104:\n  agc: {expiry_s: 8, upper_limit_kw: 120, lower_limit_kw: -40}\n",
                                         file: "c.yaml")
        #expect(set.iec104?.agc?.limits == AGCLimits(upper: 120_000, lower: -40_000, expiry: .seconds(8)))
    }

    /// A band beyond the site's rating, an empty band, an expiry out of range or an unknown key.
    @Test("bad AGC settings are refused with their line",
          arguments: [
              ("upper_limit_kw: 151", "upper_limit_kw"), ("lower_limit_kw: 10, upper_limit_kw: 10", "lower_limit_kw"),
              ("expiry_s: 0", "expiry_s"), ("period_s: 4", "period_s"),
          ])
    func refused(line: String, key: String) {
        do {
            _ = try ConfigLoader.parse(Self.units + "iec104:\n  agc: {\(line)}\n", file: "d.yaml")
            Issue.record("accepted \(line)")
        } catch {
            #expect(error.diagnostics.count == 1 && error.diagnostics.first?.line == 5, "\(error)")
            #expect(error.diagnostics.first?.keyPath == "iec104.agc.\(key)", "\(error)")
        }
    }
}

/// `iec104.tls`: the outstation's TLS files, read when the configuration is (check-config, reload).
@Suite("iec104.tls")
struct IEC104TLSConfigTests {
    /// `iec104.tls` with the fixture's files, `overrides` replacing single lines (`key_file: …`).
    static func yaml(_ pki: TLSFixture, listen: String? = nil, _ lines: [String] = []) -> String {
        var keys = ["cert_file": "cert_file: \(pki.path("server.pem"))", "key_file": "key_file: \(pki.path("server.key"))",
                    "ca_file": "ca_file: \(pki.path("ca.pem"))"]
        var extra: [String] = []
        for line in lines {
            let key = String(line.prefix { $0 != ":" })
            if keys[key] != nil { keys[key] = line.hasSuffix(": -") ? nil : line } else { extra.append(line) }
        }
        let body = (["cert_file", "key_file", "ca_file"].compactMap { keys[$0] } + extra).map { "    \($0)\n" }.joined()
        return IEC104ConfigTests.units + "iec104:\n" + (listen.map { "  listen: \($0)\n" } ?? "") + "  tls:\n" + body
    }

    @Test("tls present: port 19998 by default, fingerprints normalised, 10 s handshake; absent: plain on 2404")
    func values() throws {
        let pki = try TLSFixture()
        let plain = try ConfigLoader.parse(IEC104ConfigTests.units + "iec104: {}\n", file: "a.yaml")
        #expect(plain.iec104?.server.port == 2404 && plain.iec104?.server.tls == nil)
        let tls = try ConfigLoader.parse(Self.yaml(pki), file: "b.yaml").iec104?.server
        #expect(tls?.port == 19998 && tls?.tls?.caFile == pki.path("ca.pem") && tls?.tls?.handshakeTimeout == .seconds(10))
        #expect(tls?.tls?.allowedCertificates == nil && tls?.tls?.crlFile == nil)
        let fingerprint = try pki.fingerprint("client")
        let listed = try ConfigLoader.parse(Self.yaml(pki, listen: "127.0.0.1:3000", [
            "allow_certificates: [\"\(fingerprint)\"]", "crl_file: \(pki.path("crl.pem"))", "handshake_timeout_s: 3",
        ]), file: "c.yaml").iec104?.server
        #expect(listed?.port == 3000 && listed?.tls?.crlFile == pki.path("crl.pem") && listed?.tls?.handshakeTimeout == .seconds(3))
        #expect(listed?.tls?.allowedCertificates == [fingerprint.replacingOccurrences(of: ":", with: "").lowercased()])
    }

    @Test("bad key, relative path, fingerprint, timeout: a coded configuration error at its key, never a crash",
          arguments: [
              (["key_file: -"], "iec104.tls.key_file", "is required"),
              (["cert_file: server.pem"], "iec104.tls.cert_file", "absolute path"),
              (["allow_certificates: [\"AB:CD\"]"], "iec104.tls.allow_certificates[0]", "SHA-256 fingerprint"),
              (["handshake_timeout_s: 0"], "iec104.tls.handshake_timeout_s", "from 1 to 60"),
              (["ciphers: NULL"], "iec104.tls.ciphers", "unknown key"),
          ])
    func refused(lines: [String], keyPath: String, message: String) throws {
        let pki = try TLSFixture()
        // `@name` stands for the fixture's file of that name.
        let resolved = lines.map { $0.replacingOccurrences(of: "@", with: pki.directory.path + "/") }
        do {
            _ = try ConfigLoader.parse(Self.yaml(pki, resolved), file: "d.yaml")
            Issue.record("accepted \(lines)")
        } catch {
            #expect(error.diagnostics.count == 1, "\(error)")
            #expect(error.diagnostics.first?.keyPath == keyPath && error.diagnostics.first?.code == .invalid, "\(error)")
            #expect(error.diagnostics.first?.message.contains(message) == true && error.diagnostics.first?.line != nil, "\(error)")
        }
    }
}
