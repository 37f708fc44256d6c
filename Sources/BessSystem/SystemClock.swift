public import ControlCore
public import Glibc

/// The monotonic clock as every thread of bessd reads it and waits on it: `SystemClock` (the
/// system's `CLOCK_MONOTONIC`) in the daemon, a `ManualClock` the test moves in tests, which steps
/// the threads the way swift-nio's `EmbeddedEventLoop` steps time. Each call is one call through
/// the protocol and allocates nothing. Instants are `MonotonicInstant`s, spans `Duration`s.
public protocol MonotonicClock: AnyObject, Sendable {
    /// The current instant.
    func now() -> MonotonicInstant
    /// Sleeps until `deadline`; a signal never ends the sleep early.
    func sleep(until deadline: MonotonicInstant)
    /// Waits for `wakeup` until `deadline`; true when it was signalled (every pending signal is
    /// consumed).
    func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool
    /// `poll` over the first `count` entries of `fds` until one is ready or `deadline` comes (at
    /// once when it has passed): the number ready, `revents` filled; 0 at the deadline.
    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32
}

/// The system's clocks: the monotonic one (`CLOCK_MONOTONIC`) as a `MonotonicClock`, and the wall
/// clock (`CLOCK_REALTIME`) for the records and protocols that carry Unix time: the one place
/// bessd reads either (a thread's CPU time, `CLOCK_THREAD_CPUTIME_ID`, is Service's `AnswerCosts`).
public final class SystemClock: MonotonicClock {
    /// The one instance (it holds no state).
    public static let shared = SystemClock()

    private init() {}

    /// The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    public func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: Self.monotonicNanoseconds()) }

    /// An interrupted sleep is resumed towards the same absolute deadline.
    /// The corresponding C function is `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`.
    public func sleep(until deadline: MonotonicInstant) {
        let ns = deadline.nanoseconds
        var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// To the nanosecond (`ppoll`), as `sleep` is. The eventfd is read only when `ppoll` found it
    /// signalled: a wait that runs to its deadline (every cycle's, most of the time) makes no read.
    public func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool {
        wakeup.waitPrecisely(until: deadline) && wakeup.drain()
    }

    /// The timeout is rounded up to the millisecond, so the wake-up finds the deadline passed.
    public func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32 {
        let left = (deadline - now()).nanosecondsClamped
        let ms = left <= 0 ? 0 : Int32(clamping: (left + 999_999) / 1_000_000)
        return Glibc.poll(fds, nfds_t(count), ms)
    }

    /// A `poll` timeout (ms) that sleeps until `deadline`: rounded up and 1 ms past, so the check
    /// after the wake-up finds the deadline passed; 0 once it has; at most a minute; -1 (no
    /// timeout) without a deadline.
    public static func pollTimeout(until deadline: MonotonicInstant?, now: MonotonicInstant) -> Int32 {
        guard let deadline else { return -1 }
        let left = (deadline - now).nanosecondsClamped
        if left <= 0 { return 0 }
        return Int32(min((left + 999_999) / 1_000_000 + 1, 60_000))
    }

    /// Unix time in seconds (UTC), for records and protocols that carry it (energy blocks, logs).
    /// The corresponding C function is `clock_gettime(CLOCK_REALTIME)`.
    public static func wallClockSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    /// Nanoseconds on `CLOCK_MONOTONIC`, for this module's own waits (and `Backoff`'s default seed).
    @usableFromInline static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
