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
    private var socket: Descriptor?
    public let descriptor: Int32
    public let peer: String
    public let peerAddress: UInt32

    /// Takes ownership of a connected, non-blocking socket.
    public init(owning fd: Int32, peerAddress: UInt32, port: UInt16) {
        socket = Descriptor(owning: fd)
        descriptor = fd
        self.peerAddress = peerAddress
        peer = "\(IPv4Text.dotted(peerAddress)):\(port)"
    }

    public func read(limit: Int) -> StreamRead {
        guard socket != nil else { return .closed }
        var buffer = [UInt8](repeating: 0, count: limit)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, limit, 0) }
        if n > 0 { return .bytes(Array(buffer[..<n])) }
        if n == 0 { return .closed }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .wouldBlock }
        return .failed(SystemError.text(code))
    }

    public func write(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard socket != nil else { return nil }
        if bytes.isEmpty { return 0 }
        let n = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n >= 0 { return n }
        let code = errno
        return code == EAGAIN || code == EWOULDBLOCK || code == EINTR ? 0 : nil
    }

    public func close() {
        if let socket = socket.take() { try? socket.close() }
    }
}

/// A listening TCP socket, non-blocking, accepting non-blocking connections.
///
/// `@unchecked Sendable`: created on the starting thread, then used only by the server thread.
public final class TCPListener: @unchecked Sendable {
    private let socket: Descriptor
    /// The descriptor to poll for connections.
    public var descriptor: Int32 { socket.rawValue }
    /// The port bound (the one asked for, or the kernel's choice for 0).
    public let port: Int

    /// Binds `host:port` (IPv4) and listens. The corresponding C functions are `socket`, `bind`, `listen`.
    public init(host: String, port: Int) throws(SystemCallError) {
        let fd = try systemCall("socket") { Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        let owned = Descriptor(owning: fd)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw SystemCallError(call: "inet_pton", subject: host, errno: EINVAL)
        }
        let subject = "\(host):\(port)"
        _ = try withUnsafePointer(to: &address) { pointer throws(SystemCallError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw throws(SystemCallError) in
                try systemCall("bind", subject) { Glibc.bind(fd, raw, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        _ = try systemCall("listen", subject) { Glibc.listen(fd, 16) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.port = Int(UInt16(bigEndian: bound.sin_port))
        socket = owned
    }

    /// The next pending connection as a `TCPStream`, or nil when none is waiting.
    /// The corresponding C functions are `accept` and `fcntl(O_NONBLOCK)`.
    public func accept() -> TCPStream? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.accept(socket.rawValue, $0, &length)
            }
        }
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return TCPStream(owning: fd, peerAddress: UInt32(bigEndian: address.sin_addr.s_addr), port: UInt16(bigEndian: address.sin_port))
    }
}

/// Dotted-quad text of an IPv4 address.
enum IPv4Text {
    static func dotted(_ address: UInt32) -> String {
        "\(address >> 24).\(address >> 16 & 255).\(address >> 8 & 255).\(address & 255)"
    }
}
