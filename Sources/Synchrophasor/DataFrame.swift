public import BessBase
import ControlCore

/// Data frames of C37.118.2-2011, decoded against the CFG-2 that describes them.

/// STAT: one PMU's status word in a data frame.
public struct PMUStatus: Hashable, Sendable {
    /// The word as sent.
    public var rawValue: UInt16

    /// A status from its word.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Bits 15–14: 0 good, 1 PMU error (no information about the data), 2 PMU in test mode,
    /// 3 PMU error (do not use the data).
    public var dataError: UInt8 { UInt8(rawValue >> 14) }
    /// The data is good: bits 15–14 are 0.
    public var isDataValid: Bool { dataError == 0 }
    /// Bit 13: the PMU has lost time synchronisation.
    public var pmuSyncError: Bool { rawValue & 0x2000 != 0 }
    /// Bit 12: data sorted by arrival rather than by timestamp.
    public var sortedByArrival: Bool { rawValue & 0x1000 != 0 }
    /// Bit 11: a PMU trigger was detected.
    public var triggerDetected: Bool { rawValue & 0x0800 != 0 }
    /// Bit 10: the configuration changes within a minute (re-read CFG-2).
    public var configurationChanged: Bool { rawValue & 0x0400 != 0 }
    /// Bit 9: the data was modified by post-processing.
    public var dataModified: Bool { rawValue & 0x0200 != 0 }
    /// Bits 8–6: the PMU time quality code (0 not used, 1 < 100 ns … 7 > 10 ms).
    public var timeQuality: UInt8 { UInt8((rawValue >> 6) & 0x7) }
    /// Bits 5–4: time since synchronisation was lost (0 locked or < 10 s, 1 < 100 s, 2 < 1000 s, 3 longer).
    public var unlockedTime: UInt8 { UInt8((rawValue >> 4) & 0x3) }
    /// Bits 3–0: the trigger reason (0 manual, 1 magnitude low, 2 high, 3 phase angle, 4 frequency
    /// high or low, 5 df/dt high, 7 digital; 8–15 user defined).
    public var triggerReason: UInt8 { UInt8(rawValue & 0xF) }
    /// Usable for control: valid data from a synchronised PMU.
    public var isUsable: Bool { isDataValid && !pmuSyncError }
}

/// One phasor as sent: real and imaginary, or magnitude and angle (radians) when the format is polar.
/// Integer phasors are raw counts (magnitudes unsigned; × PHUNIT × 10⁻⁵ gives volts or amperes, an
/// integer angle is in 10⁻⁴ rad).
public struct Phasor: Hashable, Sendable {
    /// Real part, or magnitude.
    public var first: Double
    /// Imaginary part, or angle.
    public var second: Double
    /// Whether `first` and `second` are magnitude and angle.
    public var polar: Bool

    /// A phasor from its two parts.
    public init(first: Double, second: Double, polar: Bool) {
        self.first = first
        self.second = second
        self.polar = polar
    }
}

/// One PMU's measurements in a data frame.
public struct PMUMeasurement: Hashable, Sendable {
    /// The PMU's IDCODE (from the configuration).
    public var idcode: UInt16
    /// STAT.
    public var status: PMUStatus
    /// The phasors, in the configuration's order.
    public var phasors: [Phasor]
    /// The frequency in Hz: an int16 FREQ is the deviation from FNOM in mHz, a float32 the frequency
    /// itself. Nil when the PMU marks it missing (int16 0x8000, float NaN).
    public var frequencyHz: Double?
    /// The rate of change of frequency in Hz/s: an int16 DFREQ is ROCOF × 100, a float32 ROCOF
    /// itself. Nil when missing.
    public var rocofHzPerSecond: Double?
    /// The analog values (int16 counts or float32 as sent).
    public var analogs: [Double]
    /// The digital words.
    public var digitals: [UInt16]
}

/// A decoded data frame.
public struct DataFrame: Hashable, Sendable {
    /// The frame's header (SOC, FRACSEC and its time quality).
    public var header: FrameHeader
    /// Each PMU's measurements, in the configuration's order.
    public var measurements: [PMUMeasurement]

