import BessBase
import ControlCore
import IEEE2030_5

extension Sep2Client {
    /// The controls of a DERControlList page, or the DefaultDERControl, just read that are taken with an
    /// element bessd does not apply (an `opModFreqDroop` inside its types but outside what bessd applies:
    /// `DERControlBase.notApplied`): each journalled as `SEP2_CONTROL_NOT_APPLIED` once while its
    /// document carries it; the rest of the control is in force. A control that sets nothing else is
    /// refused 252 instead (`RefusedControl`, journalled as `SEP2_CONTROL_REFUSED`).
    func noteNotApplied(_ request: Sep2Request, body: [UInt8]) {
        var found: [(mRID: String, why: String)] = []
        switch request.purpose {
        case .derControlList:
            for control in (try? DERControlList.read(body).resource.controls) ?? [] {
                if let why = control.base.notApplied { found.append((control.mRID, why)) }
            }
        case .defaultDERControl:
            if let control = try? DefaultDERControl.read(body).resource, let why = control.base.notApplied { found.append((control.mRID, why)) }
        default: return
        }
        let lines = Set(found.map { "control \(TextQuoting.quoted($0.mRID, limit: 40)): \($0.why)" })
        let before = notApplied[request.path] ?? []
        if notApplied.count >= 256, notApplied[request.path] == nil { notApplied = [:] }
        notApplied[request.path] = lines.isEmpty ? nil : lines
        for line in lines.sorted() where !before.contains(line) {
            log(.sep2(.controlNotApplied, "\(line) (\(TextQuoting.quoted(request.path, limit: 64)) of "
                + "\(settings.serverName)); the rest of it taken"))
        }
    }

    /// The controls that set only `opModFreqDroop` while the configured droop is disabled
    /// (`droop_settings.enabled` false): the reporter answers each 252 (not applicable) where asked and
    /// never starts it. Each is journalled as `SEP2_CONTROL_REFUSED` once, its mRID and program quoted,
    /// while it is listed and the droop stays disabled; one first seen completed is not (the reporter
    /// does not answer it either). `refusing`: the reporter's decision (`Sep2Reporter.refusesDroop`),
    /// made once per control, so a control that started before a reload disabled the droop is not
    /// said to be refused. None refused: nothing is, and a later disable says them again.
    func noteDroopDisabled(refusing: (DERControl) -> Bool, serverTime: Int64) {
        var listed: Set<ControlKey> = []
        for program in schedule.programs {
            for control in program.controls where control.base.setsOnlyDroop && refusing(control) {
                let key = ControlKey(program: program.mRID, control: control.mRID)
                listed.insert(key)
                guard !droopRefusals.contains(key), schedule.state(of: control.mRID, program: program.mRID, at: serverTime) != .completed else { continue }
                log(.sep2(.controlRefused, "control \(TextQuoting.quoted(control.mRID, limit: 40)) of program "
                    + "\(TextQuoting.quoted(program.mRID, limit: 40)) sets only opModFreqDroop and the configured droop is disabled "
                    + "(droop_settings.enabled false) (\(settings.serverName)); answered 252 where asked, never started"))
            }
        }
        droopRefusals = listed
    }
}

/// The site's var capability (Σ `VarMaxInj`, Σ `VarMaxAbs` of the units with var points), and the
/// utility's reactive controls left out as beyond it, as journalled.
struct Sep2VarCapability: Sendable {
    /// `opModFixedVar`'s `setMaxVar` / `statVarAvail`, and what a utility var or power factor is
    /// judged against; nil while unknown (every reactive value is then left out).
    var ratings: (injecting: Double, absorbing: Double)?
    /// Σ `VAMax` of the same units, VA (`SiteView.apparentPowerVA`): what a curve's y, % of `ratings`,
    /// is rescaled by to the % of each unit's `VAMax` the law takes; nil: the site's rating in W.
    var apparentVA: Double?
    /// Where `ratings` and `apparentVA` are read afresh at each publication: the cycle's published
    /// `SiteView` (`Sep2Worker.judgeReactive(against:)`), nil until it publishes one; without it the
    /// report sample sets them.
    var source: (@Sendable () -> (injecting: Double, absorbing: Double, apparentVA: Double)?)?
    /// The lines said for the controls left out now.
    var said: Set<String> = []

    /// Reads `ratings` from `source`, where there is one.
    mutating func refresh() {
        guard let source else { return }
        let read = source()
        ratings = read.map { ($0.injecting, $0.absorbing) }
        apparentVA = read?.apparentVA
    }

    /// `limits` without the reactive controls the site does not carry out, each named with the control it
    /// comes from (`sources`); `fresh`: the lines not said before, for `SEP2_CONTROL_NOT_APPLIED` (once
    /// while it stays so). `requested`: the base in force, whose `opModFixedVar` `limits` carries nil
    /// when its reference is 0. The rest is in force, and the next party or the configured mode takes Q.
    mutating func within(_ limits: UtilityLimits, requested: DERControlBase, sources: [ControlType: ControlSource], ratingW: Double,
                         curves: [String: DERCurve] = [:]) -> (limits: UtilityLimits, fresh: [String])
    {
        let judged = Self.judge(limits, requested: requested, ratings: ratings, ratingW: ratingW, curves: curves, apparentVA: apparentVA)
        func from(_ type: ControlType) -> String { sources[type].map { " (" + Sep2State.describe($0) + ")" } ?? "" }
        let lines = Set(judged.leftOut.map { $0.value + from($0.key) })
        let fresh = lines.subtracting(said).sorted()
        said = lines
        return (judged.limits, fresh)
    }

