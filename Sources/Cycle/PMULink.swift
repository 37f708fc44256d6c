import BessSystem
import ControlCore
import Glibc

/// The PMU reader's socket: a non-blocking TCP connection, or a UDP socket that sends commands to
/// the PMU's port and takes datagrams from the PMU's address only (C37.118.2-2011 Annex F, UDP
/// only: the PMU answers to the port the commands came from). Owned by the reader's thread.
final class PMULink {
    private let socket: Descriptor
    private let transport: PMUSettings.Transport
    private var peer: sockaddr_storage
    private let peerLength: socklen_t

    /// The descriptor to poll.
    var descriptor: Int32 { socket.rawValue }

    private init(socket: consuming Descriptor, transport: PMUSettings.Transport, peer: sockaddr_storage, peerLength: socklen_t) {
        self.socket = socket
        self.transport = transport
        self.peer = peer
        self.peerLength = peerLength
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

    /// Resolves the PMU's host and connects (TCP: each address in turn, within `PMUReader.answerLimit`
    /// each; a stop ends the wait) or opens the datagram socket (UDP: the first address).
    static func open(_ settings: PMUSettings, clock: any MonotonicClock, wakeup: Wakeup, running: () -> Bool) throws(PMULinkError) -> PMULink {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(settings.transport == .tcp ? SOCK_STREAM.rawValue : SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(settings.host, String(settings.port), &hints, &list)
        guard resolved == 0 else {
            throw PMULinkError(.connectFailed, message: "cannot resolve the host: \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }
        var failure = PMULinkError(.connectFailed, message: "the host has no address")
        var next = list
        while let entry = next?.pointee {
            next = entry.ai_next
            var storage = sockaddr_storage()
            guard let address = entry.ai_addr, Int(entry.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            _ = withUnsafeMutableBytes(of: &storage) { memcpy($0.baseAddress!, address, Int(entry.ai_addrlen)) }
            do throws(PMULinkError) {
                return try open(family: entry.ai_family, peer: storage, length: entry.ai_addrlen, settings.transport,
                                clock: clock, wakeup: wakeup, running: running)
            } catch {
                failure = error
                if error.code == .stopped || settings.transport == .udp { throw error }
            }
        }
        throw failure
    }

    private static func open(family: Int32, peer: sockaddr_storage, length: socklen_t, _ transport: PMUSettings.Transport,
                             clock: any MonotonicClock, wakeup: Wakeup, running: () -> Bool) throws(PMULinkError) -> PMULink {
        let kind = transport == .tcp ? SOCK_STREAM.rawValue : SOCK_DGRAM.rawValue
        let fd = Glibc.socket(family, Int32(kind) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PMULinkError(.connectFailed, message: "socket: \(SystemError.text(errno))") }
        let owned = Descriptor(owning: fd)
        guard transport == .tcp else { return PMULink(socket: owned, transport: transport, peer: peer, peerLength: length) }
        var address = peer
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) } }
        if result != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EINTR else { throw PMULinkError(.connectFailed, message: "connect: \(SystemError.text(code))") }
            let deadline = clock.now() + PMUReader.answerLimit
            var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
            while fds[0].revents == 0 {
                guard running() else { throw PMULinkError(.stopped, message: "stopped") }
                guard clock.now() < deadline else {
                    throw PMULinkError(.connectFailed, message: "connect: no answer within \(PMUReader.number(PMUReader.answerLimit)) s")
                }
                fds[1].revents = 0
                _ = fds.withUnsafeMutableBufferPointer { clock.poll($0.baseAddress!, count: 2, until: deadline) }
            }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
            guard error == 0 else { throw PMULinkError(.connectFailed, message: "connect: \(SystemError.text(error))") }
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return PMULink(socket: owned, transport: transport, peer: peer, peerLength: length)
    }

    /// Sends one command frame, whole or not at all.
    func send(_ bytes: [UInt8]) throws(PMULinkError) {
        let sent = bytes.withUnsafeBytes { raw in
            transport == .tcp
                ? Glibc.send(descriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                : withUnsafePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.sendto(descriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0, peerLength) }
                }
        }
        guard sent == bytes.count else {
            throw PMULinkError(.io, message: sent < 0 ? "send: \(SystemError.text(errno))" : "send: \(sent) of \(bytes.count) bytes")
        }
    }

    /// Reads what is there into `buffer` from `offset` on (TCP), or one datagram into its start (UDP).
    func receive(into buffer: inout [UInt8], from offset: Int) throws(PMULinkError) -> Received {
        let capacity = buffer.count
        if transport == .tcp {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress! + offset, capacity - offset, 0) }
            if n > 0 { return .bytes(n) }
            if n == 0 { throw PMULinkError(.closed, message: "the PMU closed the connection") }
        } else {
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.recvfrom(descriptor, raw.baseAddress!, capacity, 0, $0, &length) }
                }
            }
            if n >= 0 { return fromPeer(from) ? .bytes(n) : .foreign }
        }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .nothing }
        throw PMULinkError(.io, message: "receive: \(SystemError.text(code))")
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
