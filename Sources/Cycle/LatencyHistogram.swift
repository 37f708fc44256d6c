/// Wake-up lateness of the cycle, in microseconds, counted in fixed buckets so recording never
/// allocates: 1 µs buckets up to 1 ms (cyclictest's resolution), then 16 buckets per doubling up to about 4 s.
public struct LatencyHistogram: Sendable, Equatable {
    public static let bucketCount = 1000 + 16 * 12
    public private(set) var counts: [UInt64]
    public private(set) var total: UInt64 = 0
    public private(set) var maxMicroseconds: Int64 = 0

    public init() { counts = [UInt64](repeating: 0, count: Self.bucketCount) }

    static func bucket(_ us: Int64) -> Int {
        if us < 1000 { return Int(max(0, us)) }
        // log2(us / 1000) in sixteenths, from the bit length and the next four bits.
        let ratio = UInt64(us) * 16 / 1000
        let exponent = 63 - ratio.leadingZeroBitCount - 4
        let mantissa = Int((ratio >> UInt64(max(0, exponent))) & 15)
        return min(bucketCount - 1, 1000 + max(0, exponent) * 16 + mantissa)
    }

    /// The upper bound, in µs, of what a bucket holds.
    static func upperBound(_ bucket: Int) -> Int64 {
        if bucket < 1000 { return Int64(bucket + 1) }
        let exponent = (bucket - 1000) / 16
        let mantissa = (bucket - 1000) % 16
        return Int64(16 + mantissa + 1) * 1000 * (Int64(1) << Int64(exponent)) / 16
    }

    /// Records one sample.
    public mutating func record(microseconds us: Int64) {
        counts[Self.bucket(us)] &+= 1
        total &+= 1
        if us > maxMicroseconds { maxMicroseconds = us }
    }

    /// The value below which `fraction` of samples fall (bucket resolution), 0 when empty.
    public func percentile(_ fraction: Double) -> Int64 {
        guard total > 0 else { return 0 }
        let target = UInt64((Double(total) * fraction).rounded(.up))
        var seen: UInt64 = 0
        for (index, count) in counts.enumerated() {
            seen += count
            if seen >= max(1, target) { return min(Self.upperBound(index), maxMicroseconds) }
        }
        return maxMicroseconds
    }

    /// Copies `other` into this histogram's storage (no allocation).
    public mutating func copy(from other: LatencyHistogram) {
        for i in counts.indices { counts[i] = other.counts[i] }
        total = other.total
        maxMicroseconds = other.maxMicroseconds
    }
}
