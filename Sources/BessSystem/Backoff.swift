/// Exponential back-off with jitter, the one used by every retry in bessd (bus reconnects,
/// rediscovery, CAN interfaces, the uplink): each pause is the current back-off plus up to a quarter
/// more, chosen at random so a fleet does not retry in step; the back-off then doubles up to its
/// maximum. `reset()` after a success.
public struct Backoff: Sendable {
    public let firstNanoseconds: Int64
    public let maximumNanoseconds: Int64
    /// The back-off the next pause starts from.
    public private(set) var currentNanoseconds: Int64
    private var state: UInt64

    public init(firstNanoseconds: Int64, maximumNanoseconds: Int64, seed: UInt64 = UInt64(truncatingIfNeeded: SystemClock.monotonicNanoseconds())) {
        self.firstNanoseconds = max(1, firstNanoseconds)
        self.maximumNanoseconds = max(self.firstNanoseconds, maximumNanoseconds)
        currentNanoseconds = self.firstNanoseconds
        state = seed | 1
    }

    /// True while no failure has been counted since the start or the last `reset()`.
    public var isFirst: Bool { currentNanoseconds == firstNanoseconds }

    /// The pause before the next attempt; doubles the back-off (up to the maximum).
    public mutating func next() -> Int64 {
        // A 64-bit LCG (Knuth's MMIX constants): no allocation, no lock, enough for spreading retries.
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let jitter = Int64(state >> 40) % (currentNanoseconds / 4 + 1)
        let pause = currentNanoseconds + jitter
        currentNanoseconds = min(currentNanoseconds * 2, maximumNanoseconds)
        return pause
    }

    /// Back to the first back-off (after a success).
    public mutating func reset() { currentNanoseconds = firstNanoseconds }
}
