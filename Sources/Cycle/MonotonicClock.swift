public import ControlCore
import Glibc

/// The system's monotonic clock (`CLOCK_MONOTONIC`) and absolute-deadline sleeping.
public enum MonotonicClock {
    /// The current monotonic instant.
    /// The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    /// Sleeps until `deadline` on the monotonic clock. A signal never ends the sleep early: an
    /// interrupted sleep is resumed towards the same absolute deadline.
    /// The corresponding C function is `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`.
    public static func sleep(until deadline: MonotonicInstant) {
        var ts = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                          tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// Unix time in seconds (UTC), for energy blocks and logs.
    public static func wallClock() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}
