import BessBase
public import BessSystem
import Glibc

/// What one read of a `ByteStream` gave.
public enum StreamRead: Sendable, Equatable {
    /// Octets received (at least one).
    case bytes([UInt8])
    /// Nothing now; poll for more.
    case wouldBlock
    /// The peer closed its side.
    case closed
    /// The stream failed (the reason, for the log).
    case failed(String)
}

/// A connected, non-blocking byte stream the outstation speaks IEC 104 over: plain TCP
/// (`TCPStream`) or, later, TLS over it. The server only reads, writes, polls the descriptor and
/// names the peer; a transport that wraps another (TLS) keeps its own buffers and answers reads and
/// writes in the same terms. Each stream has one owner, the server thread.
public protocol ByteStream: AnyObject {
    /// The descriptor to poll (readable: call `read`; writable: call `write` again).
    var descriptor: Int32 { get }
    /// Who the peer is, for the journal: `address:port`, or a certificate's subject with TLS.
    var peer: String { get }
    /// The peer's IPv4 address in host byte order (redundancy group and allow-list matching).
    var peerAddress: UInt32 { get }
    /// Reads what is there, at most `limit` octets.
    func read(limit: Int) -> StreamRead
    /// Writes as much of `bytes` as the stream takes now: how many octets, or nil when it failed.
    func write(_ bytes: ArraySlice<UInt8>) -> Int?
    /// Closes the stream (idempotent).
    func close()
    /// Octets already received and decrypted that `poll` cannot see (TLS records read ahead): the
    /// server reads again without waiting for the descriptor.
    var hasPendingInput: Bool { get }
}

extension ByteStream {
    /// A plain socket holds nothing back from `poll`.
    public var hasPendingInput: Bool { false }
}

/// A plain TCP connection (IEC 60870-5-104 without TLS), non-blocking.
public final class TCPStream: ByteStream {
    private var socket: Socket?
    public let descriptor: Int32
    public let peer: String
    public let peerAddress: UInt32

    /// Takes ownership of a connection the listener accepted.
    public init(_ connection: consuming TCPConnection) {
        descriptor = connection.socket.rawValue
        peerAddress = connection.peerAddress
        peer = connection.peer
        socket = connection.takeSocket()
    }

    public func read(limit: Int) -> StreamRead {
        var buffer = [UInt8](repeating: 0, count: limit)
        let received: Result<Int?, SystemCallError>
        switch socket {
        case .some(let socket): received = buffer.withUnsafeMutableBytes { raw in Result { () throws(SystemCallError) in try socket.receive(into: raw) } }
        case .none: return .closed
        }
        switch received {
        case .success(nil): return .wouldBlock
        case .success(0?): return .closed
        case .success(let n?): return .bytes(Array(buffer[..<n]))
        case .failure(let error): return .failed(SystemError.text(error.errno))
        }
    }

    public func write(_ bytes: ArraySlice<UInt8>) -> Int? {
        switch socket {
        case .some(let socket): return bytes.withUnsafeBytes { raw in try? socket.send(raw) }
        case .none: return nil
        }
    }

    public func close() {
        if let socket = socket.take() { try? socket.close() }
    }
}

extension TCPListener {
    /// The next pending connection as a `TCPStream`, or nil when none is waiting. Whom the
    /// outstation admits is decided per group (`allow_from`), by the server.
    public func accept() -> TCPStream? {
        guard let connection = acceptConnection() else { return nil }
        return TCPStream(connection)
    }
}

/// Dotted-quad text of an IPv4 address.
enum IPv4Text {
    static func dotted(_ address: UInt32) -> String { ListenAddress.dotted(address) }
}
