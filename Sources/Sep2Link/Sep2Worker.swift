public import BessSystem
public import ControlCore
public import Cycle
public import IEEE2030_5
import Synchronization

/// What the 2030.5 worker sends its requests through: `HTTPSClient` in bessd, an in-process fake in
/// tests (no TLS). Used from the worker's thread only.
public protocol Sep2Transport: AnyObject {
    /// Sends `request` and waits (bounded) for the whole answer.
    func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse
    /// Closes the connection, if one is open.
    func close()
}

extension HTTPSClient: Sep2Transport {}

/// What the worker needs besides its transport: the chain's entry, the device, the site.
public struct Sep2WorkerSettings: Sendable {
    /// The DeviceCapability's path (or `/.well-known/csipaus`).
    public var entryPath: String
    /// The registration PIN checked against the server's Registration (nil: none checked).
    public var pin: UInt32?
    /// The poll rate where the server names none, s.
    public var pollSeconds: UInt32
    /// Σ unit ratings, W: `opModFixedW` and `opModMaxLimW` are percentages of it.
    public var siteRatingW: Double
    /// The transport's bound on one step of an exchange: no exchange starts when an event boundary is
    /// nearer than this (the boundary is published first). The worker publishes again before every
    /// request it sends, and a published value stays valid for what one send may take at worst
    /// (connect and handshake, the exchange, and the once-retried pair: four times this) plus
    /// `validityMargin`, so a slow server never lets it lapse (a lapsed value holds the site at zero).
    public var timeout: Duration
    /// `host:port`, for messages.
    public var serverName: String
    /// In-band registration and the connection point id (`registration`, `connection_point_id`).
    public var discovery: DiscoveryOptions

    /// Settings.
    public init(entryPath: String, pin: UInt32?, pollSeconds: UInt32, siteRatingW: Double, timeout: Duration, serverName: String,
                discovery: DiscoveryOptions = DiscoveryOptions()) {
        self.discovery = discovery
        self.entryPath = entryPath
        self.pin = pin
        self.pollSeconds = pollSeconds
        self.siteRatingW = siteRatingW
        self.timeout = timeout
        self.serverName = serverName
    }
}

/// The IEEE 2030.5 client as a running part of bessd: on a thread of its own (`bessd-2030.5`) it
/// drives a `DiscoverySession` through its transport (blocking calls are fine there: it never shares
/// a thread with the cycle or the watchdog), resolves the programs on the server's time
/// (`EventRules.resolve`) and publishes `UtilityLimits` into the cycle's `UtilityLimitSlot`:
/// - at every event boundary (it wakes at the next start or end of any control's window, so a
///   control starts within one period of its scheduled instant), and at least every second, each
///   value valid for the transport's timeout plus a few seconds;
/// - from the documents kept in the `ScheduleStore` at start and through an outage: the cached
///   schedule runs on, then the cached default (never "no limit" where the utility had one);
/// - never from a partial pass: while a changed list is read afresh, the last complete schedule holds.
///
/// Its journal events, each with its code: `SEP2_CONTROL_TAKEN` (a control or default now in force
/// for a type), `SEP2_CONTROL_REFUSED` (a control document refused, with the reason),
/// `SEP2_CONTROL_NOT_APPLIED` (a control taken without an element bessd does not apply, with the reason),
/// `SEP2_SERVER_UNREACHABLE` (once per outage), `SEP2_SERVER_MISMATCH` (once per certificate presented
/// that is not the pinned server's), `SEP2_SERVER_RESTORED`, `SEP2_PIN_MISMATCH` (all
/// traffic stops), `SEP2_SCHEDULE_CACHED` (the schedule rebuilt from the store), the store's own codes.
///
/// `@unchecked Sendable`: the session, the transport and the client state live on the worker's
/// thread; others read `state` (a mutex) and the slot.
public final class Sep2Worker: @unchecked Sendable {
    /// Where the limits go (the cycle reads them).
    public let slot: UtilityLimitSlot
    private let client: Sep2Client
    private let clock: any MonotonicClock
    private let wallClock: @Sendable () -> Double
    private let worker = WorkerThread()
    private let wakeup = Wakeup()

