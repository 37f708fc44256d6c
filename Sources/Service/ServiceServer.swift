import BessBase
import BessSystem
public import Config
public import Cycle
import ControlCore
package import ControlProtocol
import Foundation
import Glibc
import Synchronization

/// An answer to a control request: now, or once the cycle has taken the request from its mailbox.
package enum ControlResponse {
    case now(any ControlReply)
    /// Answer with `finish()` once the cycle has applied mailbox generation `generation`; refuse
    /// with `CYCLE_NOT_RUNNING` when it has not within two seconds.
    case afterCycle(generation: UInt64, finish: () -> any ControlReply)
}

/// The control socket (bessctl) and `metrics_listen` (Prometheus), served from one thread of their
/// own with non-blocking I/O: `poll` over every listener and connection, per-connection buffers, an
/// idle timeout and a connection cap per listener. A client that connects and says nothing costs a
/// slot until its idle timeout and nothing else; at the cap the connection idle longest is closed to
/// make room, so a new operator is always answered, and no user can push another off the control
/// socket (`ControlAdmission`: a cap per uid, sessions with no role first). Nothing here feeds the
/// watchdog or runs the cycle.
final class ServiceServer: @unchecked Sendable {
    enum Kind { case control, metrics }

    struct Limits {
        /// A connection with no complete request for this long is closed.
        var idleTimeout: Duration = .seconds(5)
        /// Open connections per listener.
        var maxConnections = 64
        /// Open control connections per uid (`ControlAdmission`).
        var maxConnectionsPerUID = 16
        /// Longest request line (control) or header (metrics).
        var maxRequestBytes = 65_536
        /// How long an answer may wait for the cycle to take a request.
        var cycleWait: Duration = .seconds(2)
    }

    private final class Connection {
        let fd: Int32
        let kind: Kind
        var input: [UInt8] = []
        var output: [UInt8] = []
        var lastActivity: MonotonicInstant
        var closeAfterWrite = false
        var waiting: (generation: UInt64, deadline: MonotonicInstant, verb: ControlVerb, finish: () -> any ControlReply)?
        /// Read once at accept: the kernel's credentials do not change over a connection.
        let caller: ControlCaller?
        init(fd: Int32, kind: Kind, now: MonotonicInstant, caller: ControlCaller?) {
            self.fd = fd
            self.kind = kind
            lastActivity = now
            self.caller = caller
        }

        /// As `ControlAdmission` weighs it: a metrics client has no uid and counts as an operator.
        var session: ControlAdmission.Session {
            ControlAdmission.Session(id: fd, uid: caller?.uid, role: kind == .control ? caller?.role ?? .none : .operator,
                                     lastActivity: lastActivity, busy: waiting != nil)
        }
    }

    let limits: Limits
    private var listeners: [(fd: Int32, kind: Kind)] = []
    /// `metrics_listen`'s listener (BessSystem's one TCP listener); its descriptor is in `listeners`
    /// and closed with it.
    private var metricsListener: TCPListener?
    private var connections: [Int32: Connection] = [:]
    private let controlPath: String?
    private let handleControl: (ControlRequest, ControlCaller) -> ControlResponse
    private let renderMetrics: () -> String
    private let appliedGeneration: () -> UInt64
    /// Who is on a new control connection (the kernel's word; a test's stand-in).
    private let callerOf: (Int32) -> ControlCaller
    private let thread = WorkerThread()
    /// Ends the loop's wait at `stop()`: the loop sleeps only as long as something it keeps time for
    /// needs (an idle connection's timeout, an answer waiting for the cycle), not a fixed tick.
    private let stopWakeup = Wakeup()
    /// Times the loop's poll returned (tests: an idle server does not tick).
    let wakeups = Atomic<UInt64>(0)
    /// Connections closed for idling or to make room (tests and /metrics).
    let evicted = Atomic<UInt64>(0)
    /// Newcomers closed at once because nothing could give way to them (`ControlAdmission`).
    let refused = Atomic<UInt64>(0)
    /// This thread's CPU time answering control requests, per verb (/metrics).
    let answerCosts = AnswerCosts()

