/// The open-loop response every grid-support function passes through: a first-order lag that
/// reaches 90 % of a step in `responseTime` (IEEE 1547-2018's open-loop response time; 2030.5
/// `openLoopTms`), for any control period.
///
/// The lag y′ = (u − y)/τ with τ = OLRT / ln 10 is discretised exactly for each step's elapsed time,
/// the input held over the step: y ← u + (y − u)·10^(−Δt/OLRT). After n steps of Δt the remaining
/// fraction of a step is 10^(−nΔt/OLRT), so the output crosses 90 % at the first step at or after
/// OLRT, whatever the period, and it never overshoots. (OpenDER discretises the same lag by Tustin,
/// τ = OLRT/2.3; its 90 % time is 1.001·OLRT.) A response time of zero passes the input through.
public struct ResponseFilter: Sendable, Equatable {
    /// Time to 90 % of a step.
    public var responseTime: Duration {
        didSet { responseSeconds = responseTime.seconds }
    }
    private var responseSeconds: Double
    /// The output, nil until the first step or after `reset()`.
    public private(set) var output: Double?

    /// A filter with no output yet; the first step starts it at `initial` (or at the input when nil).
    public init(responseTime: Duration, initial: Double? = nil) {
        self.responseTime = responseTime
        responseSeconds = responseTime.seconds
        output = initial
    }

    /// Moves `elapsedSeconds` towards `input` and returns the new output. A non-finite input leaves
    /// the output where it is; a negative or non-finite elapsed time counts as none.
    public mutating func step(toward input: Double, elapsedSeconds: Double) -> Double {
        guard input.isFinite else { return output ?? 0 }
        guard let previous = output, responseSeconds > 0 else {
            output = input
            return input
        }
        let dt = elapsedSeconds.isFinite ? max(0, elapsedSeconds) : 0
        let remaining = Self.decay(Self.ln10 * dt / responseSeconds)
        let next = input + (previous - input) * remaining
        output = next
        return next
    }

    /// Sets the output (nil: the next step starts at its input).
    public mutating func reset(to value: Double?) { output = value }

    /// ln 10: τ = OLRT / ln 10.
    static let ln10 = 2.302_585_092_994_045_684_018

    /// e^(−y) for y ≥ 0 (1 for y ≤ 0 or NaN, 0 past the double range), to about 1e-13 relative:
    /// y halved to ≤ 1/16, a Taylor series there, squared back. Stdlib only, no libm.
    static func decay(_ y: Double) -> Double {
        guard y > 0 else { return 1 }
        guard y < 745 else { return 0 }
        var r = y
        var halvings = 0
        while r > 0.0625 {
            r *= 0.5
            halvings += 1
        }
        var term = 1.0
        var sum = 1.0
        for k in 1...12 {
            term *= -r / Double(k)
            sum += term
        }
        for _ in 0..<halvings { sum *= sum }
        return sum
    }
}
