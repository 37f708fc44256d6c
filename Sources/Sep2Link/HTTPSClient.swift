public import BessBase
import ControlCore
import BessSystem
import Glibc
import IEEE2030_5
public import TLSTransport

/// HTTP/1.1 over TLS (TLSTransport) to one IEEE 2030.5 server: blocking calls bounded by a timeout,
/// one connection kept alive and opened again when the server closed it.
///
/// Each `send` connects first when no connection is open (the name resolved, a non-blocking TCP
/// connect, the TLS handshake: together bounded by `timeout`), then writes the request and reads the
/// whole answer (bounded by `timeout` again) through `HTTPResponseParser`. A connection the server
/// closed while idle is noticed before the request and replaced; one it closed as the request went
/// is replaced and the request sent again once when the method is idempotent (GET, PUT, DELETE),
/// never a POST. An answer that says `Connection: close`, or any failure, closes the connection.
///
/// Used from ONE thread (the 2030.5 worker's): the TLS connection lives on it. The thread must not
/// take SIGPIPE from a write to a reset socket (every `WorkerThread` blocks it). The answer's header
/// values and body are the server's bytes as sent: whoever logs them quotes them (`PeerText.quoted`);
/// the client's own messages already do.
public final class HTTPSClient {
    /// The server's host name or address (an IPv6 literal without brackets).
    public let host: String
    /// The server's TCP port.
    public let port: UInt16
    /// Certificates, CA and suites every connection is made with.
    public let context: TLSClientContext
    /// The bound on connecting with the handshake, and on each exchange.
    public let timeout: Duration
    /// The largest body accepted; a larger one is `SEP2_HTTP_TOO_LARGE`.
    public let maximumBody: Int

    /// The open connection, nil between a close and the next `send`.
    private var connection: TLSConnection?
    /// The monotonic clock the deadlines are read on (the system's; a test's).
    var clock: any MonotonicClock = SystemClock.shared
    /// The host's addresses within a deadline (BessSystem's one resolver). A lookup older than
    /// `lookupAgeLimit` × `timeout` is abandoned (its thread may never end: a hung NSS module) and
    /// another started, two at most.
    private let addresses: HostResolver
    static let lookupAgeLimit = 4
    /// How a host name is looked up (the system's resolver; a test's).
    var resolver: NameLookup.Resolver {
        get { addresses.lookup }
        set { addresses.lookup = newValue }
    }
    /// How a lookup's thread is started (a detached thread; a test's).
    var spawn: NameLookup.Spawner {
        get { addresses.spawn }
        set { addresses.spawn = newValue }
    }

    /// A client of `host`:`port`; nothing is connected until the first `send`.
    public init(host: String, port: UInt16, context: TLSClientContext, timeout: Duration, maximumBody: Int = 262_144) {
        self.host = host
        self.port = port
        self.context = context
        self.timeout = timeout
        self.maximumBody = maximumBody
        addresses = HostResolver(host: host, port: port, abandonAfter: timeout * Self.lookupAgeLimit)
    }

    deinit { connection?.close() }