    /// Opens the listeners. `controlPath` is a Unix socket (mode 0666: who may read and who may act
    /// is decided per caller by `ControlCaller`); `metricsAddress` is `IPV4:PORT`.
    init(controlPath: String?, metricsAddress: String?, limits: Limits = Limits(),
         appliedGeneration: @escaping () -> UInt64,
         handleControl: @escaping (ControlRequest, ControlCaller) -> ControlResponse,
         renderMetrics: @escaping () -> String,
         callerOf: @escaping (Int32) -> ControlCaller = { ControlCaller.of(socket: $0) }) throws(RunError)
    {
        self.limits = limits
        self.callerOf = callerOf
        self.controlPath = controlPath
        self.handleControl = handleControl
        self.renderMetrics = renderMetrics
        self.appliedGeneration = appliedGeneration
        do {
            if let controlPath {
                let fd = try Self.listenUnix(controlPath)
                listeners.append((fd, .control))
                controlFile = Self.fileIdentity(controlPath)
            }
            if let metricsAddress {
                let listener = try Self.listenTCP(metricsAddress)
                metricsListener = listener
                listeners.append((listener.descriptor, .metrics))
            }
        } catch {
            for listener in listeners where listener.kind == .control { close(listener.fd) }
            removeControlSocket()
            throw error
        }
    }

    deinit {
        stop()
        for fd in connections.keys { close(fd) }
        for listener in listeners where listener.kind == .control { close(listener.fd) }
        removeControlSocket()
    }

    /// The device and inode of the socket file this server bound, so that it removes only its own:
    /// a socket file another process bound at the same path since is left alone.
    private var controlFile: (device: UInt64, inode: UInt64)?

