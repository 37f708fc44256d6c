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

/// What the outstation hands its audit (/metrics and the uplink) besides the journal: every
/// command outcome, whether or not the journal's budget wrote its line, and per source address and
/// window the count of refused commands whose lines the budget held back.
public enum OutstationAuditEntry: Sendable, Equatable {
    /// One command's outcome: `code` `IEC104_COMMAND` or `IEC104_COMMAND_REFUSED`, the journal's
    /// sentence and fields (`BESS_REASON`: the refusal's code); `journalled` false when the budget
    /// held its line back (it is then in the window's `refusalsSuppressed`).
    case outcome(code: OutstationLogCode, message: String, fields: [String: String], journalled: Bool)
    /// `count` refused commands from `peer` (an address) whose lines the budget held back in one window.
    case refusalsSuppressed(count: Int, peer: String, message: String)
}
