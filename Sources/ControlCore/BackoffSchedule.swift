/// The pure exponential back-off every retry in bessd follows: after `n` failures in a row the delay
/// is `first` doubled `n - 1` times, capped at `maximum`. Units are the caller's (nanoseconds for
/// `BessSystem.Backoff`, whole seconds for 2030.5). No clock and no randomness source of its own: the
/// caller counts failures and, when it wants jitter, keeps the generator state (`nextDraw`) and hands
/// each draw to `jittered`.
public struct BackoffSchedule: Sendable, Hashable {
    /// The delay after the first failure.
    public let first: UInt64
    /// The delay never grows past this (when `first` is larger, every delay is `maximum`).
    public let maximum: UInt64

    /// A schedule from `first` doubling up to `maximum`, both in the caller's unit.
    public init(first: UInt64, maximum: UInt64) {
        self.first = first
        self.maximum = maximum
    }

    /// Failures after which the delay cannot grow any more (a counter may saturate here).
    public static let failureLimit = 64

    /// The delay after `failures` failures in a row (1 for the first): `first` doubled `failures - 1`
    /// times (saturating), capped at `maximum`. Zero or fewer failures read as one.
    public func delay(afterFailures failures: Int) -> UInt64 {
        var step = first
        var doublings = min(max(failures, 1), Self.failureLimit) - 1
        while doublings > 0, step < maximum {
            let (doubled, overflow) = step.multipliedReportingOverflow(by: 2)
            step = overflow ? .max : doubled
            doublings -= 1
        }
        return min(step, maximum)
    }

    /// `delay` plus up to a quarter more, chosen by `draw` (the top 24 bits of it), so a fleet does not
    /// retry in step. Saturates rather than overflowing.
    public static func jittered(_ delay: UInt64, draw: UInt64) -> UInt64 {
        let jitter = (draw >> 40) % (delay / 4 + 1)
        let (sum, overflow) = delay.addingReportingOverflow(jitter)
        return overflow ? .max : sum
    }

    /// Advances the caller's generator `state` and returns the new draw: a 64-bit LCG (Knuth's MMIX
    /// constants), no allocation, no lock, enough for spreading retries.
    public static func nextDraw(_ state: inout UInt64) -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }
}
