public import BessBase
import ControlCore

/// `DERControlType` bits (`modesSupported`, `modesEnabled`): the 2030.5 controls a DER carries out. Only
/// the bits bessd can claim are named; the others are the standard's curves and ride-through modes.
public struct DERControlModes: OptionSet, Hashable, Sendable {
    /// The bits as the document writes them.
    public let rawValue: UInt32
    /// The set of `rawValue`'s bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Bit 0: charge mode.
    public static let charge = Self(rawValue: 1 << 0)
    /// Bit 1: discharge mode.
    public static let discharge = Self(rawValue: 1 << 1)
    /// Bit 2: `opModConnect`.
    public static let connect = Self(rawValue: 1 << 2)
    /// Bit 3: `opModEnergize`.
    public static let energize = Self(rawValue: 1 << 3)
    /// Bit 4: `opModFixedPFAbsorbW`.
    public static let fixedPFAbsorbW = Self(rawValue: 1 << 4)
    /// Bit 5: `opModFixedPFInjectW`.
    public static let fixedPFInjectW = Self(rawValue: 1 << 5)
    /// Bit 6: `opModFixedVar`.
    public static let fixedVar = Self(rawValue: 1 << 6)
    /// Bit 7: `opModFixedW`.
    public static let fixedW = Self(rawValue: 1 << 7)
    /// Bit 8: `opModFreqDroop`.
    public static let frequencyDroop = Self(rawValue: 1 << 8)
    /// Bit 20: `opModMaxLimW`.
    public static let maxLimW = Self(rawValue: 1 << 20)
    /// Bit 21: `opModTargetVar`.
    public static let targetVar = Self(rawValue: 1 << 21)
    /// Bit 23: `opModVoltVar`.
    public static let voltVar = Self(rawValue: 1 << 23)
    /// Bit 24: `opModVoltWatt`.
    public static let voltWatt = Self(rawValue: 1 << 24)
    /// Bit 26: `opModWattVar`.
    public static let wattVar = Self(rawValue: 1 << 26)
    /// The reactive controls bessd takes while a unit has var points (issue 59): the two fixed power
    /// factors, fixed and target var, and the volt-var, volt-watt and watt-var curves (bits 4, 5, 6,
    /// 21, 23, 24, 26, as the design lists them).
    public static let reactive: Self = [.fixedPFAbsorbW, .fixedPFInjectW, .fixedVar, .targetVar, .voltVar, .voltWatt, .wattVar]
    /// Bit 22: `opModTargetW`.
    public static let targetW = Self(rawValue: 1 << 22)
}

/// CSIP-AUS `DOEControlType` bits (`csipaus:doeModesSupported`, `doeModesEnabled`), as envoy-schema's
/// `DOESupportedMode` numbers them (the XSD's comment swaps the names of bits 0 and 1).
public struct DOEModes: OptionSet, Hashable, Sendable {
    /// The bits as the document writes them.
    public let rawValue: UInt8
    /// The set of `rawValue`'s bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: `opModExpLimW`.
    public static let exportLimit = Self(rawValue: 1 << 0)
    /// Bit 1: `opModImpLimW`.
    public static let importLimit = Self(rawValue: 1 << 1)
    /// Bit 2: `opModGenLimW`.
    public static let generationLimit = Self(rawValue: 1 << 2)
    /// Bit 3: `opModLoadLimW`.
    public static let loadLimit = Self(rawValue: 1 << 3)
    /// All four limits.
    public static let all: Self = [.exportLimit, .importLimit, .generationLimit, .loadLimit]
}

/// CSIP-AUS 1.3 `VPPControlType` bits (`csipaus:vppModesSupported`, `vppModesEnabled`).
public struct VPPModes: OptionSet, Hashable, Sendable {
    /// The bits as the document writes them.
    public let rawValue: UInt8
    /// The set of `rawValue`'s bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: `opModStorageTargetW`.
    public static let storageTarget = Self(rawValue: 1 << 0)
}

