import BessBase
public import BessSystem
public import ControlCore
public import Fieldbus
import Glibc
import Synchronization

/// What the cycle and a bus worker exchange for one device on a Modbus link (a unit's inverter, or
/// the site's meter): the latest reading (stamped when it was read) and the latest setpoint (a meter
/// is never written). The cycle only ever holds the lock for a copy.
public final class DeviceSlot: Sendable {
    struct State {
        var reading: Timestamped<InverterReading>?
        var setpoint: Watts = .zero
        /// The reactive setpoint, var (+ = injecting; nil: leave the inverter's alone), and `VarSetPri`.
        var reactive: Double?
        var reactivePriority = false
        /// What discovery found for reactive power (nil before it).
        var reactiveCapability: SunSpecReactiveCapability?
        var lastError: String?
        var roundTrip: Duration = .zero
        var errors: UInt64 = 0
        /// The cycle's request: false while the utility or a latch asks it disconnected (open the contactor).
        var connect = true
        var contactor = ContactorState.closed
    }
    private let state = PILock(State())

    public init() {}

    /// The latest reading (the cycle's side).
    public var reading: Timestamped<InverterReading>? { state.withLock { $0.reading } }
    /// The code of the last failure, if the last exchange failed.
    public var lastError: String? { state.withLock { $0.lastError } }
    /// The latest reading, with what discovery found for reactive power (`reactiveCapability`), and
    /// whether the device failed before it ever answered, in one lock (the cycle's side, every cycle:
    /// no second lock, no copy of the error text).
    public var sample: (reading: Timestamped<InverterReading>?, neverAnswered: Bool) {
        state.withLock { state in
            var reading = state.reading
            if let capability = state.reactiveCapability { reading?.value.adopt(capability) }
            return (reading, state.reading == nil && state.lastError != nil)
        }
    }
    /// Failed exchanges so far.
    public var errors: UInt64 { state.withLock { $0.errors } }
    /// Round-trip time of the last successful request.
    public var roundTrip: Duration { state.withLock { $0.roundTrip } }

    /// Hands the worker a new setpoint (the cycle's side).
    public func setSetpoint(_ power: Watts) { state.withLock { $0.setpoint = power } }

    /// Hands the worker a new active and reactive setpoint (var, + = injecting; nil: bessd leaves
    /// the inverter's reactive power alone) in one lock (the cycle's side).
    public func setSetpoint(_ power: Watts, reactive: Double?) {
        state.withLock {
            $0.setpoint = power
            $0.reactive = reactive
        }
    }

    /// Whether reactive power has priority on the inverter (704 `VarSetPri`; `reactive_priority`).
    public func setReactivePriority(_ priority: Bool) { state.withLock { $0.reactivePriority = priority } }
    /// Whether the inverter takes a reactive setpoint (SunSpec 704's var points) and its 702
    /// ratings, as its last discovery or refresh found them; nil until discovered.
    public var reactiveCapability: SunSpecReactiveCapability? { state.withLock { $0.reactiveCapability } }
    func publish(reactive capability: SunSpecReactiveCapability) { state.withLock { $0.reactiveCapability = capability } }
    /// The reactive setpoint and its priority (the worker's side).
    var reactiveRequest: (reactive: Double?, priority: Bool) { state.withLock { ($0.reactive, $0.reactivePriority) } }

    /// Asks the worker to open (`connect` false) or close the unit's contactor (the cycle's side:
    /// one lock, no allocation). The worker opens it once the unit is at zero (`ContactorPlanner`).
    public func setConnect(_ connect: Bool) { state.withLock { $0.connect = connect } }
    /// The unit's contactor as the worker drives it.
    public var contactor: ContactorState { state.withLock { $0.contactor } }
    var wantsConnect: Bool { state.withLock { $0.connect } }
    func publish(contactor: ContactorState) { state.withLock { $0.contactor = contactor } }

    func publish(_ reading: Timestamped<InverterReading>, roundTrip: Duration) {
        state.withLock {
            $0.reading = reading
            $0.lastError = nil
            $0.roundTrip = roundTrip
        }
    }

