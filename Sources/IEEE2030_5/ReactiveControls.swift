import BessBase
/// The utility's reactive controls a `DERControlBase` may set (docs/design/0010-reactive-power.md,
/// "Each party's mapping", 2030.5): the two fixed power factors, `opModFixedVar` and
/// `opModTargetVar`. Each is read at its type's width (a value outside its type is
/// `SEP2_VALUE_INVALID`, 253); a value inside its type that bessd does not apply (a power factor
/// outside (0, 1], a `refType` the site has no value for) leaves the control unapplied, the rest of
/// the base taken (`DERControlBase.notApplied`), as for `opModFreqDroop`.

/// `PowerFactorWithExcitation`: `displacement` × 10^`multiplier`, `excitation` true when the DER
/// absorbs reactive power (under-excited), false when it injects (over-excited).
public struct PowerFactorWithExcitation: Hashable, Sendable {
    /// `displacement` (UInt16).
    public var displacement: UInt16
    /// `excitation`: true = absorbing (under-excited).
    public var absorbing: Bool
    /// `multiplier`, the power of ten (−9…9).
    public var multiplier: Int8

    /// A power factor of `displacement` × 10^`multiplier`.
    public init(displacement: UInt16, absorbing: Bool, multiplier: Int8) {
        self.displacement = displacement
        self.absorbing = absorbing
        self.multiplier = multiplier
    }

    init(_ element: XMLElement) throws(SEP2Error) {
        displacement = try element.requiredInteger("displacement", UInt16.self)
        multiplier = try element.requiredInteger("multiplier", Int8.self, in: -9...9)
        guard let excitation = try element.boolean("excitation") else {
            throw SEP2Error(.documentUnexpected, message: "\(element.name) at byte \(element.offset) has no excitation")
        }
        absorbing = excitation
    }

    /// `displacement` × 10^`multiplier`.
    public var powerFactor: Double { scaled(Double(displacement), multiplier) }

    /// The power factor signed by its excitation (+ over-excited, injecting; − under-excited), as
    /// `UtilityLimits` carries it; nil when it is outside (0, 1] (not applied).
    public var signed: Double? {
        let pf = powerFactor
        guard pf.isFinite, pf > 0, pf <= 1 else { return nil }
        return absorbing ? -pf : pf
    }
}

/// `ReactivePower`: `value` × 10^`multiplier` var (`opModTargetVar`).
public struct ReactivePower: Hashable, Sendable {
    /// `value` (Int16).
    public var value: Int16
    /// `multiplier` (−9…9).
    public var multiplier: Int8

    /// A reactive power of `value` × 10^`multiplier` var.
    public init(value: Int16, multiplier: Int8) {
        self.value = value
        self.multiplier = multiplier
    }

    /// Read as `ActivePower` is: the same two elements at the same widths.
    init(_ element: XMLElement) throws(SEP2Error) {
        let read = try ActivePower(element)
        self.init(value: read.value, multiplier: read.multiplier)
    }

    /// `value` × 10^`multiplier` var (+ = injecting).
    public var vars: Double { scaled(Double(value), multiplier) }
}

/// `FixedVar`: `value` hundredths of a percent (`SignedPerCent`, −10000…10000) of the quantity
/// `refType` names (`DERUnitRefType`).
public struct FixedVar: Hashable, Sendable {
    /// `refType`: 1 `setMaxW`, 2 `setMaxVar` (`setMaxVarNeg` when negative), 3 `statVarAvail`; the
    /// others (0 N/A, 4 `setEffectiveV`, 5–7 charge, discharge and available W) are not applied.
    public var refType: UInt8
    /// `value`, hundredths of a percent, + = injecting.
    public var hundredthsPercent: Int16

    /// The reference types bessd applies: what the site knows (its rating, its var capability).
    public static let appliedRefTypes: ClosedRange<UInt8> = 1...3

    /// A fixed var of `hundredthsPercent` of `refType`'s quantity.
    public init(refType: UInt8, hundredthsPercent: Int16) {
        self.refType = refType
        self.hundredthsPercent = hundredthsPercent
    }

    init(_ element: XMLElement) throws(SEP2Error) {
        refType = try element.requiredInteger("refType", UInt8.self)
        hundredthsPercent = try element.requiredInteger("value", Int16.self, in: -10_000...10_000)
    }