    /// A worker that has not started; it reads the store at `start`.
    /// - Parameters:
    ///   - identity: the device's LFDI and SFDI (from its certificate).
    ///   - transport: the HTTPS client (or a test's fake).
    ///   - store: the durable copy of the documents (nil: none kept).
    ///   - log: journal events: code, message (escaped), warning or notice.
    public init(settings: Sep2WorkerSettings, identity: DeviceIdentity, transport: any Sep2Transport, slot: UtilityLimitSlot,
                store: ScheduleStore?, clock: any MonotonicClock = SystemClock.shared,
                wallClock: @escaping @Sendable () -> Double = { SystemClock.wallClockSeconds() },
                log: @escaping @Sendable (_ code: String, _ message: String, _ warning: Bool) -> Void) {
        self.slot = slot
        self.clock = clock
        self.wallClock = wallClock
        client = Sep2Client(settings: settings, identity: identity, transport: transport, slot: slot, store: store, log: log)
        client.refresh = { [clock, wallClock] in (clock.now(), wallClock()) }
    }

    /// What `bessctl ieee2030-5` shows: identity, the server's last answer, the controls in force.
    public var state: Sep2State { client.state.withLock { $0 } }

    /// True while the worker's thread runs.
    public var isAlive: Bool { worker.isAlive }

    /// Reports the site with `reporter` (Sep2Reporter+Worker.swift), a sample a second from `sample`.
    /// Call before `start`.
    public func report(_ reporter: Sep2Reporter, sample: @escaping @Sendable () -> Sep2SiteSample?) {
        client.reporting = Sep2Reporting(reporter: reporter, sample: sample)
    }

    /// The configured droop's `enabled` (`droop_settings.enabled`) as a reload left it: from the worker's
    /// next report round DERCapability and DERSettings claim `opModFreqDroop` (bit 8) by it, PUT again at
    /// once when it changed, and a control that sets only the droop is answered by it from its next
    /// change of state (252 while disabled). Any thread.
    public func useFrequencyDroop(_ enabled: Bool) { client.frequencyDroop.withLock { $0 = enabled } }

    /// The configured droop's `enabled` the reporter follows; nil when nothing is reported.
    public var frequencyDroopEnabled: Bool? { client.frequencyDroop.withLock { $0 } }

    /// Hands each control taken, refused or ended to `sink` (Sep2ControlRecords.swift), on the worker's
    /// thread: `sink` must only enqueue (bounded). Call before `start`.
    public func recordControls(_ sink: @escaping @Sendable (UtilityControlRecord) -> Void) {
        client.controlRecorder.sink = sink
    }

    /// Reads the store, publishes what it holds and starts following the server.
    public func start() {
        worker.start(name: "bessd-2030.5") { [self] in run() }
    }

    /// Stops the thread (ends a wait at once; an exchange under way ends within the transport's
    /// timeout) and closes the connection.
    public func stop() { worker.stop { [wakeup] in wakeup.signal() } }

    private func run() {
        client.restore(now: clock.now(), wall: wallClock())
        while worker.isRunning {
            let due = client.round(now: clock.now(), wall: wallClock())
            guard worker.isRunning else { break }
            if due > clock.now() { _ = clock.wait(for: wakeup, until: due) }
        }
        client.close()
    }
}

/// The worker's logic without its thread: each `round` does at most one exchange and publishes, and
/// says when it wants the next one. Tests drive it with their own clocks.
final class Sep2Client: @unchecked Sendable {
    let settings: Sep2WorkerSettings
    let identity: DeviceIdentity
    let transport: any Sep2Transport
    let slot: UtilityLimitSlot
    let store: ScheduleStore?
    let log: @Sendable (_ code: String, _ message: String, _ warning: Bool) -> Void
    let randomization: Randomization
    let state: Mutex<Sep2State>

