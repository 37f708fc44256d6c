public import BessBase
import ControlCore
/// `ActivePower`: `value` × 10^`multiplier` watts (2030.5 `ActivePower`; CSIP-AUS ALL-24 scales the
/// same limit with multipliers 0, 1 and 2).
public struct ActivePower: Hashable, Sendable {
    /// `value` (Int16).
    public var value: Int16
    /// `multiplier`, the power of ten (−9…9).
    public var multiplier: Int8

    /// `value` × 10^`multiplier` W.
    public var watts: Double { scaled(Double(value), multiplier) }

    /// A power of `value` × 10^`multiplier` W.
    public init(value: Int16, multiplier: Int8) {
        self.value = value
        self.multiplier = multiplier
    }

    init(_ element: XMLElement) throws(SEP2Error) {
        value = try element.requiredInteger("value", Int16.self)
        multiplier = try element.requiredInteger("multiplier", Int8.self, in: -9...9)
    }
}

/// The controls of a `DERControlBase` bessd reads; each nil when the control does not set it.
public struct DERControlBase: Hashable, Sendable {
    /// `opModConnect`: false disconnects the DER from the grid.
    public var connect: Bool?
    /// `opModEnergize`: false de-energizes the DER.
    public var energize: Bool?
    /// `opModFixedW`: a fixed active power, hundredths of a percent of `setMaxW` (−10000…10000).
    public var fixedWHundredthsPercent: Int16?
    /// `opModMaxLimW`: a maximum active power, hundredths of a percent of `setMaxW` (0…10000).
    public var maxLimWHundredthsPercent: UInt16?
    /// `opModTargetW`: a target active power.
    public var targetW: ActivePower?
    /// `csipaus:opModExpLimW`: the connection point's export limit.
    public var exportLimitW: ActivePower?
    /// `csipaus:opModImpLimW`: the connection point's import limit.
    public var importLimitW: ActivePower?
    /// `csipaus:opModGenLimW`: the DER's generation (discharge) limit.
    public var generationLimitW: ActivePower?
    /// `csipaus:opModLoadLimW`: the DER's load (charge) limit.
    public var loadLimitW: ActivePower?
    /// `csipaus:opModStorageTargetW` (CSIP-AUS 1.3): a storage target, + discharge.
    public var storageTargetW: ActivePower?
    /// `rampTms`: the ramp time to the new setting, hundredths of a second.
    public var rampTimeHundredthsSecond: UInt16?
    /// `opModFreqDroop`: frequency-watt settings (FreqDroop.swift).
    public var freqDroop: FreqDroop?
    /// `opModFixedPFInjectW`: the power factor while discharging (ReactiveControls.swift).
    public var fixedPFInject: PowerFactorWithExcitation?
    /// `opModFixedPFAbsorbW`: the power factor while charging.
    public var fixedPFAbsorb: PowerFactorWithExcitation?
    /// `opModFixedVar`: a fixed var, hundredths of a percent of its `refType`'s quantity.
    public var fixedVar: FixedVar?
    /// `opModTargetVar`: a target var.
    public var targetVar: ReactivePower?
    /// `opModVoltVar`, `opModWattVar`, `opModVoltWatt`: the href of the `DERCurve` each links to
    /// (`DERCurveLink`), fetched by the worker and applied when it fits (`DERCurve+Settings.swift`).
    public var voltVarCurve: String?
    public var wattVarCurve: String?
    public var voltWattCurve: String?
    /// Why an element the control sets is not applied, the rest of it taken: an `opModFreqDroop`, a
    /// power factor or an `opModFixedVar` inside its types but outside what bessd applies
    /// ("opModFreqDroop not applied: …", several joined by "; "); nil when all is.
    public var notApplied: String?

    /// A base that sets nothing.
    public init() {}

