public import ControlCore

/// Exponential back-off with jitter, the one used by every retry in bessd (bus reconnects,
/// rediscovery, CAN interfaces, the uplink): each pause is the current back-off plus up to a quarter
/// more, chosen at random so a fleet does not retry in step; the back-off then doubles up to its
/// maximum. `reset()` after a success.
public struct Backoff: Sendable {
    private let firstNanoseconds: Int64
    private let maximumNanoseconds: Int64
    /// The back-off the next pause starts from.
    private var currentNanoseconds: Int64
    private var state: UInt64

    /// Pauses from `first` (at least a nanosecond) doubling up to `maximum` (at least `first`).
    public init(first: Duration, maximum: Duration, seed: UInt64 = UInt64(truncatingIfNeeded: SystemClock.monotonicNanoseconds())) {
        firstNanoseconds = max(1, first.nanosecondsClamped)
        maximumNanoseconds = max(firstNanoseconds, maximum.nanosecondsClamped)
        currentNanoseconds = firstNanoseconds
        state = seed | 1
    }

    /// True while no failure has been counted since the start or the last `reset()`.
    public var isFirst: Bool { currentNanoseconds == firstNanoseconds }

    /// The pause before the next attempt; doubles the back-off (up to the maximum).
    public mutating func next() -> Duration {
        // A 64-bit LCG (Knuth's MMIX constants): no allocation, no lock, enough for spreading retries.
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let jitter = Int64(state >> 40) % (currentNanoseconds / 4 + 1)
        let pause = currentNanoseconds + jitter
        currentNanoseconds = min(currentNanoseconds * 2, maximumNanoseconds)
        return .nanoseconds(pause)
    }

    /// Back to the first back-off (after a success).
    public mutating func reset() { currentNanoseconds = firstNanoseconds }
}
