import BessSystem
import ControlCore
import Glibc

/// The PMU reader's sockets, one or two by transport (C37.118.2-2011 Annex F; docs/pmu.md):
/// - `tcp`: a non-blocking TCP connection, commands out and frames in;
/// - `udp`: a datagram socket (bound to `local_port` when set) that sends commands to the PMU's port;
/// - `tcp_udp`: a TCP connection for commands and what the PMU answers on it, and a datagram socket
///   bound to `local_port` for the data;
/// - `udp_spontaneous`: a datagram socket bound to `local_port`; nothing is sent.
///
/// Datagrams are taken from the PMU's address only (any port: a PMU may send from another). Every
/// system call goes through BessSystem's `systemCall`, so a failure is a `PMULinkError` carrying the
/// errno (`systemError`). Owned by the reader's thread.
final class PMULink {
    /// What a descriptor carries.
    enum Channel: Equatable {
        /// The TCP connection: a byte stream, frames cut from it.
        case stream
        /// The datagram socket: each datagram one frame.
        case datagrams
    }

    /// What one read gave.
    enum Received {
        /// This many bytes (a datagram is one frame).
        case bytes(Int)
        /// Nothing now.
        case nothing
        /// A datagram from another address than the PMU's, dropped.
        case foreign
    }

    /// An owned socket, shared by reference so the link can hold one or two.
    private final class Socket {
        let owned: Descriptor
        var fd: Int32 { owned.rawValue }
        init(_ owned: consuming Descriptor) { self.owned = owned }
    }

    /// The PMU's address, as the resolver gave it.
    private struct Address {
        var family: Int32
        var storage: sockaddr_storage
        var length: socklen_t
    }

    private let stream: Socket?
    private let datagrams: Socket?
    private let transport: PMUSettings.Transport
    private var peer: sockaddr_storage
    private let peerLength: socklen_t
    /// `host:port` as configured, for messages.
    private let subject: String

    /// The descriptors to poll and what each carries: the stream first, then the datagrams.
    var channels: [(channel: Channel, descriptor: Int32)] {
        (stream.map { [(Channel.stream, $0.fd)] } ?? []) + (datagrams.map { [(Channel.datagrams, $0.fd)] } ?? [])
    }

    private init(stream: Socket?, datagrams: Socket?, transport: PMUSettings.Transport, peer: Address, subject: String) {
        self.stream = stream
        self.datagrams = datagrams
        self.transport = transport
        self.peer = peer.storage
        self.peerLength = peer.length
        self.subject = subject
    }

    /// Resolves the PMU's host and opens the transport's sockets: over TCP each address in turn,
    /// within `PMUReader.answerLimit` each (a stop ends the wait); over UDP alone the first address.
    static func open(_ settings: PMUSettings, clock: any MonotonicClock, wakeup: Wakeup, running: () -> Bool) throws(PMULinkError) -> PMULink {
        let subject = settings.port == 0 ? settings.host : "\(settings.host):\(settings.port)"
        var failure = PMULinkError(.connectFailed, message: "the host has no address")
        for address in try resolve(settings) {
            do throws(PMULinkError) {
                let stream = settings.transport.usesTCP ? try connect(address, subject, clock: clock, wakeup: wakeup, running: running) : nil
                let datagrams = settings.transport.usesUDP ? try datagramSocket(family: address.family, localPort: settings.localPort) : nil
                return PMULink(stream: stream, datagrams: datagrams, transport: settings.transport, peer: address, subject: subject)
            } catch {
                failure = error
                if error.code == .stopped || !settings.transport.usesTCP { throw error }
            }
        }
        throw failure
    }

