public import BessBase
import ControlCore

/// The configuration frames of C37.118.2-2011, decoded within `FrameLimits`: CFG-1 and CFG-2 (one
/// layout) here, CFG-3 in Configuration3.swift; all three give the same `Configuration`.

/// FORMAT: how one PMU's data-frame fields are coded.
public struct DataFormat: Hashable, Sendable {
    /// Bit 0: phasors as magnitude and angle (else real and imaginary).
    public var phasorsPolar: Bool
    /// Bit 1: phasors as float32 (else int16).
    public var phasorsFloat: Bool
    /// Bit 2: analogs as float32 (else int16).
    public var analogsFloat: Bool
    /// Bit 3: FREQ and DFREQ as float32 (else int16).
    public var frequencyFloat: Bool

    /// A format from its four flags.
    public init(phasorsPolar: Bool, phasorsFloat: Bool, analogsFloat: Bool, frequencyFloat: Bool) {
        self.phasorsPolar = phasorsPolar
        self.phasorsFloat = phasorsFloat
        self.analogsFloat = analogsFloat
        self.frequencyFloat = frequencyFloat
    }

    /// The FORMAT word.
    public var rawValue: UInt16 {
        (phasorsPolar ? 1 : 0) | (phasorsFloat ? 2 : 0) | (analogsFloat ? 4 : 0) | (frequencyFloat ? 8 : 0)
    }
}

/// One PMU of a configuration: its names, counts, format and nominal frequency.
public struct PMUConfiguration: Hashable, Sendable {
    /// STN, printable ASCII only (anything else shown as `?`), trailing blanks removed.
    public var stationName: String
    /// The PMU's IDCODE (the data source within the stream).
    public var idcode: UInt16
    /// FORMAT.
    public var format: DataFormat
    /// The phasor channels' names (PHNMR of them).
    public var phasorNames: [String]
    /// The analog channels' names (ANNMR of them).
    public var analogNames: [String]
    /// The digital channels' names, 16 per digital word (16 × DGNMR of them).
    public var digitalNames: [String]
    /// PHUNIT per phasor: bits 31–24 voltage (0) or current (1), 23–0 the scale in 10⁻⁵ V or A per bit.
    public var phasorUnits: [UInt32]
    /// ANUNIT per analog: bits 31–24 the kind (0 point-on-wave, 1 RMS, 2 peak), 23–0 a signed scale.
    public var analogUnits: [UInt32]
    /// DIGUNIT per digital word: the normal-status mask (high half) and valid-inputs mask (low half).
    public var digitalUnits: [UInt32]
    /// FNOM: 50 or 60 (Hz).
    public var nominalHz: Int
    /// CFGCNT: raised by the PMU each time its configuration changes.
    public var configurationCount: UInt16
    /// What only CFG-3 says (global ID, scaling, location, service class, window, group delay); nil
    /// from CFG-1/2. From CFG-3 `phasorUnits` and `analogUnits` are empty: its scaling is here.
    public var extended: PMUExtendedConfiguration? = nil

    /// The PMU's share of a data frame, in bytes: STAT, phasors, FREQ, DFREQ, analogs, digitals.
    public var dataSize: Int {
        2 + phasorNames.count * (format.phasorsFloat ? 8 : 4) + (format.frequencyFloat ? 8 : 4)
            + analogNames.count * (format.analogsFloat ? 4 : 2) + digitalUnits.count * 2
    }
}

/// A decoded configuration frame (CFG-1, CFG-2 or CFG-3): the stream's header, TIME_BASE, its PMUs
/// and DATA_RATE. Data frames decode against it the same way whichever frame it came from.
public struct Configuration: Hashable, Sendable {
    /// The frame's header (IDCODE is the stream's).
    public var header: FrameHeader
    /// TIME_BASE bits 23–0: FRACSEC counts in 1/TIME_BASE s.
    public var timeBase: UInt32
    /// The PMUs, in the order their data appears in a data frame.
    public var pmus: [PMUConfiguration]
    /// DATA_RATE: > 0 frames per second, < 0 seconds per frame.
    public var dataRate: Int16