    func fail(_ code: String) {
        state.withLock {
            $0.lastError = code
            $0.errors &+= 1
        }
    }

    var setpoint: Watts { state.withLock { $0.setpoint } }
}

/// Owns one Modbus endpoint (a TCP endpoint, or a serial line shared by its unit ids) and every
/// device on it, inverters and the site meter: discovers them, polls them, writes the inverters'
/// setpoints with the revert timer armed, and reconnects with back-off. Runs on its own thread;
/// never blocks the cycle.
public final class EndpointWorker: @unchecked Sendable {
    /// A device on the endpoint as configured (`EndpointDevice`).
    public typealias Device = EndpointDevice
    public typealias MeterDriver = EndpointDevice.MeterDriver
    typealias Failure = BusFailure

    public let endpoint: ModbusEndpoint
    public let devices: [Device]
    let period: Duration
    let timeout: Duration
    let revert: Duration
    let phase: CyclePhase?
    /// SCHED_FIFO priority (below the cycle's) and CPU of the worker's thread, or nil for the default policy.
    let realtime: RealtimeThread?
    /// The time and the waits of this worker and its connection (the system's clock in bessd).
    let clock: any MonotonicClock
    let log: @Sendable (Notice) -> Void
    private let worker = WorkerThread()

    /// True while the worker's thread runs its loop (the watchdog checks it).
    public var isAlive: Bool { worker.isAlive }
    /// When the thread's loop last turned (the watchdog's view of its progress, `WorkerTurn`).
    public var lastTurn: MonotonicInstant? { worker.lastTurn }
    /// The thread's kernel id once it runs (tests read its affinity and policy from /proc).
    var threadID: Int32 { worker.threadID }
    private let wake = Wakeup()
    /// What the endpoint's session has done on the wire, published by its owner.
    let counters = PILock(Counters())

    /// What the worker has done on the wire so far (tests, diagnostics).
    public struct Counters: Sendable, Equatable {
        /// Connections opened to the endpoint (one context, so reconnects only).
        public var connects: UInt64 = 0
        /// Modbus requests sent.
        public var requests: UInt64 = 0
    }

    /// A copy of the counters.
    public var wire: Counters { counters.withLock { $0 } }

    /// - Parameters:
    ///   - period: how often each inverter is polled.
    ///   - revert: the revert timer (whole seconds) written with every setpoint; setpoints are re-written at
    ///     least every half of it even when unchanged.
    ///   - phase: the control cycle's schedule. With it, the worker reads every inverter just before
    ///     each cycle and writes the cycle's setpoints the moment the cycle hands them over, so a
    ///     change at the inverter reaches its wire within one period plus the bus time. Without it
    ///     (tests driving the runner by hand), it polls on its own period.
    ///   - staticsEvery: how often static values are re-read (a minute; tests shorten it).
    ///   - clock: the time and the waits (tests pass a `ManualClock`).
    public init(endpoint: ModbusEndpoint, devices: [Device], period: Duration, timeout: Duration, revert: Duration,
                phase: CyclePhase? = nil, realtime: RealtimeThread? = nil, staticsEvery: Duration = .seconds(60),
                clock: any MonotonicClock = SystemClock.shared, log: @escaping @Sendable (Notice) -> Void) {
        self.staticsEvery = staticsEvery
        self.endpoint = endpoint
        self.devices = devices
        self.period = period
        self.timeout = timeout
        self.revert = revert
        self.phase = phase
        self.realtime = realtime
        self.clock = clock
        self.log = log
    }

    public func start() {
        worker.start(name: "bessd-bus") { [self] in loop() }
    }

    /// Stops the worker after writing a zero setpoint to every inverter (revert armed). Every wait
    /// of the worker's ends at once.
    public func stop() {
        worker.stop { [handback, wake, stopping] in
            stopping.signal()
            handback.signal()
            wake.signal()
        }
    }

