public import BessSystem

/// The outstation's journal codes (`BESS_CODE`).
public enum OutstationLogCode: String, Sendable {
    case connected = "IEC104_CONNECTED"
    /// A connection refused in its TLS handshake (`BESS_TLS_ERROR`: the `TLSError` code) or for
    /// not finishing it in time.
    case tlsRefused = "IEC104_TLS_REFUSED"
    case closed = "IEC104_CLOSED"
    case peerRefused = "IEC104_PEER_REFUSED"
    /// An open connection closed at a reload: its certificate or address no longer passes
    /// `iec104.tls` or its group (`BESS_REASON`).
    case peerRevoked = "IEC104_PEER_REVOKED"
    case connectionsFull = "IEC104_CONNECTIONS_FULL"
    case idle = "IEC104_IDLE"
    case protocolError = "IEC104_PROTOCOL_ERROR"
    case switchover = "IEC104_SWITCHOVER"
    case backlog = "IEC104_BACKLOG"
    case negative = "IEC104_NEGATIVE"
    case clockSync = "IEC104_CLOCK_SYNC"
    case command = "IEC104_COMMAND"
    case commandRefused = "IEC104_COMMAND_REFUSED"
    case internalError = "IEC104_INTERNAL"
    /// Lines an address's peers caused beyond its budget, summed up (`BESS_SUPPRESSED`,
    /// `BESS_REFUSED_COMMANDS`).
    case suppressed = "IEC104_LOG_SUPPRESSED"

    /// True for the codes of commands (their own MESSAGE_ID).
    public var isCommand: Bool { self == .command || self == .commandRefused }
}

extension OutstationLogCode: NoticeCode {
    /// Warning for what a peer did wrong or could not have (and our own error), notice otherwise.
    public var severity: NoticeSeverity {
        switch self {
        case .protocolError, .backlog, .commandRefused, .peerRefused, .tlsRefused, .connectionsFull, .internalError: .warning
        default: .notice
        }
    }

    /// Commands have their catalogue entry; every other line is the outstation's.
    public var topic: NoticeTopic { isCommand ? .iec104Command : .iec104 }
}

/// The journal fields of the outstation's lines beside `BESS_PEER`, `BESS_GROUP`, `BESS_REASON`,
/// `BESS_SUPPRESSED` and `BESS_TLS_ERROR`.
extension NoticeField {
    /// `BESS_IEC104_ERROR`: the `IEC104Error` code a connection was closed for.
    public static let iec104Error = NoticeField("IEC104_ERROR")
    /// `BESS_PEER_ADDRESS`: a TLS peer's address and port, beside its certificate's subject.
    public static let peerAddress = NoticeField("PEER_ADDRESS")
    /// `BESS_PEER_SHA256`: a peer certificate's fingerprint.
    public static let peerSHA256 = NoticeField("PEER_SHA256")
    /// `BESS_COT`, `BESS_TYPE`, `BESS_QOI`: a negative answer's cause, ASDU type and qualifier.
    public static let cot = NoticeField("COT")
    public static let asduType = NoticeField("TYPE")
    public static let qoi = NoticeField("QOI")
    /// `BESS_OFFSET_S`: a control centre's clock minus ours at a clock synchronisation.
    public static let offsetS = NoticeField("OFFSET_S")
    /// `BESS_IOA`, `BESS_VALUE`, `BESS_RESULT`: a command's point, value and outcome.
    public static let ioa = NoticeField("IOA")
    public static let value = NoticeField("VALUE")
    public static let result = NoticeField("RESULT")
    /// `BESS_REFUSED_COMMANDS`: of the lines a window held back, refused commands.
    public static let refusedCommands = NoticeField("REFUSED_COMMANDS")
}

/// What the outstation hands its audit (/metrics and the uplink) besides the journal: every
/// command outcome, whether or not the journal's budget wrote its line, and per source address and
/// window the count of refused commands whose lines the budget held back.
public enum OutstationAuditEntry: Sendable, Equatable {
    /// One command's outcome: `code` `IEC104_COMMAND` or `IEC104_COMMAND_REFUSED`, the journal's
    /// sentence and typed fields (`.reason`: the refusal's code), the same as its `Notice`'s;
    /// `journalled` false when the budget held its line back (it is then in the window's
    /// `refusalsSuppressed`).
    case outcome(code: OutstationLogCode, message: String, fields: [NoticeField: String], journalled: Bool)
    /// `count` refused commands from `peer` (an address) whose lines the budget held back in one window.
    case refusalsSuppressed(count: Int, peer: String, message: String)
}

extension Notice {
    /// The fields by their journal names (`BESS_PEER`…), as the tests read them.
    package var fieldsByName: [String: String] { fields.reduce(into: [:]) { $0[$1.key.rawValue] = $1.value } }
    /// The outstation's code of a notice it wrote; nil for another's.
    package var outstationCode: OutstationLogCode? { code.flatMap(OutstationLogCode.init(rawValue:)) }
}
