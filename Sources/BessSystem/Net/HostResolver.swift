public import ControlCore
import Glibc

/// Why `HostResolver.resolve` gave no address.
public enum ResolveFailure: Error {
    /// No thread could be started for the lookup (`pthread_create`'s error).
    case noThread(errno: Int32)
    /// `maximum` lookups are out, each unanswered for over `age`: no other is started.
    case unanswered(lookups: Int, age: Duration)
    /// The lookup did not answer by the deadline (it carries on; the next resolve may take its answer).
    case timedOut
    /// The resolver answered with an error: `getaddrinfo`'s code, and `errno` for `EAI_SYSTEM`.
    case failed(code: Int32, systemError: Int32)

    /// `getaddrinfo`'s reason for `.failed`, as a person reads it.
    public static func reason(code: Int32, systemError: Int32) -> String {
        code == EAI_SYSTEM ? SystemError.text(systemError) : String(cString: gai_strerror(code))
    }
}

/// The one resolver with a deadline: a host's addresses, an address literal at once, a name looked up
/// on a thread of its own (`NameLookup`) and waited for until the caller's deadline at most. The
/// lookup still out is waited for again at the next `resolve`; once it is older than `abandonAfter`
/// another is started, unless `maximumLookups` are out (a hung NSS module may hold each for good).
///
/// Used from one thread (its client's: the 2030.5 worker, the PMU reader).
public final class HostResolver {
    public let host: String
    public let port: UInt16
    /// A lookup unanswered for this long is abandoned and another started.
    public let abandonAfter: Duration
    /// How a host name is looked up (the system's `getaddrinfo`; a test's).
    public var lookup: NameLookup.Resolver
    /// How a lookup's thread is started (a detached thread; a test's).
    public var spawn: NameLookup.Spawner
    /// Lookups out at once, at most.
    public static let maximumLookups = 2
    /// Lookups that outlived the resolve that started them, oldest first.
    private var lookups: [NameLookup] = []

    public init(host: String, port: UInt16, abandonAfter: Duration, lookup: @escaping NameLookup.Resolver = NameLookup.system,
                spawn: @escaping NameLookup.Spawner = NameLookup.detached) {
        self.host = host
        self.port = port
        self.abandonAfter = abandonAfter
        self.lookup = lookup
        self.spawn = spawn
    }

    /// The host's addresses, IPv4 and IPv6, in the resolver's order, by `deadline` on `clock`.
    public func resolve(until deadline: MonotonicInstant, clock: any MonotonicClock) throws(ResolveFailure) -> [SocketAddress] {
        if let addresses = NameLookup.literal(host: host, port: port) { return addresses }
        var answer = takeAnswer()
        if answer == nil {
            let now = clock.now()
            let pending: NameLookup
            if let newest = lookups.last, now < newest.started + abandonAfter {
                pending = newest
            } else if lookups.count < Self.maximumLookups {
                do throws(SystemCallError) {
                    pending = try NameLookup(host: host, port: port, started: now, resolver: lookup, spawn: spawn)
                } catch {
                    throw .noThread(errno: error.errno)
                }
                lookups.append(pending)
            } else {
                throw .unanswered(lookups: lookups.count, age: abandonAfter)
            }
            if pending.wait(until: deadline, clock: clock) != nil { answer = takeAnswer() }
        }
        switch answer {
        case nil: throw .timedOut
        case .addresses(let addresses): return addresses
        case .failed(let code, let systemError): throw .failed(code: code, systemError: systemError)
        }
    }

    /// The answer of the newest lookup that has one; every answered lookup leaves the list (its thread
    /// has ended).
    private func takeAnswer() -> NameLookup.Outcome? {
        let answer = lookups.last(where: { $0.answer != nil })?.answer
        lookups.removeAll { $0.answer != nil }
        return answer
    }
}