    /// Sends `request` and waits for the whole answer, connecting first when no connection is open.
    /// - Throws: `SEP2_HTTP_CONNECT`, `SEP2_HTTP_TLS`, `SEP2_SERVER_MISMATCH`, `SEP2_HTTP_TIMEOUT`, `SEP2_HTTP_MALFORMED`
    ///   (the answer, or a request whose method or path cannot be sent), `SEP2_HTTP_TOO_LARGE`,
    ///   `SEP2_HTTP_CLOSED`. The connection is closed after any of them.
    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        let bytes = try Self.serialize(request, host: host, port: port)
        if let open = connection, Self.peerClosed(open) { close() }
        let reused = connection != nil
        do {
            return try exchange(bytes)
        } catch where reused && error.code == .closed && ["GET", "PUT", "DELETE"].contains(request.method) {
            // The server closed the idle connection as the request went: once more on a new one.
            return try exchange(bytes)
        }
    }

    /// Closes the connection, if one is open; the next `send` opens a new one.
    public func close() {
        connection?.close()
        connection = nil
    }

    /// The cipher suite of the open connection in OpenSSL's naming, nil when none is open.
    public var negotiatedCipher: String? { connection?.negotiatedCipher }

    /// One request and its answer on the open connection (a new one when none is).
    private func exchange(_ bytes: [UInt8]) throws(HTTPClientError) -> HTTPResponse {
        let open: TLSConnection
        if let connection {
            open = connection
        } else {
            open = try connect()
        }
        do {
            let deadline = clock.now() + timeout
            try write(bytes, to: open, until: deadline)
            let (response, keepAlive) = try read(from: open, until: deadline)
            if !keepAlive { close() }
            return response
        } catch {
            close()
            throw error
        }
    }

    // MARK: - Connecting

    /// A TCP connection to the first of the host's addresses that answers, and the TLS handshake
    /// over it, within `timeout`.
    private func connect() throws(HTTPClientError) -> TLSConnection {
        let deadline = clock.now() + timeout
        let addresses = try resolve(until: deadline)
        var failure = HTTPClientError(.connect, message: "\(subject): no address")
        for address in addresses {
            let fd: Int32
            do {
                fd = try connectTCP(address, until: deadline)
            } catch {
                failure = error
                if error.code == .timeout { throw error }
                continue
            }
            let tls: TLSConnection
            do throws(TLSError) {
                tls = try TLSConnection(connected: fd, context: context)
            } catch {
                try? Socket(owning: fd).close()
                throw HTTPClientError(.tls, message: "\(subject): \(error)")
            }
            do {
                try handshake(tls, until: deadline)
            } catch {
                tls.close()
                throw error
            }
            connection = tls
            return tls
        }
        throw failure
    }

    /// `host:port` for messages (the host is configuration, not peer text, but quoted all the same).
    private var subject: String { "\(PeerText.quoted(host)):\(port)" }

    /// The host's addresses, IPv4 and IPv6, in the resolver's order, by `deadline` (`HostResolver`):
    /// `SEP2_HTTP_TIMEOUT` when the lookup has not answered, or when `HostResolver.maximumLookups`
    /// are out unanswered; `SEP2_HTTP_CONNECT` when it failed or no thread could look it up.
    private func resolve(until deadline: MonotonicInstant) throws(HTTPClientError) -> [SocketAddress] {
        do throws(ResolveFailure) {
            return try addresses.resolve(until: deadline, clock: clock)
        } catch {
            let name = PeerText.quoted(host)
            switch error {
            case .noThread(let code):
                throw HTTPClientError(.connect, message: "resolving \(name): no thread for the lookup: \(SystemError.text(code))", systemError: code)
            case .unanswered(let count, let age):
                throw HTTPClientError(.timeout, message: "resolving \(name): \(count) lookups unanswered for over "
                                      + "\(age.secondsDouble) s; no other started", systemError: ETIMEDOUT)
            case .timedOut:
                throw HTTPClientError(.timeout, message: "resolving \(name): no answer within \(timeout.secondsDouble) s", systemError: ETIMEDOUT)
            case .failed(let code, let systemError):
                throw HTTPClientError(.connect, message: "cannot resolve \(name): \(ResolveFailure.reason(code: code, systemError: systemError))")
            }
        }
    }

    /// A connected non-blocking TCP socket to `address` (`Socket.connect`; the caller owns the
    /// descriptor), or the coded failure.
    private func connectTCP(_ address: SocketAddress, until deadline: MonotonicInstant) throws(HTTPClientError) -> Int32 {
        do throws(ConnectFailure) {
            return try Socket.connect(to: address, subject, until: deadline, clock: clock).release()
        } catch {
            switch error {
            case .timedOut:
                throw HTTPClientError(.timeout, message: "connecting to \(subject): no progress within \(timeout.secondsDouble) s",
                                      systemError: ETIMEDOUT)
            case .failed(let failure) where failure.call == "socket":
                throw HTTPClientError(.connect, message: "\(subject): \(failure)", systemError: failure.errno)
            case .failed(let failure):
                throw HTTPClientError(.connect, message: "\(failure)", systemError: failure.errno)
            case .stopped:
                throw HTTPClientError(.connect, message: "\(subject): stopped")
            }
        }
    }

    /// The handshake in poll steps until done or `deadline`.
    private func handshake(_ tls: TLSConnection, until deadline: MonotonicInstant) throws(HTTPClientError) {
        while true {
            let step: TLSHandshakeStep
            do throws(TLSError) {
                step = try tls.handshake()
            } catch {
                if error.code == .peerNotAllowed, let presented = tls.refusedPeer {
                    // Hex bessd computed from the certificate; the subject is the peer's text, quoted.
                    let lfdi = DeviceIdentity(fingerprint: presented.fingerprint)?.lfdi ?? "unknown"
                    throw HTTPClientError(.serverMismatch, message: "\(subject) presented a certificate that is not the pinned server's "
                                          + "(sha256 \(presented.fingerprint), LFDI \(lfdi), subject \(presented.identity)); "
                                          + "closed in the handshake, before any request")
                }
                throw HTTPClientError(.tls, message: "\(subject): \(error)")
            }
            switch step {
            case .complete: return
            case .wantRead: try wait(tls.fileDescriptor, for: Int16(POLLIN), until: deadline, doing: "the TLS handshake with \(subject)")
            case .wantWrite: try wait(tls.fileDescriptor, for: Int16(POLLOUT), until: deadline, doing: "the TLS handshake with \(subject)")
            }
        }
    }

    /// Waits until `fd` is ready for `events` (or has an error or hang-up to report), or throws
    /// `SEP2_HTTP_TIMEOUT` at `deadline`.
    private func wait(_ fd: Int32, for events: Int16, until deadline: MonotonicInstant, doing what: String) throws(HTTPClientError) {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while entry.revents == 0 {
            guard clock.now() < deadline else {
                throw HTTPClientError(.timeout, message: "\(what): no progress within \(timeout.secondsDouble) s", systemError: ETIMEDOUT)
            }
            _ = clock.poll(&entry, count: 1, until: deadline)
        }
    }

    /// Whether the server closed (or reset) an idle connection: it is readable, and what it has is
    /// its close, an error, or bytes no request asked for. Never blocks.
    private static func peerClosed(_ tls: TLSConnection) -> Bool {
        var entry = pollfd(fd: tls.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard tls.hasBufferedInput || poll(&entry, 1, 0) > 0 else { return false }
        var scratch = [UInt8](repeating: 0, count: 512)
        let result = scratch.withUnsafeMutableBytes { buffer in Result { () throws(TLSError) in try tls.read(into: buffer) } }
        switch result {
        case .success(.wantRead), .success(.wantWrite): return false  // a TLS record that carried no data (a ticket)
        default: return true
        }
    }

    // MARK: - The exchange

    /// Writes all of `bytes`, waiting for the socket as it asks.
    private func write(_ bytes: [UInt8], to tls: TLSConnection, until deadline: MonotonicInstant) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(TLSError) in try tls.write(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            switch result {
            case .success(.transferred(let count)): offset += count
            case .success(.wantWrite): try wait(tls.fileDescriptor, for: Int16(POLLOUT), until: deadline, doing: "sending the request")
            case .success(.wantRead): try wait(tls.fileDescriptor, for: Int16(POLLIN), until: deadline, doing: "sending the request")
            case .success(.endOfStream):
                throw HTTPClientError(.closed, message: "\(subject) closed the connection while the request was sent")
            case .failure(let error):
                // A write on a connection the server closed or reset: it is gone, as a close is.
                throw HTTPClientError(.closed, message: "sending the request to \(subject): \(error)")
            }
        }
    }

    /// Reads until the parser has a whole answer; with whether the connection stays open.
    private func read(from tls: TLSConnection, until deadline: MonotonicInstant) throws(HTTPClientError) -> (HTTPResponse, Bool) {
        var parser = HTTPResponseParser(maximumBody: maximumBody)
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            // Checked here too, not only when waiting: a server that always has more to send is
            // bounded by the deadline as a silent one is.
            guard clock.now() < deadline else {
                throw HTTPClientError(.timeout, message: "waiting for the answer: not complete within \(timeout.secondsDouble) s",
                                      systemError: ETIMEDOUT)
            }
            let result = buffer.withUnsafeMutableBytes { raw in Result { () throws(TLSError) in try tls.read(into: raw) } }
            switch result {
            case .success(.transferred(let count)):
                if let response = try parser.feed(buffer[..<count]) {
                    return (response, parser.keepAlive && parser.surplus == 0)
                }
            case .success(.wantRead):
                try wait(tls.fileDescriptor, for: Int16(POLLIN), until: deadline, doing: "waiting for the answer")
            case .success(.wantWrite):
                try wait(tls.fileDescriptor, for: Int16(POLLOUT), until: deadline, doing: "waiting for the answer")
            case .success(.endOfStream):
                return (try parser.finish(), false)
            case .failure(let error):
                // A reset before any byte of the answer is the server's close of a kept-alive
                // connection racing the request; later it is a broken answer.
                guard parser.received > 0 else { throw HTTPClientError(.closed, message: "reading the answer from \(subject): \(error)") }
                throw HTTPClientError(.tls, message: "reading the answer from \(subject): \(error)")
            }
        }
    }

    /// The request's bytes: request line, Host, Accept (2030.5's media type: a server may answer
    /// JSON without it), Content-Type and Content-Length, then the body.
    static func serialize(_ request: HTTPRequest, host: String, port: UInt16) throws(HTTPClientError) -> [UInt8] {
        guard ["GET", "POST", "PUT", "DELETE"].contains(request.method) else {
            throw HTTPClientError(.malformed, message: "method \(PeerText.quoted(request.method)) is not sent")
        }
        guard request.path.hasPrefix("/"), request.path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) else {
            throw HTTPClientError(.malformed, message: "path \(PeerText.quoted(request.path)) is not an absolute path of printable ASCII")
        }
        if let type = request.contentType, !type.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            throw HTTPClientError(.malformed, message: "content type \(PeerText.quoted(type)) holds a control character")
        }
        let authority = host.contains(":") ? "[\(host)]" : host
        var head = "\(request.method) \(request.path) HTTP/1.1\r\nHost: \(authority)\(port == 443 ? "" : ":\(port)")\r\n"
        head += "Accept: application/sep+xml\r\nUser-Agent: bessd\r\n"
        if let type = request.contentType { head += "Content-Type: \(type)\r\n" }
        if !request.body.isEmpty || ["POST", "PUT"].contains(request.method) { head += "Content-Length: \(request.body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + request.body
    }
}
