import BessSystem
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
        guard let address = UnixSocketAddress(path: path, abstractWhenAt: true) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(assignments.utf8)
        let sent = address.withSockaddr { addr, length in
            message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), addr, length) }
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