/// `DERType`.
public enum DERType: UInt8, Hashable, Sendable {
    /// 1: virtual or mixed DER.
    case virtualOrMixed = 1
    /// 4: photovoltaic system.
    case photovoltaic = 4
    /// 80: other storage system (a battery site).
    case storage = 80
    /// 83: combined PV and storage.
    case photovoltaicAndStorage = 83
}

/// `rtgNormalCategory`: IEEE 1547-2018's normal operating performance category (`UInt8`).
public enum NormalCategory: UInt8, Hashable, Sendable {
    /// 0: not specified.
    case unspecified = 0
    /// 1: Category A.
    case a = 1
    /// 2: Category B.
    case b = 2
}

/// `DERCapability`: what the site's one aggregated DER can do (several units behind one EndDevice are
/// reported as their sum). Powers in W, energy in Wh, all magnitudes (≥ 0).
public struct DERCapabilityReport: Hashable, Sendable {
    /// `modesSupported`.
    public var modesSupported: DERControlModes
    /// `type`.
    public var type: DERType
    /// `rtgMaxW`: the most active power the DER delivers, W (Σ units' rated discharge).
    public var ratedMaxW: Double
    /// `rtgMaxVA`: apparent power rating, VA; nil omits it.
    public var ratedMaxVA: Double?
    /// `rtgMaxWh`: usable stored energy, Wh; nil omits it.
    public var ratedMaxWh: Double?
    /// `rtgMaxChargeRateW`: the most charge power, W (a magnitude); nil omits it.
    public var ratedMaxChargeW: Double?
    /// `rtgMaxDischargeRateW`: the most discharge power, W; nil omits it.
    public var ratedMaxDischargeW: Double?
    /// `rtgMaxVar` / `rtgMaxVarNeg`: the most reactive power delivered (injecting) / received
    /// (absorbing), var, magnitudes (`rtgMaxVarNeg` is written negative); nil omits them.
    public var ratedMaxVar: Double?
    public var ratedMaxVarNeg: Double?
    /// `rtgMinPFOverExcited` / `rtgMinPFUnderExcited`: the least power factor injecting / absorbing,
    /// (0, 1]; nil omits it.
    public var ratedMinPFOverExcited: Double?
    public var ratedMinPFUnderExcited: Double?
    /// `rtgNormalCategory`: IEEE 1547-2018's normal performance category; nil omits it.
    public var ratedNormalCategory: NormalCategory?
    /// `rtgVNom`: the nominal AC voltage, V (`VoltageRMS`); nil omits it.
    public var ratedVNom: Double?
    /// `csipaus:doeModesSupported` (mandatory in CSIP-AUS).
    public var doeModesSupported: DOEModes
    /// `csipaus:vppModesSupported`: written only in CSIP-AUS 1.3 (1.2 has no such element); nil omits it.
    public var vppModesSupported: VPPModes?
    /// The `href` attribute, nil for none.
    public var href: String?

    /// A capability with the mandatory elements; the optional ones nil.
    public init(modesSupported: DERControlModes, type: DERType, ratedMaxW: Double, doeModesSupported: DOEModes) {
        self.modesSupported = modesSupported
        self.type = type
        self.ratedMaxW = ratedMaxW
        self.doeModesSupported = doeModesSupported
    }

