public import ControlCore
public import GridSupport

extension ActiveControls {
    /// The controls in force as the site applies them (`UtilityLimits`, W): every `ActivePower` as
    /// value × 10^multiplier; `opModFixedW` and `opModMaxLimW`, hundredths of a percent of `setMaxW`,
    /// of `siteRatingW` (the site's rating is the `setMaxW` bessd reports); `rampTms` in seconds;
    /// `setGradW` (hundredths of a percent of `setMaxW` per second) in W/s, 0 as infinite (no utility
    /// bound: the site's limit ramp, which bounds every rise, paces it);
    /// `opModFreqDroop` in Hz, percent and seconds (`kOF` 50 thousandths is a 5 % droop).
    /// `validUntil` is left nil: the worker that publishes the value sets it on the monotonic clock.
    /// The reactive controls: the power factors signed by excitation, `opModTargetVar` in var and
    /// `opModFixedVar` of the rating or of the var capability (nil where that reference is zero).
    /// - Parameters:
    ///   - siteRatingW: Σ unit ratings, W (a non-finite or negative rating counts as zero).
    ///   - varInjecting: Σ `VarMaxInj` of the units with var points, var (`setMaxVar`).
    ///   - varAbsorbing: Σ `VarMaxAbs`, a magnitude (`setMaxVarNeg`).
    ///   - curves: the `DERCurve`s read, by href: `opModVoltVar`, `opModWattVar` and `opModVoltWatt` take
    ///     their linked curve where it applies (y rescaled from % of `setMaxVar` to % of the site's
    ///     apparent rating `apparentVA`); a curve not read or not applied leaves the field nil.
    ///   - apparentVA: Σ `VAMax` of the units with var points, VA (`SiteView.apparentPowerVA`); nil:
    ///     `siteRatingW` (exact only where each unit's `VAMax` is its active rating).
    ///   - profile: the site's configured profile: a curve without `openLoopTms` takes its response time.
    public func utilityLimits(siteRatingW: Double, varInjecting: Double = 0, varAbsorbing: Double = 0,
                              curves: [String: DERCurve] = [:], apparentVA: Double? = nil,
                              profile: GridSupportProfile = .ieee1547_2018_cat_b) -> UtilityLimits {
        let rating = siteRatingW.isFinite ? max(0, siteRatingW) : 0
        var out = UtilityLimits()
        out.exportLimitW = base.exportLimitW?.watts
        out.importLimitW = base.importLimitW?.watts
        out.generationLimitW = base.generationLimitW?.watts
        out.loadLimitW = base.loadLimitW?.watts
        out.connect = base.connect ?? true
        out.energize = base.energize ?? true
        out.fixedW = base.fixedWHundredthsPercent.map { Double($0) / 10_000 * rating }
        out.targetW = base.targetW?.watts
        out.maxLimW = base.maxLimWHundredthsPercent.map { Double($0) / 10_000 * rating }
        out.storageTargetW = base.storageTargetW?.watts
        out.rampSeconds = base.rampTimeHundredthsSecond.map { Double($0) / 100 }
        out.droop = base.freqDroop.map {
            UtilityDroop(deadbandOverHz: Double($0.deadbandOverMilliHz) / 1000, deadbandUnderHz: Double($0.deadbandUnderMilliHz) / 1000,
                         droopOverPercent: Double($0.droopOverThousandths) / 10, droopUnderPercent: Double($0.droopUnderThousandths) / 10,
                         responseTime: .milliseconds(Int64($0.openLoopHundredthsSecond) * 10))
        }
        out.powerFactorInjecting = base.fixedPFInject?.signed
        out.powerFactorAbsorbing = base.fixedPFAbsorb?.signed
        out.fixedVar = base.fixedVar?.vars(ratingW: rating, injecting: varInjecting, absorbing: varAbsorbing)
        out.targetVar = base.targetVar?.vars
        let scale = DERCurve.VarScale(apparentVA: apparentVA ?? rating, varInjecting: varInjecting, varAbsorbing: varAbsorbing)
        for (control, result) in base.curves(in: curves, varScale: scale, profile: profile) {
            guard case .success(let curve) = result else { continue }
            switch (control, curve) {
            case (.voltVar, .voltVar(let s)): out.voltVar = s
            case (.wattVar, .wattVar(let s)): out.wattVar = s
            case (.voltWatt, .voltWatt(let s)): out.voltWatt = s
            default: break
            }
        }
        if let setGradW, rating > 0 { out.gradientWPerSecond = setGradW == 0 ? .infinity : Double(setGradW) / 10_000 * rating }
        return out
    }
}

extension UtilityLimits {
    /// These limits no looser than `other`'s: the lower of each limit (`opModExpLimW`, `opModImpLimW`,
    /// `opModGenLimW`, `opModLoadLimW`, `opModMaxLimW`; nil is none), `connect` and `energize` false
    /// where either is, and `opModVoltWatt`, a limit on P too: the curve that is nowhere above the other
    /// (the lower limit at every voltage), the one in force where only one is (the utility's curve
    /// replaces the configured one), and where the two cross (each the lower somewhere) the one whose
    /// control outranks by 2030.5's event rules (`otherOutranks`: `EventRules.outranks` of their
    /// sources), these on a tie. The requests (`opModVoltVar` and `opModWattVar` among them: reactive
    /// requests, not limits), `rampTms`, `setGradW`, the droop and `validUntil` stay these.
    public func tightened(by other: UtilityLimits, otherOutranks: Bool = false) -> UtilityLimits {
        func lower(_ a: Double?, _ b: Double?) -> Double? {
            guard let a else { return b }
            guard let b else { return a }
            return a.isNaN || b.isNaN ? 0 : min(a, b)
        }
        var out = self
        out.exportLimitW = lower(exportLimitW, other.exportLimitW)
        out.importLimitW = lower(importLimitW, other.importLimitW)
        out.generationLimitW = lower(generationLimitW, other.generationLimitW)
        out.loadLimitW = lower(loadLimitW, other.loadLimitW)
        out.maxLimW = lower(maxLimW, other.maxLimW)
        out.connect = connect && other.connect
        out.energize = energize && other.energize
        if let mine = voltWatt, let theirs = other.voltWatt {
            let mineBelow = Self.nowhereAbove(mine.curve, theirs.curve), theirsBelow = Self.nowhereAbove(theirs.curve, mine.curve)
            out.voltWatt = mineBelow && !theirsBelow ? mine : theirsBelow && !mineBelow ? theirs : otherOutranks ? theirs : mine
        } else {
            out.voltWatt = voltWatt ?? other.voltWatt
        }
        return out
    }

    /// Whether curve `a` is at or below `b` at every x. Both are linear between their points and flat
    /// beyond them, so every point of either decides, with each side of it (a vertical step).
    static func nowhereAbove(_ a: GridCurve, _ b: GridCurve) -> Bool {
        let side = 1e-9
        for curve in [a, b] {
            for i in 0..<curve.count {
                for x in [curve[i].x - side, curve[i].x, curve[i].x + side] where a.value(at: x) > b.value(at: x) + 1e-9 { return false }
            }
        }
        return true
    }
}