    /// The var it asks of a site of `ratingW` and var capability `injecting` / `absorbing`
    /// (magnitudes): a fraction of `setMaxW` (the rating), or of `setMaxVar` / `setMaxVarNeg` by its
    /// sign (`statVarAvail`: the same capability, what the site knows of its available var). Nil for
    /// a `refType` not applied or a reference of zero (no unit has var points).
    public func vars(ratingW: Double, injecting: Double, absorbing: Double) -> Double? {
        let fraction = Double(hundredthsPercent) / 10_000
        let reference: Double = switch refType {
        case 1: ratingW
        case 2, 3: fraction >= 0 ? injecting : absorbing
        default: 0
        }
        guard reference.isFinite, reference > 0 else { return nil }
        return fraction * reference
    }
}

/// `x` × 10^`exponent` for a multiplier of −9…9, dividing for a negative one (95 × 10^−2 is 0.95 exactly).
func scaled(_ x: Double, _ exponent: Int8) -> Double {
    var scale = 1.0
    for _ in 0..<abs(Int(exponent)) { scale *= 10 }
    return exponent < 0 ? x / scale : x * scale
}

extension DERControlBase {
    /// Reads the reactive controls of `element` into this base; an element bessd does not apply is
    /// left nil and said in `notApplied` (joined to what the droop said).
    mutating func readReactive(_ element: XMLElement) throws(SEP2Error) {
        var why: [String] = []
        if let found = element.child("opModFixedPFInjectW") {
            let pf = try PowerFactorWithExcitation(found)
            if pf.signed == nil { why.append("opModFixedPFInjectW not applied: power factor \(pf.powerFactor) is outside (0, 1]") }
            fixedPFInject = pf.signed == nil ? nil : pf
        }
        if let found = element.child("opModFixedPFAbsorbW") {
            let pf = try PowerFactorWithExcitation(found)
            if pf.signed == nil { why.append("opModFixedPFAbsorbW not applied: power factor \(pf.powerFactor) is outside (0, 1]") }
            fixedPFAbsorb = pf.signed == nil ? nil : pf
        }
        if let found = element.child("opModFixedVar") {
            let fixed = try FixedVar(found)
            let applied = FixedVar.appliedRefTypes.contains(fixed.refType)
            if !applied { why.append("opModFixedVar not applied: refType \(fixed.refType) is not 1 (setMaxW), 2 (setMaxVar) or 3 (statVarAvail)") }
            fixedVar = applied ? fixed : nil
        }
        targetVar = try element.child("opModTargetVar").map { (found) throws(SEP2Error) in try ReactivePower(found) }
        voltVarCurve = try element.curveLink(.voltVar)
        wattVarCurve = try element.curveLink(.wattVar)
        voltWattCurve = try element.curveLink(.voltWatt)
        let curves = Set(element.children.lazy.filter { $0.name.namespace == SEP2Namespace.sep && Self.curveControls.contains($0.name.local) }.map(\.name.local))
        why += curves.sorted().map { "\($0) not applied: bessd does not carry out 2030.5's curve controls" }
        guard !why.isEmpty else { return }
        notApplied = ([notApplied].compactMap { $0 } + why).joined(separator: "; ")
    }

    /// `DERControlBase`'s curve controls bessd does not carry out (a `DERCurveLink` each; volt-var,
    /// watt-var and volt-watt are read as `voltVarCurve` …): one beside a control bessd applies is said
    /// in `notApplied`; alone, the control is answered 252.
    static let curveControls: Set<String> = [
        "opModFreqWatt", "opModHFRTMayTrip", "opModHFRTMustTrip", "opModHVRTMayTrip", "opModHVRTMomentaryCessation", "opModHVRTMustTrip",
        "opModLFRTMayTrip", "opModLFRTMustTrip", "opModLVRTMayTrip", "opModLVRTMomentaryCessation", "opModLVRTMustTrip", "opModWattPF",
    ]

    /// True when `local`, set in the document, is an element this base read but does not apply
    /// (a droop, a power factor or a fixed var outside what bessd applies: its field left nil).
    func leavesUnapplied(_ local: String) -> Bool {
        switch local {
        case "opModFreqDroop": freqDroop == nil
        case "opModFixedPFInjectW": fixedPFInject == nil
        case "opModFixedPFAbsorbW": fixedPFAbsorb == nil
        case "opModFixedVar": fixedVar == nil
        default: false
        }
    }
}

extension XMLElement {
    /// The checked href of the `DERCurveLink` `control`, nil when the base does not set it.
    func curveLink(_ control: DERCurve.Control) throws(SEP2Error) -> String? {
        guard let href = link(control.rawValue) else {
            if child(control.rawValue) != nil { throw SEP2Error(.documentUnexpected, message: "\(control.rawValue) at byte \(offset) has no href") }
            return nil
        }
        return try SEP2Href.check(href, "\(control.rawValue)")
    }
}