    var session: DiscoverySession
    /// The last complete schedule (the live session's, or the store's): what is resolved.
    var programs: [ProgramSchedule] = []
    /// Whether there is a schedule to publish at all (read once, or restored).
    var known = false
    var source = Sep2State.Source.none
    /// The server's clock: `anchorServer` seconds at monotonic `anchorMono`, counted on by the
    /// monotonic clock (a step of the wall clock moves nothing); a Time reply re-anchors it, back too.
    var anchor: (server: Double, mono: MonotonicInstant)?
    /// The server time last resolved on.
    var lastServerTime = -Double.infinity
    /// The controls known when the server's time was found behind the time they were resolved on, and
    /// that second: each stays as it was then until the server's time passes it (`EventRules.resolve`'s
    /// `held`), so nothing starts or ends twice, while controls learned since follow the server's time.
    var held: [ControlKey: Int64] = [:]
    var lastOffset: Int64?
    var savedDocuments: [String: [UInt8]]?
    var reachable: Bool?
    /// The last server certificate journalled as not the pinned one, until the server answers.
    var mismatch: String?
    /// The refusal last said for each path, until the path is accepted again.
    var refusals: [String: String] = [:]
    /// The controls each DERControlList page refused alone, by request path (Sep2Reporter+Worker.swift).
    var controlRefusals: [String: [RefusedControl]] = [:]
    /// The controls each page or default took with an element not applied, by request path (Sep2Worker+NotApplied.swift).
    var notApplied: [String: Set<String>] = [:]
    var deferredSince: MonotonicInstant?
    var pinLogged = false
    var storeFailed = false
    var lastSources: [ControlType: ControlSource] = [:]
    /// The controls in force, for the uplink's records (Sep2ControlRecords.swift).
    var controlRecorder = ControlRecorder()
    /// What the site reports, nil when nothing is reported.
    var reporting: Sep2Reporting?
    /// The configured droop's `enabled` the reporter follows (set by `reportSite`, moved by a reload;
    /// taken at each report round), nil when it keeps its own setting.
    let frequencyDroop = Mutex<Bool?>(nil)
    /// The droop-only controls journalled as answered 252 while the droop is disabled (Sep2Worker+NotApplied.swift).
    var droopRefusals: Set<ControlKey> = []
    /// The clocks read afresh before each request is sent, so the schedule is published again
    /// however long the requests before it took; nil in tests that drive `round` by hand.
    var refresh: (@Sendable () -> (MonotonicInstant, Double))?

    /// The most beyond the transport's timeout a published value stays valid.
    static let validityMargin: Duration = .seconds(3)
    /// The longest an exchange waits for event boundaries to pass before it goes anyway.
    static let longestDeferral: Duration = .seconds(30)

