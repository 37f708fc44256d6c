public import ControlCore
import Cycle
import Fieldbus

/// One of SCADA's commands in model 704 and the points that carry it: the grid operator limit
/// (`WMaxLimPct…`), the site setpoint (`WSet…`), the site var setpoint (`VarSet…`) and the power
/// factor for each direction (`PFWInj…` while discharging, `PFWAbs…` while charging). Every point
/// of a command is named by its prefix and a role (`Ena`, `Rvrt`, `EnaRvrt`, `RvrtTms`, …).
public enum ScadaCommand: String, Sendable, CaseIterable {
    case limit = "WMaxLimPct"
    case setpoint = "WSet"
    case reactive = "VarSet"
    case powerFactorInjecting = "PFWInj"
    case powerFactorAbsorbing = "PFWAbs"

    typealias T = SunSpecTables.M704

    /// The command's record in `SiteCommands`.
    public var keyPath: WritableKeyPath<SiteCommands, ExpiringCommand> {
        switch self {
        case .limit: \.limit
        case .setpoint: \.setpoint
        case .reactive: \.reactive
        case .powerFactorInjecting: \.powerFactorInjecting
        case .powerFactorAbsorbing: \.powerFactorAbsorbing
        }
    }

    /// The command a 704 point belongs to, and the point's role in it: its name after the prefix
    /// (`""`, `Ena`, `Rvrt`, `EnaRvrt`, `RvrtTms`, `RvrtRem`, `Mod`, `Pri`, `_PF`, `_Ext`,
    /// `Rvrt_PF`, `Rvrt_Ext`). No prefix is the start of another.
    public static func of(_ point: String) -> (command: ScadaCommand, role: Substring)? {
        guard let command = allCases.first(where: { point.hasPrefix($0.rawValue) }) else { return nil }
        return (command, point.dropFirst(command.rawValue.count))
    }

    var isPowerFactor: Bool { self == .powerFactorInjecting || self == .powerFactorAbsorbing }

    /// What the journal calls the command.
    var noun: String {
        switch self {
        case .limit: "the grid operator limit"
        case .setpoint: "the site setpoint"
        case .reactive: "the site var setpoint"
        case .powerFactorInjecting: "the power factor while discharging"
        case .powerFactorAbsorbing: "the power factor while charging"
        }
    }

    /// The unit a point of the role is stated in, as the journal writes it after the number.
    func unit(ofRole role: Substring) -> String {
        if role.hasSuffix("Tms") { return " s" }
        if role.contains("Ena") || role == "Mod" || role.hasSuffix("_Ext") { return "" }
        switch self {
        case .limit: return " %"
        case .setpoint: return " W"
        case .reactive: return " var"
        case .powerFactorInjecting, .powerFactorAbsorbing: return ""
        }
    }

    /// A value of the command as the journal states it: "30 %", "-120000 W", "5000 var", "0.95
    /// over-excited" (a power factor signed by excitation).
    func describe(_ value: Double) -> String {
        guard isPowerFactor else { return ScadaServer.number(value) + unit(ofRole: "") }
        if abs(value) == 1 { return "1 (unity)" }
        return ScadaServer.number(abs(value)) + (value < 0 ? " under-excited" : " over-excited")
    }

    /// The mode served in `…Mod`: `WSetMod` WATTS (1), `VarSetMod` VARS (4), the only ones taken.
    var servedMode: (point: SunSpecPoint, value: UInt16)? {
        switch self {
        case .setpoint: (T.WSetMod, 1)
        case .reactive: (T.VarSetMod, 4)
        default: nil
        }
    }

    /// 704's points of the command. For a power factor `value` and `revertValue` are the `_PF`
    /// points, and `excitation` / `revertExcitation` the `_Ext` ones.
    struct Points {
        let enable: SunSpecPoint
        let value: SunSpecPoint
        let revertValue: SunSpecPoint
        let enableRevert: SunSpecPoint
        let timeout: SunSpecPoint
        let remaining: SunSpecPoint
        var excitation: SunSpecPoint? = nil
        var revertExcitation: SunSpecPoint? = nil
    }