    /// The `DERCapability` document, CSIP-AUS elements in `csipaus`'s namespace.
    public func xml(csipaus: CSIPAUSVersion, maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        var writer = XMLWriter(root: "DERCapability", csipaus: csipaus, attributes: href.map { [(name: "href", value: $0)] } ?? [], maximumBytes: maximumBytes)
        writer.hexElement("modesSupported", UInt64(modesSupported.rawValue), bytes: 4)
        if let ratedMaxChargeW { try writer.power("rtgMaxChargeRateW", ratedMaxChargeW, .unsignedMagnitude) }
        if let ratedMaxDischargeW { try writer.power("rtgMaxDischargeRateW", ratedMaxDischargeW, .unsignedMagnitude) }
        if let ratedMaxVA { try writer.power("rtgMaxVA", ratedMaxVA, .unsigned) }
        if let ratedMaxVar { try writer.power("rtgMaxVar", ratedMaxVar, .unsignedMagnitude) }
        if let ratedMaxVarNeg { try writer.power("rtgMaxVarNeg", -abs(ratedMaxVarNeg), .signed) }
        try writer.power("rtgMaxW", ratedMaxW, .unsignedMagnitude)
        if let ratedMaxWh { try writer.power("rtgMaxWh", ratedMaxWh, .unsigned) }
        if let ratedMinPFOverExcited { try writer.powerFactor("rtgMinPFOverExcited", ratedMinPFOverExcited) }
        if let ratedMinPFUnderExcited { try writer.powerFactor("rtgMinPFUnderExcited", ratedMinPFUnderExcited) }
        if let ratedNormalCategory { writer.element("rtgNormalCategory", ratedNormalCategory.rawValue) }
        if let ratedVNom { try writer.power("rtgVNom", ratedVNom, .unsigned) }
        writer.element("type", type.rawValue)
        writer.hexElement("doeModesSupported", UInt64(doeModesSupported.rawValue), bytes: 1, csipaus: true)
        if let vppModesSupported, csipaus == .v1_3 { writer.hexElement("vppModesSupported", UInt64(vppModesSupported.rawValue), bytes: 1, csipaus: true) }
        return try writer.finish()
    }
}

/// `DERSettings`: the limits the site is set to now (its configuration after bessd's own caps).
/// Powers in W, magnitudes (≥ 0).
public struct DERSettingsReport: Hashable, Sendable {
    /// `setMaxW`: the most active power the site is set to deliver, W (CSIP-AUS's reference for
    /// `opModFixedW` and `opModMaxLimW` percentages).
    public var setMaxW: Double
    /// `setGradW`: the default ramp, hundredths of a percent of `setMaxW` per second (0 = no limit); the
    /// DefaultDERControl's `setGradW` is mirrored here.
    public var setGradW: UInt16
    /// `setMaxChargeRateW`: the most charge power, W (a magnitude); nil omits it.
    public var setMaxChargeW: Double?
    /// `setMaxDischargeRateW`: the most discharge power, W; nil omits it.
    public var setMaxDischargeW: Double?
    /// `setMaxWh`: the usable stored energy allowed, Wh; nil omits it.
    public var setMaxWh: Double?
    /// `setMaxVar` / `setMaxVarNeg`: the most reactive power injecting / absorbing, var, magnitudes
    /// (`setMaxVarNeg` is written negative); nil omits them.
    public var setMaxVar: Double?
    public var setMaxVarNeg: Double?
    /// `setMinPFOverExcited` / `setMinPFUnderExcited`: the least power factor injecting / absorbing,
    /// (0, 0.9999]; nil omits it.
    public var setMinPFOverExcited: Double?
    public var setMinPFUnderExcited: Double?
    /// `setMaxVA`: the apparent power the site is set to, VA; nil omits it.
    public var setMaxVA: Double?
    /// `setVNom` / `setVRef` / `setVRefOfs`: the nominal voltage, the reference voltage at the point of
    /// common coupling and the offset from it to the DER, V (`VoltageRMS`, ≥ 0); nil omits each.
    public var setVNom: Double?
    public var setVRef: Double?
    public var setVRefOfs: Double?
    /// `modesEnabled`; nil omits it.
    public var modesEnabled: DERControlModes?
    /// `csipaus:doeModesEnabled`; nil omits it.
    public var doeModesEnabled: DOEModes?
    /// `csipaus:vppModesEnabled`: written only in CSIP-AUS 1.3; nil omits it.
    public var vppModesEnabled: VPPModes?
    /// `updatedTime`: when these settings last changed, seconds since the Unix epoch (server time).
    public var updatedTime: Int64
    /// The `href` attribute, nil for none.
    public var href: String?

