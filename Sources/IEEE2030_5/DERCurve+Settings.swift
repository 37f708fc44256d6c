public import BessBase
import ControlCore
public import GridSupport

/// Why a curve a control links to is not applied: the control's reason, said in the Response
/// (`SEP2_CONTROL_NOT_APPLIED`, or 252 when the curve is all the control sets), e.g.
/// "opModVoltVar not applied: volt-var V2 0.96 is outside 0.97…1.00".
public struct CurveNotApplied: Error, Sendable, Equatable {
    public var reason: String

    public init(_ control: DERCurve.Control, _ why: String) { reason = "\(control.rawValue) not applied: \(why)" }
}

/// A curve as the site's law takes it (GridSupport's settings, fixed-size: the cycle copies it).
public enum AppliedCurve: Sendable, Equatable {
    case voltVar(VoltVarSettings)
    case wattVar(WattVarSettings)
    case voltWatt(VoltWattSettings)
}

/// The curve controls bessd applies (docs/design/0010-reactive-power.md, 2030.5): the x axis is the
/// effective voltage in % (bessd reports `setVRef` = `setVNom` and `setVRefOfs` 0, so it is % of the
/// nominal voltage: 100 is 1.00 p.u.) or, for watt-var, % of `setMaxW`, 0…100 only (the curve is flat
/// at its first point while charging); y is % of `yRefType`: `setMaxVar` (2) or `statVarAvail` (3)
/// for the var curves, rescaled by the site's Σ `VAMax` to the % of each unit's `VAMax` the law takes
/// (`VarScale`), and `setMaxW` (1) for volt-watt. 2 and 3 are one number by construction: the
/// `statVarAvail` bessd reports (DERAvailability) is the `setMaxVar` of its DERSettings, both the var
/// the units with var points can inject as the cycle last published it (`Sep2Reporter.availabilityReport`),
/// so they are read alike (`setMaxVarNeg` for a negative y, as `FixedVar.vars` reads them).
/// Point counts: volt-var 4, volt-watt 2…4, watt-var 3; every value then in IEEE
/// 1547-2018's ranges (`GridSupportError` from the settings' `validate`). `openLoopTms` is the
/// response time (absent: the site's configured profile's, `profile`); volt-var's `vRef` (`PerCent`, absent: 100 %), and
/// `autonomousVRefEnable` / `…TimeConstant` (absent: off, 300 s) map to VRef and its adjustment.
extension DERCurve {
    /// A `DERControlBase` element that links to a curve bessd applies, and the curve's type.
    public enum Control: String, Sendable, CaseIterable {
        case voltVar = "opModVoltVar"
        case voltWatt = "opModVoltWatt"
        case wattVar = "opModWattVar"

        /// The `curveType` the linked curve must have.
        public var curveType: UInt8 {
            switch self {
            case .voltVar: 11
            case .voltWatt: 12
            case .wattVar: 14
            }
        }

        /// The point counts bessd applies.
        var pointCounts: ClosedRange<Int> {
            switch self {
            case .voltVar: 4...4
            case .voltWatt: 2...4
            // IEEE 1547-2018 Table 9's P1…P3 (x 0…100 % only): its ranges are then checked whole.
            case .wattVar: 3...3
            }
        }

        /// The `yRefType`s bessd applies.
        var yRefTypes: ClosedRange<UInt8> { self == .voltWatt ? 1...1 : 2...3 }
    }

    /// The site's var capability over its apparent rating (`setMaxVar` / Σ `VAMax`, `setMaxVarNeg` /
    /// Σ `VAMax`, over the units with var points: `SiteView.apparentPowerVA`): what turns a % of
    /// `setMaxVar` into the % of each unit's `VAMax` the law takes.
    public struct VarScale: Sendable, Equatable {
        public var injecting: Double
        public var absorbing: Double

        public init(injecting: Double, absorbing: Double) {
            self.injecting = injecting
            self.absorbing = absorbing
        }

        /// From the site's Σ `VAMax` and its var capability (magnitudes); zero where the rating is.
        public init(apparentVA: Double, varInjecting: Double, varAbsorbing: Double) {
            let ok = apparentVA.isFinite && apparentVA > 0
            injecting = ok && varInjecting.isFinite ? max(0, varInjecting) / apparentVA : 0
            absorbing = ok && varAbsorbing.isFinite ? max(0, varAbsorbing) / apparentVA : 0
        }
    }