    /// Signalled by `stop`: ends the sleeps between rounds.
    private let stopping = Wakeup()

    /// Tells the worker the cycle has handed over new setpoints (the cycle's side: one non-blocking
    /// write to an eventfd, no allocation). While the poller drives the endpoint, the poller is kicked
    /// instead (`HardwareSite.commandsIssued`).
    public func kick() { wake.signal() }

    // MARK: lending the session to a shared poller
    //
    // A Modbus TCP endpoint whose units are all discovered and answering is driven by the site's
    // `BusPoller`: one thread that puts the per-cycle read and write of every such endpoint on the
    // wire at once and takes the answers as they come, so a cycle costs a few wake-ups for the whole
    // site instead of three or four per endpoint. Everything else stays with this worker's thread:
    // connecting, discovery, the minute's refresh of static values, and every failure. The session
    // (connection and device states, `EndpointSession`) is moved, not shared: this thread puts it in
    // `toPoller` and no longer has it; the poller puts it back in `toWorker` with the failure that
    // made it, if any.

    /// The poller this endpoint is lent to when healthy (TCP endpoints; set before `start`).
    var poller: BusPoller?
    /// The session on its way to the poller, and on its way back.
    let toPoller = SessionMailbox()
    let toWorker = SessionMailbox()
    /// True while the session is away with the poller (the cycle kicks this worker only when false;
    /// tests). Ownership is the mailboxes'; this only reports where the session is.
    let handedOver = Atomic<Bool>(false)
    /// Set by this thread when the minute's refresh is due: the poller hands back once idle.
    let wantsBack = Atomic<Bool>(false)
    /// Signalled by the poller when it hands back.
    let handback = Wakeup()

    private func loop() {
        if let realtime {
            for notice in Realtime.enter(realtime, as: "the bus worker").notices {
                log(Notice(DeviceCode.realtimeDegraded, "\(endpoint): \(notice)"))
            }
        }
        var session = EndpointSession(devices: devices.count)
        let ownPeriod = max(.milliseconds(10), period)
        var lead = ReadLead()
        var next = clock.now()
        // The last time the cycle handed over setpoints (`WritePlanner.stalled`).
        var lastKick = clock.now()
        while worker.turn() {
            if let poller, poller.isAlive, canHandOver(session) {
                wantsBack.store(false, ordering: .relaxed)
                session = lend(session, to: poller)
                lastKick = clock.now()  // the poller watched the cycle meanwhile
                if let failure = session.failure {
                    session.failure = nil
                    failed(failure.index, failure.error, &session)
                } else if wantsBack.load(ordering: .relaxed) {
                    // Handed back for the minute's refresh of static values, right after the cycle's
                    // writes: refresh now, between rounds, and hand the endpoint over again before the
                    // next reads start, so the refresh never delays a cycle's reading.
                    refreshStatics(&session)
                    wantsBack.store(false, ordering: .relaxed)
                }
                continue
            }
            if let phase, let cycleDeadline = phase.upcoming {
                // Aligned to the cycle: read, wait for its setpoints, write. One wake-up for the
                // reads, one for the writes.
                let cyclePeriod = phase.period
                var readAt = cycleDeadline - lead.lead(period: cyclePeriod)
                if readAt < clock.now() - cyclePeriod / 2 { readAt = clock.now() }
                pause(until: readAt, lastKick: &lastKick, &session)
                if wake.drain() { lastKick = clock.now() }  // kicks meant for an earlier cycle: the cycle lives
                for index in devices.indices { read(index, &session) }
                lead.record(readAt: readAt, done: clock.now())
                // The cycle kicks once it has commanded; give up half a period after its deadline
                // (a stalled cycle: the refresh below keeps to the revert rule either way).
                // (Not once stopping: `stop` signalled `wake` once, and a pause above may have taken it.)
                if worker.isRunning, clock.wait(for: wake, until: max(cycleDeadline, clock.now()) + cyclePeriod / 2) {
                    lastKick = clock.now()
                }
                let stalled = WritePlanner.stalled(lastHandOver: lastKick, now: clock.now(), period: cyclePeriod)
                for index in devices.indices { write(index, &session, stalled: stalled) }
                session.count(into: counters)
                if let poller, poller.isAlive, canHandOver(session) { continue }
                // Sleep at least to this cycle's deadline, so the next round reads for the next cycle.
                if clock.now() < cycleDeadline { pause(until: cycleDeadline, lastKick: &lastKick, &session) }
            } else {
                lastKick = clock.now()  // not on a cycle's schedule (yet): nothing to stall
                for index in devices.indices {
                    read(index, &session)
                    write(index, &session)
                }
                session.count(into: counters)
                next = next + ownPeriod
                let current = clock.now()
                if next < current { next = current }
                _ = clock.wait(for: stopping, until: next)
            }
        }
        // Safe stop: zero power, revert armed (the poller has stopped and handed back first).
        var unconfirmed: [String] = []
        for index in devices.indices where devices[index].meter == nil {
            // Only a write the device acknowledged counts: no link, a device never discovered or a
            // refused write leaves the inverter on its own revert timer, and the stop line says so.
            guard let connection = session.link.connection, connection.isConnected, let device = session.devices[index].device else {
                unconfirmed.append(devices[index].name)
                continue
            }
            var unit = connection.unit(devices[index].unitID)
            do throws(DeviceError) {
                try device.command(.zero, revert: revert, rearm: true, &unit)
                var released = device  // a profiled inverter's stop sequence (nothing for the others)
                try released.release(&unit)
                // 0 var, armed, where bessd commands reactive power (the active zero first), a var
                // write still in flight at the stop included.
                let commanding = session.devices[index].reactive.enabled || session.devices[index].plannedReactive?.enabled == true
                if commanding, let control = device.reactiveControl {
                    for write in control.writes(0, reactivePriority: devices[index].slot.reactiveRequest.priority, revert: revert,
                                                rearm: true) { try unit.writeRegisters(at: write.address, write.values) }
                }
            } catch {
                unconfirmed.append(devices[index].name)
            }
        }
        session.link.connection?.close()
        stopOutcome.withLock { $0 = unconfirmed }
    }

