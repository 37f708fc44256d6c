import BessBase
import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Sep2Link
import Synchronization
import TestSupport
import Testing
import TLSTransport

/// `hil/peers/https_peer.py` on pyenv's Python (Package.sep2Python): TLS 1.2, CCM8 only, a client
/// certificate required, one behaviour per path. One fixture and one peer for the suite; every test
/// its own client. `@unchecked Sendable`: the fixture's files are written in `init` and only read after.
final class HTTPSPeer: @unchecked Sendable {
    let pki: TLSFixture
    let peer: UnitsPeer
    /// Held open: the peer exits when the test process, and with it this pipe, goes.
    let input = Pipe()

    init() throws {
        pki = try TLSFixture()
        peer = try UnitsPeer(arguments: [try Package.sep2Python(), "hil/peers/https_peer.py", "--cert", pki.path("server.pem"),
                                         "--key", pki.path("server.key"), "--ca", pki.path("ca.pem")], input: input)
        guard peer.port > 0 else { throw FixtureFailure("https_peer.py did not say its port: \(peer.all)") }
    }

    static let shared = Result { try HTTPSPeer() }

    /// A client of the peer with `name`.pem/.key and `ca`.pem.
    func client(_ name: String = "client", ca: String = "ca", timeout: Duration = .seconds(10), port: Int? = nil) throws -> HTTPSClient {
        let context = try TLSClientContext(certificateFile: pki.path("\(name).pem"), privateKeyFile: pki.path("\(name).key"),
                                           caFile: pki.path("\(ca).pem"))
        return HTTPSClient(host: "127.0.0.1", port: UInt16(port ?? peer.port), context: context, timeout: timeout)
    }
}

@Suite("HTTPS client against a Python TLS server (CCM8, client certificate required)")
struct HTTPSClientTests {
    init() { signal(SIGPIPE, SIG_IGN) }

