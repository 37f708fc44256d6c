/// What the SCADA server tells the journal about its clients and their writes: a typed code whose
/// name is the stable `BESS_CODE` operators search for, and how the daemon logs it.
public struct ScadaEventCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable { case write, writeRefused, peerRefused, clientsFull, clientIdle }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SCADA_WRITE`: a write to the operator limit or the site setpoint was accepted (one per point).
    public static let write = ScadaEventCode(.write)
    /// `SCADA_WRITE_REFUSED`: a write was answered with a Modbus exception.
    public static let writeRefused = ScadaEventCode(.writeRefused)
    /// `SCADA_PEER_REFUSED`: a connection from outside `scada.allow_from`, closed at accept.
    public static let peerRefused = ScadaEventCode(.peerRefused)
    /// `SCADA_CLIENTS_FULL`: a connection beyond `scada.max_clients`, closed at accept.
    public static let clientsFull = ScadaEventCode(.clientsFull)
    /// `SCADA_CLIENT_IDLE`: a client closed after `scada.idle_timeout_s` without a request.
    public static let clientIdle = ScadaEventCode(.clientIdle)

    /// A write's outcome (accepted or refused), as opposed to an event of the connection.
    public var isWrite: Bool { value == .write || value == .writeRefused }
    /// Logged as a notice (an accepted write); every other event is a warning.
    public var isNotice: Bool { value == .write }

    public var description: String {
        switch value {
        case .write: "SCADA_WRITE"
        case .writeRefused: "SCADA_WRITE_REFUSED"
        case .peerRefused: "SCADA_PEER_REFUSED"
        case .clientsFull: "SCADA_CLIENTS_FULL"
        case .clientIdle: "SCADA_CLIENT_IDLE"
        }
    }
}