    /// After `stop()`: the units whose inverter did not acknowledge the safe zero (unreachable, never
    /// discovered, or refused), so they rest on their own revert timer; empty when every one did.
    public var unconfirmedStops: [String] { stopOutcome.withLock { $0 } }
    private let stopOutcome = PILock<[String]>([])

    /// Lends the session to the poller and waits for it to come back: at the poller's first
    /// failure, at stop, or when this worker asks for it because the minute's refresh of static
    /// values came due. A session the poller never took up (it stopped first) is taken back.
    private func lend(_ session: consuming EndpointSession, to poller: BusPoller) -> EndpointSession {
        let due = Self.staticsDue(session) + staticsEvery
        handedOver.store(true, ordering: .releasing)
        toPoller.put(session)
        poller.adopt()
        while true {
            // A turn while lent: the watchdog sees this thread waiting on the poller, not stuck.
            _ = worker.turn()
            if let back = toWorker.take() {
                handedOver.store(false, ordering: .releasing)
                return back
            }
            if !poller.isAlive, let back = toPoller.take() {
                handedOver.store(false, ordering: .releasing)
                return back
            }
            let current = clock.now()
            if current >= due, worker.isRunning, !wantsBack.load(ordering: .relaxed) {
                wantsBack.store(true, ordering: .relaxed)
                poller.adopt()
            }
            // Until the refresh is due, turning at least once a second: the poller's hand-back and
            // `stop` signal this wait.
            let until = worker.isRunning ? min(max(due, current + .milliseconds(10)), current + .seconds(1)) : current + .milliseconds(100)
            _ = clock.wait(for: handback, until: until)
        }
    }

