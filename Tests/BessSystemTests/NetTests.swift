import BessBase
import BessSystem
import ControlCore
import Dispatch
import Glibc
import Synchronization
import TestSupport
import Testing

@Suite("Net: the one socket, connect, resolver and TCP listener")
struct NetTests {
    static let loopback = ListenAddress("127.0.0.1:0", allowsPortZero: true)!

    /// A client connected to `listener`, and the listener readable with its connection.
    static func connectClient(_ listener: TCPListener) throws -> Socket {
        let address = SocketAddress(ipv4: 0x7F00_0001, port: UInt16(listener.port))
        let clock = SystemClock.shared
        let client: Socket
        do throws(ConnectFailure) {
            client = try Socket.connect(to: address, "listener", until: clock.now() + .seconds(5), clock: clock)
        } catch {
            Issue.record("connect: \(error)")
            throw error
        }
        var ready = pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&ready, 1, 5000) == 1, "the connection is pending")
        return client
    }

    @Test("an admitted connection names its loopback peer")
    func admits() throws {
        let listener = try TCPListener(Self.loopback)
        #expect(listener.port > 0)
        let client = try Self.connectClient(listener)
        switch listener.admit(open: 0) {
        case .admitted(let connection):
            #expect(connection.peerAddress == 0x7F00_0001)
            #expect(connection.peer.hasPrefix("127.0.0.1:"))
        case .refused(_, _, let refusal): Issue.record("refused: \(refusal)")
        case nil: Issue.record("no connection")
        }
        _ = client.rawValue
    }

    @Test("a peer outside the allow-list is refused and its connection closed")
    func refusesAddressNotAllowed() throws {
        let tenNet = TCPListener.Admission(allows: { $0 >> 24 == 10 })
        let listener = try TCPListener(Self.loopback, admission: tenNet)
        let client = try Self.connectClient(listener)
        switch listener.admit(open: 0) {
        case .refused(let address, _, let refusal):
            #expect(address == 0x7F00_0001)
            #expect(refusal == .notAllowed)
        case .admitted: Issue.record("admitted a peer outside the allow-list")
        case nil: Issue.record("no connection")
        }
        var byte: UInt8 = 0
        var ready = pollfd(fd: client.rawValue, events: Int16(POLLIN), revents: 0)
        #expect(poll(&ready, 1, 5000) == 1)
        #expect(recv(client.rawValue, &byte, 1, 0) == 0, "the listener closed the refused connection")
    }

    @Test("at the client cap a newcomer is refused with the cap")
    func refusesBeyondCap() throws {
        let listener = try TCPListener(Self.loopback, admission: TCPListener.Admission(maxClients: 1))
        let client = try Self.connectClient(listener)
        switch listener.admit(open: 1) {
        case .refused(_, _, let refusal): #expect(refusal == .full(1))
        case .admitted: Issue.record("admitted beyond the cap")
        case nil: Issue.record("no connection")
        }
        _ = client.rawValue
    }

    @Test("a connection idles out at its last activity plus the idle timeout, never without one")
    func idleTimeout() {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000)
        let admission = TCPListener.Admission(idleTimeout: .seconds(5))
        #expect(admission.idleDeadline(since: start) == start + .seconds(5))
        #expect(!admission.isIdle(since: start, now: start + .milliseconds(4999)))
        #expect(admission.isIdle(since: start, now: start + .seconds(5)))
        #expect(!TCPListener.Admission().isIdle(since: start, now: start + .seconds(86_400)))
    }

    @Test("connecting to a closed port fails with the call and ECONNREFUSED")
    func connectRefused() {
        let address = SocketAddress(ipv4: 0x7F00_0001, port: UInt16(Loopback.freePort()))
        let clock = SystemClock.shared
        #expect(throws: ConnectFailure.failed(SystemCallError(call: "connect", subject: "closed", errno: ECONNREFUSED))) {
            try Socket.connect(to: address, "closed", until: clock.now() + .seconds(5), clock: clock)
        }
    }

    @Test("a lookup that does not answer by the deadline times out; its late answer serves the next resolve")
    func resolverTimesOut() throws {
        let release = DispatchSemaphore(value: 0)
        let calls = Mutex(0)
        let resolver = HostResolver(host: "slow.test", port: 80, abandonAfter: .seconds(60), lookup: { _, port in
            calls.withLock { $0 += 1 }
            release.wait()
            return .addresses(NameLookup.literal(host: "192.0.2.1", port: port) ?? [])
        })
        let clock = SystemClock.shared
        #expect(throws: ResolveFailure.self) { try resolver.resolve(until: clock.now() + .milliseconds(20), clock: clock) }
        do throws(ResolveFailure) {
            _ = try resolver.resolve(until: clock.now(), clock: clock)
            Issue.record("answered while the lookup hung")
        } catch {
            guard case .timedOut = error else { Issue.record("\(error)"); return }
        }
        release.signal()
        let addresses = try resolver.resolve(until: clock.now() + .seconds(5), clock: clock)
        #expect(addresses.first?.ipv4?.address == 0xC000_0201)
        #expect(calls.withLock { $0 } == 1, "one lookup served all three")
    }

    @Test("an address literal needs no lookup; a failed lookup is getaddrinfo's code")
    func resolverLiteralAndFailure() {
        let clock = SystemClock.shared
        let literal = HostResolver(host: "127.0.0.1", port: 4712, abandonAfter: .seconds(1), lookup: { _, _ in
            Issue.record("looked up a literal")
            return .failed(code: EAI_FAIL, systemError: 0)
        })
        #expect((try? literal.resolve(until: clock.now() + .seconds(1), clock: clock))?.first?.ipv4?.port == 4712)
        let failing = HostResolver(host: "no.such.test", port: 80, abandonAfter: .seconds(1), lookup: { _, _ in
            .failed(code: EAI_NONAME, systemError: 0)
        })
        do throws(ResolveFailure) {
            _ = try failing.resolve(until: clock.now() + .seconds(5), clock: clock)
            Issue.record("resolved no.such.test")
        } catch {
            guard case .failed(let code, _) = error else { Issue.record("\(error)"); return }
            #expect(code == EAI_NONAME)
        }
    }
}
