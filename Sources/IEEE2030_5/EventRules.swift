import ControlCore
/// A control a `DERControlBase` can set; the event rules are resolved for each one on its own, so a
/// lower-priority program's control of another type still runs (CSIP-AUS GEN-10).
/// The raw value is the element's name.
public enum ControlType: String, Hashable, Sendable, CaseIterable {
    /// `opModConnect`.
    case connect = "opModConnect"
    /// `opModEnergize`.
    case energize = "opModEnergize"
    /// `opModFixedW`.
    case fixedW = "opModFixedW"
    /// `opModMaxLimW`.
    case maxLimW = "opModMaxLimW"
    /// `opModTargetW`.
    case targetW = "opModTargetW"
    /// `csipaus:opModExpLimW`.
    case exportLimitW = "opModExpLimW"
    /// `csipaus:opModImpLimW`.
    case importLimitW = "opModImpLimW"
    /// `csipaus:opModGenLimW`.
    case generationLimitW = "opModGenLimW"
    /// `csipaus:opModLoadLimW`.
    case loadLimitW = "opModLoadLimW"
    /// `csipaus:opModStorageTargetW`.
    case storageTargetW = "opModStorageTargetW"
    /// `opModFreqDroop`.
    case freqDroop = "opModFreqDroop"
    /// `opModFixedPFInjectW`.
    case fixedPFInject = "opModFixedPFInjectW"
    /// `opModFixedPFAbsorbW`.
    case fixedPFAbsorb = "opModFixedPFAbsorbW"
    /// `opModFixedVar`.
    case fixedVar = "opModFixedVar"
    /// `opModTargetVar`.
    case targetVar = "opModTargetVar"
    /// `opModVoltVar` (a `DERCurveLink`, curveType 11).
    case voltVar = "opModVoltVar"
    /// `opModWattVar` (a `DERCurveLink`, curveType 14).
    case wattVar = "opModWattVar"
    /// `opModVoltWatt` (a `DERCurveLink`, curveType 12): a limit on P, not a request.
    case voltWatt = "opModVoltWatt"

    /// The curve controls (a `DERCurveLink` each).
    public var isCurve: Bool { self == .voltVar || self == .wattVar || self == .voltWatt }

    /// The reactive controls and the curves: their `rampTms` no part of the active ramp (a reactive
    /// value is a step, as SCADA's `VarSet` is; a curve has its own response time).
    public var isReactive: Bool {
        switch self {
        case .fixedPFInject, .fixedPFAbsorb, .fixedVar, .targetVar, .voltVar, .wattVar, .voltWatt: true
        default: false
        }
    }
}

extension DERControlBase {
    /// Whether this base sets `type`.
    public func sets(_ type: ControlType) -> Bool {
        switch type {
        case .connect: connect != nil
        case .energize: energize != nil
        case .fixedW: fixedWHundredthsPercent != nil
        case .maxLimW: maxLimWHundredthsPercent != nil
        case .targetW: targetW != nil
        case .exportLimitW: exportLimitW != nil
        case .importLimitW: importLimitW != nil
        case .generationLimitW: generationLimitW != nil
        case .loadLimitW: loadLimitW != nil
        case .storageTargetW: storageTargetW != nil
        case .freqDroop: freqDroop != nil
        case .fixedPFInject: fixedPFInject != nil
        case .fixedPFAbsorb: fixedPFAbsorb != nil
        case .fixedVar: fixedVar != nil
        case .targetVar: targetVar != nil
        case .voltVar: voltVarCurve != nil
        case .wattVar: wattVarCurve != nil
        case .voltWatt: voltWattCurve != nil
        }
    }

    /// This base with `type` taken from `other`.
    func taking(_ type: ControlType, from other: DERControlBase) -> DERControlBase {
        var out = self
        switch type {
        case .connect: out.connect = other.connect
        case .energize: out.energize = other.energize
        case .fixedW: out.fixedWHundredthsPercent = other.fixedWHundredthsPercent
        case .maxLimW: out.maxLimWHundredthsPercent = other.maxLimWHundredthsPercent
        case .targetW: out.targetW = other.targetW
        case .exportLimitW: out.exportLimitW = other.exportLimitW
        case .importLimitW: out.importLimitW = other.importLimitW
        case .generationLimitW: out.generationLimitW = other.generationLimitW
        case .loadLimitW: out.loadLimitW = other.loadLimitW
        case .storageTargetW: out.storageTargetW = other.storageTargetW
        case .freqDroop: out.freqDroop = other.freqDroop
        case .fixedPFInject: out.fixedPFInject = other.fixedPFInject
        case .fixedPFAbsorb: out.fixedPFAbsorb = other.fixedPFAbsorb
        case .fixedVar: out.fixedVar = other.fixedVar
        case .targetVar: out.targetVar = other.targetVar
        case .voltVar: out.voltVarCurve = other.voltVarCurve
        case .wattVar: out.wattVarCurve = other.wattVarCurve
        case .voltWatt: out.voltWattCurve = other.voltWattCurve
        }
        return out
    }
}

