import BessSystem
@testable import Config
import Foundation
import Glibc
import Testing

/// Keys, tokens and passwords belong to bessd: a file that anyone but root and bessd's own user and
/// group may read refuses the configuration, `KEY_PERMISSIONS` at the key's line (issue 57 §2).
@Suite("KEY_PERMISSIONS", .serialized)
struct KeyPermissionsTests {
    static let units = "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n"

    /// Each secret file key in a configuration (`@KEY@` its path) and the line it is on.
    static let secretFiles: [(key: String, yaml: String, line: Int)] = [
        ("aggregator.token_file", "aggregator:\n  url: https://agg.example/v1\n  token_file: @KEY@\n", 5),
        ("aggregator.password_file",
         "aggregator:\n  transport: mqtt\n  url: mqtts://broker.example:8883\n  username: site1\n  password_file: @KEY@\n", 7),
        ("aggregator.client_key_file",
         "aggregator:\n  transport: mqtt\n  url: mqtts://broker.example:8883\n  client_cert_file: /etc/bessd/c.pem\n  client_key_file: @KEY@\n", 7),
        ("iec104.tls.key_file", "iec104:\n  tls:\n    cert_file: /etc/bessd/c.pem\n    key_file: @KEY@\n    ca_file: /etc/bessd/ca.pem\n", 6),
        ("ieee2030_5.key_file",
         "ieee2030_5:\n  server: https://sep2.example/dcap\n  cert_file: /etc/bessd/c.pem\n  key_file: @KEY@\n  ca_file: /etc/bessd/ca.pem\n", 6),
    ]

