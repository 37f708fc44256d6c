import BessBase
import BessSystem
import ControlCore
import Cycle
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
    private final class Owned {
        let socket: Socket
        var fd: Int32 { socket.rawValue }
        init(_ socket: consuming Socket) { self.socket = socket }
    }

    private let stream: Owned?
    private let datagrams: Owned?
    private let transport: PMUSettings.Transport
    private var peer: sockaddr_storage
    private let peerLength: socklen_t
    /// `host:port` as configured, for messages.
    private let subject: String

    /// The descriptors to poll and what each carries: the stream first, then the datagrams.
    var channels: [(channel: Channel, descriptor: Int32)] {
        (stream.map { [(Channel.stream, $0.fd)] } ?? []) + (datagrams.map { [(Channel.datagrams, $0.fd)] } ?? [])
    }

    private init(stream: Owned?, datagrams: Owned?, transport: PMUSettings.Transport, peer: SocketAddress, subject: String) {
        self.stream = stream
        self.datagrams = datagrams
        self.transport = transport
        self.peer = peer.storage
        self.peerLength = peer.length
        self.subject = subject
    }

    /// The resolver for `settings`' host (BessSystem's one resolver, with a deadline): kept by the
    /// reader across sessions, so a lookup that outlived one session's deadline serves the next.
    static func resolver(_ settings: PMUSettings) -> HostResolver {
        HostResolver(host: settings.host, port: settings.port, abandonAfter: PMUReader.answerLimit * 4,
                     lookup: NameLookup.system(for: settings.transport.usesTCP ? SOCK_STREAM : SOCK_DGRAM))
    }

    /// Resolves the PMU's host within `PMUReader.answerLimit` and opens the transport's sockets: over
    /// TCP each address in turn, within `PMUReader.answerLimit` each (a stop ends the wait); over UDP
    /// alone the first address.
    static func open(_ settings: PMUSettings, resolver: HostResolver, clock: any MonotonicClock, wakeup: Wakeup,
                     running: () -> Bool) throws(PMULinkError) -> PMULink {
        let subject = settings.port == 0 ? settings.host : "\(settings.host):\(settings.port)"
        var failure = PMULinkError(.connectFailed, message: "the host has no address")
        for address in try resolve(resolver, clock: clock) {
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

    private static func resolve(_ resolver: HostResolver, clock: any MonotonicClock) throws(PMULinkError) -> [SocketAddress] {
        do throws(ResolveFailure) {
            return try resolver.resolve(until: clock.now() + PMUReader.answerLimit, clock: clock)
        } catch {
            let limit = PMUReader.number(PMUReader.answerLimit)
            switch error {
            case .failed(let code, let systemError):
                throw PMULinkError(.connectFailed, message: "cannot resolve the host: \(String(cString: gai_strerror(code)))",
                                   errno: code == EAI_SYSTEM ? systemError : 0)
            case .timedOut:
                throw PMULinkError(.connectFailed, message: "cannot resolve the host: no answer within \(limit) s", errno: ETIMEDOUT)
            case .unanswered(let count, let age):
                throw PMULinkError(.connectFailed, message: "cannot resolve the host: \(count) lookups unanswered for over "
                                   + "\(PMUReader.number(age)) s", errno: ETIMEDOUT)
            case .noThread(let code):
                throw PMULinkError(.connectFailed, message: "cannot resolve the host: no thread for the lookup: \(SystemError.text(code))",
                                   errno: code)
            }
        }
    }

    /// A non-blocking TCP connection to `address` (`Socket.connect`), waited for until
    /// `PMUReader.answerLimit` or a stop.
    private static func connect(_ address: SocketAddress, _ subject: String, clock: any MonotonicClock, wakeup: Wakeup,
                                running: () -> Bool) throws(PMULinkError) -> Owned {
        do throws(ConnectFailure) {
            return Owned(try Socket.connect(to: address, subject, until: clock.now() + PMUReader.answerLimit, clock: clock,
                                            wakeup: wakeup, running: running))
        } catch {
            switch error {
            case .stopped: throw PMULinkError(.stopped, message: "stopped")
            case .timedOut:
                throw PMULinkError(.connectFailed, message: "connect \(subject): no answer within \(PMUReader.number(PMUReader.answerLimit)) s",
                                   errno: ETIMEDOUT)
            case .failed(let failure): throw PMULinkError(.connectFailed, failure)
            }
        }
    }

    /// A non-blocking datagram socket of `family`, bound to `localPort` on every address when given.
    private static func datagramSocket(family: Int32, localPort: UInt16?) throws(PMULinkError) -> Owned {
        do throws(SystemCallError) {
            let socket = try Socket(family: family, type: SOCK_DGRAM)
            if let localPort { try socket.bind(anyAddress(family: family, port: localPort), "local port \(localPort)") }
            return Owned(socket)
        } catch {
            throw PMULinkError(.connectFailed, error)
        }
    }

    /// Every local address of `family` (IPv4 or IPv6) at `port`.
    private static func anyAddress(family: Int32, port: UInt16) -> SocketAddress {
        guard family == AF_INET6 else { return SocketAddress(ipv4: 0, port: port) }
        var local = sockaddr_storage()
        withUnsafeMutableBytes(of: &local) { raw in
            var any = sockaddr_in6()
            any.sin6_family = sa_family_t(AF_INET6)
            any.sin6_port = port.bigEndian
            any.sin6_addr = in6addr_any
            raw.storeBytes(of: any, as: sockaddr_in6.self)
        }
        return SocketAddress(family: AF_INET6, storage: local, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
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