    var points: Points {
        switch self {
        case .limit:
            Points(enable: T.WMaxLimPctEna, value: T.WMaxLimPct, revertValue: T.WMaxLimPctRvrt,
                   enableRevert: T.WMaxLimPctEnaRvrt, timeout: T.WMaxLimPctRvrtTms, remaining: T.WMaxLimPctRvrtRem)
        case .setpoint:
            Points(enable: T.WSetEna, value: T.WSet, revertValue: T.WSetRvrt, enableRevert: T.WSetEnaRvrt,
                   timeout: T.WSetRvrtTms, remaining: T.WSetRvrtRem)
        case .reactive:
            Points(enable: T.VarSetEna, value: T.VarSet, revertValue: T.VarSetRvrt, enableRevert: T.VarSetEnaRvrt,
                   timeout: T.VarSetRvrtTms, remaining: T.VarSetRvrtRem)
        case .powerFactorInjecting:
            Points(enable: T.PFWInjEna, value: T.PFWInj_PF, revertValue: T.PFWInjRvrt_PF, enableRevert: T.PFWInjEnaRvrt,
                   timeout: T.PFWInjRvrtTms, remaining: T.PFWInjRvrtRem, excitation: T.PFWInj_Ext,
                   revertExcitation: T.PFWInjRvrt_Ext)
        case .powerFactorAbsorbing:
            Points(enable: T.PFWAbsEna, value: T.PFWAbs_PF, revertValue: T.PFWAbsRvrt_PF, enableRevert: T.PFWAbsEnaRvrt,
                   timeout: T.PFWAbsRvrtTms, remaining: T.PFWAbsRvrtRem, excitation: T.PFWAbs_Ext,
                   revertExcitation: T.PFWAbsRvrt_Ext)
        }
    }
}

/// Applies the points of one write to SCADA's commands, point by point, and judges each value:
/// the model's ranges, the site's rating (`WSet`), its reactive capability (`VarSet`,
/// `SiteView.acceptsVar`) and the power factors it can hold (`SiteView.acceptsPowerFactor`, judged
/// once the whole request is applied, as `PF` and `Ext` make one value).
struct ScadaPointDecoder {
    let ratedW: Double
    let view: SiteView
    let wSF: Int
    let varSF: Int
    let before: SiteCommands
    var next: SiteCommands
    var changes: [ScadaWrite.Change] = []
    var written: Set<ScadaCommand> = []
    /// Power factors a request wrote (`PF` or `Ext`, of the value or of its reversion).
    private var powerFactors: [(ScadaCommand, WritableKeyPath<ExpiringCommand, Double>)] = []

    init(ratedW: Double, view: SiteView, wSF: Int, varSF: Int, commands: SiteCommands) {
        self.ratedW = ratedW
        self.view = view
        self.wSF = wSF
        self.varSF = varSF
        before = commands
        next = commands
    }

    /// A raw value at scale factor `sf`, in the model's units (divided for a negative factor, so
    /// that 950 at −3 is exactly 0.95).
    static func scaled(_ raw: Int, sf: Int) -> Double {
        sf < 0 ? Double(raw) / SunSpec.powerOfTen(-sf) : Double(raw) * SunSpec.powerOfTen(sf)
    }

