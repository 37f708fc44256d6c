public import BessBase
public import ControlCore
public import Glibc

/// A listening IPv4 TCP socket, non-blocking, and the rule for whom it admits: the one TCP listener
/// (the IEC 104 outstation's, `metrics_listen`'s, SCADA's and the HIL plant's Modbus TCP servers').
/// Connections come out non-blocking with Nagle off; `admit(open:refused:)` checks each against the
/// allow-list and the client cap, and `Admission` says when a connection has idled too long. The
/// server's loop owns the connections and polls `descriptor`.
///
/// `@unchecked Sendable`: created on the starting thread, then used only by the server thread.
public final class TCPListener: @unchecked Sendable {
    /// Whom the listener admits and for how long a connection may idle.
    public struct Admission: Sendable {
        /// Whether a peer (IPv4, host byte order) may connect at all.
        public var allows: @Sendable (UInt32) -> Bool
        /// Open connections at most; a newcomer beyond it is refused.
        public var maxClients: Int
        /// A connection with nothing from its peer for this long is closed; nil: never.
        public var idleTimeout: Duration?

        public init(allows: @escaping @Sendable (UInt32) -> Bool = { _ in true }, maxClients: Int = .max, idleTimeout: Duration? = nil) {
            self.allows = allows
            self.maxClients = maxClients
            self.idleTimeout = idleTimeout
        }

        /// Why a newcomer from `peer` is refused with `open` connections already open; nil: admitted.
        public func refusal(of peer: UInt32, open: Int) -> Refusal? {
            guard allows(peer) else { return .notAllowed }
            return open < maxClients ? nil : .full(maxClients)
        }

        /// When a connection last heard from at `lastActivity` is due to close; nil: never.
        public func idleDeadline(since lastActivity: MonotonicInstant) -> MonotonicInstant? {
            idleTimeout.map { lastActivity + $0 }
        }

        /// Whether a connection last heard from at `lastActivity` has idled too long at `now`.
        public func isIdle(since lastActivity: MonotonicInstant, now: MonotonicInstant) -> Bool {
            idleDeadline(since: lastActivity).map { now >= $0 } ?? false
        }
    }

    /// Why a connection was refused.
    public enum Refusal: Equatable, Sendable {
        /// The peer's address is not in the allow-list.
        case notAllowed
        /// This many connections are open already.
        case full(Int)
    }

    /// What `admit(open:)` took.
    public enum Admitted: ~Copyable {
        /// A connection to serve.
        case admitted(TCPConnection)
        /// A connection closed at once, and why (for the journal).
        case refused(peerAddress: UInt32, peerPort: UInt16, Refusal)
    }

    private let socket: Socket
    /// The descriptor to poll for connections.
    public var descriptor: Int32 { socket.rawValue }
    /// The port bound (the one asked for, or the kernel's choice for 0).
    public let port: Int
    /// Whom `admit(open:refused:)` admits; its server thread may replace it (the outstation's
    /// groups, when a reload changes them).
    public var admission: Admission

    /// Binds `address` and listens. The corresponding C functions are `socket`, `setsockopt`
    /// (`SO_REUSEADDR`), `bind`, `listen` and `getsockname`.
    public init(_ address: ListenAddress, backlog: Int32 = 16, admission: Admission = Admission()) throws(SystemCallError) {
        // The host as the kernel reads it (inet_pton refuses what a dotted quad must not hold).
        var inet = in_addr()
        guard inet_pton(AF_INET, address.host, &inet) == 1 else { throw SystemCallError(call: "inet_pton", subject: address.host, errno: EINVAL) }
        let socket = try Socket(family: AF_INET, type: SOCK_STREAM)
        try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
        try socket.bind(SocketAddress(ipv4: UInt32(bigEndian: inet.s_addr), port: address.port), address.description)
        try socket.listen(backlog: backlog, address.description)
        port = Int(try socket.localAddress().ipv4?.port ?? address.port)
        self.socket = socket
        self.admission = admission
    }

    /// Binds `host:port` (IPv4) and listens, admitting whom `admission` admits (everyone by default).
    public convenience init(host: String, port: Int, backlog: Int32 = 16, admission: Admission = Admission()) throws(SystemCallError) {
        guard let address = ListenAddress(host: host, port: UInt16(truncatingIfNeeded: port)) else {
            throw SystemCallError(call: "inet_pton", subject: host, errno: EINVAL)
        }
        try self.init(address, backlog: backlog, admission: admission)
    }

    /// The next pending connection, whoever it is from; nil when none is waiting (or `accept`
    /// failed: the next readiness tries again).
    public func acceptConnection() -> TCPConnection? {
        guard let accepted = try? socket.accept(), let peer = accepted.peer.ipv4 else { return nil }
        let connection = TCPConnection(socket: accepted.socket, peerAddress: peer.address, peerPort: peer.port)
        try? connection.socket.noDelay()
        return connection
    }

    /// The next pending connection checked against `admission` with `open` connections open: the
    /// connection, or its peer and why it was closed; nil when none is waiting. `refused` hears of
    /// a refusal before the close, so whoever sees the close sees what it counted and journalled.
    public func admit(open: Int, refused: (borrowing TCPConnection, Refusal) -> Void = { _, _ in }) -> Admitted? {
        guard let connection = acceptConnection() else { return nil }
        guard let refusal = admission.refusal(of: connection.peerAddress, open: open) else { return .admitted(connection) }
        refused(connection, refusal)
        let address = connection.peerAddress, port = connection.peerPort
        try? connection.socket.close()
        return .refused(peerAddress: address, peerPort: port, refusal)
    }
}

/// A connection a `TCPListener` accepted: the socket and who is on the other end.
public struct TCPConnection: ~Copyable {
    public var socket: Socket
    /// The peer's IPv4 address in host byte order.
    public let peerAddress: UInt32
    public let peerPort: UInt16

    public init(socket: consuming Socket, peerAddress: UInt32, peerPort: UInt16) {
        self.socket = socket
        self.peerAddress = peerAddress
        self.peerPort = peerPort
    }

    /// The socket, for its next owner.
    public consuming func takeSocket() -> Socket { socket }

    /// `address:port`, for the journal.
    public var peer: String { "\(ListenAddress.dotted(peerAddress)):\(peerPort)" }
}
