public import BessBase
public import BessSystem
import ControlCore
public import Cycle
import GridSupport
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
/// traffic stops), `SEP2_SCHEDULE_CACHED` (the schedule rebuilt from the store), the store's own codes
/// (`Sep2NoticeCode`, each a `Notice`).
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
    ///   - log: journal lines (`Sep2NoticeCode`, or an error's own code), messages escaped.
    public init(settings: Sep2WorkerSettings, identity: DeviceIdentity, transport: any Sep2Transport, slot: UtilityLimitSlot,
                store: ScheduleStore?, clock: any MonotonicClock = SystemClock.shared,
                wallClock: @escaping @Sendable () -> Double = { SystemClock.wallClockSeconds() },
                log: @escaping @Sendable (Notice) -> Void) {
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

    /// Judges the utility's reactive controls, at each publication, against the var capability of the
    /// `SiteView` the cycle last published in `shared` (`varMaxInjecting` / `varMaxAbsorbing`, the source
    /// the reports' sample reads), whether or not anything is reported: a copy under the lock the cycle
    /// publishes with, never a wait for a cycle. Until the cycle's first publication it is unknown:
    /// every reactive value is left out (said not applied) and no control is answered. Call before `start`.
    public func judgeReactive(against shared: SharedState) {
        client.reactive.source = Sep2VarCapability.published(in: shared)
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
    let log: @Sendable (Notice) -> Void
    let state: Mutex<Sep2State>

    var session: DiscoverySession
    /// The schedule published: programs, the server's clock, the held controls.
    var schedule: Sep2Schedule
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
    /// The site's var capability as the cycle last published it, else as the reports last sampled it
    /// (Sep2Worker+NotApplied.swift).
    var reactive = Sep2VarCapability()
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
         store: ScheduleStore?, log: @escaping @Sendable (Notice) -> Void) {
        self.settings = settings
        self.identity = identity
        self.transport = transport
        self.slot = slot
        self.store = store
        self.log = log
        schedule = Sep2Schedule(lfdiBytes: identity.lfdiBytes)
        session = DiscoverySession(entryPath: settings.entryPath, lfdi: identity.lfdi, sfdi: identity.sfdi, pin: settings.pin,
                                   pollSeconds: settings.pollSeconds, options: settings.discovery)
        state = Mutex(Sep2State(lfdi: identity.lfdi, sfdi: identity.sfdi, server: settings.serverName))
    }

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
            log(.sep2(failure: error, "\(error); the 2030.5 schedule is read from the server afresh"))
            publish(now: now, wall: wall)
            return
        }
        if let stored {
            session = DiscoverySession(entryPath: settings.entryPath, lfdi: identity.lfdi, sfdi: identity.sfdi, pin: settings.pin,
                                       pollSeconds: settings.pollSeconds, options: settings.discovery, restoring: stored.documents)
            savedDocuments = stored.documents
            schedule.lastOffset = stored.serverTimeOffset
            if let stopped = session.stopped {
                pinStopped(stopped)
            } else {
                schedule.take(session.programs, curves: session.curves, from: .cached)
                log(.sep2(.scheduleCached, "the 2030.5 schedule of \(schedule.programs.count) program(s) saved at Unix "
                    + "\(stored.savedAtUnix) runs until the server answers"))
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
        guard let request = session.nextRequest(now: now) else {
            deferredSince = nil
            return min(nextPublish, max(session.nextDue ?? MonotonicInstant(nanoseconds: .max), now))
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
            session.handleFailure(now: now)
            transport.close()
            noteAnswer(status: nil, error: "\(error)", wall: wall)
            if error.code == .serverMismatch {
                // Each certificate presented once, not only the first of an outage.
                if mismatch != error.message {
                    log(.sep2(.serverMismatch, "\(settings.serverName): \(error.message); no request is sent to it, the "
                        + (schedule.known ? "cached schedule runs on" : "site runs without utility controls until the pinned server answers")))
                }
                mismatch = error.message
            } else if reachable != false {
                log(.sep2(.serverUnreachable, "\(settings.serverName): \(error); the "
                    + (schedule.known ? "cached schedule runs on" : "site runs without utility controls until the server answers")))
            }
            reachable = false
            return
        }
        mismatch = nil
        if reachable == false {
            log(.sep2(.serverRestored, "\(settings.serverName) answers again (HTTP \(response.status))"))
        }
        reachable = true
        let reply = Sep2Reply(status: response.status, retryAfterSeconds: response.retryAfterSeconds, location: response.location,
                              body: response.body)
        let isTime = request.purpose == .time && (200...299).contains(response.status)
        do throws(SEP2Error) {
            try session.handle(reply, to: request, now: now, wallClock: Int64(wall.rounded(.down)))
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
        if isTime, let offset = session.serverTimeOffset { schedule.timeRead(offset: offset, now: now, wall: wall) }
        if session.complete {
            schedule.take(session.programs, curves: session.curves, from: .live)
            save(wall: wall)
        }
    }

    /// A document or answer the session refused: a control's as `SEP2_CONTROL_REFUSED`, the others
    /// under their own code; each once until its resource is accepted again (a control's, and the
    /// ConnectionPoint's, once per reason: its read-back answered 5xx, then 405, says both).
    func refused(_ error: SEP2Error, request: Sep2Request) {
        let control = request.purpose == .derControlList || request.purpose == .defaultDERControl || request.purpose == .derProgramList
        let code = control ? Sep2NoticeCode.controlRefused.rawValue : "\(error.code)"
        let reason = control || request.purpose == .connectionPoint ? "\(error) " : ""
        let at = "(\(TextQuoting.quoted(request.path, limit: 64)) of \(settings.serverName))"
        let line = "\(code): \(reason)\(at)"
        guard refusals[request.path] != line else { return }
        refusals[request.path] = line
        if control { controlRecorder.recordRefused(code: "\(error.code)", reason: "\(error)") }
        log(control ? .sep2(.controlRefused, reason + at) : .sep2(failure: error, "\(error) \(at)"))
    }

    func pinStopped(_ error: SEP2Error) {
        transport.close()
        state.withLock { $0.stopped = "\(error)" }
        guard !pinLogged else { return }
        pinLogged = true
        log(.sep2(failure: error, "\(error); all traffic with \(settings.serverName) stopped until the PIN or the server is corrected and bessd "
            + "restarts" + (schedule.known ? "; the cached schedule runs on" : "")))
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
            try store.save(StoredSchedule(documents: documents, serverTimeOffset: session.serverTimeOffset ?? schedule.lastOffset,
                                          savedAtUnix: Int64(wall.rounded(.down))))
            savedDocuments = documents
            storeFailed = false
        } catch {
            if !storeFailed { log(.sep2(failure: error, "\(error); the schedule in force holds, but would not survive a restart")) }
            storeFailed = true
        }
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
        reactive.refresh()
        let resolved = schedule.resolve(now: now, wall: wall, siteRatingW: settings.siteRatingW, varCapability: reactive.ratings ?? (0, 0),
                                       apparentVA: reactive.apparentVA, profile: reporting?.reporter.settings.reference.profile ?? .ieee1547_2018_cat_b)
        let active = resolved.active
        controlRecorder.noteInForce(active, second: resolved.second, schedule: schedule, siteRatingW: settings.siteRatingW)
        let within = reactive.within(resolved.limits, requested: active.base, sources: active.sources, ratingW: settings.siteRatingW,
                                     curves: schedule.curves)
        var limits = within.limits
        for line in within.fresh { log(.sep2(.controlNotApplied, "\(line) of \(settings.serverName): not applied; the rest of it taken")) }
        limits.validUntil = now + settings.timeout * 4 + Self.validityMargin
        if schedule.known { slot.publish(limits) }
        let controls = Sep2State.controls(resolved.shown, limits: limits)
        state.withLock { [schedule] in
            $0.source = schedule.source
            $0.serverTimeUnix = resolved.server
            $0.controls = controls
            $0.limits = schedule.known ? limits : nil
            $0.programs = schedule.programs.map(\.mRID)
        }
        if active.sources != lastSources {
            // With the configured droop disabled no utility droop is applied (the cycle keeps it off):
            // a droop-only control is said refused instead (`noteDroopDisabled`).
            let droopOff = reporting.map { !$0.reporter.settings.frequencyDroopEnabled } ?? false
            // Nor is a reactive control while no unit has var points: it is answered 252 alone, and a
            // value beyond the capability of 0 var is said not applied (`reactive.within`).
            let noVar = reactive.ratings.map { $0.injecting <= 0 && $0.absorbing <= 0 } ?? false
            for type in ControlType.allCases where active.sources[type] != lastSources[type] {
                guard let source = active.sources[type], !(type == .freqDroop && droopOff),
                      !(noVar && DERControlBase.reactiveTypes.contains(type)) else { continue }
                let value = controls.first { $0.type == type.rawValue }?.value ?? "?"
                log(.sep2(.controlTaken, "\(type.rawValue) \(value) from " + Sep2State.describe(source)))
            }
            lastSources = active.sources
        }
        saveInForce()
        // Wake a millisecond past the boundary, so the second it falls in is the boundary's.
        return resolved.next.map { now + .seconds(fromDouble: max(0, Double($0) - resolved.server)) + .milliseconds(1) }
    }
}
