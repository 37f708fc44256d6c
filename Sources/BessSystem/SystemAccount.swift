import Glibc

/// Users and groups by name, from the system's databases (/etc/passwd, /etc/group, or NSS).
public enum SystemAccount {
    /// The name of bessd's own user and of its own group, which the package creates and no person
    /// is put in (systemd/bessd.service: `User=bessd`, `Group=bessd`).
    public static let daemon = "bessd"

    /// The id of the group `name`, or nil when there is none. The corresponding C function is `getgrnam_r`.
    public static func gid(named name: String) -> UInt32? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    /// The id of the user `name`, or nil when there is none. The corresponding C function is `getpwnam_r`.
    public static func uid(named name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }
}
