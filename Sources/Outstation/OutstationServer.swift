public import BessSystem
public import Config
public import ControlCore
public import Cycle
import Glibc
public import IEC104
public import Synchronization
public import TLSTransport

/// The IEC 60870-5-104 outstation (controlled station): the site served to the grid operator's
/// control centres on a thread of its own, never the cycle's or the watchdog's (docs/iec104.md).
///
/// One `poll` waits on the stop wakeup, the listener and every connection, until the first link
/// timer, select expiry, the cycle's next publication (`SharedState.publicationWakeup`) or the
/// sample timer. Sockets are
/// non-blocking: a peer that reads slowly fills only its own output (at most k I-frames), one that
/// is silent is tested (t3) and closed (t1), one that never speaks is closed after t0; a malformed
/// frame closes that connection only. Connections belong to redundancy groups (`iec104.groups`,
/// by client address): one started connection per group, the others stand by; each group has
/// its own bounded event queue kept across disconnects, and events a closed connection sent but
/// never had acknowledged go back to the queue's head, in order, for the group's next started one.
///
/// `@unchecked Sendable`: everything but the atomics is used only by the server thread.
public final class OutstationServer: @unchecked Sendable {
    public let settings: IEC104ServerConfiguration
    /// The port bound (after `start`).
    public private(set) var port: Int
    let shared: SharedState
    var image: StationImage
    private var listener: TCPListener?
    private let worker = WorkerThread()
    let stopWakeup = Wakeup()
    let samplePeriod: Duration
    let log: @Sendable (OutstationLogCode, String, [String: String]) -> Void
    /// Every command outcome, and each window's sum of refusals held back, for /metrics and the
    /// uplink: called whether or not the journal's budget writes the line (docs/iec104.md "Audit").
    let audit: (@Sendable (OutstationAuditEntry) -> Void)?
    let timeBase: TimeBase
    let linkSettings: LinkSettings
    /// IEC 62351-3: every accepted connection is authenticated with this before IEC 104 flows;
    /// nil serves plain TCP. Read at each accept: a reload replaces it (`replaceTLSContext(_:)`).
    var tlsContext: TLSServerContext? { tlsContextHolder.withLock { $0 } }
    private let tlsContextHolder: Mutex<TLSServerContext?>
    /// What a reload handed over for the server thread (OutstationServer+Reload.swift).
    let pendingReload = Mutex(PendingReload())
    /// The monotonic clock of every timer: t0–t3, the select timeout, sampling, the journal's
    /// budget (`SystemClock` in bessd, a `ManualClock` in tests that step time).
    let clock: any MonotonicClock

    /// Counters for /metrics.
    public let commandsAccepted = Atomic<UInt64>(0)
    public let commandsRefused = Atomic<UInt64>(0)
    public let connectionsRefused = Atomic<UInt64>(0)
    public let connectionsClosed = Atomic<UInt64>(0)
    public let protocolErrors = Atomic<UInt64>(0)
    public let negativeAnswers = Atomic<UInt64>(0)
    public let eventsQueued = Atomic<UInt64>(0)
    public let eventsDropped = Atomic<UInt64>(0)
    public let interrogations = Atomic<UInt64>(0)
    public let connected = Atomic<Int>(0)
    /// TLS sessions begun on accepted connections (only for peers a group admits).
    package let tlsSessionsBegun = Atomic<UInt64>(0)

    final class Connection {
        let id: Int
        let stream: any ByteStream
        /// Its index in `groups`: by address at accept, by certificate too once authenticated, again at a reload.
        var group: Int
        var splitter = FrameSplitter()
        var link: Link
        var output: [UInt8] = []
        /// ASDUs to send before the group's events (answers, confirmations), encoded.
        var answers: [[UInt8]] = []
        /// I-frames sent and not yet acknowledged, oldest first: the ASDU and whether it is an event.
        var sent: [(asdu: [UInt8], event: Bool)] = []
        let acceptedAt: MonotonicInstant
        var spoke = false
        var initialised = false
        var closeReason: String?
        /// The TLS handshake is done (always true without TLS): until then no frame is read and the
        /// connection is closed when `iec104.tls.handshake_timeout_s` passes.
        var authenticated: Bool

