public import BessBase
import ControlCore

/// The application service data unit of IEC 60870-5-104 with the standard's field sizes: type
/// identification (1 octet), variable structure qualifier (SQ bit and number of objects), cause of
/// transmission (2 octets: cause, P/N, T, originator address), common address (2 octets) and
/// information objects with 3-octet addresses.
///
/// ## What closes the connection, and what is answered negatively
/// - Frame-level damage (start octet, length, control field: `FrameSplitter`) closes the
///   connection: the stream has no trustworthy boundaries any more.
/// - An ASDU of a type this module does not know decodes (`Information.unknownType`): its header is
///   intact, so the outstation mirrors it with COT 44 and P/N = 1 (`negativeAnswer(_:)`) and the
///   link carries on. So are an unknown cause (COT 45), common address (46) and IOA (47): they are
///   values the outstation checks, not decoding errors.
/// - An ASDU of a known type that breaks the type's structure (no objects, several where one is
///   allowed, SQ = 1 for a command or for several time-tagged objects, object octets that do not
///   match the count exactly, a CP56Time2a with a field out of range, sequence addresses past
///   16 777 215) is a typed error: the peer is broken or hostile, its other fields cannot be
///   trusted, and the connection closes.
public struct ASDU: Hashable, Sendable {
    /// The type identification.
    public var type: TypeID
    /// SQ: the objects are a sequence (one address, then consecutive ones), as `objects`' addresses say.
    public var isSequence: Bool
    /// The cause of transmission, with P/N, T and the originator address.
    public var cause: CauseOfTransmission
    /// The common address of the ASDU (the station); 0xFFFF is the global address.
    public var commonAddress: UInt16
    /// The information objects, or the undecoded octets of an unknown type.
    public var information: Information

    /// What follows the header.
    public enum Information: Hashable, Sendable {
        /// The objects of a type this module decodes.
        case objects([InformationObject])
        /// A type this module does not decode: the VSQ's number and the octets, kept so the
        /// outstation can mirror them with COT 44.
        case unknownType(count: UInt8, octets: [UInt8])
    }

    /// An ASDU of known objects; `encoded()` checks that they fit `type`.
    public init(type: TypeID, cause: CauseOfTransmission, commonAddress: UInt16, objects: [InformationObject],
                isSequence: Bool = false) {
        self.type = type
        self.isSequence = isSequence
        self.cause = cause
        self.commonAddress = commonAddress
        self.information = .objects(objects)
    }

    /// The objects (empty for an unknown type).
    public var objects: [InformationObject] {
        if case let .objects(objects) = information { return objects }
        return []
    }

    /// The header octets: type, VSQ, COT, originator, common address.
    static let headerLength = 6
    /// The octets of an information object address.
    static let addressLength = 3
    /// The largest information object address.
    public static let maxAddress: UInt32 = 0xFF_FFFF

    /// Decodes an I-frame's ASDU; see the type's comment for which malformations are errors.
    public init(decoding bytes: some Collection<UInt8>) throws(IEC104Error) {
        let b = Array(bytes)
        guard b.count >= Self.headerLength, b.count <= iec104MaxASDULength else {
            throw IEC104Error(.badLength, message: "ASDU of \(b.count) octets outside \(Self.headerLength)…\(iec104MaxASDULength)")
        }
        type = TypeID(rawValue: b[0])
        isSequence = b[1] & 0x80 != 0
        let count = Int(b[1] & 0x7F)
        cause = CauseOfTransmission(cause: Cause(rawValue: b[2] & 0x3F), negative: b[2] & 0x40 != 0,
                                    test: b[2] & 0x80 != 0, originator: b[3])
        commonAddress = UInt16(b[4]) | UInt16(b[5]) << 8
        guard let layout = type.layout else {
            information = .unknownType(count: UInt8(count), octets: Array(b[Self.headerLength...]))
            return
        }
        try Self.checkStructure(type: type, layout: layout, count: count, isSequence: isSequence)
        let remaining = b.count - Self.headerLength
        let expected = isSequence ? Self.addressLength + count * layout.elementLength
                                  : count * (Self.addressLength + layout.elementLength)
        guard remaining == expected else {
            throw IEC104Error(.badObjectLength, message: "type \(type.rawValue) with \(count) objects\(isSequence ? " in sequence" : "") "
                              + "needs \(expected) octets after the header, has \(remaining)")
        }
        var objects: [InformationObject] = []
        objects.reserveCapacity(count)
        var offset = Self.headerLength
        var address: UInt32 = 0
        for index in 0..<count {
            if !isSequence || index == 0 {
                address = UInt32(b[offset]) | UInt32(b[offset + 1]) << 8 | UInt32(b[offset + 2]) << 16
                offset += Self.addressLength
            } else {
                address += 1
                guard address <= Self.maxAddress else {
                    throw IEC104Error(.badAddress, message: "a sequence of \(count) objects runs past address \(Self.maxAddress)")
                }
            }
            let element = try InformationElement(type: type, octets: b[offset..<(offset + layout.elementLength)])
            offset += layout.elementLength
            objects.append(InformationObject(address: address, element: element))
        }
        information = .objects(objects)
    }

