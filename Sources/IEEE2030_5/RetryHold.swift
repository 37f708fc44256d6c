public import ControlCore

/// Failures in a row and the monotonic instant before which the next attempt waits, on the house's one
/// `BackoffSchedule` in whole seconds (2, 4, 8 … 300 s by `DiscoveryLimits.backoff`). No jitter: a
/// 2030.5 client retries one server, and its retries fall at the instants its peers and tests expect.
/// What the discovery chain, its writes, the ConnectionPoint read-back and the reporter's responses
/// each hold back by.
public struct RetryHold: Hashable, Sendable {
    /// How a `Retry-After` meets the back-off.
    public enum RetryAfterRule: Sendable {
        /// It replaces the back-off's delay (a 429 or 503 holding every request back).
        case replaces
        /// It is kept when longer than the back-off's delay.
        case lengthens
    }

    /// The delays, seconds.
    public let schedule: BackoffSchedule
    /// The `Retry-After` honoured, seconds (held to this range).
    public let retryAfter: ClosedRange<UInt32>
    /// Failures in a row (at most `BackoffSchedule.failureLimit`).
    public private(set) var failures = 0
    /// No attempt before this instant; nil: none held back.
    public private(set) var until: MonotonicInstant?

    /// A hold with `limits`' back-off and `Retry-After` range, nothing held back.
    public init(_ limits: DiscoveryLimits = DiscoveryLimits()) {
        schedule = BackoffSchedule(first: UInt64(limits.backoff.lowerBound), maximum: UInt64(limits.backoff.upperBound))
        retryAfter = limits.retryAfter
    }

    /// True while an attempt at `now` waits.
    public func holds(at now: MonotonicInstant) -> Bool { until.map { now < $0 } ?? false }

    /// The first instant an attempt may go (the distant past when none is held back).
    public var due: MonotonicInstant { until ?? MonotonicInstant(nanoseconds: .min) }

    /// One more failure at `now`: held back for the schedule's next delay, or by a `Retry-After` (held
    /// to its range) as `rule` says. Returns the delay, seconds.
    @discardableResult
    public mutating func fail(at now: MonotonicInstant, retryAfter after: UInt32? = nil, rule: RetryAfterRule = .lengthens) -> UInt64 {
        failures = min(failures + 1, BackoffSchedule.failureLimit)
        var delay = schedule.delay(afterFailures: failures)
        if let after {
            let held = UInt64(min(max(after, retryAfter.lowerBound), retryAfter.upperBound))
            delay = rule == .replaces ? held : max(delay, held)
        }
        until = now + .seconds(delay)
        return delay
    }

    /// A success: no failure counted, nothing held back.
    public mutating func reset() {
        failures = 0
        until = nil
    }

    /// Nothing held back any more; the failures stay counted.
    public mutating func release() { until = nil }
}
