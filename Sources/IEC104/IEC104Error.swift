public import BessBase
import ControlCore

/// Why a frame, an ASDU, a time tag or a peer's behaviour was refused: a typed code and a sentence.
///
/// The code is typed (`IEC104Error.Code.badLength`); the journal and the metrics print its stable
/// name (`IEC104_BAD_LENGTH`). Every error this module raises means "close the connection" when it
/// comes from what a peer sent (`closesConnection`); the refusals an outstation answers negatively
/// instead (unknown type, cause, common address or IOA: COT 44–47) are not errors here but decoded
/// values (`ASDU.Information.unknownType`) or the outstation's own decisions. See `ASDU` for the rule.
///
/// The sentence quotes numbers only, never a peer's bytes as text, so it is safe in a log line.
public typealias IEC104Error = CodedError<IEC104ErrorCode>

/// The stable code of an `IEC104Error` (`IEC104Error.Code`): a struct over a private enum, so the set is
/// closed and matched by value, never by text.
public struct IEC104ErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case badStart, badLength, badControl, badVSQ, badObjectLength, badTime, badAddress, elementMismatch
        case tooLarge, badAcknowledgement, badSequence, notStarted, unexpectedFrame, windowFull, t1Expired
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `IEC104_BAD_START`: a frame does not begin with the start octet 0x68.
    public static let badStart = Self(.badStart)
    /// `IEC104_BAD_LENGTH`: an APDU length outside 4…253, an S- or U-frame longer than 4 octets,
    /// or an I-frame whose ASDU is shorter than its 6-octet header.
    public static let badLength = Self(.badLength)
    /// `IEC104_BAD_CONTROL`: control octets that are no I-, S- or U-frame of the standard (an
    /// unknown or combined U function, a reserved bit set).
    public static let badControl = Self(.badControl)
    /// `IEC104_BAD_VSQ`: a variable structure qualifier the type does not allow: no objects, more
    /// than one for a command or system type, SQ = 1 for a command or system type, or SQ = 1 with
    /// several objects of a time-tagged type.
    public static let badVSQ = Self(.badVSQ)
    /// `IEC104_BAD_OBJECT_LENGTH`: the octets after the ASDU header are not exactly the objects
    /// the VSQ announces.
    public static let badObjectLength = Self(.badObjectLength)
    /// `IEC104_BAD_TIME`: a CP56Time2a with a field out of range (ms ≥ 60000, minute ≥ 60,
    /// hour ≥ 24, no such day or month, a reserved bit set) or a time outside 2000…2099.
    public static let badTime = Self(.badTime)
    /// `IEC104_BAD_ADDRESS`: an information object address beyond 3 octets, or addresses of a
    /// sequence (SQ = 1) that do not follow each other.
    public static let badAddress = Self(.badAddress)
    /// `IEC104_ELEMENT_MISMATCH`: an ASDU to encode holds an element of another type than its type id.
    public static let elementMismatch = Self(.elementMismatch)
    /// `IEC104_TOO_LARGE`: an ASDU to encode exceeds 249 octets or 127 objects.
    public static let tooLarge = Self(.tooLarge)
    /// `IEC104_BAD_ACK`: a received N(R) acknowledges I-frames that were never sent.
    public static let badAcknowledgement = Self(.badAcknowledgement)
    /// `IEC104_BAD_SEQUENCE`: a received I-frame's N(S) is not the next one expected, V(R).
    public static let badSequence = Self(.badSequence)
    /// `IEC104_NOT_STARTED`: an I-frame received before STARTDT act or after STOPDT act, or one
    /// to send while data transfer is stopped.
    public static let notStarted = Self(.notStarted)
    /// `IEC104_UNEXPECTED_FRAME`: a STARTDT or STOPDT confirmation this station never asked for.
    public static let unexpectedFrame = Self(.unexpectedFrame)
    /// `IEC104_WINDOW_FULL`: an I-frame to send while k frames are unacknowledged.
    public static let windowFull = Self(.windowFull)
    /// `IEC104_T1_EXPIRED`: a sent I-frame or TESTFR act stayed unacknowledged for t1.
    public static let t1Expired = Self(.t1Expired)

    /// True for refusals of what a peer sent (the connection is closed); false for a caller's
    /// own mistakes on the sending side (`elementMismatch`, `tooLarge`, `windowFull`, `notStarted`
    /// when sending), which the caller fixes and never puts on the wire.
    public var isPeerFault: Bool {
        switch value {
        case .elementMismatch, .tooLarge, .windowFull: false
        default: true
        }
    }

    /// The stable name, as the journal and metrics print it.
    public var description: String {
        switch value {
        case .badStart: "IEC104_BAD_START"
        case .badLength: "IEC104_BAD_LENGTH"
        case .badControl: "IEC104_BAD_CONTROL"
        case .badVSQ: "IEC104_BAD_VSQ"
        case .badObjectLength: "IEC104_BAD_OBJECT_LENGTH"
        case .badTime: "IEC104_BAD_TIME"
        case .badAddress: "IEC104_BAD_ADDRESS"
        case .elementMismatch: "IEC104_ELEMENT_MISMATCH"
        case .tooLarge: "IEC104_TOO_LARGE"
        case .badAcknowledgement: "IEC104_BAD_ACK"
        case .badSequence: "IEC104_BAD_SEQUENCE"
        case .notStarted: "IEC104_NOT_STARTED"
        case .unexpectedFrame: "IEC104_UNEXPECTED_FRAME"
        case .windowFull: "IEC104_WINDOW_FULL"
        case .t1Expired: "IEC104_T1_EXPIRED"
        }
    }
}