    /// The curve as `control` applies it, or why not.
    public func applied(as control: Control, varScale: VarScale, profile: GridSupportProfile = .ieee1547_2018_cat_b)
        -> Result<AppliedCurve, CurveNotApplied>
    {
        guard curveType == control.curveType else {
            return .failure(CurveNotApplied(control, "its curve has curveType \(curveType), not \(control.curveType)"))
        }
        guard control.pointCounts.contains(points.count) else {
            let counts = control.pointCounts
            let wanted = counts.count == 1 ? "\(counts.lowerBound)" : "\(counts.lowerBound) to \(counts.upperBound)"
            return .failure(CurveNotApplied(control, "its curve has \(points.count) points, not \(wanted)"))
        }
        guard points.allSatisfy({ $0.excitation == nil }) else {
            return .failure(CurveNotApplied(control, "its curve's y is a power factor (excitation set)"))
        }
        guard control.yRefTypes.contains(yRefType) else {
            let wanted = control == .voltWatt ? "1 (setMaxW)" : "2 (setMaxVar) or 3 (statVarAvail)"
            return .failure(CurveNotApplied(control, "its curve's yRefType \(yRefType) is not \(wanted)"))
        }
        // Volt-watt too: a unit without var points (SunSpec 704) runs no law at all.
        if varScale.injecting <= 0 || varScale.absorbing <= 0 {
            return .failure(CurveNotApplied(control, "no unit has var points"))
        }
        do throws(GridSupportError) {
            let out = try settings(control, varScale: varScale, profile: profile)
            return .success(out)
        } catch {
            return .failure(CurveNotApplied(control, "\(error.code) \(error.message)"))
        }
    }

    /// The settings, validated against IEEE 1547-2018's ranges.
    private func settings(_ control: Control, varScale: VarScale, profile: GridSupportProfile) throws(GridSupportError) -> AppliedCurve {
        var xy: [(x: Double, y: Double)] = []
        xy.reserveCapacity(points.count)
        for index in points.indices {
            let x = x(index), y = y(index)
            switch control {
            case .voltVar, .voltWatt: xy.append((x / 100, control == .voltWatt ? y : y * (y >= 0 ? varScale.injecting : varScale.absorbing)))
            case .wattVar:
                guard (0...100).contains(x) else {
                    throw GridSupportError(.wattVarRange, message: "watt-var P\(index + 1) \(x) % is outside 0…100 % of setMaxW")
                }
                xy.append((x, y * (y >= 0 ? varScale.injecting : varScale.absorbing)))
            }
        }
        let curve = try GridCurve(xy)
        let response: (Duration) -> Duration = { fallback in
            openLoopHundredthsSecond.map { .milliseconds(Int64($0) * 10) } ?? fallback
        }
        switch control {
        case .voltVar:
            let settings = VoltVarSettings(
                curve: curve, vRef: Double(vRefHundredthsPercent ?? 10_000) / 10_000, autonomousVRef: autonomousVRefEnable ?? false,
                vRefTimeConstant: .seconds(Int64(autonomousVRefTimeConstantSeconds ?? 300)), responseTime: response(profile.voltVar.responseTime))
            try settings.validate()
            return .voltVar(settings)
        case .wattVar:
            let settings = WattVarSettings(curve: curve, responseTime: response(profile.wattVar.responseTime))
            try settings.validate()
            return .wattVar(settings)
        case .voltWatt:
            let settings = VoltWattSettings(curve: curve, responseTime: response(profile.voltWatt.responseTime))
            try settings.validate()
            return .voltWatt(settings)
        }
    }
}

extension DERControlBase {
    /// The hrefs of the curves this base links to (volt-var, watt-var, volt-watt), for the worker to read.
    public var curveHrefs: [String] { [voltVarCurve, wattVarCurve, voltWattCurve].compactMap { $0 } }

    /// Each curve control this base sets, resolved against the curves read (`curves`, by href): applied,
    /// or why not (its curve not read: not yet, or the server did not give it; or not applicable).
    /// `profile`: the site's configured profile, whose response time a curve without `openLoopTms` takes.
    public func curves(in curves: [String: DERCurve], varScale: DERCurve.VarScale, profile: GridSupportProfile = .ieee1547_2018_cat_b)
        -> [DERCurve.Control: Result<AppliedCurve, CurveNotApplied>]
    {
        var out: [DERCurve.Control: Result<AppliedCurve, CurveNotApplied>] = [:]
        for (control, href) in [(DERCurve.Control.voltVar, voltVarCurve), (.wattVar, wattVarCurve), (.voltWatt, voltWattCurve)] {
            guard let href else { continue }
            guard let curve = curves[href] else {
                out[control] = .failure(CurveNotApplied(control, "its curve \(quoted(href, limit: 64)) has not been read"))
                continue
            }
            out[control] = curve.applied(as: control, varScale: varScale, profile: profile)
        }
        return out
    }
}

extension DERCurve.Control {
    /// The control type the event rules resolve for this curve control.
    public var type: ControlType {
        switch self {
        case .voltVar: .voltVar
        case .wattVar: .wattVar
        case .voltWatt: .voltWatt
        }
    }
}