    /// The oldest read of static values of the session's devices.
    private static func staticsDue(_ session: borrowing EndpointSession) -> MonotonicInstant {
        var oldest: MonotonicInstant?
        for i in session.devices.indices { oldest = min(oldest ?? session.devices[i].staticsAt, session.devices[i].staticsAt) }
        return oldest ?? .zero
    }

    /// True when the poller can drive the endpoint: connected and settled, every unit discovered and
    /// answering with a whole reading, none backing off, each polled in one request.
    private func canHandOver(_ session: borrowing EndpointSession) -> Bool {
        guard let connection = session.link.connection, connection.isConnected, connection.socket >= 0 else { return false }
        let current = clock.now()
        for i in session.devices.indices {
            let state = session.devices[i]
            guard state.pollRequest != nil, !state.valueFault, state.backoffUntil <= current, state.lastWritten != nil,
                  current - state.staticsAt < staticsEvery else { return false }
        }
        return true
    }

    /// Sleeps until `deadline` between rounds. A hand-over meanwhile (an extra cycle's, woken by a
    /// BMS frame calling for less power, or a cycle later than half a period) is written at once: a
    /// setpoint leaves as soon as its cycle has decided it.
    private func pause(until deadline: MonotonicInstant, lastKick: inout MonotonicInstant, _ session: inout EndpointSession) {
        while clock.now() < deadline, worker.isRunning {
            guard clock.wait(for: wake, until: deadline) else { return }
            lastKick = clock.now()
            for index in devices.indices { write(index, &session) }
            session.count(into: counters)
        }
    }

    /// The shared connection, opened (or re-opened after its back-off) when needed; nil while the
    /// link backs off or cannot be opened.
    private func connection(_ session: inout EndpointSession) -> ModbusConnection? {
        if let connection = session.link.connection, connection.isConnected { return connection }
        if clock.now() < session.link.backoffUntil { return nil }
        do throws(DeviceError) {
            let connection: ModbusConnection
            if let existing = session.link.connection {
                connection = existing
            } else {
                connection = try ModbusConnection(endpoint: endpoint, timeout: timeout, clock: clock)
                session.link.connection = connection
                session.link.countedRequests = 0
                session.link.countedConnects = 0
            }
            try connection.connect()
            return connection
        } catch {
            linkFailed(error, &session)
            return nil
        }
    }

    /// Re-reads the static values (nameplate, settings, scale factors) of every discovered device
    /// whose minute is up.
    private func refreshStatics(_ session: inout EndpointSession) {
        for index in devices.indices {
            guard session.devices[index].device != nil, clock.now() - session.devices[index].staticsAt >= staticsEvery,
                  let connection = connection(&session) else { continue }
            var unit = connection.unit(devices[index].unitID)
            do throws(DeviceError) {
                session.devices[index].device = try session.devices[index].device!.refreshed(&unit)
                devices[index].slot.publish(reactive: session.devices[index].device!.reactiveCapability)
                session.devices[index].staticsAt = clock.now()
                refreshes.add(1, ordering: .relaxed)
            } catch {
                failed(index, error, &session)
            }
        }
    }

    /// Connects and discovers when needed, then reads the device and publishes the reading.
    private func read(_ index: Int, _ session: inout EndpointSession) {
        let device = devices[index]
        if clock.now() < session.devices[index].backoffUntil { return }
        guard let connection = connection(&session) else { return }
        var unit = connection.unit(device.unitID)
        do throws(DeviceError) {
            if session.devices[index].device == nil {
                let discovered = try ModbusDevice.discover(device.kind, &unit)
                session.devices[index].device = discovered.device
                device.slot.publish(reactive: discovered.device.reactiveCapability)
                log("unit id \(device.unitID) on \(endpoint): \(discovered.found)", about: device)
                session.devices[index].staticsAt = clock.now()
            } else if clock.now() - session.devices[index].staticsAt >= staticsEvery {
                // Nameplate, settings and scale factors change rarely: re-read them once a minute,
                // not every cycle.
                session.devices[index].device = try session.devices[index].device!.refreshed(&unit)
                device.slot.publish(reactive: session.devices[index].device!.reactiveCapability)
                session.devices[index].staticsAt = clock.now()
                refreshes.add(1, ordering: .relaxed)
            }
            let reading = try session.devices[index].device!.readStatus(&unit)
            device.slot.publish(Timestamped(reading, at: clock.now()), roundTrip: connection.lastRoundTrip)
            session.link.silentInARow = 0
            session.link.backoff.reset()
            if session.devices[index].valueFault || session.devices[index].logged {
                log(Notice(DeviceCode.deviceAnswering, "unit id \(device.unitID) on \(endpoint): answering again", units: [device.name]))
            }
            session.devices[index].valueFault = false
            session.devices[index].logged = false
            session.devices[index].backoff.reset()
        } catch {
            failed(index, error, &session)
        }
    }