    /// The length of a data frame under this configuration.
    public var dataFrameSize: Int { Frame.minimumSize + pmus.reduce(0) { $0 + $1.dataSize } }

    /// The seconds between data frames.
    public var framePeriodSeconds: Double { dataRate > 0 ? 1 / Double(dataRate) : -Double(dataRate) }

    /// Decodes a configuration frame, CFG-1, CFG-2 or CFG-3 by its frame type: checked as a frame,
    /// then every count and name length against the bytes left and `limits` before anything is
    /// allocated for it. A CFG-3 split over several frames (CONT_IDX not 0) is refused
    /// (`PMU_CONFIGURATION_FRAGMENTED`): it is not reassembled.
    public init(decoding bytes: [UInt8], limits: FrameLimits = FrameLimits()) throws(SynchrophasorError) {
        try self.init(frame: Frame(decoding: bytes, limits: limits), limits: limits)
    }

    /// Decodes the body of a checked CFG-1, CFG-2 or CFG-3 frame.
    public init(frame: Frame, limits: FrameLimits = FrameLimits()) throws(SynchrophasorError) {
        let extended: Bool
        switch frame.header.type {
        case .configuration1, .configuration2: extended = false
        case .configuration3: extended = true
        default:
            throw SynchrophasorError(.frameTypeUnexpected, message: "frame type \(frame.header.type.rawValue), expected a configuration frame (2, 3 or 5)")
        }
        var reader = ByteReader(frame.body, error: .configurationInvalid)
        if extended {
            let continuation = try reader.uint16("CONT_IDX")
            guard continuation == 0 else {
                throw SynchrophasorError(.configurationFragmented, message: "CFG-3 with CONT_IDX \(continuation): one of several frames, which are not reassembled")
            }
        }
        let base = try reader.uint32("TIME_BASE")
        timeBase = base & 0x00FF_FFFF
        guard timeBase > 0 else { throw SynchrophasorError(.configurationInvalid, message: "TIME_BASE 0") }
        let count = Int(try reader.uint16("NUM_PMU"))
        guard count >= 1, count <= limits.maximumPMUs else {
            throw SynchrophasorError(.configurationInvalid, message: "NUM_PMU \(count) outside 1…\(limits.maximumPMUs)")
        }
        // Each PMU takes at least its fixed fields (no channels, empty names), and DATA_RATE follows.
        let smallest = extended ? Self.smallestExtendedPMU : 30
        guard count * smallest + 2 <= reader.count else {
            throw SynchrophasorError(.configurationInvalid, message: "NUM_PMU \(count) needs at least \(count * smallest + 2) bytes, \(reader.count) left")
        }
        var pmus: [PMUConfiguration] = []
        pmus.reserveCapacity(count)
        for index in 0..<count {
            pmus.append(extended ? try Self.extendedPMU(&reader, index: index, limits: limits) : try Self.pmu(&reader, index: index, limits: limits))
        }
        self.pmus = pmus
        dataRate = Int16(bitPattern: try reader.uint16("DATA_RATE"))
        guard dataRate != 0 else { throw SynchrophasorError(.configurationInvalid, message: "DATA_RATE 0") }
        guard reader.count == 0 else {
            throw SynchrophasorError(.configurationInvalid, message: "\(reader.count) bytes after DATA_RATE")
        }
        header = frame.header
        guard dataFrameSize <= limits.maximumFrameSize else {
            throw SynchrophasorError(.configurationInvalid, message: "its data frames would be \(dataFrameSize) bytes, above \(limits.maximumFrameSize)")
        }
    }

    /// The index of the PMU with `idcode` in the data frame, or nil.
    public func pmuIndex(idcode: UInt16) -> Int? { pmus.firstIndex { $0.idcode == idcode } }