    init(_ element: XMLElement) throws(SEP2Error) {
        connect = try element.boolean("opModConnect")
        energize = try element.boolean("opModEnergize")
        fixedWHundredthsPercent = try element.integer("opModFixedW", Int16.self, in: -10_000...10_000)
        maxLimWHundredthsPercent = try element.integer("opModMaxLimW", UInt16.self, in: 0...10_000)
        targetW = try element.child("opModTargetW").map { (found) throws(SEP2Error) in try ActivePower(found) }
        exportLimitW = try element.child("opModExpLimW", csipaus: true).map { (found) throws(SEP2Error) in try ActivePower(found) }
        importLimitW = try element.child("opModImpLimW", csipaus: true).map { (found) throws(SEP2Error) in try ActivePower(found) }
        generationLimitW = try element.child("opModGenLimW", csipaus: true).map { (found) throws(SEP2Error) in try ActivePower(found) }
        loadLimitW = try element.child("opModLoadLimW", csipaus: true).map { (found) throws(SEP2Error) in try ActivePower(found) }
        storageTargetW = try element.child("opModStorageTargetW", csipaus: true).map { (found) throws(SEP2Error) in try ActivePower(found) }
        rampTimeHundredthsSecond = try element.integer("rampTms", UInt16.self)
        if let found = element.child("opModFreqDroop") {
            let droop = try FreqDroop(found)
            notApplied = droop.notApplied
            freqDroop = notApplied == nil ? droop : nil
        }
        try readReactive(element)
    }
}

/// `EventStatus.currentStatus` (2030.5 `EventStatus`).
public enum EventState: UInt8, Hashable, Sendable {
    /// 0: scheduled.
    case scheduled = 0
    /// 1: active.
    case active = 1
    /// 2: cancelled.
    case cancelled = 2
    /// 3: cancelled with randomization.
    case cancelledWithRandomization = 3
    /// 4: superseded (by the server).
    case superseded = 4
}

/// `EventStatus`: the server's view of an event.
public struct EventStatus: Hashable, Sendable {
    /// `currentStatus`.
    public var current: EventState
    /// `dateTime`: when the status was set (TimeType, seconds since the Unix epoch).
    public var dateTime: Int64
    /// `potentiallySuperseded`.
    public var potentiallySuperseded: Bool

    /// A status.
    public init(current: EventState, dateTime: Int64, potentiallySuperseded: Bool = false) {
        self.current = current
        self.dateTime = dateTime
        self.potentiallySuperseded = potentiallySuperseded
    }

    init(_ element: XMLElement) throws(SEP2Error) {
        let raw = try element.requiredInteger("currentStatus", UInt8.self)
        guard let state = EventState(rawValue: raw) else {
            throw SEP2Error(.valueInvalid, message: "EventStatus at byte \(element.offset): currentStatus \(raw) is not 0 to 4")
        }
        current = state
        dateTime = try element.requiredInteger("dateTime", Int64.self)
        potentiallySuperseded = try element.boolean("potentiallySuperseded") ?? false
    }
}

/// `DERControl`: a scheduled, randomizable event of DER controls.
public struct DERControl: Hashable, Sendable {
    /// The control's `href`, as written (never quoted into a message unescaped).
    public var href: String?
    /// `mRID` (HexBinary128, as written).
    public var mRID: String
    /// `creationTime` (seconds since the Unix epoch): within a primacy the newer control supersedes.
    public var creationTime: Int64
    /// `EventStatus`.
    public var status: EventStatus
    /// `interval.start` (seconds since the Unix epoch).
    public var start: Int64
    /// `interval.duration` (seconds).
    public var duration: UInt32
    /// `randomizeStart` (−3600…3600 s; 0 when absent).
    public var randomizeStart: Int16
    /// `randomizeDuration` (−3600…3600 s; 0 when absent).
    public var randomizeDuration: Int16
    /// `DERControlBase`.
    public var base: DERControlBase
    /// The `replyTo` attribute: where responses go.
    public var replyTo: String?
    /// The `responseRequired` attribute (HexBinary8: bit 0 received, 1 specific, 2 user; 0 when absent).
    public var responseRequired: UInt8

