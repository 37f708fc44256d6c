/// A fixed ring of (instant, value) samples and the least and most value in force over a window:
/// what the connection point knows of the batteries' power (or reactive power) at the instant the
/// meter measured, when the meter's delay is anything up to `max_lag_s` (`ConnectionPoint`, the
/// site's reactive law). Storage is allocated at init; `record` and `range` allocate nothing.
struct LagHistory: Sendable {
    private var times: [Int64]
    private var values: [Double]
    private var head = 0
    private var count = 0

    init(capacity: Int) {
        times = [Int64](repeating: 0, count: max(2, capacity))
        values = [Double](repeating: 0, count: max(2, capacity))
    }

    /// Adds a sample at `now`; the oldest goes once the ring is full.
    mutating func record(_ value: Double, at now: MonotonicInstant) {
        let index = (head + count) % times.count
        times[index] = now.nanoseconds
        values[index] = value
        if count < times.count { count += 1 } else { head = (head + 1) % times.count }
    }

    /// The least and most value in force at any instant from `from` to `to`: every sample taken in
    /// the window and the one in force when it began; (0, 0) with none.
    func range(from: MonotonicInstant, to: MonotonicInstant) -> (Double, Double) {
        var low = Double.infinity, high = -Double.infinity
        var i = count - 1
        while i >= 0 {
            let slot = (head + i) % times.count
            let t = times[slot]
            if t <= to.nanoseconds {
                low = Swift.min(low, values[slot])
                high = Swift.max(high, values[slot])
                if t <= from.nanoseconds { break }
            }
            i -= 1
        }
        return low.isFinite ? (low, high) : (0, 0)
    }
}