    private static func resolve(_ settings: PMUSettings) throws(PMULinkError) -> [Address] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(settings.transport.usesTCP ? SOCK_STREAM.rawValue : SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(settings.host, String(settings.port), &hints, &list)
        guard resolved == 0 else {
            throw PMULinkError(.connectFailed, message: "cannot resolve the host: \(String(cString: gai_strerror(resolved)))",
                               errno: resolved == EAI_SYSTEM ? errno : 0)
        }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var next = list
        while let entry = next?.pointee {
            next = entry.ai_next
            guard let from = entry.ai_addr, Int(entry.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var storage = sockaddr_storage()
            _ = withUnsafeMutableBytes(of: &storage) { memcpy($0.baseAddress!, from, Int(entry.ai_addrlen)) }
            addresses.append(Address(family: entry.ai_family, storage: storage, length: entry.ai_addrlen))
        }
        return addresses
    }

    /// One system call through `systemCall`; its failure as `code` with the errno.
    private static func call<R: BinaryInteger>(_ code: PMULinkErrorCode, _ name: String, _ subject: String = "",
                                                _ body: () -> R) throws(PMULinkError) -> R {
        do throws(SystemCallError) {
            return try systemCall(name, subject, body)
        } catch {
            throw PMULinkError(code, error)
        }
    }

    /// A non-blocking TCP connection to `address`, waited for until `PMUReader.answerLimit` or a stop.
    private static func connect(_ address: Address, _ subject: String, clock: any MonotonicClock, wakeup: Wakeup,
                                running: () -> Bool) throws(PMULinkError) -> Socket {
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let socket = Socket(Descriptor(owning: try call(.connectFailed, "socket") { Glibc.socket(address.family, kind, 0) }))
        var peer = address.storage
        let started = withUnsafePointer(to: &peer) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                Result { () throws(SystemCallError) in try systemCall("connect", subject) { Glibc.connect(socket.fd, raw, address.length) } }
            }
        }
        if case .failure(let error) = started {
            // Non-blocking: the connection is under way (EALREADY after a connect retried on EINTR).
            guard error.errno == EINPROGRESS || error.errno == EALREADY else { throw PMULinkError(.connectFailed, error) }
            let deadline = clock.now() + PMUReader.answerLimit
            var fds = [pollfd(fd: socket.fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
            while fds[0].revents == 0 {
                guard running() else { throw PMULinkError(.stopped, message: "stopped") }
                guard clock.now() < deadline else {
                    throw PMULinkError(.connectFailed, message: "connect \(subject): no answer within \(PMUReader.number(PMUReader.answerLimit)) s",
                                       errno: ETIMEDOUT)
                }
                fds[1].revents = 0
                _ = fds.withUnsafeMutableBufferPointer { clock.poll($0.baseAddress!, count: 2, until: deadline) }
            }
            var failed: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = try call(.connectFailed, "getsockopt", subject) { getsockopt(socket.fd, SOL_SOCKET, SO_ERROR, &failed, &size) }
            guard failed == 0 else { throw PMULinkError(.connectFailed, SystemCallError(call: "connect", subject: subject, errno: failed)) }
        }
        var one: Int32 = 1
        _ = try call(.connectFailed, "setsockopt", "TCP_NODELAY") {
            setsockopt(socket.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        return socket
    }

    /// A non-blocking datagram socket of `family`, bound to `localPort` on every address when given.
    private static func datagramSocket(family: Int32, localPort: UInt16?) throws(PMULinkError) -> Socket {
        let kind = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let socket = Socket(Descriptor(owning: try call(.connectFailed, "socket") { Glibc.socket(family, kind, 0) }))
        guard let localPort else { return socket }
        var local = sockaddr_storage()
        let length: socklen_t
        if family == AF_INET6 {
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &local) { raw in
                var any = sockaddr_in6()
                any.sin6_family = sa_family_t(AF_INET6)
                any.sin6_port = localPort.bigEndian
                any.sin6_addr = in6addr_any
                raw.storeBytes(of: any, as: sockaddr_in6.self)
            }
        } else {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &local) { raw in
                var any = sockaddr_in()
                any.sin_family = sa_family_t(AF_INET)
                any.sin_port = localPort.bigEndian
                any.sin_addr.s_addr = INADDR_ANY
                raw.storeBytes(of: any, as: sockaddr_in.self)
            }
        }
        let bound = withUnsafePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                Result { () throws(SystemCallError) in try systemCall("bind", "local port \(localPort)") { Glibc.bind(socket.fd, raw, length) } }
            }
        }
        if case .failure(let error) = bound { throw PMULinkError(.connectFailed, error) }
        return socket
    }

    /// Sends one command frame, whole or not at all: over TCP when there is a connection, else (`udp`)
    /// as a datagram to the PMU's port. `udp_spontaneous` sends nothing.
    func send(_ bytes: [UInt8]) throws(PMULinkError) {
        let result: Result<Int, SystemCallError>
        if let stream {
            result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemCallError) in
                    try systemCall("send", subject) { Glibc.send(stream.fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) }
                }
            }
        } else if let datagrams, transport.sendsCommands {
            let length = peerLength
            result = bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &peer) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { to in
                        Result { () throws(SystemCallError) in
                            try systemCall("sendto", subject) { Glibc.sendto(datagrams.fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), to, length) }
                        }
                    }
                }
            }
        } else {
            return
        }
        let sent: Int
        do throws(SystemCallError) { sent = try result.get() } catch { throw PMULinkError(.io, error) }
        guard sent == bytes.count else { throw PMULinkError(.io, message: "send \(subject): \(sent) of \(bytes.count) bytes") }
    }

    /// Reads what is there: from the stream into `buffer` from `offset` on, or one datagram into its start.
    func receive(_ channel: Channel, into buffer: inout [UInt8], from offset: Int) throws(PMULinkError) -> Received {
        let result: Result<Int, SystemCallError>
        var from = sockaddr_storage()
        switch channel {
        case .stream:
            guard let stream else { return .nothing }
            result = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SystemCallError) in
                    try systemCall("recv", subject) { Glibc.recv(stream.fd, raw.baseAddress! + offset, raw.count - offset, 0) }
                }
            }
        case .datagrams:
            guard let datagrams else { return .nothing }
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            result = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { source in
                        Result { () throws(SystemCallError) in
                            try systemCall("recvfrom", subject) { Glibc.recvfrom(datagrams.fd, raw.baseAddress!, raw.count, 0, source, &length) }
                        }
                    }
                }
            }
        }
        let n: Int
        do throws(SystemCallError) {
            n = try result.get()
        } catch {
            if error.errno == EAGAIN || error.errno == EWOULDBLOCK { return .nothing }
            throw PMULinkError(.io, error)
        }
        if channel == .datagrams { return fromPeer(from) ? .bytes(n) : .foreign }
        guard n > 0 else { throw PMULinkError(.closed, message: "the PMU closed the connection") }
        return .bytes(n)
    }

    /// Whether a datagram's source is the PMU's address (any port: a PMU may send from another).
    private func fromPeer(_ source: sockaddr_storage) -> Bool {
        guard source.ss_family == peer.ss_family else { return false }
        var source = source
        var peer = peer
        return withUnsafeBytes(of: &source) { got in
            withUnsafeBytes(of: &peer) { want in
                if Int32(want.load(as: sa_family_t.self)) == AF_INET {
                    // sockaddr_in: the address at offset 4, 4 bytes.
                    return memcmp(got.baseAddress! + 4, want.baseAddress! + 4, 4) == 0
                }
                // sockaddr_in6: the address at offset 8, 16 bytes.
                return memcmp(got.baseAddress! + 8, want.baseAddress! + 8, 16) == 0
            }
        }
    }
}

extension CodedError where StableCode == PMULinkErrorCode {
    /// A failed system call as `code`: its call, subject and errno text as the message, its errno kept.
    init(_ code: PMULinkErrorCode, _ failure: SystemCallError) {
        self.init(code, message: failure.description, errno: failure.errno)
    }
}
