import Glibc

/// The clocks bessd reads, in one place: every other clock in the code (`Cycle.MonotonicClock` with
/// its typed instants, `Fieldbus.MonotonicClockReading`) is a view of this one.
public enum SystemClock {
    /// Nanoseconds on `CLOCK_MONOTONIC`.
    /// The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    public static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic instant `deadline` (ns). A signal never ends the sleep early: an
    /// interrupted sleep is resumed towards the same absolute deadline.
    /// The corresponding C function is `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`.
    public static func sleep(untilMonotonic deadline: Int64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// A `poll` timeout (ms) that sleeps until the monotonic instant `deadline` (ns): rounded up and
    /// 1 ms past, so the check after the wake-up finds the deadline passed; 0 once it has; at most a
    /// minute; -1 (no timeout) without a deadline.
    public static func pollTimeout(untilMonotonic deadline: Int64?, now: Int64 = monotonicNanoseconds()) -> Int32 {
        guard let deadline else { return -1 }
        let left = deadline - now
        if left <= 0 { return 0 }
        return Int32(min((left + 999_999) / 1_000_000 + 1, 60_000))
    }

    /// Unix time in seconds (UTC), for energy blocks and logs.
    public static func wallClockSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}
