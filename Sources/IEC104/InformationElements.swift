import BessBase
import ControlCore

/// The information elements of the types a BESS outstation serves (IEC 60870-5-101 §7.2.6, §7.3).
/// Every flag octet is kept whole (reserved bits included), so a decoded element encodes back to
/// the octets it came from.
public enum InformationElement: Hashable, Sendable {
    /// M_SP_NA_1 (1): SIQ, the state and its quality.
    case singlePoint(Bool, Quality)
    /// M_DP_NA_1 (3): DIQ.
    case doublePoint(DoublePointState, Quality)
    /// M_ME_NC_1 (13): IEEE 754 short float and QDS.
    case measuredFloat(Float, Quality)
    /// M_IT_NA_1 (15): BCR.
    case integratedTotals(BinaryCounterReading)
    /// M_SP_TB_1 (30): SIQ and CP56Time2a.
    case singlePointWithTime(Bool, Quality, CP56Time2a)
    /// M_DP_TB_1 (31): DIQ and CP56Time2a.
    case doublePointWithTime(DoublePointState, Quality, CP56Time2a)
    /// M_ME_TF_1 (36): short float, QDS and CP56Time2a.
    case measuredFloatWithTime(Float, Quality, CP56Time2a)
    /// M_IT_TB_1 (37): BCR and CP56Time2a.
    case integratedTotalsWithTime(BinaryCounterReading, CP56Time2a)
    /// C_SC_NA_1 (45): SCO.
    case singleCommand(SingleCommand)
    /// C_SE_NC_1 (50): short float and QOS.
    case setpointFloat(Float, SetpointQualifier)
    /// C_SC_TA_1 (58): SCO and CP56Time2a.
    case singleCommandWithTime(SingleCommand, CP56Time2a)
    /// C_SE_TC_1 (63): short float, QOS and CP56Time2a.
    case setpointFloatWithTime(Float, SetpointQualifier, CP56Time2a)
    /// M_EI_NA_1 (70): COI, the cause of initialisation (0 local power on, 1 local manual reset,
    /// 2 remote reset; bit 7 = after a change of local parameters).
    case endOfInitialisation(UInt8)
    /// C_IC_NA_1 (100): QOI, 20 = station interrogation, 21…36 = group 1…16.
    case interrogation(UInt8)
    /// C_CI_NA_1 (101): QCC, request RQT (bits 0–5: 5 = general counter request) and freeze FRZ (bits 6–7).
    case counterInterrogation(UInt8)
    /// C_CS_NA_1 (103): the time to set.
    case clockSynchronisation(CP56Time2a)

    /// The type whose objects carry this element.
    public var type: TypeID {
        switch self {
        case .singlePoint: .singlePoint
        case .doublePoint: .doublePoint
        case .measuredFloat: .measuredFloat
        case .integratedTotals: .integratedTotals
        case .singlePointWithTime: .singlePointWithTime
        case .doublePointWithTime: .doublePointWithTime
        case .measuredFloatWithTime: .measuredFloatWithTime
        case .integratedTotalsWithTime: .integratedTotalsWithTime
        case .singleCommand: .singleCommand
        case .setpointFloat: .setpointFloat
        case .singleCommandWithTime: .singleCommandWithTime
        case .setpointFloatWithTime: .setpointFloatWithTime
        case .endOfInitialisation: .endOfInitialisation
        case .interrogation: .interrogation
        case .counterInterrogation: .counterInterrogation
        case .clockSynchronisation: .clockSynchronisation
        }
    }