    /// Settings with the mandatory elements; the optional ones nil.
    public init(setMaxW: Double, setGradW: UInt16, updatedTime: Int64) {
        self.setMaxW = setMaxW
        self.setGradW = setGradW
        self.updatedTime = updatedTime
    }

    /// The `DERSettings` document, CSIP-AUS elements in `csipaus`'s namespace.
    public func xml(csipaus: CSIPAUSVersion, maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        var writer = XMLWriter(root: "DERSettings", csipaus: csipaus, attributes: href.map { [(name: "href", value: $0)] } ?? [], maximumBytes: maximumBytes)
        if let modesEnabled { writer.hexElement("modesEnabled", UInt64(modesEnabled.rawValue), bytes: 4) }
        writer.element("setGradW", setGradW)
        if let setMaxChargeW { try writer.power("setMaxChargeRateW", setMaxChargeW, .unsignedMagnitude) }
        if let setMaxDischargeW { try writer.power("setMaxDischargeRateW", setMaxDischargeW, .unsignedMagnitude) }
        if let setMaxVA { try writer.power("setMaxVA", setMaxVA, .unsigned) }
        if let setMaxVar { try writer.power("setMaxVar", setMaxVar, .unsignedMagnitude) }
        if let setMaxVarNeg { try writer.power("setMaxVarNeg", -abs(setMaxVarNeg), .signed) }
        try writer.power("setMaxW", setMaxW, .unsignedMagnitude)
        if let setMaxWh { try writer.power("setMaxWh", setMaxWh, .unsigned) }
        if let setMinPFOverExcited { try writer.powerFactor("setMinPFOverExcited", setMinPFOverExcited) }
        if let setMinPFUnderExcited { try writer.powerFactor("setMinPFUnderExcited", setMinPFUnderExcited) }
        if let setVNom { try writer.power("setVNom", setVNom, .unsigned) }
        if let setVRef { try writer.power("setVRef", setVRef, .unsigned) }
        if let setVRefOfs { try writer.power("setVRefOfs", setVRefOfs, .unsigned) }
        writer.element("updatedTime", updatedTime)
        if let doeModesEnabled { writer.hexElement("doeModesEnabled", UInt64(doeModesEnabled.rawValue), bytes: 1, csipaus: true) }
        if let vppModesEnabled, csipaus == .v1_3 { writer.hexElement("vppModesEnabled", UInt64(vppModesEnabled.rawValue), bytes: 1, csipaus: true) }
        return try writer.finish()
    }
}

/// `DERAvailability`: what the site could deliver now. Durations in seconds, powers in W.
public struct DERAvailabilityReport: Hashable, Sendable {
    /// `readingTime`: seconds since the Unix epoch (server time).
    public var readingTime: Int64
    /// `availabilityDuration`: how long the site can deliver `statWAvail`, s (stored energy above the
    /// reserve ÷ that power); nil omits it.
    public var availabilityDurationSeconds: UInt32?
    /// `maxChargeDuration`: how long the site can charge at its most charge power, s; nil omits it.
    public var maxChargeDurationSeconds: UInt32?
    /// `reserveChargePercent`: the share of usable energy kept as reserve, percent (0…100); nil omits it.
    public var reserveChargePercent: Double?
    /// `statWAvail`: the active power the site could add to its output now, W (+ = more discharge);
    /// nil omits it.
    public var availableW: Double?
    /// `statVarAvail`: the reactive power the site could deliver now, var; nil omits it.
    public var availableVar: Double?
    /// The `href` attribute, nil for none.
    public var href: String?

    /// Availability read at `readingTime`; every value nil.
    public init(readingTime: Int64) { self.readingTime = readingTime }

