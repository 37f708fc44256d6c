import ControlCore
import Glibc

/// A simulated grid frequency over time.
public struct GridFrequency: Sendable {
    public enum Profile: Sendable, Equatable {
        /// Constant frequency.
        case steady(hz: Double)
        /// A mean-reverting random walk around `baseHz` whose typical excursion is `amplitudeHz`,
        /// repeatable from `seed`.
        case walk(baseHz: Double, amplitudeHz: Double, seed: UInt64)
        /// Steps of ±`amplitudeHz` around `baseHz`, changing every `period`:
        /// base, base − a, base, base + a, …
        case steps(baseHz: Double, amplitudeHz: Double, period: Duration)
        /// Piecewise-linear through (time since the start, hz) points, holding the last value.
        case trace([(at: Duration, hz: Double)])
        /// `fromHz` until `start`, then linear to `toHz` over `duration`, then held.
        case ramp(fromHz: Double, toHz: Double, start: Duration, duration: Duration)

        public static func == (lhs: Profile, rhs: Profile) -> Bool {
            switch (lhs, rhs) {
            case let (.steady(a), .steady(b)): a == b
            case let (.walk(a, b, c), .walk(d, e, f)): a == d && b == e && c == f
            case let (.steps(a, b, c), .steps(d, e, f)): a == d && b == e && c == f
            case let (.trace(a), .trace(b)): a.elementsEqual(b) { $0.at == $1.at && $0.hz == $1.hz }
            case let (.ramp(a, b, c, d), .ramp(e, f, g, h)): a == e && b == f && c == g && d == h
            default: false
            }
        }
    }

    public let profile: Profile
    var state: UInt64
    var deviation = 0.0
    var last = Duration.zero
    /// The shortest step period (a constant: built once, not on every call).
    static let shortestPeriod = Duration.milliseconds(1)

    public init(_ profile: Profile) {
        self.profile = profile
        if case .walk(_, _, let seed) = profile { state = seed &+ 0x9E37_79B9_7F4A_7C15 } else { state = 1 }
    }

    /// Frequency `elapsed` after the start. Calls must not go back in time for `walk`.
    public mutating func frequency(at elapsed: Duration) -> Double {
        switch profile {
        case .steady(let hz):
            return hz
        case .steps(let base, let amplitude, let period):
            let phase = Int((elapsed / max(period, Self.shortestPeriod)).rounded(.down)) % 4
            switch phase {  // not an array literal: bessd's simulated site asks every cycle
            case 1: return base - amplitude
            case 3: return base + amplitude
            default: return base
            }
        case .walk(let base, let amplitude, _):
            let dt = max(0, (elapsed - last).secondsDouble)
            last = elapsed
            // Ornstein–Uhlenbeck: reverts with a 20 s time constant; noise sized so the stationary
            // standard deviation is `amplitude`.
            let tau = 20.0
            let sigma = amplitude * (2 / tau).squareRoot()
            deviation += -deviation / tau * dt + sigma * dt.squareRoot() * gaussian()
            return base + deviation
        case .ramp(let from, let to, let start, let duration):
            if elapsed <= start { return from }
            if duration <= .zero || elapsed >= start + duration { return to }
            return from + (elapsed - start) / duration * (to - from)
        case .trace(let points):
            guard let first = points.first else { return 50 }
            if elapsed <= first.at { return first.hz }
            for (a, b) in zip(points, points.dropFirst()) where elapsed <= b.at {
                let span = b.at - a.at
                return span > .zero ? a.hz + (elapsed - a.at) / span * (b.hz - a.hz) : b.hz
            }
            return points[points.count - 1].hz
        }
    }

    /// A standard normal sample (Box–Muller over a SplitMix64 stream).
    mutating func gaussian() -> Double {
        let u1 = max(uniform(), 1e-300)
        let u2 = uniform()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    mutating func uniform() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
