public import Glibc

/// One address as `connect`, `bind` and `sendto` take it (IPv4, IPv6, or a Unix-domain path).
public struct SocketAddress: @unchecked Sendable {
    /// `AF_INET` or `AF_INET6`.
    public var family: Int32
    public var storage: sockaddr_storage
    /// The bytes of `storage` that count.
    public var length: socklen_t

    public init(family: Int32, storage: sockaddr_storage, length: socklen_t) {
        self.family = family
        self.storage = storage
        self.length = length
    }

    /// The IPv4 address `address` (host byte order) and `port`.
    public init(ipv4 address: UInt32, port: UInt16) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            var inet = sockaddr_in()
            inet.sin_family = sa_family_t(AF_INET)
            inet.sin_port = port.bigEndian
            inet.sin_addr.s_addr = address.bigEndian
            raw.storeBytes(of: inet, as: sockaddr_in.self)
        }
        self.init(family: AF_INET, storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
    }

    /// The Unix-domain address `address` (the control socket's path).
    public init(_ address: UnixSocketAddress) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: address.storage, as: sockaddr_un.self) }
        self.init(family: AF_UNIX, storage: storage, length: address.length)
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    public func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemCallError) -> Result) throws(SystemCallError) -> Result {
        var copy = storage
        return try withUnsafeBytes(of: &copy) { raw throws(SystemCallError) in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// For an IPv4 address: the address (host byte order) and the port; nil for IPv6.
    public var ipv4: (address: UInt32, port: UInt16)? {
        guard family == AF_INET else { return nil }
        let inet = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
        return (UInt32(bigEndian: inet.sin_addr.s_addr), UInt16(bigEndian: inet.sin_port))
    }
}

/// A socket with one owner, non-blocking and closed on exec, closed exactly once (by `close()` or
/// when its owner lets it go, as its `Descriptor`). Every call goes through `systemCall`, so a
/// failure is a `SystemCallError` naming the call and carrying the errno.
public struct Socket: ~Copyable {
    private let descriptor: Descriptor
    /// The raw descriptor, to poll or for a call this layer does not wrap; valid while `self` lives.
    public var rawValue: Int32 { descriptor.rawValue }

    /// A new socket of `family` (`AF_INET`, `AF_INET6`) and `type` (`SOCK_STREAM`, `SOCK_DGRAM`),
    /// non-blocking. The corresponding C function is `socket`.
    public init(family: Int32, type: __socket_type) throws(SystemCallError) {
        let kind = Int32(type.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        descriptor = Descriptor(owning: try systemCall("socket") { Glibc.socket(family, kind, 0) })
    }

    /// Takes ownership of an open socket descriptor.
    public init(owning rawValue: Int32) { descriptor = Descriptor(owning: rawValue) }

    /// Hands the descriptor to another owner (a TLS connection that closes it): this no longer closes it.
    public consuming func release() -> Int32 { descriptor.release() }

    /// Closes it now. The corresponding C function is `close`.
    public consuming func close(_ subject: String = "") throws(SystemCallError) { try descriptor.close(subject) }

    /// Sets an integer option. The corresponding C function is `setsockopt`.
    public func setOption(_ level: Int32, _ name: Int32, _ value: Int32, _ subject: String = "") throws(SystemCallError) {
        var value = value
        _ = try systemCall("setsockopt", subject) { setsockopt(rawValue, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// Turns Nagle's algorithm off: a protocol's short frames go at once.
    public func noDelay(_ subject: String = "") throws(SystemCallError) {
        try setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1, subject)
    }

    /// The error a non-blocking `connect` ended with (`SO_ERROR`), 0 when it succeeded.
    public func pendingError(_ subject: String = "") throws(SystemCallError) -> Int32 {
        var failed: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        _ = try systemCall("getsockopt", subject) { getsockopt(rawValue, SOL_SOCKET, SO_ERROR, &failed, &size) }
        return failed
    }

    /// Binds it to `address`. The corresponding C function is `bind`.
    public func bind(_ address: SocketAddress, _ subject: String = "") throws(SystemCallError) {
        _ = try address.withSockaddr { raw, length throws(SystemCallError) in
            try systemCall("bind", subject) { Glibc.bind(rawValue, raw, length) }
        }
    }

    /// Listens for connections. The corresponding C function is `listen`.
    public func listen(backlog: Int32, _ subject: String = "") throws(SystemCallError) {
        _ = try systemCall("listen", subject) { Glibc.listen(rawValue, backlog) }
    }

    /// The address it is bound to. The corresponding C function is `getsockname`.
    public func localAddress() throws(SystemCallError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutableBytes(of: &storage) { raw throws(SystemCallError) in
            try systemCall("getsockname") { getsockname(rawValue, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length) }
        }
        return SocketAddress(family: Int32(storage.ss_family), storage: storage, length: length)
    }

    /// Starts connecting to `address`: true when connected at once, false while the connection is
    /// under way (`EINPROGRESS`, or `EALREADY` after a call retried on EINTR). The corresponding C
    /// function is `connect`.
    public func startConnect(_ address: SocketAddress, _ subject: String = "") throws(SystemCallError) -> Bool {
        do throws(SystemCallError) {
            _ = try address.withSockaddr { raw, length throws(SystemCallError) in
                try systemCall("connect", subject) { Glibc.connect(rawValue, raw, length) }
            }
            return true
        } catch where error.errno == EINPROGRESS || error.errno == EALREADY {
            return false
        }
    }

    /// The next pending connection, non-blocking and closed on exec; nil when none is waiting.
    /// The corresponding C functions are `accept` and `fcntl`.
    public func accept(_ subject: String = "") throws(SystemCallError) -> AcceptedSocket? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd: Int32
        do throws(SystemCallError) {
            fd = try withUnsafeMutableBytes(of: &storage) { raw throws(SystemCallError) in
                try systemCall("accept", subject) { Glibc.accept(rawValue, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length) }
            }
        } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            return nil
        }
        let socket = Socket(owning: fd)
        let flags = try systemCall("fcntl", subject) { fcntl(fd, F_GETFL) }
        _ = try systemCall("fcntl", subject) { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        _ = try systemCall("fcntl", subject) { fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return AcceptedSocket(socket: socket, peer: SocketAddress(family: Int32(storage.ss_family), storage: storage, length: length))
    }

    /// Sends what the socket takes now: how many bytes, 0 when it would block. The corresponding C
    /// function is `send` (no SIGPIPE).
    public func send(_ bytes: UnsafeRawBufferPointer, _ subject: String = "") throws(SystemCallError) -> Int {
        guard !bytes.isEmpty else { return 0 }
        do throws(SystemCallError) {
            return try systemCall("send", subject) { Glibc.send(rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
        } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            return 0
        }
    }

    /// Reads what is there into `buffer`: how many bytes (0: the peer closed), nil when nothing is
    /// there now. The corresponding C function is `recv`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, _ subject: String = "") throws(SystemCallError) -> Int? {
        do throws(SystemCallError) {
            return try systemCall("recv", subject) { Glibc.recv(rawValue, buffer.baseAddress, buffer.count, 0) }
        } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
            return nil
        }
    }
}

/// A connection `Socket.accept` took, and who is on the other end.
public struct AcceptedSocket: ~Copyable {
    public var socket: Socket
    public let peer: SocketAddress
}

extension Socket {
    /// A non-blocking stream socket bound to the Unix-domain `address` and listening with
    /// `backlog`: the control socket. TCP listens through `TCPListener`.
    public static func listening(at address: UnixSocketAddress, backlog: Int32, _ subject: String = "") throws(SystemCallError) -> Socket {
        let socket = try Socket(family: AF_UNIX, type: SOCK_STREAM)
        try socket.bind(SocketAddress(address), subject)
        try socket.listen(backlog: backlog, subject)
        return socket
    }
}
