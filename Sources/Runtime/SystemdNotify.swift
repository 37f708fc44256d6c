import CSystemd

/// Readiness, status and watchdog messages to the service manager.
public enum SystemdNotify {
    /// Sends newline-separated `KEY=value` assignments (`READY=1`, `STATUS=…`, `WATCHDOG=1`).
    /// Returns false when no service manager listens (`$NOTIFY_SOCKET` unset) or the send failed.
    /// The corresponding C function is `sd_notify`.
    @discardableResult
    public static func send(_ assignments: String) -> Bool {
        sd_notify(0, assignments) > 0
    }

    /// The watchdog interval the service manager expects, or nil when the watchdog is off.
    /// The corresponding C function is `sd_watchdog_enabled`.
    public static func watchdogInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0 else { return nil }
        return .microseconds(Int64(clamping: usec))
    }
}