    init(settings: Sep2WorkerSettings, identity: DeviceIdentity, transport: any Sep2Transport, slot: UtilityLimitSlot,
         store: ScheduleStore?, log: @escaping @Sendable (String, String, Bool) -> Void) {
        self.settings = settings
        self.identity = identity
        self.transport = transport
        self.slot = slot
        self.store = store
        self.log = log
        // A device's own draw: the same control starts at the same instant after a restart.
        randomization = Randomization(seed: identity.lfdiBytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        session = DiscoverySession(entryPath: settings.entryPath, lfdi: identity.lfdi, sfdi: identity.sfdi, pin: settings.pin,
                                   pollSeconds: settings.pollSeconds, options: settings.discovery)
        state = Mutex(Sep2State(lfdi: identity.lfdi, sfdi: identity.sfdi, server: settings.serverName))
    }

    static func seconds(_ instant: MonotonicInstant) -> Int64 { instant.nanoseconds / 1_000_000_000 }

    /// Rebuilds the session from the store (a corrupt store is refused, said and ignored) and
    /// publishes what it holds.
    func restore(now: MonotonicInstant, wall: Double) {
        restoreKept()
        guard let store else {
            publish(now: now, wall: wall)
            return
        }
        let stored: StoredSchedule?
        do throws(ScheduleStoreError) {
            stored = try store.load()
        } catch {
            log("\(error.code)", "\(error); the 2030.5 schedule is read from the server afresh", true)
            publish(now: now, wall: wall)
            return
        }
        if let stored {
            session = DiscoverySession(entryPath: settings.entryPath, lfdi: identity.lfdi, sfdi: identity.sfdi, pin: settings.pin,
                                       pollSeconds: settings.pollSeconds, options: settings.discovery, restoring: stored.documents)
            savedDocuments = stored.documents
            lastOffset = stored.serverTimeOffset
            if let stopped = session.stopped {
                pinStopped(stopped)
            } else {
                programs = session.programs
                known = true
                source = .cached
                log("SEP2_SCHEDULE_CACHED", "SEP2_SCHEDULE_CACHED: the 2030.5 schedule of \(programs.count) program(s) saved at Unix "
                    + "\(stored.savedAtUnix) runs until the server answers", false)
            }
        }
        publish(now: now, wall: wall)
    }

    /// One round: publish, then at most one exchange; returns when the next round is wanted.
    func round(now start: MonotonicInstant, wall startWall: Double) -> MonotonicInstant {
        var now = start, wall = startWall
        var boundary = publish(now: now, wall: wall)
        guard session.stopped == nil else { return min(boundary ?? MonotonicInstant(nanoseconds: .max), now + .seconds(1)) }
        if boundary.map({ $0 - now > settings.timeout + .seconds(1) }) ?? true {
            report(now: now, wall: wall)
            // A report may block (a hung server: up to the timeout a request), so the exchange below is
            // decided on the clocks after it: else it could start within the timeout of a boundary.
            if let refresh {
                (now, wall) = refresh()
                boundary = publish(now: now, wall: wall)
            }
        }
        let nextPublish = min(boundary ?? MonotonicInstant(nanoseconds: .max), now + .seconds(1))
        guard let request = session.nextRequest(now: Self.seconds(now)) else {
            deferredSince = nil
            let due = session.nextDue.map { MonotonicInstant(nanoseconds: $0.multipliedReportingOverflow(by: 1_000_000_000).overflow
                                                                 ? .max : $0 * 1_000_000_000) } ?? MonotonicInstant(nanoseconds: .max)
            return min(nextPublish, max(due, now))
        }
        // An exchange may block up to the timeout: let a boundary that near pass (published) first.
        if let boundary, boundary - now <= settings.timeout + .seconds(1) {
            let since = deferredSince ?? now
            deferredSince = since
            if now - since < Self.longestDeferral { return boundary }
        }
        deferredSince = nil
        exchange(request, now: now, wall: wall)
        return now
    }

    /// Sends one request and hands the outcome to the session; keeps and stores a complete pass.
    func exchange(_ request: Sep2Request, now: MonotonicInstant, wall: Double) {
        let http = HTTPRequest(method: request.method.rawValue, path: request.path, body: request.body,
                               contentType: request.body.isEmpty ? nil : "application/sep+xml")
        let response: HTTPResponse
        republish()
        do throws(HTTPClientError) {
            response = try transport.send(http)
        } catch {
            session.handleFailure(now: Self.seconds(now))
            transport.close()
            noteAnswer(status: nil, error: "\(error)", wall: wall)
            if error.code == .serverMismatch {
                // Each certificate presented once, not only the first of an outage.
                if mismatch != error.message {
                    log("SEP2_SERVER_MISMATCH", "SEP2_SERVER_MISMATCH: \(settings.serverName): \(error.message); no request is sent to it, the "
                        + (known ? "cached schedule runs on" : "site runs without utility controls until the pinned server answers"), true)
                }
                mismatch = error.message
            } else if reachable != false {
                log("SEP2_SERVER_UNREACHABLE", "SEP2_SERVER_UNREACHABLE: \(settings.serverName): \(error); the "
                    + (known ? "cached schedule runs on" : "site runs without utility controls until the server answers"), true)
            }
            reachable = false
            return
        }
        mismatch = nil
        if reachable == false {
            log("SEP2_SERVER_RESTORED", "SEP2_SERVER_RESTORED: \(settings.serverName) answers again (HTTP \(response.status))", false)
        }
        reachable = true
        let reply = Sep2Reply(status: response.status, retryAfterSeconds: response.retryAfterSeconds, location: response.location,
                              body: response.body)
        let isTime = request.purpose == .time && (200...299).contains(response.status)
        do throws(SEP2Error) {
            try session.handle(reply, to: request, now: Self.seconds(now), wallClock: Int64(wall.rounded(.down)))
            noteAnswer(status: response.status, error: nil, wall: wall)
            refusals[request.path] = nil
            noteControlRefusals(request, body: response.body)
            noteNotApplied(request, body: response.body)
        } catch {
            noteAnswer(status: response.status, error: "\(error)", wall: wall)
            if let stopped = session.stopped {
                pinStopped(stopped)
                return
            }
            refused(error, request: request)
        }
        if isTime, let offset = session.serverTimeOffset {
            lastOffset = offset
            let before = max(lastServerTime, anchor.map { $0.server + now.seconds(since: $0.mono) } ?? -.infinity)
            anchor = (wall + Double(Self.effective(offset)), now)
            if before.isFinite, wall + Double(Self.effective(offset)) < before { hold(at: Int64(before.rounded(.down))) }
        }
        if session.complete {
            programs = session.programs
            known = true
            source = .live
            save(wall: wall)
        }
    }

    /// Within the Time resource's one-second resolution the local clock (finer) is kept.
    static func effective(_ offset: Int64) -> Int64 { abs(offset) <= 1 ? 0 : offset }

    /// A document or answer the session refused: a control's as `SEP2_CONTROL_REFUSED`, the others
    /// under their own code; each once until its resource is accepted again (a control's, and the
    /// ConnectionPoint's, once per reason: its read-back answered 5xx, then 405, says both).
    func refused(_ error: SEP2Error, request: Sep2Request) {
        let control = request.purpose == .derControlList || request.purpose == .defaultDERControl || request.purpose == .derProgramList
        let code = control ? "SEP2_CONTROL_REFUSED" : "\(error.code)"
        let reason = control || request.purpose == .connectionPoint ? "\(error) " : ""
        let line = "\(code): \(reason)(\(TextQuoting.quoted(request.path, limit: 64)) of \(settings.serverName))"
        guard refusals[request.path] != line else { return }
        refusals[request.path] = line
        if control { recordRefused(code: "\(error.code)", reason: "\(error)") }
        log(code, control ? line : "\(error) (\(TextQuoting.quoted(request.path, limit: 64)) of \(settings.serverName))", true)
    }

    func pinStopped(_ error: SEP2Error) {
        transport.close()
        state.withLock { $0.stopped = "\(error)" }
        guard !pinLogged else { return }
        pinLogged = true
        log("\(error.code)", "\(error); all traffic with \(settings.serverName) stopped until the PIN or the server is corrected and bessd "
            + "restarts" + (known ? "; the cached schedule runs on" : ""), true)
    }

    func noteAnswer(status: Int?, error: String?, wall: Double) {
        state.withLock {
            $0.reachable = status != nil
            if let status {
                $0.lastStatus = status
                $0.lastAnswerUnix = wall
            }
            $0.lastError = error
        }
    }

    /// Writes the documents when they changed; a failure is said once until a write succeeds.
    func save(wall: Double) {
        let documents = session.documents
        guard let store, documents != savedDocuments else { return }
        do throws(ScheduleStoreError) {
            try store.save(StoredSchedule(documents: documents, serverTimeOffset: session.serverTimeOffset ?? lastOffset,
                                          savedAtUnix: Int64(wall.rounded(.down))))
            savedDocuments = documents
            storeFailed = false
        } catch {
            if !storeFailed { log("\(error.code)", "\(error); the schedule in force holds, but would not survive a restart", true) }
            storeFailed = true
        }
    }

    /// The server's time now (s since the Unix epoch, fractional): the last Time reply counted on by
    /// the monotonic clock. It moves back when a Time reply finds the server behind what was counted
    /// (no stored offset and a server clock behind the local one); `held` keeps that from starting or
    /// ending anything twice.
    func serverTime(now: MonotonicInstant, wall: Double) -> Double {
        if anchor == nil { anchor = (wall + Double(Self.effective(lastOffset ?? 0)), now) }
        let (server, mono) = anchor!
        let time = server + now.seconds(since: mono)
        lastServerTime = time
        return time
    }

    /// The server's time went back from `second`: every control known now keeps its state of `second`
    /// until the server's time passes it (one held earlier keeps its own, later, second).
    func hold(at second: Int64) {
        for program in programs {
            for control in program.controls {
                let key = ControlKey(program: program.mRID, control: control.mRID)
                held[key] = max(held[key] ?? second, second)
            }
        }
    }

    /// `held` without the controls the server's time has passed or that are gone.
    func pruneHeld(at second: Int64) {
        guard !held.isEmpty else { return }
        var present: Set<ControlKey> = []
        for program in programs { for control in program.controls { present.insert(ControlKey(program: program.mRID, control: control.mRID)) } }
        held = held.filter { $0.value > second && present.contains($0.key) }
    }

    func close() { transport.close() }

    /// Publishes the schedule at the clocks' current reading, before a request goes out.
    func republish() {
        guard let refresh else { return }
        let (now, wall) = refresh()
        publish(now: now, wall: wall)
    }
}

extension Sep2Client {
    /// Resolves the schedule at the server's time, publishes it, records it for `bessctl`, and journals
    /// each type whose source changed; returns the monotonic instant of the next event boundary.
    @discardableResult
    func publish(now: MonotonicInstant, wall: Double) -> MonotonicInstant? {
        let server = serverTime(now: now, wall: wall)
        let second = Int64(server.rounded(.down))
        pruneHeld(at: second)
        let active = EventRules.resolve(programs, now: second, randomization: randomization, held: held)
        noteInForce(active, second: second)
        var limits = active.utilityLimits(siteRatingW: settings.siteRatingW)
        var shown = active
        if !held.isEmpty {
            // Held controls answer as they were resolved, but the site's limits are never looser than
            // what the server has in force at its own time (its default before a held raise's start).
            let plain = EventRules.resolve(programs, now: second, randomization: randomization)
            let heldLimits = limits
            limits = limits.tightened(by: plain.utilityLimits(siteRatingW: settings.siteRatingW))
            // `bessctl ieee2030-5` lists what bounds each type: the server's own source where it is the tighter.
            for type in ControlType.allCases where Sep2State.value(type, limits) != Sep2State.value(type, heldLimits) {
                if let source = plain.sources[type] { shown.sources[type] = source }
            }
        }
        limits.validUntil = now + settings.timeout * 4 + Self.validityMargin
        if known { slot.publish(limits) }
        // Every edge on the server's time, held or not: the plain view's limits change there.
        let next = Self.nextBoundary(programs, after: second, randomization: randomization)
        let controls = Sep2State.controls(shown, limits: limits)
        state.withLock {
            $0.source = source
            $0.serverTimeUnix = server
            $0.controls = controls
            $0.limits = known ? limits : nil
            $0.programs = programs.map(\.mRID)
        }
        if active.sources != lastSources {
            // With the configured droop disabled no utility droop is applied (the cycle keeps it off):
            // a droop-only control is said refused instead (`noteDroopDisabled`).
            let droopOff = reporting.map { !$0.reporter.settings.frequencyDroopEnabled } ?? false
            for type in ControlType.allCases where active.sources[type] != lastSources[type] {
                guard let source = active.sources[type], !(type == .freqDroop && droopOff) else { continue }
                let value = controls.first { $0.type == type.rawValue }?.value ?? "?"
                log("SEP2_CONTROL_TAKEN", "SEP2_CONTROL_TAKEN: \(type.rawValue) \(value) from " + Sep2State.describe(source), false)
            }
            lastSources = active.sources
        }
        saveInForce()
        // Wake a millisecond past the boundary, so the second it falls in is the boundary's.
        return next.map { now + .seconds(fromDouble: max(0, Double($0) - server)) + .milliseconds(1) }
    }

    /// The first start or end of a control's window after `second` (server time), nil when none; a
    /// held control's edges up to its held second have passed already.
    static func nextBoundary(_ programs: [ProgramSchedule], after second: Int64, randomization: Randomization,
                             held: [ControlKey: Int64] = [:]) -> Int64? {
        var next: Int64?
        for program in programs {
            for control in program.controls {
                let window = EventRules.window(control, randomization: randomization)
                guard window.start < window.end else { continue }
                let passed = held.isEmpty ? second : max(second, held[ControlKey(program: program.mRID, control: control.mRID)] ?? second)
                for edge in [window.start, window.end] where edge > passed && edge < (next ?? .max) { next = edge }
            }
        }
        return next
    }
}
