import BessBase
import ControlCore

/// CFG-3, the extended configuration frame of C37.118.2-2011 (frame type 5, Table 10), decoded into
/// the same `Configuration` as CFG-2: the fields a data frame's layout depends on (IDCODE, FORMAT,
/// PHNMR, ANNMR, DGNMR, FNOM, CFGCNT, DATA_RATE) are CFG-2's; the rest is `PMUExtendedConfiguration`.
///
/// Layout of the body: CONT_IDX (2), TIME_BASE (4), NUM_PMU (2); per PMU STN (name), IDCODE (2),
/// G_PMU_ID (16), FORMAT (2), PHNMR, ANNMR, DGNMR (2 each), CHNAM (PHNMR + ANNMR + 16 × DGNMR names),
/// PHSCALE (12 per phasor), ANSCALE (8 per analog), DIGUNIT (4 per digital word), PMU_LAT, PMU_LON,
/// PMU_ELEV (float32 each), SVC_CLASS (1), WINDOW (int32), GRP_DLY (int32), FNOM (2), CFGCNT (2);
/// then DATA_RATE (2). A name is one length byte (0…255) and that many bytes of UTF-8.

/// PHSCALE: one phasor's scaling and flags (CFG-3).
public struct PhasorScale: Hashable, Sendable {
    /// First word, bits 15–0 of its high half: how the data was modified (0 when it was not): bit 0
    /// reserved, 1 up-sampled with interpolation, 2 with extrapolation, 3 down-sampled by reselection,
    /// 4 with an FIR filter, 5 with a non-FIR filter, 6 filtered, 7 magnitude calibrated, 8 phase
    /// calibrated, 9 phase rotated, 10 pseudo-phasor, 15 modified otherwise.
    public var modificationFlags: UInt16
    /// The phasor type byte: bit 3 current (else voltage), bits 2–0 the component (0 zero sequence,
    /// 1 positive, 2 negative, 4 phase A, 5 B, 6 C).
    public var typeIndication: UInt8
    /// The byte left to the user.
    public var userDesignation: UInt8
    /// Y: the factor to primary volts or amperes (1 for float phasors already scaled).
    public var scale: Float
    /// θ: the angle adjustment in radians (0 for float phasors already adjusted).
    public var angleOffset: Float

    /// A phasor's scaling from its PHSCALE fields.
    public init(modificationFlags: UInt16, typeIndication: UInt8, userDesignation: UInt8, scale: Float, angleOffset: Float) {
        self.modificationFlags = modificationFlags
        self.typeIndication = typeIndication
        self.userDesignation = userDesignation
        self.scale = scale
        self.angleOffset = angleOffset
    }

    /// Whether the phasor is a current (else a voltage).
    public var isCurrent: Bool { typeIndication & 0x08 != 0 }
    /// Bits 2–0 of the type byte.
    public var component: UInt8 { typeIndication & 0x07 }
}

/// ANSCALE: one analog's linear scaling (CFG-3): value = magnitude × raw + offset.
public struct AnalogScale: Hashable, Sendable {
    /// M, the magnitude factor.
    public var magnitude: Float
    /// B, the offset.
    public var offset: Float

    /// An analog's scaling from its ANSCALE fields.
    public init(magnitude: Float, offset: Float) {
        self.magnitude = magnitude
        self.offset = offset
    }
}

/// What CFG-3 says about one PMU beyond CFG-2.
public struct PMUExtendedConfiguration: Hashable, Sendable {
    /// G_PMU_ID: the 16-byte global PMU ID, as sent.
    public var globalID: [UInt8]
    /// PHSCALE, one per phasor.
    public var phasorScales: [PhasorScale]
    /// ANSCALE, one per analog.
    public var analogScales: [AnalogScale]
    /// PMU_LAT in degrees (WGS 84, + north); infinity when unspecified.
    public var latitude: Float
    /// PMU_LON in degrees (WGS 84, + east); infinity when unspecified.
    public var longitude: Float
    /// PMU_ELEV in metres above mean sea level; infinity when unspecified.
    public var elevation: Float
    /// SVC_CLASS as its ASCII code: `M` (0x4D, measurement) or `P` (0x50, protection) in 2011.
    public var serviceClass: UInt8
    /// WINDOW: the measurement window in µs, filters included.
    public var windowMicroseconds: Int32
    /// GRP_DLY: the measurement's group delay in µs, filters included.
    public var groupDelayMicroseconds: Int32
}