        init(id: Int, stream: any ByteStream, group: Int, link: Link, now: MonotonicInstant) {
            self.id = id
            self.stream = stream
            self.group = group
            self.link = link
            acceptedAt = now
            authenticated = !(stream is TLSStream)
        }
    }

    /// The journal lines of one source address in one window (`journalWindow`), whichever of its
    /// connections caused them: in each kind at most `journalLines` are written, the rest counted
    /// and summed up in one `IEC104_LOG_SUPPRESSED` line at the window's end.
    struct JournalBudget {
        var start: MonotonicInstant
        var used: MonotonicInstant
        /// Lines of the address's connections (accept, refusal, connected, closed, errors).
        var connectionLines = 0
        /// Lines its peers' input caused (negative answers, refused commands, clock syncs).
        var inputLines = 0
        var suppressed = 0
        /// Of `suppressed`, refused commands: the uplink gets their count in one event.
        var suppressedRefusals = 0
    }

    /// What a journal line is about, for the budget: a connection's life or a peer's input.
    enum JournalKind { case connection, input }

    /// The journal lines one source address may cause per `journalWindow` in each kind: a peer that
    /// sends a stream of bad ASDUs, or reconnects in a loop, costs the journal this many lines and
    /// a summary, while /metrics counts every one.
    package static let journalLines = 20
    package static let journalWindow: Duration = .seconds(10)
    /// The source addresses whose budgets are kept; past it the least recently used one is summed
    /// up and forgotten.
    static let journalAddresses = 64
    /// The budgets by source address (IPv4, host order).
    var budgets: [UInt32: JournalBudget] = [:]

    struct GroupState {
        var settings: IEC104Group
        var queue: [[UInt8]] = []
        var started: Int?
    }

    struct Selection {
        let connection: Int
        let value: Double
        let expires: MonotonicInstant
    }

    var connections: [Connection] = []
    var groups: [GroupState]
    var selections: [UInt32: Selection] = [:]
    private var nextID = 1
    private var lastCycle: UInt64 = .max
    private var units: [UnitStatus]
    private var site = SiteStatus()

    /// `log(code, message, fields)` is called on the server thread; `fields` are journald BESS_* fields.
    /// `tlsContext` is made from `settings.tls` (`IEC104TLSConfiguration.serverContext()`) when it is
    /// set: with it every connection is TLS, never plain.
    /// `clock` times every timer (t0–t3, select timeout, sampling, the journal's budget); the time
    /// tags of events and the age of time-tagged commands are wall-clock time.
    public init(settings: IEC104ServerConfiguration, description: StationDescription, shared: SharedState,
                samplePeriod: Duration = .milliseconds(100), clock: any MonotonicClock = SystemClock.shared,
                tlsContext: TLSServerContext? = nil,
                audit: (@Sendable (OutstationAuditEntry) -> Void)? = nil,
                log: @escaping @Sendable (OutstationLogCode, String, [String: String]) -> Void) {
        self.settings = settings
        tlsContextHolder = Mutex(tlsContext)
        self.clock = clock
        self.shared = shared
        self.samplePeriod = samplePeriod
        self.log = log
        self.audit = audit
        port = settings.port
        image = StationImage(description: description, settings: settings)
        groups = settings.groups.map { GroupState(settings: $0) }
        units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        timeBase = TimeBase(offsetMinutes: settings.timeZoneOffsetMinutes) ?? .utc
        linkSettings = LinkSettings(k: settings.k, w: settings.w, t1: settings.t1, t2: settings.t2, t3: settings.t3) ?? .standard
    }

    deinit { stop() }

    /// Binds the listen address and starts the thread; a bind failure is thrown (the daemon logs it
    /// and runs on).
    public func start() throws(SystemCallError) {
        let listener = try TCPListener(host: settings.host, port: settings.port)
        self.listener = listener
        port = listener.port
        shared.watchPublications()
        sample(now: clock.now())
        worker.start(name: "bessd-iec104") { [self] in serve(listener) }
    }

