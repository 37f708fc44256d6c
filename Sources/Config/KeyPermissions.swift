import BessSystem
import Foundation
import Glibc
internal import Yams

/// Keys, tokens and passwords belong to bessd, not to the people who read its status.
///
/// A file the configuration names for a secret (a TLS private key, the aggregator's bearer token,
/// the MQTT password) may be read by root and by bessd's own user and group, and by no one else.
/// "Anyone else can read it" means any of:
/// - its owner is neither root nor bessd's user (an owner can always chmod it open);
/// - it is readable by everyone (`o+r`);
/// - it is readable by its group (`g+r`) and that group is neither root's (0) nor bessd's own.
///
/// Such a file refuses the configuration: `KEY_PERMISSIONS` at the key's line, naming the file and
/// its mode, at `bessd run`, at every reload (the running configuration stays) and at
/// `bessd check-config` (so systemd's `ExecStartPre` refuses it before bessd starts). A file that
/// does not exist or cannot be looked at is left to whatever reads it (`TLS_CONTEXT_FAILED`,
/// `UPLINK_TOKEN_UNREADABLE`); this check is about who else may read it.
public enum KeyPermissions {
    /// Who bessd is, for this check: the user and group a key may belong to besides root.
    public struct Account: Sendable, Equatable {
        public var uids: Set<UInt32>
        public var gids: Set<UInt32>

        public init(uids: Set<UInt32>, gids: Set<UInt32>) {
            self.uids = uids
            self.gids = gids
        }

        /// The process's own effective user and group, and the `bessd` user's and group's when the
        /// package has made them. Under systemd these are one and the same (`User=bessd`,
        /// `Group=bessd`, and so `check-config` in `ExecStartPre`); someone checking a file by hand
        /// (`sudo bessd check-config`) checks it for bessd as well as for themselves; a test running
        /// as root is the daemon it starts.
        public static var current: Account {
            var account = Account(uids: [geteuid()], gids: [getegid()])
            if let uid = SystemAccount.uid(named: SystemAccount.daemon) { account.uids.insert(uid) }
            if let gid = SystemAccount.gid(named: SystemAccount.daemon) { account.gids.insert(gid) }
            return account
        }
    }

    /// A key whose file holds a secret: where it sits (a `ConfigKeys` section) and its name.
    public struct SecretFileKey: Sendable, Hashable {
        public let section: String
        public let key: String
        public var path: String { "\(section).\(key)" }
    }

    /// Every key that names a file holding a secret. A new `…_file` key is either here or in
    /// `publicFileKeys` (ConfigKeysTests holds every section's `…_file` keys to the two lists).
    public static let secretFileKeys: [SecretFileKey] = [
        SecretFileKey(section: "aggregator", key: "token_file"),
        SecretFileKey(section: "aggregator", key: "password_file"),
        SecretFileKey(section: "aggregator", key: "client_key_file"),
        SecretFileKey(section: "iec104.tls", key: "key_file"),
        SecretFileKey(section: "ieee2030_5", key: "key_file"),
    ]

    /// The `…_file` keys whose files hold nothing secret: certificates, CAs, CRLs, traces.
    public static let publicFileKeys: Set<String> = ["cert_file", "ca_file", "crl_file", "client_cert_file", "trace_file", "forecast_file"]

    /// Why a file of `mode`, `owner` and `group` may be read by someone other than root and
    /// `account`; nil when it may not.
    public static func problem(mode: UInt32, owner: UInt32, group: UInt32, account: Account) -> String? {
        var reasons: [String] = []
        if owner != 0, !account.uids.contains(owner) { reasons.append("owned by uid \(owner), neither root nor bessd's user") }
        if mode & 0o004 != 0 { reasons.append("readable by everyone") }
        if mode & 0o040 != 0, group != 0, !account.gids.contains(group) { reasons.append("readable by group \(group), not bessd's own") }
        return reasons.isEmpty ? nil : reasons.joined(separator: ", ")
    }

    /// The message for `path` when it may be read by someone other than root and `account`; nil
    /// when it may not, or when it cannot be looked at (missing: its reader says so).
    public static func refusal(path: String, account: Account) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let mode = UInt32(info.st_mode) & 0o7777
        guard let reason = problem(mode: mode, owner: info.st_uid, group: info.st_gid, account: account) else { return nil }
        return "KEY_PERMISSIONS: \(path) is mode \(octal(mode)) (uid \(info.st_uid), gid \(info.st_gid)): \(reason). "
            + "A key, token or password is for root and bessd alone: chown root:bessd and chmod 0640, or chown bessd and chmod 0600"
    }

    /// The mode as `chmod` takes it: `0644`.
    static func octal(_ mode: UInt32) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `KEY_PERMISSIONS` for every secret file `root` names that others may read, at its key's line.
    static func diagnostics(_ root: Node, file: String, account: Account) -> [ConfigDiagnostic] {
        secretFileKeys.compactMap { secret in
            func child(_ node: Node?, _ name: String) -> Node? { node?.mapping?.first { $0.key.scalar?.string == name }?.value }
            var node: Node? = root
            for part in secret.section.split(separator: ".") { node = child(node, String(part)) }
            guard let value = child(node, secret.key), let path = value.scalar?.string, path.hasPrefix("/"),
                  let message = refusal(path: path, account: account) else { return nil }
            return ConfigDiagnostic(code: .keyPermissions, file: file, line: value.mark?.line, keyPath: secret.path, message: message)
        }
    }
}