    /// The `DERAvailability` document (2030.5 namespace only).
    public func xml(maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        var writer = XMLWriter(root: "DERAvailability", attributes: href.map { [(name: "href", value: $0)] } ?? [], maximumBytes: maximumBytes)
        if let availabilityDurationSeconds { writer.element("availabilityDuration", availabilityDurationSeconds) }
        if let maxChargeDurationSeconds { writer.element("maxChargeDuration", maxChargeDurationSeconds) }
        writer.element("readingTime", readingTime)
        if let reserveChargePercent { writer.element("reserveChargePercent", try PowerScale.hundredthsPercent(reserveChargePercent, "reserveChargePercent")) }
        if let availableVar { try writer.power("statVarAvail", availableVar, .signed) }
        if let availableW { try writer.power("statWAvail", availableW, .signed) }
        return try writer.finish()
    }
}

/// The value ranges of 2030.5's `{multiplier, value}` types.
enum PowerScale {
    /// `ActivePower`, `ReactivePower`: Int16.
    case signed
    /// `WattHour`, `ApparentPower`, `VoltageRMS`: UInt16.
    case unsigned
    /// An `ActivePower` that is a rating or a limit: Int16, but never negative.
    case unsignedMagnitude

    var range: ClosedRange<Int64> {
        switch self {
        case .signed: Int64(Int16.min)...Int64(Int16.max)
        case .unsigned: 0...Int64(UInt16.max)
        case .unsignedMagnitude: 0...Int64(Int16.max)
        }
    }

    /// `x` as value × 10^multiplier with the smallest multiplier 0…9 whose rounded value fits `range`
    /// (so 5000 W is 5000 × 10^0, 123 456 W is 12 346 × 10^1). `SEP2_VALUE_INVALID` for a value that is not
    /// finite, is out of range or is negative where the type is not.
    static func fit(_ x: Double, _ range: ClosedRange<Int64>, _ what: String) throws(SEP2Error) -> (value: Int64, multiplier: Int8) {
        guard x.isFinite else { throw SEP2Error(.valueInvalid, message: "\(what) is not a finite number") }
        var scale = 1.0
        for multiplier in Int8(0)...9 {
            let scaled = (x / scale).rounded()
            if scaled >= Double(range.lowerBound) && scaled <= Double(range.upperBound) { return (Int64(scaled), multiplier) }
            if x < 0 && range.lowerBound == 0 { break }
            scale *= 10
        }
        throw SEP2Error(.valueInvalid, message: "\(what) \(x) is outside what its 2030.5 type carries")
    }

    /// A percentage (0…100) as hundredths of a percent (`PerCent`, 0…10000).
    static func hundredthsPercent(_ percent: Double, _ what: String) throws(SEP2Error) -> UInt16 {
        guard percent.isFinite, (0...100).contains(percent) else { throw SEP2Error(.valueInvalid, message: "\(what) \(percent) is not a percentage 0…100") }
        return UInt16((percent * 100).rounded())
    }
}

extension XMLWriter {
    /// `<name><displacement>d</displacement><multiplier>-4</multiplier></name>` (`PowerFactor`) for
    /// `pf` in (0, 1]; `SEP2_VALUE_INVALID` outside.
    mutating func powerFactor(_ name: String, _ pf: Double) throws(SEP2Error) {
        guard pf.isFinite, pf > 0, pf <= 1 else { throw SEP2Error(.valueInvalid, message: "\(name) \(pf) is not a power factor in (0, 1]") }
        start(name)
        element("displacement", UInt16((pf * 10_000).rounded()))
        element("multiplier", -4)
        close()
    }

    /// `<name><multiplier>m</multiplier><value>v</value></name>` for `x` in the type's unit.
    mutating func power(_ name: String, _ x: Double, _ scale: PowerScale) throws(SEP2Error) {
        let fitted = try PowerScale.fit(x, scale.range, name)
        start(name)
        element("multiplier", fitted.multiplier)
        element("value", fitted.value)
        close()
    }
}