    public func stop() {
        worker.stop { [stopWakeup] in stopWakeup.signal() }
    }

    /// Hands a context read again from the files (a reload: a CRL or allow-list rewritten) to the
    /// connections accepted from now on, and checks every open connection's certificate against
    /// it: one that no longer passes is closed (`IEC104_PEER_REVOKED`). Any thread. Returns false, and changes nothing, on a server that serves plain TCP: a
    /// reload never turns TLS on or off.
    public func replaceTLSContext(_ context: TLSServerContext) -> Bool {
        tlsContextHolder.withLock { current in
            guard current != nil else { return false }
            current = context
            pendingReload.withLock { $0.recheck = true }
            stopWakeup.signal()
            return true
        }
    }

    /// The group a client at `address` belongs to: the first whose `allow_from` holds it (an empty
    /// list: loopback).
    static func group(of address: UInt32, in groups: [IEC104Group]) -> Int? {
        groups.firstIndex { $0.admits(address: address) }
    }

    private func serve(_ listener: TCPListener) {
        var fds: [pollfd] = []
        var nextSample = clock.now() + samplePeriod
        while worker.isRunning {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: stopWakeup.descriptor, events: Int16(POLLIN), revents: 0))
            fds.append(pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0))
            fds.append(pollfd(fd: shared.publicationWakeup.descriptor, events: Int16(POLLIN), revents: 0))
            for connection in connections {
                let events = Int16(POLLIN) | (connection.output.isEmpty ? 0 : Int16(POLLOUT))
                fds.append(pollfd(fd: connection.stream.descriptor, events: events, revents: 0))
            }
            var deadline = nextSample
            for connection in connections {
                if let d = connection.link.nextDeadline { deadline = min(deadline, d) }
                if !connection.spoke { deadline = min(deadline, connection.acceptedAt + settings.t0) }
                if !connection.authenticated { deadline = min(deadline, connection.acceptedAt + handshakeTimeout) }
            }
            for selection in selections.values { deadline = min(deadline, selection.expires) }
            for budget in budgets.values where budget.suppressed > 0 {
                deadline = min(deadline, budget.start + Self.journalWindow)
            }
            if connections.contains(where: { $0.stream.hasPendingInput }) { deadline = clock.now() }
            _ = clock.poll(&fds, count: fds.count, until: deadline)
            if fds[0].revents != 0 { _ = stopWakeup.drain() }
            guard worker.isRunning else { break }
            let now = clock.now()
            applyReload()
            if fds[1].revents & Int16(POLLIN) != 0 { acceptAll(listener, now: now) }
            for (entry, connection) in zip(fds.dropFirst(3), connections)
                where entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 || connection.stream.hasPendingInput
            {
                receive(connection, now: now)
            }
            // The cycle's publication wakes the sample at once (a change reaches the wire within the
            // period); the timer stays as the floor when no cycle publishes.
            let published = fds[2].revents != 0 && shared.publicationWakeup.drain()
            if published || now >= nextSample {
                sample(now: now)
                nextSample = now + samplePeriod
            }
            settle(now: now)
        }
        for connection in connections {
            connection.closeReason = "bessd stops"
        }
        reap()
    }

    /// Takes a stream that did not come from the listener (the `iec104-session` fuzz target's, in
    /// memory) as a connection of `group`, accepted at `now`.
    package func admit(_ stream: any ByteStream, group: Int, now: MonotonicInstant) {
        connections.append(Connection(id: nextID, stream: stream, group: group, link: Link(settings: linkSettings, now: now), now: now))
        nextID += 1
    }

    /// One turn of the server's loop with nothing to poll, at the caller's `now` (the
    /// `iec104-session` fuzz target, on streams in memory): every connection reads what its stream
    /// holds, then the rest of the turn runs as after a `poll`.
    package func turn(now: MonotonicInstant) {
        for connection in connections { receive(connection, now: now) }
        settle(now: now)
    }

    /// The turn after the reads: expired selects dropped; each connection's timers; each open
    /// connection's answers and events sent, its output flushed and bounded; closed ones reaped.
    private func settle(now: MonotonicInstant) {
        selections = selections.filter { $0.value.expires > now }
        for connection in connections where connection.closeReason == nil {
            if !connection.authenticated, now >= connection.acceptedAt + handshakeTimeout {
                refuseTLS(connection, code: "\(TLSError.Code.handshakeFailed)",
                          reason: "TLS handshake not completed within \(handshakeTimeout) (iec104.tls.handshake_timeout_s)")
                continue
            }
            if !connection.spoke, now >= connection.acceptedAt + settings.t0 {
                connection.closeReason = "nothing received within t0 = \(settings.t0)"
                peerLog(connection, .connection, .idle, "IEC 104 connection from \(connection.stream.peer) closed: \(connection.closeReason!)",
                        ["BESS_PEER": connection.stream.peer])
                continue
            }
            perform(connection.link.tick(at: now), on: connection, now: now)
        }
        renewJournalBudgets(now: now)
        for connection in connections where connection.closeReason == nil {
            pump(connection, now: now)
            flush(connection)
            bound(connection)
        }
        reap()
    }

    private func acceptAll(_ listener: TCPListener, now: MonotonicInstant) {
        while let tcp = listener.accept() {
            // The group and the limit on the TCP peer's address first: a peer no group admits
            // costs no TLS session.
            guard let group = placement(of: tcp.peerAddress, certificate: nil) else {
                connectionsRefused.add(1, ordering: .relaxed)
                peerLog(address: tcp.peerAddress, .connection, .peerRefused, "IEC 104 connection from \(tcp.peer) refused: in no iec104.groups allow_from",
                        ["BESS_PEER": tcp.peer])
                tcp.close()
                continue
            }
            guard connections.count < settings.maxConnections else {
                connectionsRefused.add(1, ordering: .relaxed)
                peerLog(address: tcp.peerAddress, .connection, .connectionsFull,
                        "IEC 104 connection from \(tcp.peer) refused: \(settings.maxConnections) connections open (iec104.max_connections)",
                        ["BESS_PEER": tcp.peer])
                tcp.close()
                continue
            }
            let stream: any ByteStream
            if let tlsContext {
                tlsSessionsBegun.add(1, ordering: .relaxed)
                do { stream = try TLSStream(over: tcp, context: tlsContext) } catch {
                    connectionsRefused.add(1, ordering: .relaxed)
                    peerLog(address: tcp.peerAddress, .connection, .tlsRefused, "IEC 104 connection from \(tcp.peer) refused: \(error)",
                            ["BESS_PEER": tcp.peer, "BESS_TLS_ERROR": "\(error.code)"])
                    tcp.close()
                    continue
                }
            } else {
                stream = tcp
            }
            connections.append(Connection(id: nextID, stream: stream, group: group, link: Link(settings: linkSettings, now: now), now: now))
            nextID += 1
            connected.store(connections.count, ordering: .relaxed)
            // A TLS connection is named once its certificate is verified (`handshakeDone`).
            guard !(stream is TLSStream) else { continue }
            peerLog(address: stream.peerAddress, .connection, .connected, "IEC 104 connection from \(stream.peer) (group \(groups[group].settings.name))",
                    ["BESS_PEER": stream.peer, "BESS_GROUP": groups[group].settings.name])
        }
    }

    /// Reads what the peer sent (at most 16 KiB a turn, so one peer cannot hold the thread) and
    /// handles each whole frame.
    private func receive(_ connection: Connection, now: MonotonicInstant) {
        var budget = 16_384
        while budget > 0, connection.closeReason == nil {
            let read = connection.stream.read(limit: 4096)
            if !connection.authenticated, !handshakeDone(connection, read) { return }
            switch read {
            case .bytes(let bytes):
                budget -= bytes.count
                connection.spoke = true
                connection.splitter.append(bytes)
                while connection.closeReason == nil {
                    let frame: Frame?
                    do { frame = try connection.splitter.next() } catch {
                        protocolError(connection, error)
                        return
                    }
                    guard let frame else { break }
                    received(frame, on: connection, now: now)
                }
            case .wouldBlock: return
            case .closed:
                connection.closeReason = "the peer closed the connection"
                return
            case .failed(let reason):
                connection.closeReason = "read failed: \(reason)"
                return
            }
        }
    }

    /// How long a TLS connection may take to authenticate.
    private var handshakeTimeout: Duration { settings.tls?.handshakeTimeout ?? settings.t0 }

    /// After a read of a connection still in its TLS handshake: false while the handshake goes on
    /// or when it failed (the connection is then refused); true once the peer is authenticated,
    /// when it is named in the journal by its certificate's subject.
    private func handshakeDone(_ connection: Connection, _ read: StreamRead) -> Bool {
        guard let tls = connection.stream as? TLSStream else { return true }
        if let failure = tls.failure {
            refuseTLS(connection, code: "\(failure.code)", reason: failure.description)
            return false
        }
        guard tls.authenticatedPeer != nil else {
            if case .closed = read {
                refuseTLS(connection, code: "\(TLSError.Code.handshakeFailed)", reason: "the peer closed the connection during the TLS handshake")
            }
            return false
        }
        guard admitAuthenticated(connection, tls) else { return false }
        connection.authenticated = true
        let group = groups[connection.group].settings.name
        peerLog(connection, .connection, .connected, "IEC 104 TLS connection from \(tls.address) authenticated as \(tls.peer) (group \(group))",
                ["BESS_PEER": tls.peer, "BESS_PEER_ADDRESS": tls.address, "BESS_GROUP": group])
        return true
    }

    /// Closes a connection whose TLS handshake failed or did not finish, with the coded reason
    /// (`TLS_PEER_UNTRUSTED`, …) and the peer's address.
    func refuseTLS(_ connection: Connection, code: String, reason: String) {
        guard connection.closeReason == nil else { return }
        connectionsRefused.add(1, ordering: .relaxed)
        let address = (connection.stream as? TLSStream)?.address ?? connection.stream.peer
        connection.closeReason = "TLS refused: \(code)"
        peerLog(connection, .connection, .tlsRefused, "IEC 104 connection from \(address) refused: \(reason)",
                ["BESS_PEER": address, "BESS_TLS_ERROR": code, "BESS_GROUP": groups[connection.group].settings.name])
    }

    private func received(_ frame: Frame, on connection: Connection, now: MonotonicInstant) {
        let wasStarted = connection.link.isStarted
        let actions = connection.link.received(frame, at: now)
        if !wasStarted, connection.link.isStarted { started(connection) }
        if wasStarted, !connection.link.isStarted, groups[connection.group].started == connection.id {
            groups[connection.group].started = nil
        }
        perform(actions, on: connection, now: now)
        trimAcknowledged(connection)
    }

    /// STARTDT on `connection`: it becomes its group's started connection. One started before it
    /// in the group is closed (switch-over); its unacknowledged events go back to the queue first.
    /// So do the events a connection of the group sent before a STOPDT and never had acknowledged
    /// (this one, restarted, or another, stopped and still open): the start delivers them again,
    /// in order, before anything newer.
    private func started(_ connection: Connection) {
        let group = connection.group
        if let previous = groups[group].started, previous != connection.id,
           let old = connections.first(where: { $0.id == previous && $0.closeReason == nil })
        {
            old.closeReason = "switch-over: \(connection.stream.peer) started in group \(groups[group].settings.name)"
            peerLog(connection, .connection, .switchover, "IEC 104 group \(groups[group].settings.name): \(connection.stream.peer) started; \(old.stream.peer) closed",
                    ["BESS_PEER": connection.stream.peer, "BESS_GROUP": groups[group].settings.name])
            requeue(old)
        }
        for stopped in connections where stopped.group == group && stopped.closeReason == nil
            && (stopped === connection || !stopped.link.isStarted)
        {
            requeue(stopped)
        }
        groups[group].started = connection.id
        if !connection.initialised {
            connection.initialised = true
            let end = ASDU(type: .endOfInitialisation, cause: CauseOfTransmission(cause: .initialised),
                           commonAddress: settings.commonAddress, objects: [InformationObject(address: 0, element: .endOfInitialisation(0))])
            if let bytes = try? end.encoded() { connection.answers.append(bytes) }
        }
    }

    func perform(_ actions: [LinkAction], on connection: Connection, now: MonotonicInstant) {
        for action in actions {
            switch action {
            case .send(let frame): connection.output += frame.encoded()
            case .deliver(let asdu): handle(asdu, from: connection, now: now)
            case .close(let error): protocolError(connection, error)
            }
            if connection.closeReason != nil { return }
        }
    }

    func protocolError(_ connection: Connection, _ error: IEC104Error) {
        guard connection.closeReason == nil else { return }
        protocolErrors.add(1, ordering: .relaxed)
        connection.closeReason = "\(error.code)"
        peerLog(connection, .connection, .protocolError, "IEC 104 connection from \(connection.stream.peer) closed: \(error)",
                ["BESS_PEER": connection.stream.peer, "BESS_IEC104_ERROR": "\(error.code)", "BESS_GROUP": groups[connection.group].settings.name])
    }

    /// Drops the sent frames the link has had acknowledged.
    private func trimAcknowledged(_ connection: Connection) {
        let acknowledged = connection.sent.count - connection.link.unacknowledgedCount
        if acknowledged > 0 { connection.sent.removeFirst(acknowledged) }
    }

    /// Unacknowledged events of a closing or stopped connection go back to its group's queue head,
    /// in order, once: their entries stay in `sent`, no longer marked as events, so that `sent`
    /// still matches the link's unacknowledged frames of a connection that stays open.
    private func requeue(_ connection: Connection) {
        var events: [[UInt8]] = []
        for index in connection.sent.indices where connection.sent[index].event {
            events.append(connection.sent[index].asdu)
            connection.sent[index].event = false
        }
        guard !events.isEmpty else { return }
        groups[connection.group].queue.insert(contentsOf: events, at: 0)
        boundQueue(connection.group)
    }

    private func boundQueue(_ group: Int) {
        let excess = groups[group].queue.count - settings.eventQueue
        if excess > 0 {
            groups[group].queue.removeFirst(excess)
            eventsDropped.add(UInt64(excess), ordering: .relaxed)
        }
    }

    /// Sends answers, then the group's events, while the link's window allows.
    private func pump(_ connection: Connection, now: MonotonicInstant) {
        let group = connection.group
        while connection.link.canSend, connection.closeReason == nil {
            let asdu: [UInt8]
            let event: Bool
            if !connection.answers.isEmpty {
                asdu = connection.answers.removeFirst()
                event = false
            } else if groups[group].started == connection.id, !groups[group].queue.isEmpty {
                asdu = groups[group].queue.removeFirst()
                event = true
            } else {
                return
            }
            do {
                let frame = try connection.link.send(asdu, at: now)
                connection.output += frame.encoded()
                connection.sent.append((asdu, event))
            } catch {
                // Our own encoder's mistake: never on the wire.
                log(.internalError, "IEC 104: an ASDU not sent: \(error)", [:])
            }
        }
    }

    /// A peer that asks and never reads (answers waiting behind a full window, or octets the socket
    /// will not take) is closed before its backlog grows: it costs its own connection only.
    private func bound(_ connection: Connection) {
        guard connection.closeReason == nil,
              connection.answers.count > Self.maxAnswers || connection.output.count > Self.maxOutput else { return }
        connection.closeReason = "backlog: \(connection.answers.count) answers and \(connection.output.count) octets not taken"
        protocolErrors.add(1, ordering: .relaxed)
        peerLog(connection, .connection, .backlog, "IEC 104 connection from \(connection.stream.peer) closed: it does not take what it asks for (\(connection.closeReason!))",
                ["BESS_PEER": connection.stream.peer, "BESS_GROUP": groups[connection.group].settings.name])
    }

    /// Answers waiting behind the window, and octets waiting for the socket, a connection may have.
    static let maxAnswers = 512
    static let maxOutput = 64 * 1024

    private func flush(_ connection: Connection) {
        guard !connection.output.isEmpty else { return }
        guard let written = connection.stream.write(connection.output[...]) else {
            connection.closeReason = "write failed"
            return
        }
        connection.output.removeFirst(written)
    }

    func reap() {
        var kept: [Connection] = []
        for connection in connections {
            guard let reason = connection.closeReason else {
                kept.append(connection)
                continue
            }
            flush(connection)
            requeue(connection)
            if groups[connection.group].started == connection.id { groups[connection.group].started = nil }
            selections = selections.filter { $0.value.connection != connection.id }
            connection.stream.close()
            connectionsClosed.add(1, ordering: .relaxed)
            peerLog(connection, .connection, .closed, "IEC 104 connection from \(connection.stream.peer) closed: \(reason)",
                    ["BESS_PEER": connection.stream.peer, "BESS_GROUP": groups[connection.group].settings.name])
        }
        connections = kept
        connected.store(connections.count, ordering: .relaxed)
    }

    /// A journal line the peer's input caused (a negative answer, a refused command, a clock
    /// synchronisation), within its address's budget of such lines. True when written.
    @discardableResult
    func peerLog(_ connection: Connection, _ code: OutstationLogCode, _ message: String, _ fields: [String: String]) -> Bool {
        peerLog(address: connection.stream.peerAddress, .input, code, message, fields)
    }

    /// A journal line a peer caused (`kind`: its connection's life or its input), written while
    /// its source address's budget lasts (`journalLines` of each kind per `journalWindow`), else
    /// counted for the window's summary. True when written.
    @discardableResult
    func peerLog(_ connection: Connection, _ kind: JournalKind, _ code: OutstationLogCode, _ message: String, _ fields: [String: String]) -> Bool {
        peerLog(address: connection.stream.peerAddress, kind, code, message, fields)
    }

    @discardableResult
    func peerLog(address: UInt32, _ kind: JournalKind, _ code: OutstationLogCode, _ message: String, _ fields: [String: String]) -> Bool {
        let now = clock.now()
        if let budget = budgets[address], now >= budget.start + Self.journalWindow { endWindow(of: address) }
        if budgets[address] == nil {
            if budgets.count >= Self.journalAddresses, let oldest = budgets.min(by: { $0.value.used < $1.value.used })?.key {
                endWindow(of: oldest)
            }
            budgets[address] = JournalBudget(start: now, used: now)
        }
        budgets[address]!.used = now
        let written = kind == .connection ? budgets[address]!.connectionLines : budgets[address]!.inputLines
        guard written < Self.journalLines else {
            budgets[address]!.suppressed += 1
            if code == .commandRefused { budgets[address]!.suppressedRefusals += 1 }
            return false
        }
        switch kind {
        case .connection: budgets[address]!.connectionLines += 1
        case .input: budgets[address]!.inputLines += 1
        }
        log(code, message, fields)
        return true
    }

    /// Ends the windows that are over: for each address with lines held back, one
    /// `IEC104_LOG_SUPPRESSED` line with the count and, when refused commands were among them, one
    /// audit entry with theirs. An address then starts afresh with its next line.
    func renewJournalBudgets(now: MonotonicInstant) {
        for (address, budget) in budgets where now >= budget.start + Self.journalWindow { endWindow(of: address) }
    }

    /// Sums up and forgets `address`'s budget (its window is over, or the table is full).
    private func endWindow(of address: UInt32) {
        guard let budget = budgets.removeValue(forKey: address), budget.suppressed > 0 else { return }
        let peer = IPv4Text.dotted(address)
        log(.suppressed, "IEC 104 peers at \(peer): \(budget.suppressed) journal lines suppressed over \(Self.journalLines) of each kind in \(Self.journalWindow); /metrics counts every one",
            ["BESS_PEER": peer, "BESS_SUPPRESSED": "\(budget.suppressed)", "BESS_REFUSED_COMMANDS": "\(budget.suppressedRefusals)"])
        guard budget.suppressedRefusals > 0 else { return }
        audit?(.refusalsSuppressed(count: budget.suppressedRefusals, peer: peer,
                                   message: "IEC 104: \(budget.suppressedRefusals) more commands from \(peer) refused within \(Self.journalWindow), past the journal's budget; /metrics counts each by code"))
    }

    /// Takes the cycle's latest published state when it is new: the image is filled and every
    /// change beyond its deadband becomes a time-tagged event in every group's queue.
    func sample(now: MonotonicInstant) {
        var frequency = Double.nan
        let cycle = shared.read(units: &units, site: &site, frequency: &frequency)
        guard cycle != lastCycle else { return }
        lastCycle = cycle
        image.fill(units: units, site: site, frequency: frequency, now: now)
        image.fill(frequencyEvents: shared.frequencyEventTally)
        let changes = image.changes()
        guard !changes.isEmpty else { return }
        let tag = timeTag()
        for point in changes {
            let asdu = ASDU(type: point.value.timed(tag).type, cause: CauseOfTransmission(cause: .spontaneous),
                            commonAddress: settings.commonAddress,
                            objects: [InformationObject(address: point.address, element: point.value.timed(tag))])
            guard let bytes = try? asdu.encoded() else { continue }
            for group in groups.indices {
                groups[group].queue.append(bytes)
                boundQueue(group)
            }
            eventsQueued.add(1, ordering: .relaxed)
        }
    }

    /// Now as a CP56Time2a in the configured time base.
    func timeTag() -> CP56Time2a {
        let ms = Int64((SystemClock.wallClockSeconds() * 1000).rounded(.down))
        return (try? CP56Time2a(unixMilliseconds: ms, base: timeBase))
            ?? CP56Time2a(year: 0, month: 1, day: 1, hour: 0, minute: 0, milliseconds: 0, invalid: true)
    }
}