    /// How often the static values of a discovered inverter are re-read (a minute in bessd).
    let staticsEvery: Duration
    /// Refreshes of static values made so far (one per device and minute).
    let refreshes = Atomic<Int>(0)

    /// Writes what `WritePlanner` says device `index` needs (the cycle's setpoint; zero when the
    /// cycle has stalled or the last reading was unusable), waiting for each answer. A setpoint the
    /// device cannot represent is replaced by 0 W, revert armed.
    private func write(_ index: Int, _ session: inout EndpointSession, stalled: Bool = false) {
        guard let connection = session.link.connection, connection.isConnected, session.devices[index].device != nil else { return }
        let device = devices[index]
        let decided = device.slot.setpoint
        let setpoint = WritePlanner.setpoint(decided: decided, stalled: stalled, valueFault: session.devices[index].valueFault)
        var unit = connection.unit(device.unitID)
        do throws(DeviceError) {
            if session.devices[index].device?.isProfiled == true {
                return try session.commandProfiled(index, decided: decided, stalled: stalled, revert: revert, now: clock.now(), &unit)
            }
            do throws(DeviceError) {
                let planned = try session.plan(index, decided: decided, stalled: stalled, revert: revert, now: clock.now(),
                                               slot: device.slot, rating: device.rating)
                if session.devices[index].contactorNotice { cannotOpen(index, &session) }
                if session.devices[index].reactiveNotice {
                    session.devices[index].reactiveNotice = false
                    log(device.reactiveUnavailable(on: endpoint))
                }
                guard let plan = planned else { return }
                for write in plan.writes {
                    do throws(DeviceError) {
                        try unit.writeRegisters(at: write.address, write.values)
                    } catch where error.kind == .deviceRefused && session.refusedConn(index, address: write.address) {
                        // The contactor's refusal: the unit cannot open (said at the next round's
                        // plan); the setpoint's writes still go, the unit is not rediscovered.
                    }
                }
                session.written(index, setpoint: plan.setpoint, rearm: plan.rearm, conn: session.devices[index].plannedConn,
                                at: clock.now())
            } catch where Failure(error.kind) == .value && setpoint != .zero {
                // The device cannot take this setpoint: it gets 0 W with the revert armed instead
                // (never its previous setpoint), and the link stays up.
                device.slot.fail("\(error.code)")
                if !session.devices[index].refusalLogged { warn("unit id \(device.unitID) on \(endpoint): \(error); commanding 0 W", error, [device.name]) }
                session.devices[index].refusalLogged = true
                try session.devices[index].device!.command(.zero, revert: revert, rearm: true, &unit)
                // A due close still goes (an open does not: 0 W is only now on the wire).
                if device.slot.wantsConnect, session.devices[index].conn == SunSpec.Controls.disconnect,
                   let write = session.devices[index].device!.connectionWrite(connect: true, revert: revert) {
                    try unit.writeRegisters(at: write.address, write.values)
                    session.devices[index].conn = SunSpec.Controls.connect
                }
                session.devices[index].plannedConn = nil
                session.devices[index].lastArmedAt = clock.now()
                session.devices[index].lastWritten = setpoint
                session.devices[index].lastPlain = nil
            }
        } catch {
            failed(index, error, &session)
        }
    }