    /// Decodes the element of a known `type` from exactly its octets (the caller checked the length).
    init(type: TypeID, octets: ArraySlice<UInt8>) throws(IEC104Error) {
        let o = Array(octets)
        func float(_ at: Int) -> Float {
            Float(bitPattern: UInt32(o[at]) | UInt32(o[at + 1]) << 8 | UInt32(o[at + 2]) << 16 | UInt32(o[at + 3]) << 24)
        }
        func time(_ at: Int) throws(IEC104Error) -> CP56Time2a { try CP56Time2a(decoding: o[at..<(at + 7)]) }
        func counter() -> BinaryCounterReading {
            BinaryCounterReading(value: Int32(bitPattern: UInt32(o[0]) | UInt32(o[1]) << 8 | UInt32(o[2]) << 16 | UInt32(o[3]) << 24),
                                 flags: o[4])
        }
        switch type.rawValue {
        case 1: self = .singlePoint(o[0] & 0x01 != 0, Quality(rawValue: o[0] & 0xFE))
        case 3: self = .doublePoint(DoublePointState(rawValue: o[0] & 0x03)!, Quality(rawValue: o[0] & 0xFC))
        case 13: self = .measuredFloat(float(0), Quality(rawValue: o[4]))
        case 15: self = .integratedTotals(counter())
        case 30: self = .singlePointWithTime(o[0] & 0x01 != 0, Quality(rawValue: o[0] & 0xFE), try time(1))
        case 31: self = .doublePointWithTime(DoublePointState(rawValue: o[0] & 0x03)!, Quality(rawValue: o[0] & 0xFC), try time(1))
        case 36: self = .measuredFloatWithTime(float(0), Quality(rawValue: o[4]), try time(5))
        case 37: self = .integratedTotalsWithTime(counter(), try time(5))
        case 45: self = .singleCommand(SingleCommand(rawValue: o[0]))
        case 50: self = .setpointFloat(float(0), SetpointQualifier(rawValue: o[4]))
        case 58: self = .singleCommandWithTime(SingleCommand(rawValue: o[0]), try time(1))
        case 63: self = .setpointFloatWithTime(float(0), SetpointQualifier(rawValue: o[4]), try time(5))
        case 70: self = .endOfInitialisation(o[0])
        case 100: self = .interrogation(o[0])
        case 101: self = .counterInterrogation(o[0])
        case 103: self = .clockSynchronisation(try time(0))
        default: throw IEC104Error(.elementMismatch, message: "type \(type.rawValue) has no elements this module decodes")
        }
    }

    /// Appends the element's octets; a time tag with a field out of range is `IEC104_BAD_TIME`.
    func encode(into b: inout [UInt8]) throws(IEC104Error) {
        func float(_ value: Float) {
            let bits = value.bitPattern
            b += [UInt8(truncatingIfNeeded: bits), UInt8(truncatingIfNeeded: bits >> 8),
                  UInt8(truncatingIfNeeded: bits >> 16), UInt8(truncatingIfNeeded: bits >> 24)]
        }
        func time(_ tag: CP56Time2a) throws(IEC104Error) {
            try tag.validate()
            tag.encode(into: &b)
        }
        func counter(_ reading: BinaryCounterReading) {
            let bits = UInt32(bitPattern: reading.value)
            b += [UInt8(truncatingIfNeeded: bits), UInt8(truncatingIfNeeded: bits >> 8),
                  UInt8(truncatingIfNeeded: bits >> 16), UInt8(truncatingIfNeeded: bits >> 24), reading.flags]
        }
        switch self {
        case let .singlePoint(on, quality): b.append(quality.rawValue & 0xFE | (on ? 1 : 0))
        case let .doublePoint(state, quality): b.append(quality.rawValue & 0xFC | state.rawValue)
        case let .measuredFloat(value, quality): float(value); b.append(quality.rawValue)
        case let .integratedTotals(reading): counter(reading)
        case let .singlePointWithTime(on, quality, tag): b.append(quality.rawValue & 0xFE | (on ? 1 : 0)); try time(tag)
        case let .doublePointWithTime(state, quality, tag): b.append(quality.rawValue & 0xFC | state.rawValue); try time(tag)
        case let .measuredFloatWithTime(value, quality, tag): float(value); b.append(quality.rawValue); try time(tag)
        case let .integratedTotalsWithTime(reading, tag): counter(reading); try time(tag)
        case let .singleCommand(command): b.append(command.rawValue)
        case let .setpointFloat(value, qualifier): float(value); b.append(qualifier.rawValue)
        case let .singleCommandWithTime(command, tag): b.append(command.rawValue); try time(tag)
        case let .setpointFloatWithTime(value, qualifier, tag): float(value); b.append(qualifier.rawValue); try time(tag)
        case let .endOfInitialisation(coi): b.append(coi)
        case let .interrogation(qoi): b.append(qoi)
        case let .counterInterrogation(qcc): b.append(qcc)
        case let .clockSynchronisation(tag): try time(tag)
        }
    }
}

