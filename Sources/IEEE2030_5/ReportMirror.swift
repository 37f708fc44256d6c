public import BessBase
import ControlCore

/// Where a mirrored meter reads: the site's connection point or the site's one aggregated DER.
public enum MirrorLocation: UInt8, Hashable, Sendable, CaseIterable {
    /// The connection point: `roleFlags` 0x0003 (isMirror | isPremisesAggregationPoint).
    case site = 1
    /// The aggregated DER: `roleFlags` 0x0049 (isMirror | isDER | isSubmeter).
    case der = 2

    /// `roleFlags` (CSIP-AUS Annex A, as cactus reads them).
    public var roleFlags: UInt16 { self == .site ? 0x0003 : 0x0049 }
}

/// A quantity bessd mirrors, and its `ReadingType`: `kind` 37 (power, as CSIP-AUS writes it for W, var, V
/// and Hz) or 12 (energy), `dataQualifier` 2 (average over the post interval), `flowDirection` 1 (forward:
/// the sign of the value carries the direction), and a fixed `powerOfTenMultiplier`.
public enum MirrorQuantity: UInt8, Hashable, Sendable, CaseIterable {
    /// Active power, W (`uom` 38), multiplier 0. Site: + = import; DER: + = discharge (generation).
    case activePowerW = 1
    /// Reactive power, var (`uom` 63), multiplier 0, signed as active power is at each location.
    case reactivePowerVar = 2
    /// Voltage, V (`uom` 29), multiplier −1 (0.1 V).
    case voltageV = 3
    /// Frequency, Hz (`uom` 33), multiplier −2 (0.01 Hz).
    case frequencyHz = 4
    /// Stored energy available, Wh (`uom` 72, `kind` 12), multiplier 0 (CSIP-AUS 1.3 storage).
    case storedEnergyWh = 5

    /// `uom`.
    public var uom: UInt8 {
        switch self {
        case .activePowerW: 38
        case .reactivePowerVar: 63
        case .voltageV: 29
        case .frequencyHz: 33
        case .storedEnergyWh: 72
        }
    }

    /// `kind`.
    public var kind: UInt8 { self == .storedEnergyWh ? 12 : 37 }

    /// `dataQualifier`: 2, the average over the interval.
    public var dataQualifier: UInt8 { 2 }

    /// `flowDirection`: 1 (forward); the value's sign gives the direction.
    public var flowDirection: UInt8 { 1 }

    /// `powerOfTenMultiplier`: a reading's value × 10^this is the quantity in its unit.
    public var powerOfTenMultiplier: Int8 {
        switch self {
        case .voltageV: -1
        case .frequencyHz: -2
        default: 0
        }
    }

    /// `value` in bessd's convention (power + = discharge / export, docs/design/0003) in 2030.5's at
    /// `location`: the site's active and reactive power negated (+ = import), everything else as it is
    /// (the DER's + = discharge is already 2030.5's).
    public func wireValue(_ value: Double, at location: MirrorLocation) -> Double {
        location == .site && (self == .activePowerW || self == .reactivePowerVar) ? -value : value
    }
}

/// Stable mRIDs for the mirror: 32 hex digits, the first 20 of the device's LFDI, one byte for the location,
/// one for the quantity (00 for the usage point itself) and the organisation's IANA private enterprise
/// number as 8 decimal digits, as 2030.5 asks an mRID to end and as CSIP-AUS writes it (sep2tools'
/// `generate_mrid`, cactus's `…0100028547`).
public enum MirrorMRID {
    /// The mRID of the usage point at `location` (`quantity` nil) or of its reading of `quantity`; a PEN
    /// past 8 digits keeps its last 8.
    public static func make(lfdi: String, location: MirrorLocation, quantity: MirrorQuantity? = nil, pen: UInt32) -> String {
        let prefix = String(lfdi.uppercased().prefix(20))
        let digits = String(pen % 100_000_000)
        return prefix + String(repeating: "0", count: 20 - prefix.count) + XMLWriter.hex(UInt64(location.rawValue), bytes: 1)
            + XMLWriter.hex(UInt64(quantity?.rawValue ?? 0), bytes: 1) + String(repeating: "0", count: 8 - digits.count) + digits
    }
}

/// One `MirrorMeterReading` a usage point declares: its mRID and what it reads.
public struct MirrorMeterReadingDefinition: Hashable, Sendable {
    /// `mRID`.
    public var mRID: String
    /// What it reads (its `ReadingType`).
    public var quantity: MirrorQuantity
    /// `description` (String32); nil omits it.
    public var description: String?
    /// `ReadingType.intervalLength`: the post interval, s; nil omits it.
    public var intervalSeconds: UInt32?

    /// A reading of `quantity` named `mRID`.
    public init(mRID: String, quantity: MirrorQuantity, description: String? = nil, intervalSeconds: UInt32? = nil) {
        self.mRID = mRID
        self.quantity = quantity
        self.description = description
        self.intervalSeconds = intervalSeconds
    }
}

/// The `MirrorUsagePoint` bessd posts to the server's MirrorUsagePointList once per location.
public struct MirrorUsagePointReport: Hashable, Sendable {
    /// `mRID`.
    public var mRID: String
    /// `description` (String32); nil omits it.
    public var description: String?
    /// Site or DER (`roleFlags`).
    public var location: MirrorLocation
    /// `deviceLFDI`: the site's LFDI, 40 hex digits.
    public var deviceLFDI: String
    /// The readings it carries.
    public var readings: [MirrorMeterReadingDefinition]
    /// `postRate`, s; nil omits it.
    public var postRateSeconds: UInt32?