    /// Checks the VSQ against what the type allows.
    static func checkStructure(type: TypeID, layout: TypeID.Layout, count: Int, isSequence: Bool) throws(IEC104Error) {
        guard count >= 1 else { throw IEC104Error(.badVSQ, message: "type \(type.rawValue) with no objects") }
        guard !layout.singleObject || (count == 1 && !isSequence) else {
            throw IEC104Error(.badVSQ, message: "type \(type.rawValue) carries one object, not \(count)\(isSequence ? " in sequence" : "")")
        }
        // A single object is laid out alike with SQ = 0 and 1; lib60870 (c104) sends time-tagged
        // monitor types so in interrogation answers, and the bit is kept for an exact round trip.
        guard !isSequence || layout.sequenceAllowed || (count == 1 && !layout.singleObject) else {
            throw IEC104Error(.badVSQ, message: "type \(type.rawValue) is a sequence (SQ = 1) of \(count) objects; only 1 is allowed")
        }
    }

    /// The ASDU's octets (header and objects), every rule of decoding checked, so what this returns
    /// decodes back to `self`.
    public func encoded() throws(IEC104Error) -> [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(64)
        b.append(type.rawValue)
        let count: Int
        switch information {
        case let .unknownType(unknownCount, _): count = Int(unknownCount)
        case let .objects(objects): count = objects.count
        }
        guard count <= 127 else { throw IEC104Error(.tooLarge, message: "\(count) objects, over 127") }
        b.append(UInt8(count) | (isSequence ? 0x80 : 0))
        b.append(cause.cause.rawValue | (cause.negative ? 0x40 : 0) | (cause.test ? 0x80 : 0))
        b.append(cause.originator)
        b.append(UInt8(truncatingIfNeeded: commonAddress))
        b.append(UInt8(truncatingIfNeeded: commonAddress >> 8))
        switch information {
        case let .unknownType(_, octets):
            guard type.layout == nil else {
                throw IEC104Error(.elementMismatch, message: "type \(type.rawValue) is known: give its objects, not octets")
            }
            b += octets
        case let .objects(objects):
            guard let layout = type.layout else {
                throw IEC104Error(.elementMismatch, message: "type \(type.rawValue) has no elements this module encodes")
            }
            try Self.checkStructure(type: type, layout: layout, count: count, isSequence: isSequence)
            for (index, object) in objects.enumerated() {
                guard object.element.type == type else {
                    throw IEC104Error(.elementMismatch, message: "object \(index) is of type \(object.element.type.rawValue) in an ASDU of type \(type.rawValue)")
                }
                guard object.address <= Self.maxAddress else {
                    throw IEC104Error(.badAddress, message: "address \(object.address) over \(Self.maxAddress)")
                }
                if !isSequence || index == 0 {
                    b.append(UInt8(truncatingIfNeeded: object.address))
                    b.append(UInt8(truncatingIfNeeded: object.address >> 8))
                    b.append(UInt8(truncatingIfNeeded: object.address >> 16))
                } else {
                    guard object.address == objects[index - 1].address + 1 else {
                        throw IEC104Error(.badAddress, message: "object \(index) of a sequence at \(object.address), not \(objects[index - 1].address + 1)")
                    }
                }
                try object.element.encode(into: &b)
            }
        }
        guard b.count <= iec104MaxASDULength else {
            throw IEC104Error(.tooLarge, message: "ASDU of \(b.count) octets, over \(iec104MaxASDULength)")
        }
        return b
    }

