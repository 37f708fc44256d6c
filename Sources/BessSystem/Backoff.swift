public import ControlCore

/// Exponential back-off with jitter for the threads that retry (bus reconnects, rediscovery, CAN
/// interfaces, the uplink): each pause is the current back-off plus up to a quarter more, chosen at
/// random so a fleet does not retry in step; the back-off then doubles up to its maximum. `reset()`
/// after a success. The schedule itself is ControlCore's pure `BackoffSchedule` (which the 2030.5
/// stacks use directly); this wraps it in nanoseconds with a seeded jitter.
public struct Backoff: Sendable {
    private let schedule: BackoffSchedule
    /// Failures counted since the start or the last `reset()` (saturating).
    private var failures = 0
    private var state: UInt64

    /// Pauses from `first` (at least a nanosecond) doubling up to `maximum` (at least `first`).
    public init(first: Duration, maximum: Duration, seed: UInt64 = UInt64(truncatingIfNeeded: SystemClock.monotonicNanoseconds())) {
        let firstNanoseconds = max(1, first.nanosecondsClamped)
        schedule = BackoffSchedule(first: UInt64(firstNanoseconds), maximum: UInt64(max(firstNanoseconds, maximum.nanosecondsClamped)))
        state = seed | 1
    }

    /// True while the next pause starts from the first back-off: no failure counted since the start or
    /// the last `reset()` (or the first back-off is already the maximum).
    public var isFirst: Bool { schedule.delay(afterFailures: failures + 1) == schedule.first }

    /// The pause before the next attempt; doubles the back-off (up to the maximum).
    public mutating func next() -> Duration {
        let current = schedule.delay(afterFailures: failures + 1)
        failures = min(failures + 1, BackoffSchedule.failureLimit)
        let pause = BackoffSchedule.jittered(current, draw: BackoffSchedule.nextDraw(&state))
        return .nanoseconds(Int64(clamping: pause))
    }

    /// Back to the first back-off (after a success).
    public mutating func reset() { failures = 0 }
}
