/// Why a unit got the power it did in the site's allocation.
public enum ShareReason: UInt8, Sendable, Equatable, CustomStringConvertible {
    /// Shared from the site's request by headroom and SOC weight.
    case headroom
    /// Given all it may deliver in the requested direction (its headroom is used up).
    case full
    /// Held at its own command (an operator override or a dispatch for this unit alone).
    case held
    /// Nothing to share (no request, or no headroom in its direction).
    case idle

    public var description: String {
        switch self {
        case .headroom: "headroom"
        case .full: "full"
        case .held: "held"
        case .idle: "idle"
        }
    }
}

/// One unit as the allocation sees it.
public struct AllocationInput: Sendable, Equatable {
    /// False for a unit held at its own command: its `request` is its setpoint (clamped to its
    /// limits) and is not part of the site's pool.
    public var pooled: Bool
    /// The unit's part of the site's request (its dispatch share by rating plus its droop share), or
    /// its own command when not pooled. + = discharge.
    public var request: Double
    /// Magnitudes (≥ 0) of the power the unit may take and give this cycle.
    public var allowedCharge: Double
    public var allowedDischarge: Double
    /// State of charge, percent; nil when unknown (weighted as 50 %).
    public var soc: Double?

    public init(pooled: Bool = true, request: Double, allowedCharge: Double, allowedDischarge: Double, soc: Double? = nil) {
        self.pooled = pooled
        self.request = request
        self.allowedCharge = allowedCharge
        self.allowedDischarge = allowedDischarge
        self.soc = soc
    }
}

/// The site's allocation of one cycle.
public struct AllocationResult: Sendable, Equatable {
    /// What the pooled units were asked for in total, W (+ = discharge).
    public var request: Double = 0
    /// What the pooled units were given in total, W.
    public var delivered: Double = 0
    /// The magnitude the pool could not deliver, W (≥ 0): the site's shortfall.
    public var shortfall: Double { abs(request - delivered) }
    public init() {}
}

/// Shares the site's request across its units by headroom with SOC balancing.
///
/// The pool is the sum of the pooled units' requests. It goes to the pooled units in proportion to
/// their headroom in the requested direction times an SOC weight (discharge: more from fuller units;
/// charge: more into emptier ones), never above a unit's headroom; what one unit cannot take is given
/// to the others in the same call (water filling). A tripped, stale or standby unit has no headroom,
/// so its share goes to the others; what no unit can take is the shortfall. A unit that is not pooled
/// is held at its own request, clamped to its limits.
///
/// A pure function over storage allocated at init: `allocate` allocates nothing.
public struct SiteAllocator: Sendable {
    private var weight: [Double]
    private var open: [Bool]

    public init(units: Int) {
        weight = [Double](repeating: 0, count: max(0, units))
        open = [Bool](repeating: false, count: max(0, units))
    }

    /// The SOC weight in one direction: the fraction of charge left to give (discharge) or of room
    /// left to take (charge), floored so that a unit with headroom is never left out entirely.
    @inlinable static func socWeight(_ soc: Double?, discharge: Bool) -> Double {
        let fraction = soc.map { $0.isFinite ? ControlMath.clamp($0 / 100, 0, 1) : 0.5 } ?? 0.5
        return max(0.05, discharge ? fraction : 1 - fraction)
    }

    @inlinable static func finite(_ x: Double) -> Double { x.isFinite ? x : 0 }
    @inlinable static func magnitude(_ x: Double) -> Double { x.isFinite ? max(0, x) : 0 }

    /// Writes each unit's setpoint into `shares` (same order as `units`) and the reason into
    /// `reasons`. Both must have `units.count` elements; any non-finite input counts as zero.
    /// - Parameter pool: what the pooled units are asked for together (the site's decision after its
    ///   connection point and application); nil = the sum of their requests.
    public mutating func allocate(
        _ units: [AllocationInput], pool site: Double? = nil, shares: inout [Double], reasons: inout [ShareReason]
    ) -> AllocationResult {
        let n = min(units.count, shares.count, reasons.count, weight.count)
        var result = AllocationResult()
        var pool = 0.0
        for i in 0..<n where units[i].pooled { pool += Self.finite(units[i].request) }
        if let site { pool = Self.finite(site) }
        result.request = pool
        let discharge = pool > 0
        var openWeight = 0.0
        for i in 0..<n {
            let unit = units[i]
            let charge = Self.magnitude(unit.allowedCharge)
            let give = Self.magnitude(unit.allowedDischarge)
            if !unit.pooled {
                shares[i] = ControlMath.clamp(Self.finite(unit.request), -charge, give)
                reasons[i] = .held
                open[i] = false
                continue
            }
            shares[i] = 0
            reasons[i] = .idle
            let headroom = discharge ? give : charge
            open[i] = pool != 0 && headroom > 0
            weight[i] = open[i] ? headroom * Self.socWeight(unit.soc, discharge: discharge) : 0
            openWeight += weight[i]
        }
        // Water filling: each round shares what is left by weight; a unit whose share would pass its
        // headroom is filled to it and leaves the round, and the rest is shared again. At most n rounds.
        var left = abs(pool)
        var rounds = 0
        while left > 1e-9, openWeight > 0, rounds < n {
            rounds += 1
            var filled = false
            for i in 0..<n where open[i] {
                let headroom = discharge ? Self.magnitude(units[i].allowedDischarge) : Self.magnitude(units[i].allowedCharge)
                let have = abs(shares[i])
                if have + left * weight[i] / openWeight >= headroom {
                    shares[i] = discharge ? headroom : -headroom
                    reasons[i] = .full
                    open[i] = false
                    filled = true
                }
            }
            var given = 0.0
            var stillOpen = 0.0
            for i in 0..<n where units[i].pooled { given += abs(shares[i]) }
            for i in 0..<n where open[i] { stillOpen += weight[i] }
            left = max(0, abs(pool) - given)
            openWeight = stillOpen
            if !filled {
                // Nobody reaches their headroom: the rest is shared by weight and the pool is done.
                for i in 0..<n where open[i] {
                    let more = left * weight[i] / openWeight
                    shares[i] += discharge ? more : -more
                    reasons[i] = .headroom
                }
                left = 0
            }
        }
        var delivered = 0.0
        for i in 0..<n where units[i].pooled { delivered += shares[i] }
        result.delivered = delivered
        return result
    }
}