    /// A secret file in a directory of its own, removed with it.
    final class SecretFile {
        let directory = NSTemporaryDirectory() + "bessd-keyperm-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var path: String { directory + "/secret" }
        init() throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data("not a real secret\n".utf8).write(to: URL(fileURLWithPath: path))
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }
        func set(mode: mode_t, owner: uid_t = getuid(), group: gid_t = getgid()) {
            #expect(chown(path, owner, group) == 0 && chmod(path, mode) == 0, "chown/chmod \(path): \(errno)")
        }
    }

    /// The KEY_PERMISSIONS diagnostics of `yaml`, whether the rest of it loads or not.
    static func refusals(_ yaml: String, account: KeyPermissions.Account = .current) -> [ConfigDiagnostic] {
        do {
            _ = try ConfigLoader.parse(yaml, file: "keys.yaml", account: account)
            return []
        } catch {
            return error.diagnostics.filter { $0.code == .keyPermissions }
        }
    }

    /// A group id that is neither root's nor the daemon's (the test runs as bessd would: its own ids are the daemon's).
    static var foreignGroup: gid_t {
        let account = KeyPermissions.Account.current
        return (4242...).first { $0 != 0 && !account.gids.contains(UInt32($0)) }.map { gid_t($0) }!
    }

    @Test("a 0644 secret file is refused at its key's line, naming file and mode; 0600 accepted",
          arguments: secretFiles.indices)
    func worldReadable(index: Int) throws {
        let (key, yaml, line) = Self.secretFiles[index]
        let file = try SecretFile()
        let text = Self.units + yaml.replacingOccurrences(of: "@KEY@", with: file.path)
        file.set(mode: 0o644)
        let refused = Self.refusals(text)
        #expect(refused.count == 1, "\(refused)")
        #expect(refused.first?.line == line && refused.first?.keyPath == key, "\(refused)")
        #expect(refused.first?.message.contains("KEY_PERMISSIONS: \(file.path) is mode 0644") == true, "\(refused)")
        #expect(refused.first?.message.contains("readable by everyone") == true, "\(refused)")
        #expect(refused.first?.description.hasPrefix("keys.yaml:\(line): \(key): KEY_PERMISSIONS: ") == true, "\(refused)")
        file.set(mode: 0o600)
        #expect(Self.refusals(text).isEmpty)
    }

    @Test("mode 0640 is accepted with bessd's or root's group only; another owner is refused")
    func groupAndOwner() throws {
        let file = try SecretFile()
        let text = Self.units + Self.secretFiles[0].yaml.replacingOccurrences(of: "@KEY@", with: file.path)
        let foreign = Self.foreignGroup
        file.set(mode: 0o640, group: foreign)
        let refused = Self.refusals(text)
        #expect(refused.count == 1 && refused.first?.line == 5, "\(refused)")
        #expect(refused.first?.message.contains("is mode 0640") == true, "\(refused)")
        #expect(refused.first?.message.contains("readable by group \(foreign), not bessd's own") == true, "\(refused)")
        // 0600 with that group: the group cannot read it.
        file.set(mode: 0o600, group: foreign)
        #expect(Self.refusals(text).isEmpty)
        file.set(mode: 0o640, group: getegid())
        #expect(Self.refusals(text).isEmpty)
        file.set(mode: 0o640, group: 0)
        #expect(Self.refusals(text).isEmpty)
        // Owned by someone else: they can open it again whenever they like.
        file.set(mode: 0o600, owner: 4243)
        let owned = Self.refusals(text, account: KeyPermissions.Account(uids: [geteuid()], gids: [getegid()]))
        #expect(owned.count == 1 && owned.first?.message.contains("owned by uid 4243") == true, "\(owned)")
    }

    @Test("a missing file is left to its reader; a relative or absent key is the decoder's error")
    func missing() {
        let text = Self.units + Self.secretFiles[0].yaml.replacingOccurrences(of: "@KEY@", with: "/nonexistent/bessd/token")
        #expect(Self.refusals(text).isEmpty)
        #expect((try? ConfigLoader.parse(text, file: "keys.yaml")) != nil)
    }

    @Test("the rule: owner root or bessd; no read bit for others; group read only for root's group or bessd's",
          arguments: [
              (0o600, 0, 0, true), (0o640, 0, 998, true), (0o640, 999, 998, true), (0o600, 999, 5, true), (0o640, 0, 0, true),
              (0o400, 999, 998, true), (0o644, 0, 0, false), (0o604, 999, 998, false), (0o640, 0, 100, false),
              (0o660, 999, 100, false), (0o600, 1000, 998, false), (0o440, 0, 27, false),
          ] as [(Int, Int, Int, Bool)])
    func rule(mode: Int, owner: Int, group: Int, accepted: Bool) {
        let account = KeyPermissions.Account(uids: [999], gids: [998])
        let problem = KeyPermissions.problem(mode: UInt32(mode), owner: UInt32(owner), group: UInt32(group), account: account)
        #expect((problem == nil) == accepted, "\(String(mode, radix: 8)) \(owner):\(group): \(problem ?? "accepted")")
    }

    @Test("every …_file key is held to this check or named as public; the check knows only declared keys")
    func everyFileKeyClassified() {
        let secret = Set(KeyPermissions.secretFileKeys.map(\.path))
        var declared: Set<String> = []
        for keys in ConfigKeys.all {
            for name in keys.names where name.hasSuffix("_file") {
                declared.insert("\(keys.section).\(name)")
                #expect(secret.contains("\(keys.section).\(name)") || KeyPermissions.publicFileKeys.contains(name),
                        "\(keys.section).\(name): a secret (KeyPermissions.secretFileKeys) or public (publicFileKeys)?")
            }
        }
        #expect(secret.isSubset(of: declared), "\(secret.subtracting(declared)) not declared by any section")
    }

    @Test("a configuration error under a secret key repeats no value: the PIN is never shown")
    func pinNotRepeated() {
        for pin in ["12345", "123456", "12a456"] {
            do {
                _ = try ConfigLoader.parse(Self.units + "ieee2030_5:\n  server: https://sep2.example/dcap\n  cert_file: /c\n  key_file: /k\n"
                                           + "  ca_file: /ca\n  pin: \"\(pin)\"\n", file: "pin.yaml")
                Issue.record("pin \(pin) accepted")
            } catch {
                let text = error.description
                #expect(text.contains("ieee2030_5.pin") && text.contains("(got <redacted>)"), "\(text)")
                #expect(!text.contains(pin) && !text.contains(String(pin.prefix(5))), "\(text)")
            }
        }
    }
}