    /// Says once, coded, that unit `index` was asked to open but cannot be (no model 123, no
    /// `Conn_RvrtTms`, or `Conn` refused).
    func cannotOpen(_ index: Int, _ session: inout EndpointSession) {
        session.devices[index].contactorNotice = false
        Self.cannotOpen(devices[index], on: endpoint, log)
    }

    static func cannotOpen(_ device: Device, on endpoint: ModbusEndpoint, _ log: (Notice) -> Void) {
        log(Notice(DeviceCode.contactorUnavailable,
                   "unit id \(device.unitID) on \(endpoint): cannot open: the inverter has no usable SunSpec model 123 Conn "
                       + "(absent, refused, or without a revert timer); "
                       + "held at 0 W while it is asked open (the utility's disconnect or a latched fault)", units: [device.name]))
    }

    private func failed(_ index: Int, _ error: DeviceError, _ session: inout EndpointSession) {
        let device = devices[index]
        var kind = Failure(error.kind)
        // A refusal at discovery (no WSet_SF, no WChaMax…) is the unit's, not a value to zero.
        if kind == .value, session.devices[index].device == nil { kind = .unit }
        if error.code == .timeout {
            session.link.silentInARow += 1
            // Every unit on the connection silent in turn: the connection is suspect.
            if session.link.silentInARow >= max(1, devices.count) { kind = .link }
        } else if kind != .link {
            session.link.silentInARow = 0  // the device answered (an exception, a value): the link carries
        }
        switch kind {
        case .link:
            linkFailed(error, &session)
        case .value:
            device.slot.fail("\(error.code)")
            if !session.devices[index].logged { warn("unit id \(device.unitID) on \(endpoint): \(error); commanding 0 W, link kept", error, [device.name]) }
            session.devices[index].logged = true
            session.devices[index].valueFault = true
        case .unit:
            device.slot.fail("\(error.code)")
            if !session.devices[index].logged { warn("unit id \(device.unitID) on \(endpoint): \(error)", error, [device.name]) }
            session.devices[index].logged = true
            // Rediscover this unit after a pause that doubles up to 10 s, with jitter; the
            // connection and the other units on it carry on.
            session.devices[index].device = nil
            session.devices[index].lastWritten = nil
            session.devices[index].zeroSince = nil
            session.devices[index].valueFault = false
            session.devices[index].backoffUntil = clock.now() + session.devices[index].backoff.next()
        }
    }

    /// Closes the shared connection; every unit on it is rediscovered once it is back.
    private func linkFailed(_ error: DeviceError, _ session: inout EndpointSession) {
        // Once per outage, naming every unit behind the link: their inverters get nothing from bessd
        // until it is back ("answering again" says so, per unit).
        if session.link.backoff.isFirst {
            warn("\(endpoint): \(error); reconnecting (units \(devices.map(\.name).joined(separator: ", ")) get no setpoint meanwhile)",
                 error, devices.map(\.name))
        }
        if let connection = session.link.connection {
            session.count(into: counters)
            connection.close()
        }
        session.link.silentInARow = 0
        for index in devices.indices {
            devices[index].slot.fail("\(error.code)")
            session.devices[index].device = nil
            session.devices[index].lastWritten = nil
            session.devices[index].zeroSince = nil
            session.devices[index].valueFault = false
            session.devices[index].backoffUntil = .zero
            session.devices[index].backoff.reset()
            session.devices[index].logged = true
        }
        // Reconnect after a pause that doubles up to 10 s, with jitter, so a fleet does not hammer a
        // recovering device in step.
        session.link.backoffUntil = clock.now() + session.link.backoff.next()
    }

    /// A plain notice about one device.
    private func log(_ text: String, about device: Device) { log(Notice(text, units: [device.name])) }

    /// A device's or link's failure, with its code, for `units`.
    private func warn(_ text: String, _ error: DeviceError, _ units: [String]) {
        log(Notice(text, failure: error, units: units))
    }
}