    /// A control as the event rules take it.
    public init(mRID: String, creationTime: Int64, status: EventStatus, start: Int64, duration: UInt32,
                randomizeStart: Int16 = 0, randomizeDuration: Int16 = 0, base: DERControlBase) {
        self.mRID = mRID
        self.creationTime = creationTime
        self.status = status
        self.start = start
        self.duration = duration
        self.randomizeStart = randomizeStart
        self.randomizeDuration = randomizeDuration
        self.base = base
        responseRequired = 0
    }

    /// The `interval` starts the reader accepts, seconds since the Unix epoch: 0 through 2^40 (the year
    /// 36812), so a start, its duration (UInt32) and its randomization (Int16) add up without overflow;
    /// a start outside is `SEP2_VALUE_INVALID`.
    public static let startRange: ClosedRange<Int64> = 0...(1 << 40)

    init(_ element: XMLElement) throws(SEP2Error) {
        href = element.attribute("href")
        mRID = try element.mRID()
        creationTime = try element.requiredInteger("creationTime", Int64.self)
        status = try EventStatus(try element.required("EventStatus"))
        let interval = try element.required("interval")
        start = try interval.requiredInteger("start", Int64.self, in: Self.startRange)
        duration = try interval.requiredInteger("duration", UInt32.self)
        randomizeStart = try element.integer("randomizeStart", Int16.self, in: -3600...3600) ?? 0
        randomizeDuration = try element.integer("randomizeDuration", Int16.self, in: -3600...3600) ?? 0
        base = try DERControlBase(try element.required("DERControlBase"))
        replyTo = element.attribute("replyTo")
        guard let required = element.attribute("responseRequired") else { responseRequired = 0; return }
        guard required.utf8.count <= 2, required.utf8.allSatisfy(\.isHexDigit), let value = UInt8(required, radix: 16) else {
            throw SEP2Error(.valueInvalid, message: "DERControl at byte \(element.offset): responseRequired \(quoted(required)) is not HexBinary8")
        }
        responseRequired = value
    }

    /// A `DERControl` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DERControl> {
        try readDocument(bytes, root: "DERControl", limits: limits) { (root) throws(SEP2Error) in try DERControl(root) }
    }
}

/// A control of a `DERControlList` bessd does not take, and why; its siblings are taken. Answered with
/// `status` where its `replyTo` and `responseRequired` ask (a control without a readable mRID cannot be).
public struct RefusedControl: Hashable, Sendable {
    /// `mRID` as written; nil when it is missing or not HexBinary128 (then nothing can be answered).
    public var mRID: String?
    /// The `replyTo` attribute.
    public var replyTo: String?
    /// The `responseRequired` attribute (0 when absent or unreadable).
    public var responseRequired: UInt8
    /// 253 (`invalidEvent`): malformed, or a value outside its type; 252 (`notApplicable`): it sets
    /// only controls bessd does not carry out.
    public var status: ResponseStatus
    /// Why, for the journal (document text quoted).
    public var reason: String
    /// The refusal's code for a 253 (`SEP2_VALUE_INVALID`, `SEP2_NAMESPACE_UNKNOWN` …), "" for a 252: with
    /// the mRID and status, what the journal tells refusals apart by (the reason carries byte offsets).
    public var code = ""

    /// A refusal.
    public init(mRID: String?, replyTo: String?, responseRequired: UInt8, status: ResponseStatus, reason: String) {
        self.mRID = mRID
        self.replyTo = replyTo
        self.responseRequired = responseRequired
        self.status = status
        self.reason = reason
    }

    /// The `DERControlBase` elements bessd carries out (`rampTms` alone carries nothing out): those of
    /// `csipausElements` in a CSIP-AUS namespace, the others in 2030.5's.
    public static let appliedElements: Set<String> = [
        "opModConnect", "opModEnergize", "opModFixedW", "opModMaxLimW", "opModTargetW", "opModExpLimW", "opModImpLimW",
        "opModGenLimW", "opModLoadLimW", "opModStorageTargetW", "opModFreqDroop", "opModFixedPFInjectW", "opModFixedPFAbsorbW",
        "opModFixedVar", "opModTargetVar", "opModVoltVar", "opModWattVar", "opModVoltWatt",
    ]
    /// The applied elements CSIP-AUS defines: read only in its namespaces.
    public static let csipausElements: Set<String> = ["opModExpLimW", "opModImpLimW", "opModGenLimW", "opModLoadLimW", "opModStorageTargetW"]

