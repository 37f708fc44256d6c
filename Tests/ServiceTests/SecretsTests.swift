import BessSystem
import Foundation
import Glibc
@testable import Service
import TestSupport
import Testing

/// Keys belong to the daemon, not to its readers (issue 57 §2): a secret file others may read is
/// refused at check-config, at start and at a reload; a secret written in the configuration is
/// redacted by its key path in every output.
@Suite("Secrets: KEY_PERMISSIONS and redaction by key path", .serialized)
struct SecretsTests {
    /// The line `key:` is on in `file`.
    static func line(of key: String, in file: String) throws -> Int {
        try #require(try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("\(key):") }) + 1
    }

    /// The daemon's configuration with an aggregator reading `token`.
    static func aggregatorYAML(token: String, directory: String) -> String {
        daemonYAML.replacingOccurrences(of: "@SOCKET@", with: directory + "/control.sock") + """

            aggregator:
              url: https://127.0.0.1:9/v1
              token_file: \(token)
              interval_s: 1
            state_directory: \(directory)/state
            """
    }

    static func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "bessd-secrets-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("check-config and run refuse a 0644 token file at its line, naming file and mode; 0600 passes")
    func checkConfigAndStart() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = directory + "/token"
        try "t0ken\n".write(toFile: token, atomically: true, encoding: .utf8)
        #expect(chmod(token, 0o644) == 0)
        let config = directory + "/bessd.yaml"
        try Self.aggregatorYAML(token: token, directory: directory).write(toFile: config, atomically: true, encoding: .utf8)
        let line = try Self.line(of: "token_file", in: config)
        let expected = "\(config):\(line): aggregator.token_file: KEY_PERMISSIONS: \(token) is mode 0644"
        let checked = try Package.run("bessd", ["check-config", config])
        #expect(checked.status == 1, "\(checked.out)\(checked.err)")
        #expect(checked.err.contains(expected), "\(checked.err)")
        let started = try Package.run("bessd", ["run", "--config", config, "--status-every", "0", "--log", "stderr", "--duration", "2"])
        #expect(started.status == 1, "\(started.err.suffix(600))")
        #expect(started.err.contains(expected), "\(started.err.suffix(600))")
        #expect(chmod(token, 0o600) == 0)
        let fixed = try Package.run("bessd", ["check-config", config])
        #expect(fixed.status == 0, "\(fixed.err)")
    }

    @Test("a reload refuses a token file open to others (KEY_PERMISSIONS) and keeps the running configuration")
    func reloadRefused() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = directory + "/token"
        try "t0ken\n".write(toFile: token, atomically: true, encoding: .utf8)
        #expect(chmod(token, 0o600) == 0)
        let daemon = try RunningDaemon(yaml: Self.aggregatorYAML(token: token, directory: directory), directory: directory)
        let ready = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(ready.contains { $0.contains("READY=1") })
        #expect(chmod(token, 0o604) == 0)
        daemon.signal(SIGHUP)
        _ = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        let status = try daemon.request(["verb": "status"])
        #expect(status["ok"] as? Bool == true)
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        let line = try Self.line(of: "token_file", in: daemon.configPath)
        #expect(text.contains("reload refused: \(daemon.configPath):\(line): aggregator.token_file: KEY_PERMISSIONS: \(token) is mode 0604"), "\(text.suffix(1500))")
        #expect(text.contains("BESS_CODE=KEY_PERMISSIONS"), "\(text.suffix(1500))")
        #expect(text.contains("the running configuration stays"))
        #expect(!text.contains("reload applied"))
    }

    /// The pin, flow mappings, block and quoted scalars, lists and anchors; paths kept.
    @Test("redaction by key path covers every YAML form under secret keys and keeps layout and line numbers")
    func redactionByKeyPath() {
        let text = """
            mode: simulation
            ieee2030_5: {server: "https://sep2.example/dcap", pin: "111115", key_file: /etc/bessd/sep2/device.key}
            aggregator:
              url: https://site7:hunter2@agg.example.com/v1
              token_file: /etc/bessd/token
            extra:
              password: |
                first-line-secret
                second-line-secret
              passphrase: >-
                folded-secret
              api_token: 'quoted''secret'
              client_secret: "multi
                line-secret"
              nested_token: {a: deep-secret-1, b: [deep-secret-2]}
              pin: 012345
              tokens_list:
                - list-secret
              plain_password: plain-secret
                continued-secret
              anchor: &shared anchored-secret
              password_again: *shared
              flow: {password: flow-secret, next: kept-value}
            #  password: commented-secret
            site_note: kept-note   # a comment
            """
        let out = ControlVerbs.redacted(text)
        for secret in ["111115", "hunter2", "site7", "first-line-secret", "second-line-secret", "folded-secret", "quoted", "line-secret",
                       "deep-secret-1", "deep-secret-2", "012345", "list-secret", "plain-secret", "continued-secret", "anchored-secret",
                       "flow-secret", "commented-secret"] {
            #expect(!out.contains(secret), "\(secret) left in:\n\(out)")
        }
        for kept in ["pin: <redacted>", "key_file: /etc/bessd/sep2/device.key}", "url: https://<redacted>@agg.example.com/v1",
                     "token_file: /etc/bessd/token", "password: <redacted>", "flow: {password: <redacted>, next: kept-value}",
                     "nested_token: {a: <redacted>, b: [<redacted>]}", "site_note: kept-note   # a comment",
                     "ieee2030_5: {server: \"https://sep2.example/dcap\", pin: <redacted>,", "anchor: &shared <redacted>"] {
            #expect(out.contains(kept), "\(kept) missing from:\n\(out)")
        }
        // The lines a value took whole are left empty, not indented blanks.
        #expect(!out.split(separator: "\n").contains { $0.allSatisfy { $0 == " " } }, "\(out)")
        #expect(out.split(separator: "\n", omittingEmptySubsequences: false).count == text.split(separator: "\n", omittingEmptySubsequences: false).count)
        #expect(ControlVerbs.redacted("a: [unclosed\n  password: x").contains("withheld"))
    }

    @Test("bessctl diag: the bundle's config.yaml carries no 2030.5 pin, also when the block is a flow mapping")
    func diagBundleHasNoPin() throws {
        let fixture = try TLSFixture()
        let yaml = daemonYAML + """

            ieee2030_5: {server: "https://127.0.0.1:9/dcap", cert_file: \(fixture.path("client.pem")), key_file: \(fixture.path("client.key")),
                         ca_file: \(fixture.path("ca.pem")), registration: in_band, pin: "111115", poll_s: 300, timeout_s: 1}
            """
        let daemon = try RunningDaemon(yaml: yaml)
        let ready = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(ready.contains { $0.contains("READY=1") })
        let bundle = daemon.directory + "/bundle.tar.gz"
        let run = try Package.run("bessctl", ["diag", "--socket", daemon.socket, "--output", bundle, "--journal-lines", "0"])
        #expect(run.status == 0, "\(run.out)\(run.err)")
        let config = try Package.tool(["tar", "-xzOf", bundle, "--wildcards", "*/config.yaml"]).out
        #expect(config.contains("ieee2030_5: {server: \"https://127.0.0.1:9/dcap\""), "\(config)")
        #expect(config.contains("pin: <redacted>"), "\(config)")
        #expect(!config.contains("111115"), "\(config)")
        // The `config` verb itself, as any member of bess may ask it.
        let shown = try daemon.request(["verb": "config"])["text"] as? String ?? ""
        #expect(shown.contains("pin: <redacted>") && !shown.contains("111115"), "\(shown)")
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }
}