/// A DER program as the event rules take it: its priority, its controls and its default.
public struct ProgramSchedule: Hashable, Sendable {
    /// The program's `mRID`.
    public var mRID: String
    /// `primacy`: the lower, the higher the priority.
    public var primacy: UInt8
    /// The program's controls (every page of its DERControlList).
    public var controls: [DERControl]
    /// The program's DefaultDERControl, if it has one.
    public var defaultControl: DefaultDERControl?

    /// A program.
    public init(mRID: String, primacy: UInt8, controls: [DERControl], defaultControl: DefaultDERControl? = nil) {
        self.mRID = mRID
        self.primacy = primacy
        self.controls = controls
        self.defaultControl = defaultControl
    }
}

/// The randomization a device applies to `randomizeStart` and `randomizeDuration`: a value drawn once
/// per control between 0 and the bound (either sign), here a pure function of a device seed and the
/// control's mRID, so a restart draws the same instant and tests can name it.
public struct Randomization: Hashable, Sendable {
    /// The device's seed (kept with the schedule).
    public var seed: UInt64

    /// A draw from `seed`.
    public init(seed: UInt64) { self.seed = seed }

    /// No randomization: every offset 0, whatever the bound.
    public static let none = Randomization(seed: 0, disabled: true)
    private var disabled = false
    private init(seed: UInt64, disabled: Bool) {
        self.seed = seed
        self.disabled = disabled
    }

    /// The offset in seconds for `bound` (−3600…3600): 0…bound, drawn from the seed, the mRID and `salt`
    /// (0 for the start, 1 for the duration).
    public func offset(bound: Int16, mRID: String, salt: UInt64) -> Int64 {
        guard !disabled, bound != 0 else { return 0 }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325 ^ seed ^ (salt &* 0x9E37_79B9_7F4A_7C15)
        for byte in mRID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        // SplitMix64's finaliser.
        hash = (hash ^ (hash >> 30)) &* 0xBF58_476D_1CE4_E5B9
        hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
        hash ^= hash >> 31
        let span = UInt64(abs(Int(bound))) + 1
        let draw = Int64(hash % span)
        return bound < 0 ? -draw : draw
    }
}

/// A control of a program, by their mRIDs.
public struct ControlKey: Hashable, Sendable {
    /// The program's mRID.
    public var program: String
    /// The control's mRID.
    public var control: String

    /// The key of `control` of `program`.
    public init(program: String, control: String) {
        self.program = program
        self.control = control
    }
}

/// Where one control type's value comes from now.
public enum ControlSource: Hashable, Sendable {
    /// A DERControl of a program, in force until `until` (seconds since the Unix epoch, exclusive).
    case event(program: String, control: String, until: Int64)
    /// The DefaultDERControl of a program (no event of this type is active).
    case defaultControl(program: String)
}

/// What a device does at one instant: one effective `DERControlBase` and, for each type it sets, where
/// the value comes from.
public struct ActiveControls: Hashable, Sendable {
    /// The effective controls (each type from its source). Its `rampTimeHundredthsSecond` is the
    /// `rampTms` of the sources in force: where a limit (export, import, generation, load, MaxLimW) is
    /// in force, the smallest its sources give (they may differ: the quickest wins), else the
    /// smallest any source gives; nil when none does. A reactive control's `rampTms` is not counted
    /// (its Q is a step, as SCADA's `VarSet` is).
    public var base = DERControlBase()
    /// The source of each type `base` sets.
    public var sources: [ControlType: ControlSource] = [:]
    /// `setGradW` in force (`EventRules.setGradW`): the ramp of rising limits where no source gives a
    /// `rampTms`, hundredths of a percent of `setMaxW` per second (0: no utility bound, the site's
    /// limit ramp); nil when none.
    public var setGradW: UInt16?

    /// Nothing in force.
    public init() {}
}

/// What a control is at one instant, as the responses report it (2030.5 Table 27: 2 started, 3 completed,
/// 6 cancelled, 7 superseded).
public enum ControlState: Hashable, Sendable {
    /// Its window has not begun.
    case scheduled
    /// In its window and not superseded for every type it sets.
    case active
    /// Its window has passed (or was empty).
    case completed
    /// The server cancelled it (status 2 or 3).
    case cancelled
    /// The server superseded it (status 4), or a newer control of its primacy did for every type it sets.
    case superseded
}

