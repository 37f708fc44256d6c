public import BessBase

/// A unit's ratings, the bases of every percentage (W, var, VA; each positive and finite).
public struct UnitRating: Sendable, Equatable {
    /// `VAMax`: the apparent power rating, the base of every reactive percentage.
    public var apparentPowerVA: Double
    /// The active power rating while discharging, the base of positive watt-var and volt-watt
    /// percentages.
    public var activePowerW: Double
    /// The active power rating while charging (a magnitude), the base of negative ones.
    public var chargePowerW: Double
    /// The most reactive power the unit injects (`VarMaxInj`).
    public var maxInjectVar: Double
    /// The most reactive power the unit absorbs, a magnitude (`VarMaxAbs`).
    public var maxAbsorbVar: Double

    /// Ratings from `VAMax`; what is not given equals it (the charge rating equals the active one).
    public init(
        apparentPowerVA: Double, activePowerW: Double? = nil, chargePowerW: Double? = nil, maxInjectVar: Double? = nil,
        maxAbsorbVar: Double? = nil
    ) {
        self.apparentPowerVA = apparentPowerVA
        self.activePowerW = activePowerW ?? apparentPowerVA
        self.chargePowerW = chargePowerW ?? activePowerW ?? apparentPowerVA
        self.maxInjectVar = maxInjectVar ?? apparentPowerVA
        self.maxAbsorbVar = maxAbsorbVar ?? apparentPowerVA
    }

    /// Throws `GRID_RATING_INVALID` unless every rating is positive and finite.
    public func validate() throws(GridSupportError) {
        for (name, value) in [
            ("VAMax", apparentPowerVA), ("active power rating", activePowerW), ("charge power rating", chargePowerW),
            ("VarMaxInj", maxInjectVar), ("VarMaxAbs", maxAbsorbVar),
        ] where !(value.isFinite && value > 0) {
            throw GridSupportError(.rating, message: "\(name) \(value) is not a positive number")
        }
    }

    /// Active power in W from a percentage of the active rating (negative: of the charge rating).
    func activeW(percent: Double) -> Double { percent / 100 * (percent >= 0 ? activePowerW : chargePowerW) }

    /// Active power as a percentage of the active rating (negative: of the charge rating).
    func activePercent(_ watts: Double) -> Double { watts / (watts >= 0 ? activePowerW : chargePowerW) * 100 }

    /// `q` within the unit's reactive capability and its apparent power rating.
    func reactiveCapable(_ q: Double) -> Double {
        min(min(maxInjectVar, apparentPowerVA), max(-min(maxAbsorbVar, apparentPowerVA), q))
    }
}

/// Bounding an operating point (P, Q) to the apparent power rating: P² + Q² ≤ VAMax² (OpenDER
/// Eq. 3.9.1, with the differences each function's doc names).
enum ApparentPower {
    /// Volt-var and constant var: Q within the capability first; then, if the point lies outside the
    /// circle, `reactivePriority` keeps Q and reduces |P| to √(S² − Q²); otherwise P is kept and |Q|
    /// reduced to √(S² − P²), but not below `minimumVar` (Table 7's capability, which keeps priority
    /// over P either way), and |P| then gets what is left.
    ///
    /// Difference from OpenDER 2.2.0 (active priority): OpenDER cuts Q to the minimum at once and
    /// gives P √(S² − Q_min²) even when that exceeds the P asked for, and it never gives Q more than
    /// the minimum though the circle has room; here P never exceeds the P asked for and Q keeps all
    /// the circle leaves it, as "active power has priority" reads.
    static func bound(
        p: Double, q: Double, rating: UnitRating, reactivePriority: Bool, minimumVar: (injecting: Double, absorbing: Double)
    ) -> (p: Double, q: Double) {
        let s = rating.apparentPowerVA
        let q = rating.reactiveCapable(q)
        guard p * p + q * q > s * s else { return (p, q) }
        let sign: Double = p < 0 ? -1 : 1
        if reactivePriority {
            return (sign * (s * s - q * q).squareRoot(), q)
        }
        let minimum = min(s, q >= 0 ? minimumVar.injecting : minimumVar.absorbing)
        let room = max(0, s * s - p * p).squareRoot()
        let keptQ = min(abs(q), max(minimum, room))
        let keptP = min(abs(p), max(0, s * s - keptQ * keptQ).squareRoot())
        return (sign * keptP, q < 0 ? -keptQ : keptQ)
    }

    /// Constant power factor: P and Q scaled down together onto the circle, so the power factor
    /// holds (priority does not apply: the power factor ties them); where Q is then still beyond the
    /// unit's reactive capability (`VarMaxInj`/`VarMaxAbs`), Q stops at it and P is what was asked,
    /// within the circle: the power factor gives way rather than the active power (OpenDER Eq. 3.9.1).
    static func boundHoldingRatio(p: Double, q: Double, rating: UnitRating) -> (p: Double, q: Double) {
        let s = rating.apparentPowerVA
        let magnitude = (p * p + q * q).squareRoot()
        let k = magnitude > s ? s / magnitude : 1
        let capable = rating.reactiveCapable(q * k)
        guard capable != q * k else { return (p * k, q * k) }
        let room = max(0, s * s - capable * capable).squareRoot()
        return (p < 0 ? max(p, -room) : min(p, room), capable)
    }

    /// Watt-var: Q depends on P, so where the curve leaves the circle the operating point moves back
    /// along the curve to where it meets the circle (OpenDER Eq. 3.9.1's intercept; reactive
    /// priority does not apply), and Q (the filtered command) is held inside the circle there.
    /// `curveVar(p)` is the curve's Q at P, within the capability.
    ///
    /// Difference from OpenDER 2.2.0 where the reactive capability binds first: OpenDER meets the
    /// circle with the curve before the capability and then cuts Q, so P ends lower than the circle
    /// needs (92.7 % instead of 95.4 % of VA at full power with VarMax 30 %); here the capped curve
    /// meets the circle.
    static func boundAlongCurve(p: Double, q: Double, rating: UnitRating, curveVar: (Double) -> Double) -> (p: Double, q: Double) {
        let s = rating.apparentPowerVA
        let q = rating.reactiveCapable(q)
        guard p * p + q * q > s * s else { return (p, q) }
        func outside(_ k: Double) -> Bool {
            let x = k * p, y = curveVar(x)
            return x * x + y * y > s * s
        }
        // The largest fraction k of P whose curve point lies in the circle, by bisection (fixed
        // iterations, no allocation); |curve(0)| ≤ S, so k = 0 always lies inside.
        var k = 1.0
        if outside(1) {
            var inside = 0.0, beyond = 1.0
            for _ in 0..<60 {
                let middle = (inside + beyond) / 2
                if outside(middle) { beyond = middle } else { inside = middle }
            }
            k = inside
        }
        let keptP = k * p
        let room = max(0, s * s - keptP * keptP).squareRoot()
        return (keptP, q < 0 ? max(q, -room) : min(q, room))
    }
}