    /// The same ASDU sent back with another cause, as the standard's confirmations and negative
    /// answers are: `negativeAnswer(.unknownType)` for COT 44, `answer(.activationConfirmation)` for
    /// ACT_CON. The originator address is kept, so the answer reaches the station that asked.
    public func answer(_ cause: Cause, negative: Bool = false) -> ASDU {
        var copy = self
        copy.cause = CauseOfTransmission(cause: cause, negative: negative, test: self.cause.test,
                                         originator: self.cause.originator)
        return copy
    }

    /// The same ASDU mirrored with `cause` and P/N = 1: the answer to an unknown type (44), cause
    /// (45), common address (46) or information object address (47), or a refused command.
    public func negativeAnswer(_ cause: Cause) -> ASDU { answer(cause, negative: true) }
}

/// One information object: its address and its element.
public struct InformationObject: Hashable, Sendable {
    /// The information object address (IOA), 0…16 777 215.
    public var address: UInt32
    /// The information element(s) of the object, by type.
    public var element: InformationElement

    /// An object at `address`.
    public init(address: UInt32, element: InformationElement) {
        self.address = address
        self.element = element
    }
}

/// The type identification of an ASDU. Any octet is a type id; `layout` is nil for those this module
/// does not decode (answered with COT 44).
public struct TypeID: Hashable, Sendable, CustomStringConvertible {
    /// The octet.
    public let rawValue: UInt8

    /// The type with this octet.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// M_SP_NA_1 (1): single point (SIQ).
    public static let singlePoint = TypeID(rawValue: 1)
    /// M_DP_NA_1 (3): double point (DIQ).
    public static let doublePoint = TypeID(rawValue: 3)
    /// M_ME_NC_1 (13): measured value, short floating point, with QDS.
    public static let measuredFloat = TypeID(rawValue: 13)
    /// M_IT_NA_1 (15): integrated totals (BCR).
    public static let integratedTotals = TypeID(rawValue: 15)
    /// M_SP_TB_1 (30): single point with CP56Time2a.
    public static let singlePointWithTime = TypeID(rawValue: 30)
    /// M_DP_TB_1 (31): double point with CP56Time2a.
    public static let doublePointWithTime = TypeID(rawValue: 31)
    /// M_ME_TF_1 (36): measured value, short float, with CP56Time2a.
    public static let measuredFloatWithTime = TypeID(rawValue: 36)
    /// M_IT_TB_1 (37): integrated totals with CP56Time2a.
    public static let integratedTotalsWithTime = TypeID(rawValue: 37)
    /// C_SC_NA_1 (45): single command (SCO).
    public static let singleCommand = TypeID(rawValue: 45)
    /// C_SE_NC_1 (50): set-point command, short float (QOS).
    public static let setpointFloat = TypeID(rawValue: 50)
    /// C_SC_TA_1 (58): single command with CP56Time2a.
    public static let singleCommandWithTime = TypeID(rawValue: 58)
    /// C_SE_TC_1 (63): set-point command, short float, with CP56Time2a.
    public static let setpointFloatWithTime = TypeID(rawValue: 63)
    /// M_EI_NA_1 (70): end of initialisation (COI).
    public static let endOfInitialisation = TypeID(rawValue: 70)
    /// C_IC_NA_1 (100): interrogation command (QOI).
    public static let interrogation = TypeID(rawValue: 100)
    /// C_CI_NA_1 (101): counter interrogation command (QCC).
    public static let counterInterrogation = TypeID(rawValue: 101)
    /// C_CS_NA_1 (103): clock synchronisation command (CP56Time2a).
    public static let clockSynchronisation = TypeID(rawValue: 103)

    /// How a known type's objects are laid out.
    struct Layout {
        /// Octets of one object's element(s), without its address.
        var elementLength: Int
        /// SQ = 1 is allowed (the untimed monitor types).
        var sequenceAllowed: Bool
        /// Exactly one object (commands and system information).
        var singleObject: Bool
    }

    /// The layout of a type this module decodes; nil for any other.
    var layout: Layout? {
        switch rawValue {
        case 1, 3: Layout(elementLength: 1, sequenceAllowed: true, singleObject: false)
        case 13, 15: Layout(elementLength: 5, sequenceAllowed: true, singleObject: false)
        case 30, 31: Layout(elementLength: 8, sequenceAllowed: false, singleObject: false)
        case 36, 37: Layout(elementLength: 12, sequenceAllowed: false, singleObject: false)
        case 45, 70, 100, 101: Layout(elementLength: 1, sequenceAllowed: false, singleObject: true)
        case 50: Layout(elementLength: 5, sequenceAllowed: false, singleObject: true)
        case 58: Layout(elementLength: 8, sequenceAllowed: false, singleObject: true)
        case 63: Layout(elementLength: 12, sequenceAllowed: false, singleObject: true)
        case 103: Layout(elementLength: 7, sequenceAllowed: false, singleObject: true)
        default: nil
        }
    }