    /// `limits` without the reactive values the site does not carry out, and why each type was left out:
    /// every one while `ratings` is unknown; a var beyond Σ `VarMaxInj` (injecting) or Σ `VarMaxAbs`
    /// (absorbing); a power factor below the site's least at its rating `ratingW`
    /// (`P_rated / √(P_rated² + Q_max²)` for that excitation); an `opModFixedVar` of `requested` whose
    /// reference is 0 (`limits.fixedVar` nil). A curve's y is rescaled by `apparentVA` (nil: `ratingW`).
    static func judge(_ limits: UtilityLimits, requested: DERControlBase, ratings: (injecting: Double, absorbing: Double)?, ratingW: Double,
                      curves: [String: DERCurve] = [:], apparentVA: Double? = nil) -> (limits: UtilityLimits, leftOut: [ControlType: String])
    {
        var out = limits
        var why: [ControlType: String] = [:]
        // A curve not read, or not applicable (`limits` then carries none): its control says why.
        let scale = DERCurve.VarScale(apparentVA: apparentVA ?? ratingW, varInjecting: ratings?.injecting ?? 0, varAbsorbing: ratings?.absorbing ?? 0)
        for (control, result) in requested.curves(in: curves, varScale: scale) {
            if case .failure(let refusal) = result { why[control.type] = refusal.reason }
        }
        if let fixed = requested.fixedVar, limits.fixedVar == nil {
            let reference = fixed.refType == 1 ? "setMaxW is 0 W" : ratings == nil ? "the site's var capability is not known yet"
                : "the site's var capability is 0 var (no unit has var points)"
            why[.fixedVar] = "opModFixedVar \(Double(fixed.hundredthsPercent) / 100) % of refType \(fixed.refType) is not applied: \(reference)"
        }
        guard let capability = ratings else {
            for type in DERControlBase.reactiveTypes where !type.isCurve && Sep2State.reactiveValue(type, limits) != "?" {
                why[type] = "\(type.rawValue) \(Sep2State.reactiveValue(type, limits) ?? "?") is not applied: the site's reactive "
                    + "capability is not known yet (the cycle has not published its view)"
            }
            out.powerFactorInjecting = nil
            out.powerFactorAbsorbing = nil
            out.fixedVar = nil
            out.targetVar = nil
            return (out, why)
        }
        func vars(_ type: ControlType, _ value: inout Double?) {
            guard let q = value, !(abs(q) <= (q >= 0 ? capability.injecting : capability.absorbing) * (1 + 1e-9)) else { return }
            value = nil
            why[type] = "\(type.rawValue) \(Sep2State.reactiveValue(type, limits) ?? "?") is beyond the site's reactive capability "
                + "(\(Int64(capability.injecting)) var injecting, \(Int64(capability.absorbing)) var absorbing)"
        }
        func powerFactor(_ type: ControlType, _ value: inout Double?) {
            guard let pf = value else { return }
            let q = pf >= 0 ? capability.injecting : capability.absorbing
            let least = ratingW > 0 ? ratingW / (ratingW * ratingW + q * q).squareRoot() : 1
            guard abs(pf) < least * (1 - 1e-9) else { return }
            value = nil
            why[type] = "\(type.rawValue) \(Sep2State.reactiveValue(type, limits) ?? "?") is below the site's least power factor "
                + "\((least * 1000).rounded() / 1000) at its rating"
        }
        vars(.fixedVar, &out.fixedVar)
        vars(.targetVar, &out.targetVar)
        powerFactor(.fixedPFInject, &out.powerFactorInjecting)
        powerFactor(.fixedPFAbsorb, &out.powerFactorAbsorbing)
        return (out, why)
    }

    /// Why every reactive value `base` sets is left out at `scope`, joined; nil when one is carried out
    /// (or it sets none): a reactive-only control so is answered 252 (`Sep2Reporter.refusal`).
    static func leftOut(_ base: DERControlBase, scope: Sep2ReactiveScope) -> String? {
        var one = ActiveControls()
        one.base = base
        let limits = one.utilityLimits(siteRatingW: scope.ratingW, varInjecting: scope.injecting, varAbsorbing: scope.absorbing,
                                       curves: scope.curves, apparentVA: scope.apparentVA)
        let why = judge(limits, requested: base, ratings: (scope.injecting, scope.absorbing), ratingW: scope.ratingW, curves: scope.curves,
                        apparentVA: scope.apparentVA).leftOut
        let set = DERControlBase.reactiveTypes.filter { base.sets($0) }
        guard !set.isEmpty, set.allSatisfy({ why[$0] != nil }) else { return nil }
        return set.sorted { $0.rawValue < $1.rawValue }.compactMap { why[$0] }.joined(separator: "; ")
    }
}

/// What the reporter judges a reactive control against (the worker's `Sep2VarCapability` at its
/// report round, once known): the var capability each way, var, and the site's rating, W.
struct Sep2ReactiveScope: Sendable, Equatable {
    var injecting = 0.0
    var absorbing = 0.0
    var ratingW = 0.0
    /// Σ `VAMax` of the units with var points, VA; nil: `ratingW`.
    var apparentVA: Double?
    /// The curves the worker read, by href.
    var curves: [String: DERCurve] = [:]
}