    static func fileIdentity(_ path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    private func removeControlSocket() {
        guard let controlPath, let mine = controlFile, let now = Self.fileIdentity(controlPath),
              now.device == mine.device, now.inode == mine.inode else { return }
        unlink(controlPath)
    }

    /// Which listeners opened.
    var serves: [Kind] { listeners.map(\.kind) }

    func start() { thread.start { [self] in loop() } }
    func stop() { thread.stop { [stopWakeup] in stopWakeup.signal() } }

    // MARK: the loop

    private func loop() {
        var fds: [pollfd] = []
        fds.reserveCapacity(limits.maxConnections * 2 + 3)
        while thread.isRunning {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: stopWakeup.descriptor, events: Int16(POLLIN), revents: 0))
            for listener in listeners { fds.append(pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)) }
            for connection in connections.values {
                var events = Int16(POLLIN)
                if !connection.output.isEmpty { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: connection.fd, events: events, revents: 0))
            }
            _ = Glibc.poll(&fds, nfds_t(fds.count), pollTimeout(now: SystemClock.shared.now()))
            wakeups.add(1, ordering: .relaxed)
            if fds[0].revents != 0 { stopWakeup.drain() }
            let now = SystemClock.shared.now()
            for entry in fds.dropFirst() where entry.revents != 0 {
                if let listener = listeners.first(where: { $0.fd == entry.fd }) {
                    accept(on: listener.fd, kind: listener.kind, now: now)
                } else if let connection = connections[entry.fd] {
                    if entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { read(connection, now: now) }
                    if connections[entry.fd] != nil, entry.revents & Int16(POLLOUT) != 0 { flush(connection) }
                }
            }
            finishWaiting(now: now)
            closeIdle(now: now)
        }
    }

    /// How long the loop's poll may sleep (ms, -1: until a descriptor or `stop()` wakes it): 5 ms
    /// while an answer waits for the cycle to take its request, else until the first open
    /// connection's idle timeout. With no connection open nothing is due, so the thread sleeps
    /// until a client connects: waking on a fixed tick with nobody connected costs CPU for nothing
    /// (hil/results/README.md, "Figures behind the code").
    private func pollTimeout(now: MonotonicInstant) -> Int32 {
        var oldest: MonotonicInstant?
        for connection in connections.values {
            if connection.waiting != nil { return 5 }
            oldest = min(oldest ?? connection.lastActivity, connection.lastActivity)
        }
        return SystemClock.pollTimeout(until: oldest.map { $0 + limits.idleTimeout }, now: now)
    }

    /// The next connection on `listener`, non-blocking; nil when none is left (or `accept` failed:
    /// the next readiness tries again).
    private func acceptOne(on listener: Int32, kind: Kind) -> Int32? {
        if kind == .metrics {
            guard let connection = metricsListener?.acceptConnection() else { return nil }
            return connection.takeSocket().release()
        }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    private func accept(on listener: Int32, kind: Kind, now: MonotonicInstant) {
        while let fd = acceptOne(on: listener, kind: kind) {
            let connection = Connection(fd: fd, kind: kind, now: now, caller: kind == .control ? callerOf(fd) : nil)
            let newcomer = connection.session
            let open = connections.values.filter { $0.kind == kind }
            switch ControlAdmission.decide(uid: newcomer.uid, role: newcomer.role, open: open.map(\.session),
                                           maximum: limits.maxConnections, perUID: limits.maxConnectionsPerUID) {
            case .admit:
                break
            case .evict(let victim):
                if let victim = connections[victim] { drop(victim) }
                evicted.add(1, ordering: .relaxed)
            case .refuse:
                // A line the client may read, best effort (a new socket takes it whole), then closed.
                let line = ControlFailure("CONTROL_SOCKET_BUSY", "too many connections; none may give way to this one").line
                _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(fd)
                refused.add(1, ordering: .relaxed)
                continue
            }
            connections[fd] = connection
        }
    }

    private func read(_ connection: Connection, now: MonotonicInstant) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count: Int
            do throws(SystemCallError) {
                count = try systemCall("read") { Glibc.read(connection.fd, &chunk, chunk.count) }
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                break
            } catch {
                count = 0
            }
            if count == 0 {
                drop(connection)
                return
            }
            connection.input += chunk.prefix(count)
            connection.lastActivity = now
            if connection.input.count > limits.maxRequestBytes {
                connection.input.removeAll()
                respond(connection, ControlFailure("BAD_REQUEST", "request too large"), close: true)
                return
            }
        }
        switch connection.kind {
        case .control: serveControl(connection, now: now)
        case .metrics: serveMetrics(connection)
        }
    }

    private func serveControl(_ connection: Connection, now: MonotonicInstant) {
        // One request at a time per connection: the next line waits for the answer to this one.
        while connection.waiting == nil, let newline = connection.input.firstIndex(of: 0x0A) {
            let started = AnswerCosts.threadCPUNanoseconds()
            let line = Array(connection.input[..<newline])
            connection.input.removeSubrange(...newline)
            guard let request = ControlRequest(line: line) else {
                respond(connection, ControlFailure("BAD_REQUEST", "expected one JSON object per line"))
                answerCosts.record(nil, since: started)
                continue
            }
            switch handleControl(request, connection.caller ?? ControlCaller(uid: UInt32.max, pid: 0, role: .none)) {
            case .now(let answer):
                // Measured to the answer's bytes in the buffer; the send is the kernel's.
                connection.output += answer.line
                answerCosts.record(request.verb, since: started)
                flush(connection)
            case .afterCycle(let generation, let finish):
                connection.waiting = (generation, now + limits.cycleWait, request.verb, finish)
                answerCosts.record(request.verb, since: started)
            }
        }
    }

    private func serveMetrics(_ connection: Connection) {
        guard let end = Self.headerEnd(connection.input) else { return }
        let request = String(decoding: connection.input[..<end], as: UTF8.self)
        connection.input.removeAll()
        let ok = request.hasPrefix("GET /metrics ") || request.hasPrefix("GET /metrics\r")
        let body = ok ? renderMetrics() : "not found\n"
        let head = "HTTP/1.1 \(ok ? "200 OK" : "404 Not Found")\r\nContent-Type: text/plain; version=0.0.4\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        connection.output += Array((head + body).utf8)
        connection.closeAfterWrite = true
        flush(connection)
    }

    private func finishWaiting(now: MonotonicInstant) {
        let applied = appliedGeneration()
        for connection in connections.values {
            guard let waiting = connection.waiting else { continue }
            if applied >= waiting.generation {
                connection.waiting = nil
                let started = AnswerCosts.threadCPUNanoseconds()
                connection.output += waiting.finish().line
                answerCosts.record(waiting.verb, since: started, finishing: true)
                flush(connection)
            } else if now >= waiting.deadline {
                connection.waiting = nil
                respond(connection, ControlFailure("CYCLE_NOT_RUNNING",
                                                   "the control cycle did not take the request within 2 s; nothing was changed"))
            } else {
                continue
            }
            if connections[connection.fd] != nil { serveControl(connection, now: now) }
        }
    }

    private func closeIdle(now: MonotonicInstant) {
        for connection in connections.values where connection.waiting == nil
            && now - connection.lastActivity >= limits.idleTimeout
        {
            drop(connection)
            evicted.add(1, ordering: .relaxed)
        }
    }

    private func respond(_ connection: Connection, _ reply: some ControlReply, close: Bool = false) {
        connection.output += reply.line
        if close { connection.closeAfterWrite = true }
        flush(connection)
    }

    /// Writes what the socket takes now; the rest waits for POLLOUT.
    private func flush(_ connection: Connection) {
        while !connection.output.isEmpty {
            let sent = connection.output.withUnsafeBytes { bytes in
                Result { () throws(SystemCallError) in try systemCall("send") { send(connection.fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) } }
            }
            if case .failure(let error) = sent, error.errno == EAGAIN || error.errno == EWOULDBLOCK { return }
            guard case .success(let count) = sent, count > 0 else {
                drop(connection)
                return
            }
            connection.output.removeFirst(count)
        }
        if connection.closeAfterWrite { drop(connection) }
    }

    private func drop(_ connection: Connection) {
        close(connection.fd)
        connections[connection.fd] = nil
    }

    // MARK: helpers

    /// SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, written out (Linux: 1, 0o4000, 0o2000000): a
    /// release build of this file does not see Glibc's `SOCK_*` constants.
    static let streamSocketFlags: Int32 = 1 | 0o4000 | 0o2000000

    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    static func listenUnix(_ path: String) throws(RunError) -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // A live process's socket is never taken over; a stale file is replaced.
        try SiteOwnership.claimControlSocket(path)
        unlink(path)
        guard let address = UnixSocketAddress(path: path) else {
            throw RunError(.controlSocketFailed, message: "cannot create \(path)")
        }
        let socket: Socket
        do throws(SystemCallError) {
            socket = try Socket.listening(at: address, backlog: 128, path)
        } catch {
            throw RunError(.controlSocketFailed,
                           message: error.call == "socket" ? "cannot create \(path)" : "cannot listen on \(path): \(SystemError.text(error.errno))")
        }
        chmod(path, 0o666)
        return socket.release()
    }

    /// `metrics_listen`'s listener: `IPV4:PORT` (`ListenAddress`), bound by BessSystem's `TCPListener`.
    static func listenTCP(_ text: String) throws(RunError) -> TCPListener {
        guard let listen = ListenAddress(text, allowsPortZero: true) else {
            throw RunError(.metricsListenFailed, message: "metrics_listen must be IPV4:PORT (got \(text))")
        }
        do throws(SystemCallError) {
            return try TCPListener(listen, backlog: 128)
        } catch {
            switch error.call {
            case "inet_pton": throw RunError(.metricsListenFailed, message: "metrics_listen host must be an IPv4 address (got \(listen.host))")
            case "socket": throw RunError(.metricsListenFailed, message: "cannot create a socket")
            default: throw RunError(.metricsListenFailed, message: "cannot listen on \(text): \(SystemError.text(error.errno))")
            }
        }
    }
}