    /// Decodes a data frame: checked as a frame, then its length against the configuration's.
    public init(decoding bytes: [UInt8], configuration: Configuration, limits: FrameLimits = FrameLimits()) throws(SynchrophasorError) {
        try self.init(frame: Frame(decoding: bytes, limits: limits), configuration: configuration)
    }

    /// Decodes the body of a checked data frame against `configuration`.
    public init(frame: Frame, configuration: Configuration) throws(SynchrophasorError) {
        guard frame.header.type == .data else {
            throw SynchrophasorError(.frameTypeUnexpected, message: "frame type \(frame.header.type.rawValue), expected data (0)")
        }
        guard frame.header.idcode == configuration.header.idcode else {
            throw SynchrophasorError(.idcodeUnknown, message: "data frame from stream \(frame.header.idcode), configuration is stream \(configuration.header.idcode)")
        }
        guard frame.header.frameSize == configuration.dataFrameSize else {
            throw SynchrophasorError(.dataMismatch, message: "data frame of \(frame.header.frameSize) bytes, its configuration (CFGCNT \(configuration.pmus.map(\.configurationCount))) implies \(configuration.dataFrameSize)")
        }
        var reader = ByteReader(frame.body, error: .dataMismatch)
        var measurements: [PMUMeasurement] = []
        measurements.reserveCapacity(configuration.pmus.count)
        for pmu in configuration.pmus {
            measurements.append(try Self.measurement(&reader, pmu: pmu))
        }
        header = frame.header
        self.measurements = measurements
    }

    /// The measurements of the PMU with `idcode`.
    public func measurement(idcode: UInt16) throws(SynchrophasorError) -> PMUMeasurement {
        guard let found = measurements.first(where: { $0.idcode == idcode }) else {
            throw SynchrophasorError(.idcodeUnknown, message: "no PMU with IDCODE \(idcode) in this stream (\(measurements.map(\.idcode)))")
        }
        return found
    }

    private static func measurement(_ reader: inout ByteReader, pmu: PMUConfiguration) throws(SynchrophasorError) -> PMUMeasurement {
        let status = PMUStatus(rawValue: try reader.uint16("STAT"))
        let format = pmu.format
        var phasors: [Phasor] = []
        phasors.reserveCapacity(pmu.phasorNames.count)
        for _ in pmu.phasorNames.indices {
            if format.phasorsFloat {
                phasors.append(Phasor(first: Double(try reader.float32()), second: Double(try reader.float32()), polar: format.phasorsPolar))
            } else if format.phasorsPolar {
                let magnitude = Double(try reader.uint16())
                let angle = Double(Int16(bitPattern: try reader.uint16()))
                phasors.append(Phasor(first: magnitude, second: angle, polar: true))
            } else {
                let real = Double(Int16(bitPattern: try reader.uint16()))
                let imaginary = Double(Int16(bitPattern: try reader.uint16()))
                phasors.append(Phasor(first: real, second: imaginary, polar: false))
            }
        }
        let frequency: Double?
        let rocof: Double?
        if format.frequencyFloat {
            let freq = Double(try reader.float32("FREQ"))
            let dfreq = Double(try reader.float32("DFREQ"))
            frequency = freq.isFinite ? freq : nil
            rocof = dfreq.isFinite ? dfreq : nil
        } else {
            let freq = try reader.uint16("FREQ")
            let dfreq = try reader.uint16("DFREQ")
            frequency = freq == 0x8000 ? nil : Double(pmu.nominalHz) + Double(Int16(bitPattern: freq)) / 1000
            rocof = dfreq == 0x8000 ? nil : Double(Int16(bitPattern: dfreq)) / 100
        }
        var analogs: [Double] = []
        analogs.reserveCapacity(pmu.analogNames.count)
        for _ in pmu.analogNames.indices {
            analogs.append(format.analogsFloat ? Double(try reader.float32()) : Double(Int16(bitPattern: try reader.uint16())))
        }
        var digitals: [UInt16] = []
        digitals.reserveCapacity(pmu.digitalUnits.count)
        for _ in pmu.digitalUnits.indices { digitals.append(try reader.uint16()) }
        return PMUMeasurement(idcode: pmu.idcode, status: status, phasors: phasors, frequencyHz: frequency,
                              rocofHzPerSecond: rocof, analogs: analogs, digitals: digitals)
    }
}