    private static func pmu(_ reader: inout ByteReader, index: Int, limits: FrameLimits) throws(SynchrophasorError) -> PMUConfiguration {
        let station = name(try reader.take(16, "STN of PMU \(index)"))
        let idcode = try reader.uint16("IDCODE of PMU \(index)")
        let format = try Self.format(&reader, index: index)
        let (phasors, analogs, digitals) = try Self.counts(&reader, index: index, limits: limits)
        // Names, units, FNOM and CFGCNT must all fit before any of them is read.
        let names = phasors + analogs + 16 * digitals
        let needed = 16 * names + 4 * (phasors + analogs + digitals) + 4
        guard needed <= reader.count else {
            throw SynchrophasorError(.configurationInvalid, message: "PMU \(index) announces \(names) channel names, needing \(needed) bytes; \(reader.count) left")
        }
        var channelNames: [String] = []
        channelNames.reserveCapacity(names)
        for _ in 0..<names { channelNames.append(name(try reader.take(16))) }
        var units: [UInt32] = []
        units.reserveCapacity(phasors + analogs + digitals)
        for _ in 0..<(phasors + analogs + digitals) { units.append(try reader.uint32()) }
        let nominal = try Self.nominalHz(&reader, index: index)
        let count = try reader.uint16("CFGCNT of PMU \(index)")
        return PMUConfiguration(
            stationName: station, idcode: idcode, format: format,
            phasorNames: Array(channelNames[0..<phasors]), analogNames: Array(channelNames[phasors..<(phasors + analogs)]),
            digitalNames: Array(channelNames[(phasors + analogs)...]),
            phasorUnits: Array(units[0..<phasors]), analogUnits: Array(units[phasors..<(phasors + analogs)]),
            digitalUnits: Array(units[(phasors + analogs)...]),
            nominalHz: nominal, configurationCount: count)
    }

    /// FORMAT, its reserved bits clear.
    static func format(_ reader: inout ByteReader, index: Int) throws(SynchrophasorError) -> DataFormat {
        let word = try reader.uint16("FORMAT of PMU \(index)")
        guard word & 0xFFF0 == 0 else {
            throw SynchrophasorError(.configurationInvalid, message: "FORMAT \(hex(word)) of PMU \(index) sets reserved bits")
        }
        return DataFormat(phasorsPolar: word & 1 != 0, phasorsFloat: word & 2 != 0, analogsFloat: word & 4 != 0, frequencyFloat: word & 8 != 0)
    }

    /// PHNMR, ANNMR and DGNMR, each within `limits`.
    static func counts(_ reader: inout ByteReader, index: Int, limits: FrameLimits) throws(SynchrophasorError) -> (Int, Int, Int) {
        let phasors = Int(try reader.uint16("PHNMR of PMU \(index)"))
        let analogs = Int(try reader.uint16("ANNMR of PMU \(index)"))
        let digitals = Int(try reader.uint16("DGNMR of PMU \(index)"))
        for (field, value) in [("PHNMR", phasors), ("ANNMR", analogs), ("DGNMR", digitals)] where value > limits.maximumChannelsPerKind {
            throw SynchrophasorError(.configurationInvalid, message: "\(field) \(value) of PMU \(index) above \(limits.maximumChannelsPerKind)")
        }
        return (phasors, analogs, digitals)
    }

    /// FNOM as 50 or 60 Hz, its reserved bits clear.
    static func nominalHz(_ reader: inout ByteReader, index: Int) throws(SynchrophasorError) -> Int {
        let fnom = try reader.uint16("FNOM of PMU \(index)")
        guard fnom & 0xFFFE == 0 else {
            throw SynchrophasorError(.configurationInvalid, message: "FNOM \(hex(fnom)) of PMU \(index) sets reserved bits")
        }
        return fnom & 1 == 1 ? 50 : 60
    }

    /// A 16-byte name as safe text: printable ASCII kept, other bytes `?`, trailing blanks and NULs dropped.
    static func name(_ field: ArraySlice<UInt8>) -> String {
        var bytes = Array(field)
        while let last = bytes.last, last == 0x20 || last == 0 { bytes.removeLast() }
        return String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
