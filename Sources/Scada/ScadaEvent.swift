public import BessSystem

/// What the SCADA server tells the journal about its clients and their writes: each code's stable
/// `BESS_CODE`, its level and its catalogue entry (a write's outcome, or an event of a connection).
public enum ScadaCode: String, NoticeCode, CaseIterable {
    /// `SCADA_WRITE`: a write to the operator limit, the site setpoint, the var setpoint or a power
    /// factor was accepted (one per point).
    case write = "SCADA_WRITE"
    /// `SCADA_WRITE_REFUSED`: a write was answered with a Modbus exception.
    case writeRefused = "SCADA_WRITE_REFUSED"
    /// `SCADA_PEER_REFUSED`: a connection from outside `scada.allow_from`, closed at accept.
    case peerRefused = "SCADA_PEER_REFUSED"
    /// `SCADA_CLIENTS_FULL`: a connection beyond `scada.max_clients`, closed at accept.
    case clientsFull = "SCADA_CLIENTS_FULL"
    /// `SCADA_CLIENT_IDLE`: a client closed after `scada.idle_timeout_s` without a request.
    case clientIdle = "SCADA_CLIENT_IDLE"
    /// `SCADA_LISTENING`: the server answers (TCP or RTU).
    case listening = "SCADA_LISTENING"

    /// An accepted write and the server listening are notices; every other event is a warning.
    public var severity: NoticeSeverity { self == .write || self == .listening ? .notice : .warning }
    /// A write's outcome (accepted or refused) is a SCADA write event; the rest, of a connection.
    public var topic: NoticeTopic { self == .write || self == .writeRefused ? .scadaWrite : .scada }
}