    /// A usage point at `location` with `readings`.
    public init(mRID: String, location: MirrorLocation, deviceLFDI: String, readings: [MirrorMeterReadingDefinition]) {
        self.mRID = mRID
        self.location = location
        self.deviceLFDI = deviceLFDI
        self.readings = readings
    }

    /// The `MirrorUsagePoint` document: `serviceCategoryKind` 0 (electricity), `status` 1 (on).
    /// `SEP2_VALUE_INVALID` for a `deviceLFDI` that is not 40 hex digits or a description past 32 bytes.
    public func xml(maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        try ReportCheck.lfdi(deviceLFDI, "deviceLFDI")
        try ReportCheck.string32(description, "description")
        for reading in readings { try ReportCheck.string32(reading.description, "description") }
        var writer = XMLWriter(root: "MirrorUsagePoint", maximumBytes: maximumBytes)
        writer.element("mRID", mRID)
        if let description { writer.element("description", description) }
        writer.hexElement("roleFlags", UInt64(location.roleFlags), bytes: 2)
        writer.element("serviceCategoryKind", 0)
        writer.element("status", 1)
        writer.element("deviceLFDI", deviceLFDI)
        for reading in readings {
            writer.start("MirrorMeterReading")
            writer.element("mRID", reading.mRID)
            if let description = reading.description { writer.element("description", description) }
            let quantity = reading.quantity
            writer.start("ReadingType")
            writer.element("dataQualifier", quantity.dataQualifier)
            writer.element("flowDirection", quantity.flowDirection)
            if let interval = reading.intervalSeconds { writer.element("intervalLength", interval) }
            writer.element("kind", quantity.kind)
            writer.element("powerOfTenMultiplier", quantity.powerOfTenMultiplier)
            writer.element("uom", quantity.uom)
            writer.close()
            writer.close()
        }
        if let postRateSeconds { writer.element("postRate", postRateSeconds) }
        return try writer.finish()
    }
}

/// One reading bessd posts: the average of a quantity over an interval.
public struct MirrorReading: Hashable, Sendable {
    /// The `MirrorMeterReading`'s mRID (as declared in the usage point).
    public var mRID: String
    /// Where it reads (for the sign).
    public var location: MirrorLocation
    /// What it reads (for the unit and multiplier).
    public var quantity: MirrorQuantity
    /// The average over the interval in the quantity's unit (W, var, V, Hz, Wh), **power in bessd's
    /// convention: + = discharge / export**; the document writes 2030.5's (`MirrorQuantity.wireValue`).
    public var average: Double
    /// `timePeriod.start`: the interval's start, seconds since the Unix epoch (server time).
    public var start: Int64
    /// `timePeriod.duration`: the interval's length, s.
    public var durationSeconds: UInt32

    /// The average `average` of `quantity` at `location` over `durationSeconds` from `start`.
    public init(mRID: String, location: MirrorLocation, quantity: MirrorQuantity, average: Double, start: Int64, durationSeconds: UInt32) {
        self.mRID = mRID
        self.location = location
        self.quantity = quantity
        self.average = average
        self.start = start
        self.durationSeconds = durationSeconds
    }

    /// `Reading.value`: the 2030.5-signed average ÷ 10^multiplier, rounded; `SEP2_VALUE_INVALID` when it is not
    /// finite or leaves Int48.
    public func wireValue() throws(SEP2Error) -> Int64 {
        let signed = quantity.wireValue(average, at: location)
        var scale = 1.0
        for _ in 0..<abs(Int(quantity.powerOfTenMultiplier)) { scale *= 10 }
        let value = (quantity.powerOfTenMultiplier < 0 ? signed * scale : signed / scale).rounded()
        let limit = Double(Int64(1) << 47)
        guard value.isFinite, value >= -limit, value < limit else {
            throw SEP2Error(.valueInvalid, message: "reading \(quoted(mRID)) average \(average) does not fit Int48")
        }
        return Int64(value)
    }
}

/// The `MirrorMeterReadingList` bessd posts to a usage point's href every post interval.
public struct MirrorReadingsReport: Hashable, Sendable {
    /// The readings, one `MirrorMeterReading` each.
    public var readings: [MirrorReading]

    /// A list of `readings`.
    public init(readings: [MirrorReading]) { self.readings = readings }

    /// The `MirrorMeterReadingList` document (`all` = `results` = the number of readings).
    public func xml(maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        let count = String(readings.count)
        var writer = XMLWriter(root: "MirrorMeterReadingList", attributes: [(name: "all", value: count), (name: "results", value: count)],
                               maximumBytes: maximumBytes)
        for reading in readings {
            let value = try reading.wireValue()
            writer.start("MirrorMeterReading")
            writer.element("mRID", reading.mRID)
            writer.start("Reading")
            writer.start("timePeriod")
            writer.element("duration", reading.durationSeconds)
            writer.element("start", reading.start)
            writer.close()
            writer.element("value", value)
            writer.close()
            writer.close()
        }
        return try writer.finish()
    }
}
