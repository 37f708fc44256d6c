import CSystemd
import Glibc

/// Readiness, status and watchdog messages to the service manager.
public enum SystemdNotify {
    /// Sends newline-separated `KEY=value` assignments (`READY=1`, `STATUS=…`, `WATCHDOG=1`) to
    /// `$NOTIFY_SOCKET` as one datagram. Never blocks: a service manager that is not reading loses the
    /// message rather than stalling bessd (libsystemd's sd_notify would wait). Returns false when no
    /// service manager listens or the message was not taken.
    @discardableResult
    public static func send(_ assignments: String) -> Bool {
        guard let path = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !path.isEmpty else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }  // abstract namespace
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { b in for (i, c) in bytes.enumerated() { b[i] = c } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(assignments.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { addr in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), addr, length) }
            }
        }
        return sent == message.count
    }

    /// The watchdog interval the service manager expects, or nil when the watchdog is off.
    /// The corresponding C function is `sd_watchdog_enabled`.
    public static func watchdogInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0 else { return nil }
        return .microseconds(Int64(clamping: usec))
    }
}
