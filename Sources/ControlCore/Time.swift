/// A point on the monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds since an arbitrary origin.
///
/// The control core never reads a clock itself: every step is handed the instant it runs at, so a
/// test advances time instead of sleeping and the whole control law is a pure function of its inputs.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin.
    public var nanoseconds: Int64

    /// Creates an instant from nanoseconds since the clock's origin.
    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The clock's origin; convenient for tests.
    public static let zero = MonotonicInstant(nanoseconds: 0)

    @inlinable public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `duration` after `lhs` (saturating, never traps).
    @inlinable public static func + (lhs: Self, rhs: Duration) -> Self {
        let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(rhs.nanosecondsClamped)
        return Self(nanoseconds: overflow ? (rhs > .zero ? .max : .min) : sum)
    }

    /// The instant `duration` before `lhs` (saturating).
    @inlinable public static func - (lhs: Self, rhs: Duration) -> Self {
        let (difference, overflow) = lhs.nanoseconds.subtractingReportingOverflow(rhs.nanosecondsClamped)
        return Self(nanoseconds: overflow ? (rhs > .zero ? .min : .max) : difference)
    }

    /// The time from `rhs` to `lhs` (negative when `rhs` is later).
    @inlinable public static func - (lhs: Self, rhs: Self) -> Duration { .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds) }

    /// Seconds from `earlier` to `self` (negative if `earlier` is later).
    @inlinable public func seconds(since earlier: Self) -> Double {
        Double(nanoseconds &- earlier.nanoseconds) * 1e-9
    }

    public var description: String { "t+\(Double(nanoseconds) * 1e-9)s" }
}

extension Duration {
    /// The duration in nanoseconds, clamped to the range of `Int64`.
    /// Truncated toward zero; `.max`/`.min` from ±9,223,372,036 s on.
    ///
    /// One 128-by-64-bit division of the magnitude, not `components`' two 128-bit divisions: the
    /// cycle asks for it in every staleness check, several times per unit and cycle.
    @inlinable public var nanosecondsClamped: Int64 {
        let total = attoseconds
        // Under 9.2 s either way (most ages and periods): one 64-bit division by a constant, the
        // same truncation toward zero.
        if total > -0x7FFF_FFFF_FFFF_FFFF, total < 0x7FFF_FFFF_FFFF_FFFF { return Int64(truncatingIfNeeded: total) / 1_000_000_000 }
        let negative = total < 0
        let magnitude = negative ? 0 &- total : total  // Int128.min stays negative: its high word clamps
        let high = UInt64(truncatingIfNeeded: magnitude >> 64)
        // A quotient of 2^64 ns or more is far past the clamp (and would not fit the division).
        guard high < 1_000_000_000 else { return negative ? .min : .max }
        let ns = UInt64(1_000_000_000).dividingFullWidth((high: high, low: UInt64(truncatingIfNeeded: magnitude))).quotient
        guard ns < 9_223_372_036_000_000_000 else { return negative ? .min : .max }
        return negative ? -Int64(ns) : Int64(ns)
    }

    /// `components`, from one 64-bit division while the duration is under 9.2 s either way (every
    /// age, period and revert timer the cycle converts, several times per unit and cycle), else
    /// `components`' 128-bit ones. The same pair: both truncate toward zero.
    @inlinable public var splitComponents: (seconds: Int64, attoseconds: Int64) {
        let total = attoseconds
        guard total > -0x7FFF_FFFF_FFFF_FFFF, total < 0x7FFF_FFFF_FFFF_FFFF else { return components }
        let (seconds, rest) = Int64(truncatingIfNeeded: total).quotientAndRemainder(dividingBy: 1_000_000_000_000_000_000)
        return (seconds, rest)
    }

    /// The duration as floating-point seconds.
    @inlinable public var secondsDouble: Double {
        let (seconds, attoseconds) = splitComponents
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// The duration in whole seconds, rounded up: a device timer written in whole seconds
    /// (`…RvrtTms`) must never run out before the time bessd plans with (10.5 s is 11).
    @inlinable public var wholeSecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = splitComponents
        return attoseconds > 0 ? seconds + 1 : seconds
    }

    /// A duration from floating-point seconds, rounded to the nearest nanosecond (8.2 s is
    /// 8.2 s, not 8.199999999 s); non-finite or negative input gives zero, and it is capped at 9.2e9 s.
    @inlinable public static func seconds(fromDouble value: Double) -> Duration {
        guard value.isFinite, value > 0 else { return .zero }
        return .nanoseconds(Int64((min(value, 9.2e9) * 1e9).rounded()))
    }
}

/// A value together with the monotonic instant it was measured.
///
/// Consumers never use a raw value: they ask for it at an instant with the maximum age they accept,
/// and an older value is absent. A value stamped up to `concurrencyTolerance` after the instant asked
/// about is a reading a bus worker (or the kernel) stamped while the cycle ran — the freshest there is;
/// one stamped further ahead means a clock mix-up and is absent too.
public struct Timestamped<Value: Sendable>: Sendable {
    /// The measured value.
    public var value: Value
    /// When the value was measured (not when it was received or copied).
    public var takenAt: MonotonicInstant

    /// How far after the instant asked about a stamp may lie (1 s): the cycle samples its instant once
    /// as it wakes, and workers publish while it runs. Rejecting those made a unit's limits fall to zero
    /// for a cycle now and then (found by the HIL scenarios).
    public static var concurrencyToleranceNanoseconds: Int64 { 1_000_000_000 }

    /// Wraps a value with the instant it was measured.
    @inlinable public init(_ value: Value, at takenAt: MonotonicInstant) {
        self.value = value
        self.takenAt = takenAt
    }

    /// Age of the value at `now`, in seconds.
    @inlinable public func ageSeconds(at now: MonotonicInstant) -> Double {
        now.seconds(since: takenAt)
    }

    /// The value if it is no older than `maxAge` at `now`; otherwise `nil`.
    @inlinable public func value(at now: MonotonicInstant, maxAge: Duration) -> Value? {
        guard isFresh(at: now, maxAge: maxAge) else { return nil }
        return value
    }

    /// True when the value is no older than `maxAge` at `now` (`value(at:maxAge:)` would give it),
    /// without copying it out: for a reader that needs one field of a large reading.
    @inlinable public func isFresh(at now: MonotonicInstant, maxAge: Duration) -> Bool {
        let age = now.nanoseconds &- takenAt.nanoseconds
        return age >= -Self.concurrencyToleranceNanoseconds && age <= maxAge.nanosecondsClamped
    }
}

extension Timestamped: Equatable where Value: Equatable {}

extension Optional {
    /// The wrapped timestamped value if present and no older than `maxAge`.
    @inlinable public func fresh<V>(at now: MonotonicInstant, maxAge: Duration) -> V?
    where Wrapped == Timestamped<V> {
        switch self {
        case .none: return nil
        case .some(let stamped): return stamped.value(at: now, maxAge: maxAge)
        }
    }
}