/// IEEE 2030.5's event rules (2018 §12.1.3, "Event rules and guidelines") as a pure function of the
/// programs, their controls and the server's time, resolved per control type:
///
/// - A control runs over `[start + s, start + duration + s + d)`, with `s` and `d` the drawn offsets of
///   `randomizeStart` and `randomizeDuration`; an empty window never runs.
/// - A control the server marked cancelled (2, 3) or superseded (4) never runs.
/// - Among controls that set the same type and are in their window, the lower `primacy` wins; within
///   one primacy the newer `creationTime` (then the greater mRID, so the choice never depends on order).
/// - Within one primacy a newer control whose window overlaps an older one's supersedes the older for
///   every type both set, for the older's whole window (it does not resume when the newer ends); a
///   control superseded for every type it sets is superseded. A higher-priority program's control only
///   holds a lower-priority one back while it is in force.
/// - A type no control sets now takes the DefaultDERControl of the highest-priority program whose
///   default sets it.
public enum EventRules {
    /// A control's window with its randomization drawn; `end <= start` for an empty one.
    /// The sums saturate at `Int64.min` and `Int64.max`: a control built outside the reader (which
    /// bounds `start` to `DERControl.startRange`) cannot trap the rules.
    public static func window(_ control: DERControl, randomization: Randomization) -> (start: Int64, end: Int64) {
        let start = clampedSum(control.start, randomization.offset(bound: control.randomizeStart, mRID: control.mRID, salt: 0))
        let end = clampedSum(clampedSum(start, Int64(control.duration)),
                             randomization.offset(bound: control.randomizeDuration, mRID: control.mRID, salt: 1))
        return (start, end)
    }

    /// `a + b`, held at the nearer bound where it would overflow.
    static func clampedSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    /// The controls in force at `now` (server time, seconds since the Unix epoch).
    /// - Parameter held: controls whose start or end has already passed at a later instant than `now`
    ///   (the server's clock was found behind the one they were resolved on): each is in force as it was
    ///   at that instant while `now` is before it, so no start or end happens twice; empty for most calls.
    public static func resolve(_ programs: [ProgramSchedule], now: Int64, randomization: Randomization = .none,
                               held: [ControlKey: Int64] = [:]) -> ActiveControls {
        let candidates = Candidate.all(programs, randomization: randomization)
        var out = ActiveControls()
        var ramps: [ControlType: UInt16?] = [:]
        for type in ControlType.allCases {
            let winner = candidates
                .filter {
                    let at = held.isEmpty ? now : max(now, held[ControlKey(program: $0.program, control: $0.control.mRID)] ?? now)
                    return $0.control.base.sets(type) && $0.start <= at && at < $0.end && !$0.supersededFor(type, among: candidates)
                }
                .min { $0.outranks($1) }
            if let winner {
                out.base = out.base.taking(type, from: winner.control.base)
                out.sources[type] = .event(program: winner.program, control: winner.control.mRID, until: winner.end)
                if !type.isReactive { ramps.updateValue(winner.control.base.rampTimeHundredthsSecond, forKey: type) }
            } else if let program = programs.filter({ $0.defaultControl?.base.sets(type) == true })
                        .min(by: { ($0.primacy, $0.mRID) < ($1.primacy, $1.mRID) }), let fallback = program.defaultControl {
                out.base = out.base.taking(type, from: fallback.base)
                out.sources[type] = .defaultControl(program: program.mRID)
                if !type.isReactive { ramps.updateValue(fallback.base.rampTimeHundredthsSecond, forKey: type) }
            }
        }
        out.base.rampTimeHundredthsSecond = rampTms(of: ramps)
        out.setGradW = setGradW(programs)
        return out
    }

    /// The `setGradW` in force: the DefaultDERControl's of the highest-priority program (lowest
    /// primacy, then mRID) whose default gives one; nil when none does. DERSettings reports it.
    public static func setGradW(_ programs: [ProgramSchedule]) -> UInt16? {
        programs.filter { $0.defaultControl?.setGradW != nil }.min { ($0.primacy, $0.mRID) < ($1.primacy, $1.mRID) }?.defaultControl?.setGradW
    }

    /// The types whose `rampTms` the site's ramped limits follow.
    static let limitTypes: [ControlType] = [.exportLimitW, .importLimitW, .generationLimitW, .loadLimitW, .maxLimW]