/// The outstation's journal codes (`BESS_CODE`).
public enum OutstationLogCode: String, Sendable {
    case connected = "IEC104_CONNECTED"
    /// A connection refused in its TLS handshake (`BESS_TLS_ERROR`: the `TLSError` code) or for
    /// not finishing it in time.
    case tlsRefused = "IEC104_TLS_REFUSED"
    case closed = "IEC104_CLOSED"
    case peerRefused = "IEC104_PEER_REFUSED"
    /// An open connection closed at a reload: its certificate or address no longer passes
    /// `iec104.tls` or its group (`BESS_REASON`).
    case peerRevoked = "IEC104_PEER_REVOKED"
    case connectionsFull = "IEC104_CONNECTIONS_FULL"
    case idle = "IEC104_IDLE"
    case protocolError = "IEC104_PROTOCOL_ERROR"
    case switchover = "IEC104_SWITCHOVER"
    case backlog = "IEC104_BACKLOG"
    case negative = "IEC104_NEGATIVE"
    case clockSync = "IEC104_CLOCK_SYNC"
    case command = "IEC104_COMMAND"
    case commandRefused = "IEC104_COMMAND_REFUSED"
    case internalError = "IEC104_INTERNAL"
    /// Lines an address's peers caused beyond its budget, summed up (`BESS_SUPPRESSED`,
    /// `BESS_REFUSED_COMMANDS`).
    case suppressed = "IEC104_LOG_SUPPRESSED"

    /// True for the codes of commands (their own MESSAGE_ID).
    public var isCommand: Bool { self == .command || self == .commandRefused }
}

/// What the outstation hands its audit (/metrics and the uplink) besides the journal: every
/// command outcome, whether or not the journal's budget wrote its line, and per source address and
/// window the count of refused commands whose lines the budget held back.
public enum OutstationAuditEntry: Sendable, Equatable {
    /// One command's outcome: `code` `IEC104_COMMAND` or `IEC104_COMMAND_REFUSED`, the journal's
    /// sentence and fields (`BESS_REASON`: the refusal's code); `journalled` false when the budget
    /// held its line back (it is then in the window's `refusalsSuppressed`).
    case outcome(code: OutstationLogCode, message: String, fields: [String: String], journalled: Bool)
    /// `count` refused commands from `peer` (an address) whose lines the budget held back in one window.
    case refusalsSuppressed(count: Int, peer: String, message: String)
}
