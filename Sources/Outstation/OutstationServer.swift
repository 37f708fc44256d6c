import BessBase
public import BessSystem
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
    public let settings: OutstationSettings
    /// The port bound (after `start`).
    public private(set) var port: Int
    let shared: SharedState
    private let worker = WorkerThread()
    let stopWakeup = Wakeup()
    let samplePeriod: Duration
    /// Every journal line; a peer's within its address's budget (`PeerJournal`).
    let journal: PeerJournal
    let linkSettings: LinkSettings
    /// The listening socket and the admission of clients (groups, the cap, TLS).
    let listener: OutstationListener
    /// What a reload handed over for the server thread (OutstationServer+Reload.swift).
    let pendingReload = Mutex(PendingReload())
    /// The monotonic clock of every timer: t0–t3, the select timeout, sampling, the journal's
    /// budget (`SystemClock` in bessd, a `ManualClock` in tests that step time).
    let clock: any MonotonicClock
    /// The image of the site and the application procedures (interrogation, commands, …).
    let station: StationProcedures
    /// Counters for /metrics.
    public let counters: OutstationCounters

    typealias Connection = OutstationConnection

    /// The journal lines one source address may cause per window in each kind (`PeerJournal`).
    package static var journalLines: Int { PeerJournal.lines }
    package static var journalWindow: Duration { PeerJournal.window }

    var connections: [Connection] = []
    var groups: RedundancyGroups
    private var nextID = 1

    /// `log` is called on the server thread with each journal line (`OutstationLogCode`).
    /// `tlsContext` is made from `settings.tls` (`OutstationTLSSettings.serverContext()`) when it is
    /// set: with it every connection is TLS, never plain.
    /// `clock` times every timer (t0–t3, select timeout, sampling, the journal's budget); the time
    /// tags of events and the age of time-tagged commands are `wallClock` time.
    public init(settings: OutstationSettings, description: StationDescription, shared: SharedState,
                samplePeriod: Duration = .milliseconds(100), clock: any MonotonicClock = SystemClock.shared,
                wallClock: @escaping @Sendable () -> Double = { SystemClock.wallClockSeconds() },
                tlsContext: TLSServerContext? = nil,
                audit: (@Sendable (OutstationAuditEntry) -> Void)? = nil,
                log: @escaping @Sendable (Notice) -> Void) {
        self.settings = settings
        self.clock = clock
        self.shared = shared
        self.samplePeriod = samplePeriod
        let journal = PeerJournal(clock: clock, sink: log, audit: audit), counters = OutstationCounters()
        self.journal = journal
        self.counters = counters
        station = StationProcedures(settings: settings, description: description, shared: shared, journal: journal, counters: counters,
                                    audit: audit, clock: clock, wallClock: wallClock)
        port = settings.port
        listener = OutstationListener(host: settings.host, maxConnections: settings.maxConnections,
                                      handshakeTimeout: settings.tls?.handshakeTimeout ?? settings.t0, tlsContext: tlsContext,
                                      journal: journal, counters: counters)
        groups = RedundancyGroups(settings.groups, queueLimit: settings.eventQueue)
        linkSettings = LinkSettings(k: settings.k, w: settings.w, t1: settings.t1, t2: settings.t2, t3: settings.t3) ?? .standard
    }

    deinit { stop() }

    /// Binds the listen address and starts the thread; a bind failure is thrown (the daemon logs it
    /// and runs on).
    public func start() throws(SystemCallError) {
        port = try listener.bind(port: settings.port)
        shared.watchPublications()
        station.sample(now: clock.now(), groups: &groups)
        worker.start(name: "bessd-iec104") { [self] in serve() }
    }

    public func stop() {
        worker.stop { [stopWakeup] in stopWakeup.signal() }
    }

    /// Hands a context read again from the files (a reload: a CRL or allow-list rewritten) to the
    /// connections accepted from now on, and checks every open connection's certificate against
    /// it: one that no longer passes is closed (`IEC104_PEER_REVOKED`). Any thread. Returns false,
    /// and changes nothing, on a server that serves plain TCP: a reload never turns TLS on or off.
    public func replaceTLSContext(_ context: TLSServerContext) -> Bool {
        listener.replaceContext(context) {
            pendingReload.withLock { $0.recheck = true }
            stopWakeup.signal()
        }
    }

    /// The group a client at `address` belongs to: the first whose `allow_from` holds it (an empty
    /// list: loopback).
    static func group(of address: UInt32, in groups: [IEC104Group]) -> Int? {
        RedundancyGroups.placement(of: address, certificate: nil, in: groups)
    }

    private func serve() {
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
                if !connection.authenticated { deadline = min(deadline, connection.acceptedAt + listener.handshakeTimeout) }
            }
            for selection in station.selections.values { deadline = min(deadline, selection.expires) }
            if let summary = journal.nextSummary { deadline = min(deadline, summary) }
            if connections.contains(where: { $0.stream.hasPendingInput }) { deadline = clock.now() }
            _ = clock.poll(&fds, count: fds.count, until: deadline)
            if fds[0].revents != 0 { _ = stopWakeup.drain() }
            guard worker.isRunning else { break }
            let now = clock.now()
            applyReload()
            if fds[1].revents & Int16(POLLIN) != 0 {
                connections += listener.acceptAll(now: now, open: connections.count, nextID: &nextID, groups: groups, link: linkSettings)
                counters.connected.store(connections.count, ordering: .relaxed)
            }
            for (entry, connection) in zip(fds.dropFirst(3), connections)
                where entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 || connection.stream.hasPendingInput
            {
                receive(connection, now: now)
            }
            // The cycle's publication wakes the sample at once (a change reaches the wire within the
            // period); the timer stays as the floor when no cycle publishes.
            let published = fds[2].revents != 0 && shared.publicationWakeup.drain()
            if published || now >= nextSample {
                station.sample(now: now, groups: &groups)
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
        station.selections = station.selections.filter { $0.value.expires > now }
        for connection in connections where connection.closeReason == nil {
            if listener.expireHandshake(connection, now: now, groups: groups) { continue }
            if !connection.spoke, now >= connection.acceptedAt + settings.t0 {
                connection.closeReason = "nothing received within t0 = \(settings.t0)"
                peerLog(connection, .connection, .idle, "IEC 104 connection from \(connection.stream.peer) closed: \(connection.closeReason!)",
                        [.peer: connection.stream.peer])
                continue
            }
            perform(connection.link.tick(at: now), on: connection, now: now)
        }
        journal.endWindows(now: now)
        for connection in connections where connection.closeReason == nil {
            pump(connection, now: now)
            connection.flush()
            bound(connection)
        }
        reap()
    }

    /// Reads what the peer sent (at most 16 KiB a turn, so one peer cannot hold the thread) and
    /// handles each whole frame.
    private func receive(_ connection: Connection, now: MonotonicInstant) {
        var budget = 16_384
        while budget > 0, connection.closeReason == nil {
            let read = connection.stream.read(limit: 4096)
            if !connection.authenticated,
               !listener.authenticate(connection, after: read, groups: groups) { return }
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

    private func received(_ frame: Frame, on connection: Connection, now: MonotonicInstant) {
        let wasStarted = connection.link.isStarted
        let actions = connection.link.received(frame, at: now)
        if !wasStarted, connection.link.isStarted { started(connection) }
        if wasStarted, !connection.link.isStarted { groups.stop(connection.id, in: connection.group) }
        perform(actions, on: connection, now: now)
        connection.trimAcknowledged()
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
            old.closeReason = "switch-over: \(connection.stream.peer) started in group \(groups.name(group))"
            peerLog(connection, .connection, .switchover, "IEC 104 group \(groups.name(group)): \(connection.stream.peer) started; \(old.stream.peer) closed",
                    [.peer: connection.stream.peer, .group: groups.name(group)])
            requeue(old)
        }
        for stopped in connections where stopped.group == group && stopped.closeReason == nil
            && (stopped === connection || !stopped.link.isStarted)
        {
            requeue(stopped)
        }
        _ = groups.start(connection.id, in: group)
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
            case .deliver(let asdu):
                if let error = station.handle(asdu, from: connection, groups: &groups, now: now) { protocolError(connection, error) }
            case .close(let error): protocolError(connection, error)
            }
            if connection.closeReason != nil { return }
        }
    }

    func protocolError(_ connection: Connection, _ error: IEC104Error) {
        guard connection.closeReason == nil else { return }
        counters.protocolErrors.add(1, ordering: .relaxed)
        connection.closeReason = "\(error.code)"
        peerLog(connection, .connection, .protocolError, "IEC 104 connection from \(connection.stream.peer) closed: \(error)",
                [.peer: connection.stream.peer, .iec104Error: "\(error.code)", .group: groups.name(connection.group)])
    }

    /// Unacknowledged events of a closing or stopped connection go back to its group's queue head,
    /// in order, once (`OutstationConnection.takeUnacknowledgedEvents`).
    private func requeue(_ connection: Connection) {
        let dropped = groups.requeue(connection.takeUnacknowledgedEvents(), in: connection.group)
        if dropped > 0 { counters.eventsDropped.add(UInt64(dropped), ordering: .relaxed) }
    }

    /// Sends answers, then the group's events, while the link's window allows.
    private func pump(_ connection: Connection, now: MonotonicInstant) {
        while connection.link.canSend, connection.closeReason == nil {
            let asdu: [UInt8]
            let event: Bool
            if !connection.answers.isEmpty {
                asdu = connection.answers.removeFirst()
                event = false
            } else if let next = groups.nextEvent(for: connection.id, in: connection.group) {
                asdu = next
                event = true
            } else {
                return
            }
            do {
                try connection.send(asdu, event: event, at: now)
            } catch {
                // Our own encoder's mistake: never on the wire.
                journal.log(.internalError, "IEC 104: an ASDU not sent: \(error)")
            }
        }
    }

    /// A peer that asks and never reads (answers waiting behind a full window, or octets the socket
    /// will not take) is closed before its backlog grows: it costs its own connection only.
    private func bound(_ connection: Connection) {
        guard connection.closeReason == nil, connection.isBacklogged else { return }
        connection.closeReason = "backlog: \(connection.answers.count) answers and \(connection.output.count) octets not taken"
        counters.protocolErrors.add(1, ordering: .relaxed)
        peerLog(connection, .connection, .backlog, "IEC 104 connection from \(connection.stream.peer) closed: it does not take what it asks for (\(connection.closeReason!))",
                [.peer: connection.stream.peer, .group: groups.name(connection.group)])
    }

    func reap() {
        var kept: [Connection] = []
        for connection in connections {
            guard let reason = connection.closeReason else {
                kept.append(connection)
                continue
            }
            connection.flush()
            requeue(connection)
            groups.stop(connection.id, in: connection.group)
            station.selections = station.selections.filter { $0.value.connection != connection.id }
            connection.stream.close()
            counters.connectionsClosed.add(1, ordering: .relaxed)
            peerLog(connection, .connection, .closed, "IEC 104 connection from \(connection.stream.peer) closed: \(reason)",
                    [.peer: connection.stream.peer, .group: groups.name(connection.group)])
        }
        connections = kept
        counters.connected.store(connections.count, ordering: .relaxed)
    }

    /// A journal line `connection`'s peer caused (`kind`: its connection's life, by default its
    /// input: a negative answer, a refused command, a clock synchronisation), within its address's
    /// budget (`PeerJournal`). True when written.
    @discardableResult
    func peerLog(_ connection: Connection, _ kind: PeerJournal.Kind, _ code: OutstationLogCode, _ message: String, _ fields: [NoticeField: String]) -> Bool {
        journal.write(address: connection.stream.peerAddress, kind, code, message, fields)
    }

    @discardableResult
    func peerLog(_ connection: Connection, _ code: OutstationLogCode, _ message: String, _ fields: [NoticeField: String]) -> Bool {
        journal.write(address: connection.stream.peerAddress, .input, code, message, fields)
    }
}
