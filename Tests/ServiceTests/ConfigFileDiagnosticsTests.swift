import Config
import Foundation
import Glibc
import Service
import TestSupport
import Testing

/// The files a configuration names, read by the TLS transport where check-config runs
/// (`BessdConfiguration.fileDiagnostics(file:)`, Service): the YAML holds their paths only.
@Suite("check-config: the TLS files iec104.tls and ieee2030_5 name")
struct ConfigFileDiagnosticsTests {
    static let units = "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n  - {id: U2, capacity_kwh: 250, max_power_kw: 50}\n"

    /// A site with `iec104.tls` naming the fixture's server files, a line for a file key replacing its line.
    static func iec104(_ pki: TLSFixture, _ lines: [String] = []) -> String {
        var keys = ["cert_file": "cert_file: \(pki.path("server.pem"))", "key_file": "key_file: \(pki.path("server.key"))",
                    "ca_file": "ca_file: \(pki.path("ca.pem"))"]
        var extra: [String] = []
        for line in lines {
            let key = String(line.prefix { $0 != ":" })
            if keys[key] != nil { keys[key] = line } else { extra.append(line) }
        }
        let body = (["cert_file", "key_file", "ca_file"].compactMap { keys[$0] } + extra).map { "    \($0)\n" }.joined()
        return units + "iec104:\n  tls:\n" + body
    }

    /// A site with `ieee2030_5:` holding `lines` and the three files.
    static func ieee2030_5(_ lines: [String], files: String) -> String {
        units + "ieee2030_5:\n" + lines.map { "  \($0)\n" }.joined() + files
    }

    /// A file that cannot be used must not refuse the configuration (`bessd run` would lose the
    /// site's control for its control-centre link); `fileDiagnostics`, which check-config reports
    /// and fails on, names it.
    /// Also a CRL OpenSSL refuses to load; named by fileDiagnostics.
    @Test("a missing, unreadable or mismatched TLS file or CRL is CONFIG_INVALID at iec104.tls",
          arguments: [
              ("cert_file: /nonexistent/bessd.pem", "/nonexistent/bessd.pem"), ("key_file: @client.key", "client.key"),
              ("key_file: @garbage.key", "garbage.key"), ("ca_file: @client.key", "client.key"), ("crl_file: @client.pem", "client.pem"),
          ])
    func iec104FileProblems(line: String, file: String) throws {
        let pki = try TLSFixture()
        try Data("not a key\n".utf8).write(to: pki.directory.appendingPathComponent("garbage.key"))
        chmod(pki.path("garbage.key"), 0o600)  // a key only bessd may read: refused for what it holds, not its mode
        #expect(try ConfigLoader.parse(Self.iec104(pki), file: "e.yaml").fileDiagnostics(file: "e.yaml").isEmpty, "the fixture's files load")
        let loaded = try ConfigLoader.parse(Self.iec104(pki, [line.replacingOccurrences(of: "@", with: pki.directory.path + "/")]), file: "e.yaml")
        let problems = loaded.fileDiagnostics(file: "e.yaml")
        #expect(problems.count == 1 && problems.first?.code == .invalid && problems.first?.severity == .error, "\(problems)")
        #expect(problems.first?.keyPath == "iec104.tls" && problems.first?.file == "e.yaml", "\(problems)")
        #expect(problems.first?.message.contains("TLS_CONTEXT_FAILED") == true && problems.first?.message.contains(file) == true, "\(problems)")
    }

    /// Missing or mismatched files load (the client alone is lost), and check-config names them.
    /// With TLS_CONTEXT_FAILED.
    @Test("a missing or mismatched file loads; fileDiagnostics names it CONFIG_INVALID at ieee2030_5",
          arguments: [("cert_file", "/nonexistent/device.pem", "/nonexistent/device.pem"), ("key_file", "@server.key", "server.key"),
                      ("ca_file", "@client.key", "client.key")])
    func ieee2030_5FileProblems(key: String, value: String, file: String) throws {
        let pki = try TLSFixture()
        func files(_ replace: [String: String]) -> String {
            let chosen = ["cert_file": pki.path("client.pem"), "key_file": pki.path("client.key"), "ca_file": pki.path("ca.pem")]
                .merging(replace) { $1 }
            return ["cert_file", "key_file", "ca_file"].map { "  \($0): \(chosen[$0]!)\n" }.joined()
        }
        let good = try ConfigLoader.parse(Self.ieee2030_5(["server: https://127.0.0.1:8443/dcap"], files: files([:])), file: "g.yaml")
        #expect(good.fileDiagnostics(file: "g.yaml").isEmpty, "the fixture's files load")
        let bad = try ConfigLoader.parse(Self.ieee2030_5(["server: https://127.0.0.1:8443/dcap"],
                                                   files: files([key: value.replacingOccurrences(of: "@", with: pki.directory.path + "/")])),
                                         file: "g.yaml")
        let problems = bad.fileDiagnostics(file: "g.yaml")
        #expect(problems.count == 1 && problems.first?.keyPath == "ieee2030_5" && problems.first?.code == .invalid, "\(problems)")
        #expect(problems.first?.message.contains("TLS_CONTEXT_FAILED") == true && problems.first?.message.contains(file) == true, "\(problems)")
    }
}
