/// Which of the utility's controls decided the site's power in the last cycle.
public enum UtilityBinding: UInt8, Sendable, Equatable, CustomStringConvertible {
    case none
    /// `opModExpLimW`: export at the connection point (or Σ units without a meter).
    case export
    /// `opModImpLimW`: import at the connection point (or the units' charge without a meter).
    case `import`
    /// `opModGenLimW`: the site's discharge.
    case generation
    /// `opModLoadLimW`: the site's charge.
    case load
    /// `opModMaxLimW`: the site's discharge.
    case maxLimit
    /// `opModConnect` or `opModEnergize` false: the site at zero.
    case disconnected
    /// The value published last is past its `validUntil` (the 2030.5 worker stuck or dead): the site
    /// at zero until a fresh one arrives.
    case stale

    public var description: String {
        switch self {
        case .none: "none"
        case .export: "export"
        case .import: "import"
        case .generation: "generation"
        case .load: "load"
        case .maxLimit: "max_limit"
        case .disconnected: "disconnected"
        case .stale: "stale"
        }
    }
}

/// The utility's part of one cycle's site decision (docs/design/0009-utility-limits.md), W.
public struct UtilityDecision: Sendable, Equatable {
    /// A utility value was in force: published and not past its `validUntil`, or past it (`stale`).
    public var active = false
    /// The value published last is past its `validUntil`: both caps are zero (stale means zero).
    public var stale = false
    /// The control that decided the site's power, if any.
    public var binding = UtilityBinding.none
    /// The cap on the units' discharge as ramped (generation, max, and export without a meter), W;
    /// infinite when none stands.
    public var dischargeCap = Double.infinity
    /// The cap on the units' charge (magnitude) as ramped (load, and import without a meter).
    public var chargeCap = Double.infinity
    /// Export and import limits at the connection point as ramped (infinite when none).
    public var exportLimit = Double.infinity
    public var importLimit = Double.infinity
    /// True when the export or import limit bounds Σ units because no meter reading places it at the
    /// connection point (no `site.meter`, or none read yet).
    public var unmetered = false
    /// `opModConnect` or `opModEnergize` is false: every unit at zero.
    public var disconnected = false
    /// The utility's request in force, W (+ = discharge).
    public var request: Double?
    public init() {}
}

/// One utility limit as applied: it falls at once and rises at `rampTms` (over that time from where
/// it stood when the rise began) or, without one, at the DefaultDERControl's `setGradW`, each bounded
/// by the site's limit ramp (no rise is ever faster: `rampTms` 0 and `setGradW` 0 are the site's
/// ramp); a limit lifted altogether rises at `setGradW` or the site's limit ramp and is gone once it
/// has passed the site's rating.
struct RampedLimit: Sendable, Equatable {
    var value = Double.infinity
    var target = Double.infinity
    var from = Double.infinity

    /// - Parameters:
    ///   - ramp: `rampTms` in seconds, nil for none.
    ///   - gradient: `setGradW` in W/s (infinite: no utility bound), nil for none.
    ///   - rate: the site's limit ramp, W/s: the upper bound of every rise.
    mutating func move(to next: Double, elapsed: Double, ramp: Double?, gradient: Double? = nil, rate: Double, rating: Double) {
        if next <= value {
            value = next
            target = next
            from = next
            return
        }
        if next != target {
            target = next
            from = value
        }
        let dt = elapsed.isFinite ? min(max(0, elapsed), 10) : 0
        var speed = max(0, rate)
        if let ramp, ramp.isFinite, ramp >= 0, next.isFinite {
            if ramp > 0 { speed = min(speed, (next - from) / ramp) }
        } else if let gradient, gradient >= 0 {
            speed = min(speed, gradient)
        }
        value = speed.isInfinite ? next : min(next, value + speed * dt)
        if !next.isFinite, value >= rating { value = .infinity }
    }
}

/// The utility's limits as ramped, carried across a reload with the site's running state.
struct UtilityRamps: Sendable, Equatable {
    var discharge = RampedLimit()
    var charge = RampedLimit()
    var export = RampedLimit()
    var `import` = RampedLimit()
}

/// The utility's part of one cycle (IEEE 2030.5, docs/design/0009-utility-limits.md): what the
/// 2030.5 worker published last, judged at `now`. Its request goes to `RequestArbiter`; its limits,
/// ramped, bound the units' sum and the connection point.
struct UtilityStage {
    /// What the worker published last; nil: never (no utility control).
    let published: UtilityLimits?
    let now: MonotonicInstant

    /// The value in force at `now`: nil when none was published or it is past `validUntil`.
    var inForce: UtilityLimits? { published?.inForce(at: now) }

    /// True when a value was published and `now` is past its `validUntil`: the site holds zero on the
    /// utility's account until a fresh one arrives (never published stays no utility control).
    var stale: Bool { published != nil && inForce == nil }

    /// A limit as a magnitude: nil stays nil; negative or not a number is zero (stale data means zero).
    static func magnitude(_ limit: Double?) -> Double {
        guard let limit else { return .infinity }
        return limit.isNaN ? 0 : max(0, limit)
    }

