public import ControlCore
public import Glibc
import Synchronization

/// A host name resolved within a deadline. `getaddrinfo` has no timeout of its own (a resolver that
/// does not answer holds it for the resolver's retries, tens of seconds; a hung NSS module for good),
/// so a name is looked up on a short-lived detached thread and the caller waits for it no longer than
/// its deadline; an address literal is read at once (`AI_NUMERICHOST`) without a thread. A lookup that
/// outlives its caller's deadline finishes on its own thread and the next connect takes its answer;
/// `HostResolver` abandons one that never answers and starts another, two at most. A thread that cannot
/// be started is the caller's coded error: nothing is ever resolved on the caller's thread.
///
/// `@unchecked Sendable`: the outcome is written once by the lookup's thread under a mutex; the
/// caller reads it after the wake-up.
public final class NameLookup: @unchecked Sendable {
    /// What a lookup gave: the addresses, or `getaddrinfo`'s error (with `errno` for `EAI_SYSTEM`).
    public enum Outcome: @unchecked Sendable {
        case addresses([SocketAddress])
        case failed(code: Int32, systemError: Int32)
    }

    /// Resolves a host name, blocking (the system's `getaddrinfo`, or a test's).
    public typealias Resolver = @Sendable (_ host: String, _ port: UInt16) -> Outcome
    /// Starts `body` on a thread of its own: `pthread_create`'s result, 0 when it started (a test's
    /// fails at will).
    public typealias Spawner = @Sendable (_ body: @escaping @Sendable () -> Void) -> Int32

    public let host: String
    public let port: UInt16
    /// When it was started (the caller's monotonic clock).
    public let started: MonotonicInstant
    private let outcome = Mutex<Outcome?>(nil)
    private let done = Wakeup()

    /// A lookup of `host`:`port` on its own thread with `resolver`, started at once (`started`, the
    /// caller's clock). Throws `pthread_create`'s error when no thread can be started.
    public init(host: String, port: UInt16, started: MonotonicInstant, resolver: @escaping Resolver,
                spawn: Spawner = NameLookup.detached) throws(SystemCallError) {
        self.host = host
        self.port = port
        self.started = started
        let body: @Sendable () -> Void = { [self] in
            let result = resolver(host, port)
            outcome.withLock { $0 = result }
            done.signal()
        }
        let created = spawn(body)
        guard created == 0 else { throw SystemCallError(call: "pthread_create", subject: host, errno: created) }
    }

    /// The outcome, nil while the lookup has not answered.
    public var answer: Outcome? { outcome.withLock { $0 } }

    /// The outcome, waiting for it until `deadline`; nil when the lookup has not answered by then.
    public func wait(until deadline: MonotonicInstant, clock: any MonotonicClock) -> Outcome? {
        while true {
            if let result = outcome.withLock({ $0 }) { return result }
            if clock.now() >= deadline || !clock.wait(for: done, until: deadline) { return outcome.withLock { $0 } }
        }
    }

    /// `host`'s addresses when it is an IPv4 or IPv6 literal (no lookup, no thread), else nil.
    public static func literal(host: String, port: UInt16) -> [SocketAddress]? {
        guard case .addresses(let list) = system(host: host, port: port, flags: AI_NUMERICSERV | AI_NUMERICHOST) else { return nil }
        return list
    }

    /// The system's resolver.
    public static let system: Resolver = { host, port in system(host: host, port: port, flags: AI_NUMERICSERV) }

    /// The system's resolver, for sockets of `type` (`SOCK_DGRAM`: a datagram peer).
    public static func system(for type: __socket_type) -> Resolver {
        { host, port in system(host: host, port: port, flags: AI_NUMERICSERV, socketType: type) }
    }

    /// `getaddrinfo` for a socket of `socketType`, any family, the addresses in the resolver's order.
    public static func system(host: String, port: UInt16, flags: Int32, socketType: __socket_type = SOCK_STREAM) -> Outcome {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(socketType.rawValue)
        hints.ai_flags = flags
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0 else { return .failed(code: resolved, systemError: errno) }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var next = list
        while let entry = next?.pointee {
            next = entry.ai_next
            guard let from = entry.ai_addr, Int(entry.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: from, count: Int(entry.ai_addrlen))) }
            addresses.append(SocketAddress(family: entry.ai_family, storage: storage, length: entry.ai_addrlen))
        }
        return .addresses(addresses)
    }

    /// Runs `body` on a detached thread that blocks every signal (they stay the main thread's).
    public static let detached: Spawner = { body in detach(body) }

    private static func detach(_ body: @escaping @Sendable () -> Void) -> Int32 {
        final class Box {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let box = Unmanaged.passRetained(Box(body))
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var tid = pthread_t()
        let created = pthread_create(&tid, nil, { raw in
            CurrentThread.name("bessd-resolve")
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box.toOpaque())
        if created == 0 {
            pthread_detach(tid)
        } else {
            box.release()
        }
        return created
    }
}