    /// Applies `point` written as `value` (its registers `registers`); a refusal when it may not be.
    mutating func apply(_ point: SunSpecPoint, value: Int, registers: ArraySlice<UInt16>) -> ScadaWriteRefusal? {
        func bad(_ why: String) -> ScadaWriteRefusal {
            ScadaWriteRefusal(exception: 3, reason: "\(point.name) = \(value) refused: \(why)")
        }
        guard let found = ScadaCommand.of(point.name) else {
            return ScadaWriteRefusal(exception: 2, reason: "\(point.name) is not writable")
        }
        let (command, role) = found
        if registers.indices.allSatisfy({ registers[$0] == point.sentinel($0 - registers.startIndex) }) {
            return bad("the \"not implemented\" value, which commands nothing")
        }
        let was = before[keyPath: command.keyPath]
        var record = next[keyPath: command.keyPath]
        var new = Double(value)
        var old = 0.0
        switch role {
        case "Ena", "EnaRvrt":
            guard value == 0 || value == 1 else { return bad("0 (disabled) or 1 (enabled)") }
            let field: WritableKeyPath<ExpiringCommand, Bool> = role == "Ena" ? \.enabled : \.revertEnabled
            old = was[keyPath: field] ? 1 : 0
            record[keyPath: field] = value == 1
        case "", "Rvrt":
            switch command {
            case .limit:
                guard value <= 100 else { return bad("a percent from 0 to 100") }
            case .setpoint:
                new = Self.scaled(value, sf: wSF)
                guard abs(new) <= ratedW else { return bad("beyond the site's rating of ±\(Int(ratedW)) W") }
            case .reactive:
                new = Self.scaled(value, sf: varSF)
                guard view.acceptsVar(new) else {
                    return bad("\(ScadaServer.number(new)) var is beyond the site's reactive capability (\(ScadaServer.number(view.varMaxInjecting)) var injecting, "
                        + "\(ScadaServer.number(view.varMaxAbsorbing)) var absorbing)")
                }
            case .powerFactorInjecting, .powerFactorAbsorbing:
                return ScadaWriteRefusal(exception: 2, reason: "\(point.name) is not writable")
            }
            let field: WritableKeyPath<ExpiringCommand, Double> = role.isEmpty ? \.value : \.revertValue
            old = was[keyPath: field]
            record[keyPath: field] = new
        case "_PF", "Rvrt_PF":
            new = Self.scaled(value, sf: ScadaImage.pfSF)
            guard new > 0, new <= 1 else { return bad("a power factor in (0, 1] (PF_SF \(ScadaImage.pfSF): 1 to 1000)") }
            let field: WritableKeyPath<ExpiringCommand, Double> = role == "_PF" ? \.value : \.revertValue
            old = abs(was[keyPath: field])
            record[keyPath: field] = record[keyPath: field] < 0 ? -new : new
            powerFactors.append((command, field))
        case "_Ext", "Rvrt_Ext":
            guard value == 0 || value == 1 else { return bad("0 (over-excited) or 1 (under-excited)") }
            let field: WritableKeyPath<ExpiringCommand, Double> = role == "_Ext" ? \.value : \.revertValue
            old = was[keyPath: field] < 0 ? 1 : 0
            record[keyPath: field] = abs(record[keyPath: field]) * (value == 1 ? -1 : 1)
            powerFactors.append((command, field))
        case "RvrtTms":
            guard .seconds(Int64(value)) <= before.maxHold else {
                return bad("at most scada.max_hold_s = \(before.maxHold.components.seconds) s (0 = max_hold_s)")
            }
            old = Double(was.timeoutSeconds)
            record.timeoutSeconds = UInt32(value)
        case "Mod":
            guard let served = command.servedMode, value == Int(served.value) else {
                return bad(command == .reactive ? "4 (VARS) is the only mode served; VarSetPct is not"
                    : "1 (WATTS) is the only mode served; WSetPct is not")
            }
            old = Double(served.value)
        default:
            return ScadaWriteRefusal(exception: 2, reason: "\(point.name) is not writable")
        }
        next[keyPath: command.keyPath] = record
        written.insert(command)
        changes.append(.init(point: point.name, old: old, new: new))
        return nil
    }

    /// The power factors the request wrote, judged whole (`PF` with its `Ext`): a refusal for the
    /// first the site cannot hold at its rating with its reactive capability that way.
    func judgePowerFactors() -> ScadaWriteRefusal? {
        for (command, field) in powerFactors {
            let pf = next[keyPath: command.keyPath][keyPath: field]
            guard !view.acceptsPowerFactor(pf) else { continue }
            let points = command.points
            let names = field == \ExpiringCommand.value ? points.value.name : points.revertValue.name
            let q = pf < 0 ? view.varMaxAbsorbing : view.varMaxInjecting
            let rated = view.ratedPowerW
            let least = rated > 0 && q > 0 ? rated / (rated * rated + q * q).squareRoot() : 1
            return ScadaWriteRefusal(
                exception: 3,
                reason: "\(names.dropLast(3)) = \(command.describe(pf)) refused: the site cannot hold it at its rating of "
                    + "\(ScadaServer.number(rated)) W with \(ScadaServer.number(q)) var \(pf < 0 ? "absorbing" : "injecting") "
                    + "(at least \(ScadaServer.number((least * 1000).rounded(.up) / 1000)) that way)")
        }
        return nil
    }

    /// Every command written has its reversion time started again (`…RvrtTms`, or `max_hold_s`).
    mutating func startTimers(at now: MonotonicInstant) {
        for command in written {
            var record = next[keyPath: command.keyPath]
            record.expiresAt = now + next.hold(forTimeout: record.timeoutSeconds)
            record.reverted = false
            next[keyPath: command.keyPath] = record
        }
    }
}