    /// `element` (a `DERControlBase` child) is one bessd carries out, in the namespace its reader reads.
    static func applied(_ element: XMLElement) -> Bool {
        guard appliedElements.contains(element.name.local) else { return false }
        return csipausElements.contains(element.name.local) ? CSIPAUSVersion(rawValue: element.name.namespace) != nil
            : element.name.namespace == SEP2Namespace.sep
    }

    /// `element` (a `DERControl`) refused for `error`: its mRID, replyTo and responseRequired as far as they read.
    init(_ element: XMLElement, error: SEP2Error) {
        mRID = try? element.mRID()
        replyTo = element.attribute("replyTo")
        let required = element.attribute("responseRequired") ?? "0"
        responseRequired = required.utf8.count <= 2 ? UInt8(required, radix: 16) ?? 0 : 0
        status = .invalidEvent
        reason = "\(error)"
        code = error.code.description
    }

    /// `control` read from `element` refused as not applicable when its `DERControlBase` sets nothing
    /// bessd carries out; nil when it sets something.
    init?(notApplicable control: DERControl, _ element: XMLElement) {
        let set = element.child("DERControlBase")?.children.filter { $0.name.local != "rampTms" } ?? []
        let others = set.map(\.name.local)
        guard !set.contains(where: { Self.applied($0) && !control.base.leavesUnapplied($0.name.local) }) else { return nil }
        if others.contains(where: control.base.leavesUnapplied), let why = control.base.notApplied {
            self.init(mRID: control.mRID, replyTo: control.replyTo, responseRequired: control.responseRequired, status: .notApplicable,
                      reason: "DERControl \(quoted(control.mRID)): \(why)")
            return
        }
        self.init(mRID: control.mRID, replyTo: control.replyTo, responseRequired: control.responseRequired, status: .notApplicable,
                  reason: others.isEmpty ? "DERControl \(quoted(control.mRID)) sets no control"
                      : "DERControl \(quoted(control.mRID)) sets only controls bessd does not carry out: "
                      + set.prefix(4).map { Self.appliedElements.contains($0.name.local) ? "\($0.name)" : quoted($0.name.local) }
                      .joined(separator: ", ") + (others.count > 4 ? ", …" : ""))
    }
}

/// `DERControlList`: a page of a program's controls. Each control is read on its own: one that is
/// malformed or invalid, or that sets nothing bessd carries out, is refused alone (`refused`).
public struct DERControlList: Hashable, Sendable {
    /// `all`: how many controls the whole list has.
    public var all: UInt32
    /// `results`: how many this page carries.
    public var results: UInt32
    /// The controls of this page bessd takes.
    public var controls: [DERControl]
    /// The controls of this page bessd refuses, in document order.
    public var refused: [RefusedControl] = []

    /// The items this page carries, taken or refused (what paging counts).
    public var items: Int { controls.count + refused.count }

