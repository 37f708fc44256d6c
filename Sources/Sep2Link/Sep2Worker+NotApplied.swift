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

/// The site's var capability (Σ `VarMaxInj`, Σ `VarMaxAbs` of the units with var points) as the last
/// report sample gave it, and the utility's reactive controls left out as beyond it, as journalled.
struct Sep2VarCapability: Sendable {
    /// `opModFixedVar`'s `setMaxVar` / `statVarAvail`, and what a utility var or power factor is
    /// judged against; nil before a sample (nothing is judged).
    var ratings: (injecting: Double, absorbing: Double)?
    /// The lines said for the controls left out now.
    var said: Set<String> = []

    /// `limits` without the reactive controls beyond `ratings`: a var beyond Σ `VarMaxInj` (injecting)
    /// or Σ `VarMaxAbs` (absorbing), a power factor below the site's least at its rating `ratingW`
    /// (`P_rated / √(P_rated² + Q_max²)` for that excitation), each named with the control it comes
    /// from (`sources`); `fresh`: the lines not said before, for `SEP2_CONTROL_NOT_APPLIED` (once while
    /// it stays so). The rest is in force, and the next party or the configured mode takes Q.
    mutating func within(_ limits: UtilityLimits, sources: [ControlType: ControlSource], ratingW: Double)
        -> (limits: UtilityLimits, fresh: [String])
    {
        guard let capability = ratings else { return (limits, []) }
        var out = limits
        var lines: Set<String> = []
        func from(_ type: ControlType) -> String { sources[type].map { " (" + Sep2State.describe($0) + ")" } ?? "" }
        func vars(_ type: ControlType, _ value: inout Double?) {
            guard let q = value, !(abs(q) <= (q >= 0 ? capability.injecting : capability.absorbing) * (1 + 1e-9)) else { return }
            value = nil
            lines.insert("\(type.rawValue) \(Sep2State.reactiveValue(type, limits) ?? "?") is beyond the site's reactive capability "
                + "(\(Int64(capability.injecting)) var injecting, \(Int64(capability.absorbing)) var absorbing)" + from(type))
        }
        func powerFactor(_ type: ControlType, _ value: inout Double?) {
            guard let pf = value else { return }
            let q = pf >= 0 ? capability.injecting : capability.absorbing
            let least = ratingW > 0 ? ratingW / (ratingW * ratingW + q * q).squareRoot() : 1
            guard abs(pf) < least * (1 - 1e-9) else { return }
            value = nil
            lines.insert("\(type.rawValue) \(Sep2State.reactiveValue(type, limits) ?? "?") is below the site's least power factor "
                + "\((least * 1000).rounded() / 1000) at its rating" + from(type))
        }
        vars(.fixedVar, &out.fixedVar)
        vars(.targetVar, &out.targetVar)
        powerFactor(.fixedPFInject, &out.powerFactorInjecting)
        powerFactor(.fixedPFAbsorb, &out.powerFactorAbsorbing)
        let fresh = lines.subtracting(said).sorted()
        said = lines
        return (out, fresh)
    }
}