    /// True for the types this module decodes.
    public var isKnown: Bool { layout != nil }

    /// The standard's name (`M_ME_TF_1`), or `TYPE_<n>`.
    public var description: String {
        switch rawValue {
        case 1: "M_SP_NA_1"
        case 3: "M_DP_NA_1"
        case 13: "M_ME_NC_1"
        case 15: "M_IT_NA_1"
        case 30: "M_SP_TB_1"
        case 31: "M_DP_TB_1"
        case 36: "M_ME_TF_1"
        case 37: "M_IT_TB_1"
        case 45: "C_SC_NA_1"
        case 50: "C_SE_NC_1"
        case 58: "C_SC_TA_1"
        case 63: "C_SE_TC_1"
        case 70: "M_EI_NA_1"
        case 100: "C_IC_NA_1"
        case 101: "C_CI_NA_1"
        case 103: "C_CS_NA_1"
        default: "TYPE_\(rawValue)"
        }
    }
}

/// The cause of transmission field (2 octets): cause (6 bits), P/N (negative confirmation), T (test)
/// and the originator address.
public struct CauseOfTransmission: Hashable, Sendable {
    /// The cause.
    public var cause: Cause
    /// P/N: a negative confirmation.
    public var negative: Bool
    /// T: a test ASDU.
    public var test: Bool
    /// The originator address (0 when not used).
    public var originator: UInt8

    /// A cause with its flags.
    public init(cause: Cause, negative: Bool = false, test: Bool = false, originator: UInt8 = 0) {
        self.cause = cause
        self.negative = negative
        self.test = test
        self.originator = originator
    }
}

/// A cause of transmission, 0…63 (IEC 60870-5-101 §7.2.3). Any value decodes; an outstation answers
/// one it does not expect with COT 45.
public struct Cause: Hashable, Sendable, CustomStringConvertible {
    /// The 6-bit value.
    public let rawValue: UInt8

    /// The cause `rawValue` (its low 6 bits).
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x3F }

    /// 1: periodic, cyclic.
    public static let periodic = Cause(rawValue: 1)
    /// 2: background scan.
    public static let background = Cause(rawValue: 2)
    /// 3: spontaneous.
    public static let spontaneous = Cause(rawValue: 3)
    /// 4: initialised.
    public static let initialised = Cause(rawValue: 4)
    /// 5: request or requested.
    public static let request = Cause(rawValue: 5)
    /// 6: activation.
    public static let activation = Cause(rawValue: 6)
    /// 7: activation confirmation.
    public static let activationConfirmation = Cause(rawValue: 7)
    /// 8: deactivation.
    public static let deactivation = Cause(rawValue: 8)
    /// 9: deactivation confirmation.
    public static let deactivationConfirmation = Cause(rawValue: 9)
    /// 10: activation termination.
    public static let activationTermination = Cause(rawValue: 10)
    /// 11: return information caused by a remote command.
    public static let returnRemote = Cause(rawValue: 11)
    /// 12: return information caused by a local command.
    public static let returnLocal = Cause(rawValue: 12)
    /// 20: interrogated by station interrogation.
    public static let interrogatedByStation = Cause(rawValue: 20)
    /// 21…36: interrogated by group 1…16 (nil outside 1…16).
    public static func interrogatedByGroup(_ group: Int) -> Cause? {
        (1...16).contains(group) ? Cause(rawValue: UInt8(20 + group)) : nil
    }
    /// 37: requested by general counter request.
    public static let requestedByGeneralCounter = Cause(rawValue: 37)
    /// 44: unknown type identification.
    public static let unknownType = Cause(rawValue: 44)
    /// 45: unknown cause of transmission.
    public static let unknownCause = Cause(rawValue: 45)
    /// 46: unknown common address of ASDU.
    public static let unknownCommonAddress = Cause(rawValue: 46)
    /// 47: unknown information object address.
    public static let unknownObjectAddress = Cause(rawValue: 47)

    /// The number, as interoperability lists print it.
    public var description: String { String(rawValue) }
}
