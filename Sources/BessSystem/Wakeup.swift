import CLinux
public import ControlCore
import Glibc

/// A wake-up from one thread to another over a non-blocking eventfd: `signal()` is one write that
/// never blocks and never allocates; `wait(until:)` returns at the first signal (consuming every
/// pending one: the counter resets in one read) or at the deadline.
public final class Wakeup: @unchecked Sendable {
    private let fd: Int32

    public init() {
        fd = eventfd(0, Int32(O_NONBLOCK | O_CLOEXEC))  // EFD_NONBLOCK | EFD_CLOEXEC
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// The eventfd, for a poll set that waits on it with other descriptors.
    public var descriptor: Int32 { fd }

    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Waits for a signal until `deadline`. Returns true when signalled.
    @discardableResult
    public func wait(until deadline: MonotonicInstant) -> Bool {
        while true {
            let remaining = deadline.nanoseconds - SystemClock.monotonicNanoseconds()
            if remaining <= 0 { return drain() }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, Int32(min(remaining / 1_000_000 + 1, 60_000))) > 0, drain() { return true }
        }
    }

    /// Waits for a signal until `deadline` to the nanosecond (`ppoll`, no rounding to
    /// milliseconds), without consuming it. Returns true when signalled.
    @discardableResult
    public func waitPrecisely(until deadline: MonotonicInstant) -> Bool {
        while true {
            let remaining = deadline.nanoseconds - SystemClock.monotonicNanoseconds()
            if remaining <= 0 { return false }
            let n = bessd_wait_readable(fd, remaining)
            if n > 0 { return true }
            if n == 0 { return false }
        }
    }

    /// Consumes pending signals; true when there was one.
    @discardableResult
    public func drain() -> Bool {
        var count: UInt64 = 0
        return read(fd, &count, 8) == 8
    }
}