    /// The one `rampTms` the site applies, from the `rampTms` of each type's source in force: the
    /// sources of a limit decide (the ramp is the limits'), the smallest where they differ (the
    /// quickest the utility allows); with no limit in force, the smallest of any source; nil when no
    /// deciding source gives one (the site's limit ramp applies).
    /// - Parameter ramps: each type in force and its source's `rampTms` (nil where it gives none).
    static func rampTms(of ramps: [ControlType: UInt16?]) -> UInt16? {
        let limits = limitTypes.filter { ramps.keys.contains($0) }
        if !limits.isEmpty { return limits.compactMap { ramps[$0] ?? nil }.min() }
        return ramps.values.compactMap { $0 }.min()
    }

    /// The state of the control `mRID` of `program` at `now`, nil when no such control; a `held`
    /// control is judged at its held second while `now` is before it (as `resolve` does).
    public static func state(of mRID: String, program: String, in programs: [ProgramSchedule], now: Int64,
                             randomization: Randomization = .none, held: [ControlKey: Int64] = [:]) -> ControlState? {
        let now = held.isEmpty ? now : max(now, held[ControlKey(program: program, control: mRID)] ?? now)
        let candidates = Candidate.all(programs, randomization: randomization)
        guard let schedule = programs.first(where: { $0.mRID == program }),
              let control = schedule.controls.first(where: { $0.mRID == mRID }) else { return nil }
        switch control.status.current {
        case .cancelled, .cancelledWithRandomization: return .cancelled
        case .superseded: return .superseded
        case .scheduled, .active: break
        }
        guard let candidate = candidates.first(where: { $0.program == program && $0.control.mRID == mRID }) else { return .completed }
        let types = ControlType.allCases.filter { control.base.sets($0) }
        if !types.isEmpty && types.allSatisfy({ candidate.supersededFor($0, among: candidates) }) { return .superseded }
        if now < candidate.start { return .scheduled }
        return now < candidate.end ? .active : .completed
    }

    /// Whether the value from `a` outranks the one from `b` by the order `resolve` picks winners in: an
    /// event before a default (a default speaks only where no event sets the type); two events by the
    /// lower program `primacy`, then the newer `creationTime`, then the greater mRID; two defaults by
    /// the lower program `primacy`, then the lesser program mRID. A source not in `programs` (gone since)
    /// ranks below every one that is; neither found: false.
    public static func outranks(_ a: ControlSource, _ b: ControlSource, in programs: [ProgramSchedule]) -> Bool {
        func rank(_ source: ControlSource) -> (event: Bool, primacy: UInt8, created: Int64, mRID: String, program: String)? {
            switch source {
            case .event(let program, let mRID, _):
                guard let schedule = programs.first(where: { $0.mRID == program }),
                      let control = schedule.controls.first(where: { $0.mRID == mRID }) else { return nil }
                return (true, schedule.primacy, control.creationTime, mRID, program)
            case .defaultControl(let program):
                guard let schedule = programs.first(where: { $0.mRID == program }) else { return nil }
                return (false, schedule.primacy, 0, "", program)
            }
        }
        guard let x = rank(a) else { return false }
        guard let y = rank(b) else { return true }
        if x.event != y.event { return x.event }
        if x.primacy != y.primacy { return x.primacy < y.primacy }
        if !x.event { return x.program < y.program }
        if x.created != y.created { return x.created > y.created }
        return x.mRID > y.mRID
    }
}

/// A control that may run: not cancelled or superseded by the server, its window not empty.
private struct Candidate {
    var program: String
    var primacy: UInt8
    var control: DERControl
    var start: Int64
    var end: Int64

    static func all(_ programs: [ProgramSchedule], randomization: Randomization) -> [Candidate] {
        var out: [Candidate] = []
        for program in programs {
            for control in program.controls {
                switch control.status.current {
                case .cancelled, .cancelledWithRandomization, .superseded: continue
                case .scheduled, .active: break
                }
                let window = EventRules.window(control, randomization: randomization)
                guard window.start < window.end else { continue }
                out.append(Candidate(program: program.mRID, primacy: program.primacy, control: control, start: window.start, end: window.end))
            }
        }
        return out
    }

    /// Lower primacy, then newer creationTime, then the greater mRID.
    func outranks(_ other: Candidate) -> Bool {
        if primacy != other.primacy { return primacy < other.primacy }
        if control.creationTime != other.control.creationTime { return control.creationTime > other.control.creationTime }
        return control.mRID > other.control.mRID
    }

    /// Whether a newer control of the same primacy that sets `type` overlaps this one's window.
    func supersededFor(_ type: ControlType, among all: [Candidate]) -> Bool {
        all.contains { other in
            other.primacy == primacy && other.control.base.sets(type) && other.outranks(self)
                && other.start < end && start < other.end && !(other.program == program && other.control.mRID == control.mRID)
        }
    }
}