extension Configuration {
    /// The fewest bytes a CFG-3 PMU takes: STN's length byte, IDCODE, G_PMU_ID, FORMAT, three counts,
    /// PMU_LAT/LON/ELEV, SVC_CLASS, WINDOW, GRP_DLY, FNOM and CFGCNT.
    static let smallestExtendedPMU = 1 + 2 + 16 + 2 + 6 + 12 + 1 + 4 + 4 + 2 + 2

    /// One PMU of a CFG-3: every length byte and count is checked against the bytes left before the
    /// names or scales it announces are read or allocated.
    static func extendedPMU(_ reader: inout ByteReader, index: Int, limits: FrameLimits) throws(SynchrophasorError) -> PMUConfiguration {
        let station = try lengthPrefixedName(&reader, "STN of PMU \(index)")
        let idcode = try reader.uint16("IDCODE of PMU \(index)")
        let globalID = Array(try reader.take(16, "G_PMU_ID of PMU \(index)"))
        let format = try Self.format(&reader, index: index)
        let (phasors, analogs, digitals) = try Self.counts(&reader, index: index, limits: limits)
        // Every name takes at least its length byte; the scales and the fixed fields follow them.
        let names = phasors + analogs + 16 * digitals
        let after = 12 * phasors + 8 * analogs + 4 * digitals + 12 + 1 + 4 + 4 + 2 + 2
        guard names + after <= reader.count else {
            throw SynchrophasorError(.configurationInvalid, message: "PMU \(index) announces \(names) channel names, needing at least \(names + after) bytes; \(reader.count) left")
        }
        var channelNames: [String] = []
        channelNames.reserveCapacity(names)
        for channel in 0..<names { channelNames.append(try lengthPrefixedName(&reader, "CHNAM \(channel) of PMU \(index)")) }
        guard after <= reader.count else {
            throw SynchrophasorError(.configurationInvalid, message: "PMU \(index)'s names leave \(reader.count) bytes, its scales and fields need \(after)")
        }
        var phasorScales: [PhasorScale] = []
        phasorScales.reserveCapacity(phasors)
        for _ in 0..<phasors {
            let flags = try reader.uint16()
            let kind = try reader.uint8()
            let user = try reader.uint8()
            phasorScales.append(PhasorScale(modificationFlags: flags, typeIndication: kind, userDesignation: user,
                                            scale: try reader.float32(), angleOffset: try reader.float32()))
        }
        var analogScales: [AnalogScale] = []
        analogScales.reserveCapacity(analogs)
        for _ in 0..<analogs { analogScales.append(AnalogScale(magnitude: try reader.float32(), offset: try reader.float32())) }
        var digitalUnits: [UInt32] = []
        digitalUnits.reserveCapacity(digitals)
        for _ in 0..<digitals { digitalUnits.append(try reader.uint32()) }
        let latitude = try reader.float32("PMU_LAT of PMU \(index)")
        let longitude = try reader.float32("PMU_LON of PMU \(index)")
        let elevation = try reader.float32("PMU_ELEV of PMU \(index)")
        let serviceClass = try reader.uint8("SVC_CLASS of PMU \(index)")
        let window = Int32(bitPattern: try reader.uint32("WINDOW of PMU \(index)"))
        let delay = Int32(bitPattern: try reader.uint32("GRP_DLY of PMU \(index)"))
        let nominal = try Self.nominalHz(&reader, index: index)
        let count = try reader.uint16("CFGCNT of PMU \(index)")
        return PMUConfiguration(
            stationName: station, idcode: idcode, format: format,
            phasorNames: Array(channelNames[0..<phasors]), analogNames: Array(channelNames[phasors..<(phasors + analogs)]),
            digitalNames: Array(channelNames[(phasors + analogs)...]), phasorUnits: [], analogUnits: [], digitalUnits: digitalUnits,
            nominalHz: nominal, configurationCount: count,
            extended: PMUExtendedConfiguration(
                globalID: globalID, phasorScales: phasorScales, analogScales: analogScales, latitude: latitude, longitude: longitude,
                elevation: elevation, serviceClass: serviceClass, windowMicroseconds: window,
                groupDelayMicroseconds: delay))
    }

    /// A CFG-3 name: its length byte, then that many bytes (checked against what is left), escaped
    /// like every name (printable ASCII, anything else `?`).
    static func lengthPrefixedName(_ reader: inout ByteReader, _ what: @autoclosure () -> String) throws(SynchrophasorError) -> String {
        let length = Int(try reader.uint8(what()))
        return name(try reader.take(length, what()))
    }
}
