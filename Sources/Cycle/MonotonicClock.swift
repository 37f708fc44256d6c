import BessSystem
public import ControlCore

/// The system's monotonic clock with typed instants (a view of `BessSystem.SystemClock`).
public enum MonotonicClock {
    /// The current monotonic instant.
    public static func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: SystemClock.monotonicNanoseconds()) }

    /// Sleeps until `deadline` on the monotonic clock; a signal never ends the sleep early.
    public static func sleep(until deadline: MonotonicInstant) { SystemClock.sleep(untilMonotonic: deadline.nanoseconds) }

    /// Unix time in seconds (UTC), for energy blocks and logs.
    public static func wallClock() -> Double { SystemClock.wallClockSeconds() }
}