    /// Moves the ramped limits (`ramps`) toward what is in force and returns the cycle's utility
    /// decision so far (its connection-point limits and caps; without a meter the export and import
    /// limits fold into the caps). `rate` is the site's limit ramp, W/s.
    func update(_ ramps: inout UtilityRamps, metered: Bool, rate: Double, rating: Double, elapsed: Double) -> UtilityDecision {
        var out = UtilityDecision()
        let limits = inForce
        let export = Self.magnitude(limits?.exportLimitW), imports = Self.magnitude(limits?.importLimitW)
        out.stale = stale
        out.active = limits != nil || out.stale
        out.disconnected = limits.map { !$0.connect || !$0.energize } ?? false
        out.request = limits?.request
        if out.stale { out.binding = .stale }
        // Disconnected or stale: both caps zero (the connection-point limits lift: a floor there
        // would ask for discharge).
        let zero = out.disconnected || out.stale ? 0.0 : .infinity
        // Two-argument mins only: the variadic one builds an array every cycle.
        let discharge = min(min(Self.magnitude(limits?.generationLimitW), Self.magnitude(limits?.maxLimW)),
                            min(metered ? .infinity : export, zero))
        let charge = min(Self.magnitude(limits?.loadLimitW), min(metered ? .infinity : imports, zero))
        let ramp = limits?.rampSeconds, gradient = limits?.gradientWPerSecond
        ramps.discharge.move(to: discharge, elapsed: elapsed, ramp: ramp, gradient: gradient, rate: rate, rating: rating)
        ramps.charge.move(to: charge, elapsed: elapsed, ramp: ramp, gradient: gradient, rate: rate, rating: rating)
        ramps.export.move(to: metered ? export : .infinity, elapsed: elapsed, ramp: ramp, gradient: gradient, rate: rate, rating: rating)
        ramps.import.move(to: metered ? imports : .infinity, elapsed: elapsed, ramp: ramp, gradient: gradient, rate: rate, rating: rating)
        out.dischargeCap = ramps.discharge.value
        out.chargeCap = ramps.charge.value
        out.exportLimit = ramps.export.value
        out.importLimit = ramps.import.value
        out.unmetered = !metered && (export.isFinite || imports.isFinite)
        return out
    }

    /// The bounds on the units' sum this cycle (lower ≤ 0 ≤ upper): the grid operator's cap and the
    /// utility's caps, the lower of each. A metered export or import limit that has no floor or ceiling
    /// at the connection point yet (no reading so far), or whose meter is stale (the floor and ceiling
    /// kept from the last reading were made for the limit of that time, which may since have fallen),
    /// bounds Σ units meanwhile.
    static func bounds(cap: Double, utility: inout UtilityDecision, connection: ConnectionPoint) -> (lower: Double, upper: Double) {
        if connection.settings.hasMeter {
            if utility.exportLimit.isFinite, connection.ceiling == nil || connection.stale {
                utility.dischargeCap = min(utility.dischargeCap, utility.exportLimit)
                utility.unmetered = true
            }
            if utility.importLimit.isFinite, connection.floor == nil || connection.stale {
                utility.chargeCap = min(utility.chargeCap, utility.importLimit)
                utility.unmetered = true
            }
        }
        return (-min(cap, utility.chargeCap), min(cap, utility.dischargeCap))
    }

    /// Names who bounded the units' sum in one direction: the utility when its cap is the tighter,
    /// else the grid operator.
    func noteBound(discharging: Bool, cap: Double, decision: inout SiteDecision, connection: ConnectionPoint) {
        let utilityCap = discharging ? decision.utility.dischargeCap : decision.utility.chargeCap
        guard utilityCap < cap else {
            decision.operatorLimited = true
            return
        }
        decision.utility.binding = reason(discharging: discharging, connection: connection)
    }

    /// The utility control behind the cap in one direction (the tightest of those in force).
    func reason(discharging: Bool, connection: ConnectionPoint) -> UtilityBinding {
        if stale { return .stale }
        guard let limits = inForce else { return .none }
        if !limits.connect || !limits.energize { return .disconnected }
        let metered = connection.settings.hasMeter && (discharging ? connection.ceiling != nil : connection.floor != nil)
        var best = (UtilityBinding.none, Double.infinity)
        func consider(_ reason: UtilityBinding, _ limit: Double?) {
            let value = Self.magnitude(limit)
            if value < best.1 { best = (reason, value) }
        }
        if discharging {
            consider(.generation, limits.generationLimitW)
            consider(.maxLimit, limits.maxLimW)
            if !metered { consider(.export, limits.exportLimitW) }
        } else {
            consider(.load, limits.loadLimitW)
            if !metered { consider(.import, limits.importLimitW) }
        }
        return best.0
    }

    /// After the connection point decided the pool: the utility's export or import limit is the one
    /// that bound when it is the lower of the configured and the utility's.
    static func noteConnectionBinding(_ binding: GridLimitBinding, decision: inout SiteDecision, connection: ConnectionPoint) {
        if decision.utility.stale { return }
        switch binding {
        case .exportLimit where decision.utility.exportLimit < (connection.settings.exportMax?.value ?? .infinity):
            decision.utility.binding = .export
        case .importLimit where decision.utility.importLimit < (connection.settings.importMax?.value ?? .infinity):
            decision.utility.binding = .import
        default: break
        }
    }
}