/// The quality bits of SIQ, DIQ and QDS: IV, NT, SB, BL and (QDS only) OV. Other bits are kept as
/// received; for SIQ and DIQ the state bits are not part of it.
public struct Quality: OptionSet, Hashable, Sendable {
    /// The octet's quality bits.
    public let rawValue: UInt8
    /// The bits `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// IV: invalid.
    public static let invalid = Quality(rawValue: 0x80)
    /// NT: not topical (not updated within its time).
    public static let notTopical = Quality(rawValue: 0x40)
    /// SB: substituted (by an operator or automatic source).
    public static let substituted = Quality(rawValue: 0x20)
    /// BL: blocked for transmission.
    public static let blocked = Quality(rawValue: 0x10)
    /// OV: overflow (QDS of measured values only).
    public static let overflow = Quality(rawValue: 0x01)
    /// A good value: no bit set.
    public static let good: Quality = []
}

/// DPI, the state of a double point.
public enum DoublePointState: UInt8, Hashable, Sendable, CaseIterable {
    /// 0: indeterminate or intermediate.
    case intermediate = 0
    /// 1: determined state OFF.
    case off = 1
    /// 2: determined state ON.
    case on = 2
    /// 3: indeterminate (faulty).
    case indeterminate = 3
}

/// BCR, a binary counter reading: a signed 32-bit count, its sequence number and the CY (carry),
/// CA (adjusted) and IV (invalid) flags.
public struct BinaryCounterReading: Hashable, Sendable {
    /// The counter value.
    public var value: Int32
    /// The flags octet: sequence number (bits 0–4), CY 0x20, CA 0x40, IV 0x80.
    public var flags: UInt8

    /// A reading from its value and flags octet.
    public init(value: Int32, flags: UInt8) {
        self.value = value
        self.flags = flags
    }

    /// A reading from its parts; `sequence` is taken modulo 32.
    public init(value: Int32, sequence: UInt8, carry: Bool = false, adjusted: Bool = false, invalid: Bool = false) {
        self.init(value: value, flags: sequence & 0x1F | (carry ? 0x20 : 0) | (adjusted ? 0x40 : 0) | (invalid ? 0x80 : 0))
    }

    /// SQ: the sequence number, 0…31.
    public var sequence: UInt8 { flags & 0x1F }
    /// CY: the counter overflowed in the period.
    public var carry: Bool { flags & 0x20 != 0 }
    /// CA: the counter was adjusted in the period.
    public var adjusted: Bool { flags & 0x40 != 0 }
    /// IV: the reading is invalid.
    public var invalid: Bool { flags & 0x80 != 0 }
}

/// SCO, the single command octet: SCS (bit 0, on), QU (bits 2–6, pulse qualifier) and S/E (bit 7,
/// select rather than execute).
public struct SingleCommand: Hashable, Sendable {
    /// The octet.
    public var rawValue: UInt8
    /// The octet as received.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A command from its parts; `qualifier` (QU) is taken modulo 32.
    public init(on: Bool, select: Bool = false, qualifier: UInt8 = 0) {
        rawValue = (on ? 0x01 : 0) | (qualifier & 0x1F) << 2 | (select ? 0x80 : 0)
    }

    /// SCS: on.
    public var on: Bool { rawValue & 0x01 != 0 }
    /// S/E: select (true) or execute (false).
    public var select: Bool { rawValue & 0x80 != 0 }
    /// QU: 0 no additional definition, 1 short pulse, 2 long pulse, 3 persistent output.
    public var qualifier: UInt8 { (rawValue >> 2) & 0x1F }
}

/// QOS, the qualifier of a set-point command: QL (bits 0–6) and S/E (bit 7, select rather than execute).
public struct SetpointQualifier: Hashable, Sendable {
    /// The octet.
    public var rawValue: UInt8
    /// The octet as received.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A qualifier from its parts; `qualifier` (QL) is taken modulo 128.
    public init(select: Bool, qualifier: UInt8 = 0) { rawValue = qualifier & 0x7F | (select ? 0x80 : 0) }

    /// S/E: select (true) or execute (false).
    public var select: Bool { rawValue & 0x80 != 0 }
    /// QL, 0 = default.
    public var qualifier: UInt8 { rawValue & 0x7F }
}