    static let body = Array(#"<DeviceCapability xmlns="urn:ieee:std:2030.5:ns" href="/dcap" pollRate="300">"#.utf8)

    /// The code of what `work` threw, nil when it returned.
    static func code(_ work: () throws(HTTPClientError) -> HTTPResponse) -> (String, String)? {
        do throws(HTTPClientError) {
            _ = try work()
            return nil
        } catch {
            return ("\(error.code)", error.message)
        }
    }

    /// ECDHE-ECDSA-AES128-CCM8.
    @Test("sep+xml over TLS 1.2 CCM8: connection kept for the next request; Accept is sep+xml")
    func normalAndKeptAlive() throws {
        let peer = try HTTPSPeer.shared.get()
        let client = try peer.client()
        defer { client.close() }
        let first = try client.send(HTTPRequest(method: "GET", path: "/dcap"))
        #expect(first.status == 200 && first.header("content-type") == "application/sep+xml")
        #expect(first.body.count == Int(first.header("Content-Length") ?? "") && first.body.starts(with: Array("<?xml".utf8)))
        #expect(String(decoding: first.body, as: UTF8.self).contains(String(decoding: Self.body, as: UTF8.self)))
        #expect(first.header("X-Request-Accept") == "application/sep+xml")
        #expect(client.negotiatedCipher == "ECDHE-ECDSA-AES128-CCM8")
        let second = try client.send(HTTPRequest(method: "GET", path: "/dcap"))
        #expect(second == first, "the same answer on the same connection")
    }

    @Test("a chunked body (extensions, a trailer) is the same body")
    func chunked() throws {
        let client = try HTTPSPeer.shared.get().client()
        defer { client.close() }
        let plain = try client.send(HTTPRequest(method: "GET", path: "/dcap"))
        let chunked = try client.send(HTTPRequest(method: "GET", path: "/chunked"))
        #expect(chunked.status == 200 && chunked.header("Transfer-Encoding") == "chunked" && chunked.body == plain.body)
        #expect(chunked.header("X-Connection") == plain.header("X-Connection"), "kept alive after a chunked answer")
    }

    /// 429 with delta-seconds, 503 with an HTTP-date.
    @Test("429 and 503 with Retry-After are answers, not errors; the connection stays")
    func busyAndDown() throws {
        let client = try HTTPSPeer.shared.get().client()
        defer { client.close() }
        let busy = try client.send(HTTPRequest(method: "GET", path: "/busy"))
        #expect(busy.status == 429 && busy.retryAfterSeconds == 120 && busy.body.isEmpty)
        let down = try client.send(HTTPRequest(method: "GET", path: "/down"))
        #expect(down.status == 503 && down.retryAfterSeconds == nil && down.header("Retry-After") != nil)
        #expect(down.header("X-Connection") == busy.header("X-Connection"))
    }

    @Test("POST: 201 with Location, the body sent whole")
    func post() throws {
        let client = try HTTPSPeer.shared.get().client()
        defer { client.close() }
        let body = Array("<DERControlResponse xmlns=\"urn:ieee:std:2030.5:ns\"><status>1</status></DERControlResponse>".utf8)
        let created = try client.send(HTTPRequest(method: "POST", path: "/rsps", body: body, contentType: "application/sep+xml"))
        #expect(created.status == 201 && created.location == "/rsps/1/rsp/7" && created.body == body)
    }

    /// Announced, or chunked without end.
    @Test("a body over maximumBody is SEP2_HTTP_TOO_LARGE; the next request gets a new connection")
    func tooLarge() throws {
        let client = try HTTPSPeer.shared.get().client()
        defer { client.close() }
        let before = try client.send(HTTPRequest(method: "GET", path: "/dcap")).header("X-Connection")
        let announced = Self.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "GET", path: "/huge")) }
        #expect(announced?.0 == "SEP2_HTTP_TOO_LARGE" && announced?.1.contains("262144") == true, "\(String(describing: announced))")
        let endless = Self.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "GET", path: "/huge-chunked")) }
        #expect(endless?.0 == "SEP2_HTTP_TOO_LARGE", "\(String(describing: endless))")
        let after = try client.send(HTTPRequest(method: "GET", path: "/dcap"))
        #expect(after.status == 200 && after.header("X-Connection") != before)
    }

    @Test("a garbage status line is SEP2_HTTP_MALFORMED, quoted with its escape sequence escaped")
    func garbage() throws {
        let client = try HTTPSPeer.shared.get().client()
        defer { client.close() }
        let failure = Self.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "GET", path: "/garbage")) }
        #expect(failure?.0 == "SEP2_HTTP_MALFORMED", "\(String(describing: failure))")
        #expect(failure?.1.contains("HTXP/1.1") == true && failure?.1.contains("\u{1B}") == false, "\(String(describing: failure))")
    }

    @Test("the server closing after an answer: the next request uses a new connection, unseen by the caller")
    func reconnect() throws {
        let client = try HTTPSPeer.shared.get().client()
        defer { client.close() }
        let closing = try client.send(HTTPRequest(method: "GET", path: "/close-after"))
        #expect(closing.status == 200 && closing.body == Array("ok".utf8))
        let next = try client.send(HTTPRequest(method: "GET", path: "/dcap"))
        #expect(next.status == 200 && next.header("X-Connection") != closing.header("X-Connection"))
        let again = try client.send(HTTPRequest(method: "GET", path: "/close-after"))
        // Straight after: the close may still be on its way; GET is sent again once on a new connection.
        let last = try client.send(HTTPRequest(method: "GET", path: "/dcap"))
        #expect(last.status == 200 && last.header("X-Connection") != again.header("X-Connection"))
    }

    /// A CA that does not vouch for the server, or a client certificate the server refuses.
    @Test("TLS trust failure either way is SEP2_HTTP_TLS")
    func tlsRefused() throws {
        let peer = try HTTPSPeer.shared.get()
        let wrongCA = try peer.client(ca: "otherca")
        let untrusted = Self.code { () throws(HTTPClientError) in try wrongCA.send(HTTPRequest(method: "GET", path: "/dcap")) }
        #expect(untrusted?.0 == "SEP2_HTTP_TLS" && untrusted?.1.contains("TLS_PEER_UNTRUSTED") == true, "\(String(describing: untrusted))")
        #expect(wrongCA.negotiatedCipher == nil)
        let foreign = try peer.client("foreign")
        let refused = Self.code { () throws(HTTPClientError) in try foreign.send(HTTPRequest(method: "GET", path: "/dcap")) }
        #expect(refused?.0 == "SEP2_HTTP_TLS", "\(String(describing: refused))")
    }

    @Test("an answer that stops coming is SEP2_HTTP_TIMEOUT; nothing listening is SEP2_HTTP_CONNECT")
    func timeoutAndConnect() throws {
        let peer = try HTTPSPeer.shared.get()
        let slow = try peer.client(timeout: .milliseconds(500))
        let stalled = Self.code { () throws(HTTPClientError) in try slow.send(HTTPRequest(method: "GET", path: "/stall")) }
        #expect(stalled?.0 == "SEP2_HTTP_TIMEOUT", "\(String(describing: stalled))")
        let nobody = try peer.client(port: Loopback.freePort())
        let refused = Self.code { () throws(HTTPClientError) in try nobody.send(HTTPRequest(method: "GET", path: "/dcap")) }
        #expect(refused?.0 == "SEP2_HTTP_CONNECT", "\(String(describing: refused))")
    }

    /// One lookup at a time; an address literal asks no resolver.
    @Test("a silent name lookup is SEP2_HTTP_TIMEOUT within timeout_s; late answers serve the next connect")
    func nameLookupBounded() throws {
        let peer = try HTTPSPeer.shared.get()
        let context = try TLSClientContext(certificateFile: peer.pki.path("client.pem"), privateKeyFile: peer.pki.path("client.key"),
                                           caFile: peer.pki.path("ca.pem"))
        let calls = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let resolver: NameLookup.Resolver = { host, port in
            calls.withLock { $0.append(host) }
            release.wait()  // a resolver that does not answer until the test lets it
            return .addresses(NameLookup.literal(host: "127.0.0.1", port: port) ?? [])
        }
        let named = HTTPSClient(host: "sep2.server.test", port: UInt16(peer.peer.port), context: context, timeout: .milliseconds(500))
        named.resolver = resolver
        defer { named.close() }
        for _ in 0..<2 {
            let stuck = Self.code { () throws(HTTPClientError) in try named.send(HTTPRequest(method: "GET", path: "/dcap")) }
            #expect(stuck?.0 == "SEP2_HTTP_TIMEOUT" && stuck?.1.contains("resolving \"sep2.server.test\"") == true, "\(String(describing: stuck))")
        }
        #expect(calls.withLock { $0 } == ["sep2.server.test"], "the send came back while the lookup still hung; one lookup, not two")
        release.signal()
        // The answer lands on the lookup's own thread: a send before it has landed waits timeout_s again
        // (a loaded host), so the test asks until one is served. No second lookup may start meanwhile.
        #expect(waitFor(seconds: 30) { (try? named.send(HTTPRequest(method: "GET", path: "/dcap")))?.status == 200 })
        #expect(calls.withLock { $0 }.count == 1, "the late answer served the connect")
        let literal = try peer.client()
        literal.resolver = { host, port in
            calls.withLock { $0.append(host) }
            return .failed(code: EAI_NONAME, systemError: 0)
        }
        defer { literal.close() }
        #expect(try literal.send(HTTPRequest(method: "GET", path: "/dcap")).status == 200)
        #expect(calls.withLock { $0 }.count == 1, "127.0.0.1 is read without a lookup")
        let failing = HTTPSClient(host: "no.such.test", port: 443, context: context, timeout: .seconds(5))
        failing.resolver = { _, _ in .failed(code: EAI_NONAME, systemError: 0) }
        let unknown = Self.code { () throws(HTTPClientError) in try failing.send(HTTPRequest(method: "GET", path: "/dcap")) }
        #expect(unknown?.0 == "SEP2_HTTP_CONNECT" && unknown?.1.contains("cannot resolve \"no.such.test\"") == true, "\(String(describing: unknown))")
    }

    /// A clock the test moves by hand whose waits end at once, unsignalled: every lookup still out
    /// when its connect waits for it has not answered by the deadline.
    final class SteppedClock: MonotonicClock {
        let instant = Mutex(MonotonicInstant(nanoseconds: 1_000_000_000))
        func now() -> MonotonicInstant { instant.withLock { $0 } }
        func advance(_ step: Duration) { instant.withLock { $0 = $0 + step } }
        func sleep(until deadline: MonotonicInstant) { instant.withLock { $0 = max($0, deadline) } }
        func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool { false }
        func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32 { 0 }
    }

    /// A thread that cannot start is SEP2_HTTP_CONNECT.
    @Test("a hung name lookup is abandoned after 4 × timeout_s, at most two at once, off the caller's thread")
    func nameLookupAbandoned() throws {
        let peer = try HTTPSPeer.shared.get()
        let context = try TLSClientContext(certificateFile: peer.pki.path("client.pem"), privateKeyFile: peer.pki.path("client.key"),
                                           caFile: peer.pki.path("ca.pem"))
        let calls = Mutex(0), spawned = Mutex(0)
        let hang = DispatchSemaphore(value: 0)
        let clock = SteppedClock()
        let client = HTTPSClient(host: "hung.test", port: 443, context: context, timeout: .seconds(1))
        client.clock = clock
        client.resolver = { _, _ in
            calls.withLock { $0 += 1 }
            hang.wait()  // a resolver that never returns (a hung NSS module) until the test ends
            return .failed(code: EAI_AGAIN, systemError: 0)
        }
        client.spawn = { body in
            spawned.withLock { $0 += 1 }
            return NameLookup.detached(body)
        }
        defer {
            for _ in 0..<4 { hang.signal() }
            client.close()
        }
        func attempt() -> (String, String)? { Self.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "GET", path: "/dcap")) } }
        var started: [Int] = []
        for step in [0, 3, 1.5, 1, 10, 100] as [Double] {
            clock.advance(.seconds(fromDouble: step))
            let failed = attempt()
            #expect(failed?.0 == "SEP2_HTTP_TIMEOUT" && failed?.1.contains("resolving \"hung.test\"") == true, "\(String(describing: failed))")
            started.append(spawned.withLock { $0 })
        }
        // Started at 0 s; abandoned past 4 s (at 4.5 s) for one replacement; then two are out: no third.
        #expect(started == [1, 1, 2, 2, 2, 2], "\(started)")
        #expect(waitFor { calls.withLock { $0 } == 2 }, "both lookups' threads ran the resolver")

        let inline = Mutex(0)
        let noThread = HTTPSClient(host: "nothread.test", port: 443, context: context, timeout: .seconds(1))
        noThread.clock = clock
        noThread.resolver = { _, _ in
            inline.withLock { $0 += 1 }
            return .failed(code: EAI_NONAME, systemError: 0)
        }
        noThread.spawn = { _ in EAGAIN }
        let refused = Self.code { () throws(HTTPClientError) in try noThread.send(HTTPRequest(method: "GET", path: "/dcap")) }
        #expect(refused?.0 == "SEP2_HTTP_CONNECT" && refused?.1.contains("resolving \"nothread.test\"") == true, "\(String(describing: refused))")
        #expect(inline.withLock { $0 } == 0, "no lookup ran on the caller's thread")
    }

    /// A path with a line break, an unknown method.
    @Test("an unsendable request is refused before any byte goes")
    func requestRefused() throws {
        let client = try HTTPSPeer.shared.get().client()
        let path = Self.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "GET", path: "/dcap\r\nX: y")) }
        #expect(path?.0 == "SEP2_HTTP_MALFORMED" && path?.1.contains("\r") == false, "\(String(describing: path))")
        let method = Self.code { () throws(HTTPClientError) in try client.send(HTTPRequest(method: "TRACE", path: "/dcap")) }
        #expect(method?.0 == "SEP2_HTTP_MALFORMED")
        #expect(client.negotiatedCipher == nil, "nothing was connected")
    }
}