    /// A `DERControlList` document. Refused as a whole only for what the whole document does wrong (not
    /// XML, another root, an unknown namespace, `all` or `results` not a number).
    /// The list's own elements are checked against the known namespaces whole, each control apart: one
    /// carrying an element in an unknown namespace is refused alone (253).
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DERControlList> {
        let root = try XMLDocument.parse(bytes, limits: limits)
        var version = try NamespaceCheck.check(root, apart: "DERControl")
        try root.expectRoot("DERControlList")
        let list = try { () throws(SEP2Error) -> DERControlList in
            var controls: [DERControl] = []
            var refused: [RefusedControl] = []
            for element in root.all("DERControl") {
                do throws(SEP2Error) {
                    if let found = try NamespaceCheck.check(element) { version = version ?? found }
                    let control = try DERControl(element)
                    if let notApplicable = RefusedControl(notApplicable: control, element) {
                        refused.append(notApplicable)
                    } else {
                        controls.append(control)
                    }
                } catch {
                    refused.append(RefusedControl(element, error: error))
                }
            }
            let count = UInt32(controls.count + refused.count)
            var list = DERControlList(all: try root.integerAttribute("all", UInt32.self) ?? count,
                                      results: try root.integerAttribute("results", UInt32.self) ?? count, controls: controls)
            list.refused = refused
            return list
        }()
        return SEP2Document(resource: list, csipaus: version)
    }
}

/// `DefaultDERControl`: what a program asks for while none of its controls is active.
public struct DefaultDERControl: Hashable, Sendable {
    /// `mRID`.
    public var mRID: String
    /// `DERControlBase`.
    public var base: DERControlBase
    /// `setGradW`: the default ramp, hundredths of a percent of `setMaxW` per second (0: no limit).
    public var setGradW: UInt16?

    /// A default control.
    public init(mRID: String, base: DERControlBase, setGradW: UInt16? = nil) {
        self.mRID = mRID
        self.base = base
        self.setGradW = setGradW
    }

    /// A `DefaultDERControl` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DefaultDERControl> {
        try readDocument(bytes, root: "DefaultDERControl", limits: limits) { (root) throws(SEP2Error) in
            DefaultDERControl(mRID: try root.mRID(), base: try DERControlBase(try root.required("DERControlBase")),
                              setGradW: try root.integer("setGradW", UInt16.self))
        }
    }
}

/// `DERProgram`: a program's priority and where its controls are.
public struct DERProgram: Hashable, Sendable {
    /// `mRID`.
    public var mRID: String
    /// `primacy`: the lower, the higher the program's priority.
    public var primacy: UInt8
    /// `DefaultDERControlLink`'s href.
    public var defaultControlHref: String?
    /// `DERControlListLink`'s href.
    public var controlListHref: String?

    init(_ element: XMLElement) throws(SEP2Error) {
        mRID = try element.mRID()
        primacy = try element.requiredInteger("primacy", UInt8.self)
        defaultControlHref = element.link("DefaultDERControlLink")
        controlListHref = element.link("DERControlListLink")
    }

    /// A `DERProgram` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DERProgram> {
        try readDocument(bytes, root: "DERProgram", limits: limits) { (root) throws(SEP2Error) in try DERProgram(root) }
    }
}

/// `DERProgramList`: the programs of a function set assignment.
public struct DERProgramList: Hashable, Sendable {
    /// `all`.
    public var all: UInt32
    /// `pollRate` (seconds; 900 when absent, as the standard's default).
    public var pollRate: UInt32
    /// The programs of this page.
    public var programs: [DERProgram]

    /// A `DERProgramList` document.
    public static func read(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> SEP2Document<DERProgramList> {
        try readDocument(bytes, root: "DERProgramList", limits: limits) { (root) throws(SEP2Error) in
            var programs: [DERProgram] = []
            for element in root.all("DERProgram") { programs.append(try DERProgram(element)) }
            return DERProgramList(all: try root.integerAttribute("all", UInt32.self) ?? UInt32(programs.count),
                                  pollRate: try root.integerAttribute("pollRate", UInt32.self) ?? 900, programs: programs)
        }
    }
}

/// Parse, check namespaces and the root, then read the resource.
func readDocument<R: Sendable>(_ bytes: [UInt8], root local: String, limits: XMLLimits,
                     _ read: (XMLElement) throws(SEP2Error) -> R) throws(SEP2Error) -> SEP2Document<R> {
    let root = try XMLDocument.parse(bytes, limits: limits)
    let version = try NamespaceCheck.check(root)
    try root.expectRoot(local)
    return SEP2Document(resource: try read(root), csipaus: version)
}
