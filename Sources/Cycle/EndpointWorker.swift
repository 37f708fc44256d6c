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
        var lastError: String?
        var roundTrip: Duration = .zero
        var errors: UInt64 = 0
    }
    private let state = PILock(State())

    public init() {}

    /// The latest reading (the cycle's side).
    public var reading: Timestamped<InverterReading>? { state.withLock { $0.reading } }
    /// The code of the last failure, if the last exchange failed.
    public var lastError: String? { state.withLock { $0.lastError } }
    /// The latest reading and whether the device failed before it ever answered, in one lock (the
    /// cycle's side, every cycle: no second lock, no copy of the error text).
    public var sample: (reading: Timestamped<InverterReading>?, neverAnswered: Bool) {
        state.withLock { ($0.reading, $0.reading == nil && $0.lastError != nil) }
    }
    /// Failed exchanges so far.
    public var errors: UInt64 { state.withLock { $0.errors } }
    /// Round-trip time of the last successful request.
    public var roundTrip: Duration { state.withLock { $0.roundTrip } }

    /// Hands the worker a new setpoint (the cycle's side).
    public func setSetpoint(_ power: Watts) { state.withLock { $0.setpoint = power } }

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
    public struct Device: Sendable {
        public var unitID: Int
        public var slot: DeviceSlot
        /// nil for SunSpec (discovered); a register map for other inverters.
        public var registerMap: RegisterMapSpec?
        /// Set for the site's connection-point meter: read every cycle, never written. Its reading's
        /// `activePower` is the meter's W as the meter states it, and `frequency` its Hz.
        public var meter: MeterDriver?
        /// Whose device this is, as the journal names it: the unit's configured id, or `site` for
        /// the connection-point meter (`BESS_UNIT`).
        public var name: String
        public init(unitID: Int, slot: DeviceSlot, registerMap: RegisterMapSpec? = nil, meter: MeterDriver? = nil,
                    name: String = "") {
            self.unitID = unitID
            self.name = name
            self.slot = slot
            self.registerMap = registerMap
            self.meter = meter
        }

        /// What the configuration says the device is (discovery turns it into a `ModbusDevice`).
        public var kind: ModbusDevice.Kind {
            switch (meter, registerMap) {
            case (.sunspec?, _): .sunspecMeter
            case (.registerMap(let map)?, _): .meterMap(map)
            case (nil, let spec?): .registerMapInverter(spec)
            case (nil, nil): .sunspecInverter
            }
        }
    }

    /// How a meter on the wire is read.
    public enum MeterDriver: Sendable, Equatable {
        /// SunSpec models 201–204, discovered.
        case sunspec
        /// A configured register map.
        case registerMap(MeterRegisterMap)
    }

    /// What a failure says about the wire, and so what the worker does next.
    enum Failure: Equatable {
        /// The connection itself is gone (refused, reset, closed, an I/O error): close it, back off,
        /// reconnect and rediscover every unit on it.
        case link
        /// One unit did not answer usefully (timeout, Modbus exception, malformed answer, a map that
        /// no longer walks): back that unit off and rediscover it; the others keep the connection.
        case unit
        /// The device answered, but a value is unusable (W not implemented, a setpoint that does
        /// not fit its register): command 0 W with the revert armed, keep link and discovery.
        case value

        init(_ kind: DeviceError.Kind) {
            switch kind {
            case .linkLost: self = .link
            case .valueInvalid: self = .value
            case .timeout, .deviceRefused: self = .unit
            }
        }
    }

    public let endpoint: ModbusEndpoint
    public let devices: [Device]
    let period: Duration
    let timeout: Duration
    let revertSeconds: Int
    let phase: CyclePhase?
    /// SCHED_FIFO priority (below the cycle's) and CPU of the worker's thread, or nil for the default policy.
    let realtime: RealtimeThread?
    let log: @Sendable (DeviceNotice) -> Void
    private let worker = WorkerThread()

    /// True while the worker's thread runs its loop (the watchdog checks it).
    public var isAlive: Bool { worker.isAlive }
    /// The thread's kernel id once it runs (tests read its affinity and policy from /proc).
    var threadID: Int32 { worker.threadID }
    private let wake = Wakeup()
    private let counters = PILock(Counters())

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
    ///   - revertSeconds: the revert timer written with every setpoint; setpoints are re-written at
    ///     least every half of it even when unchanged.
    ///   - phase: the control cycle's schedule. With it, the worker reads every inverter just before
    ///     each cycle and writes the cycle's setpoints the moment the cycle hands them over, so a
    ///     change at the inverter reaches its wire within one period plus the bus time. Without it
    ///     (tests driving the runner by hand), it polls on its own period.
    /// - Parameter staticsEvery: how often static values are re-read (a minute; tests shorten it).
    public init(endpoint: ModbusEndpoint, devices: [Device], period: Duration, timeout: Duration, revertSeconds: Int,
                phase: CyclePhase? = nil, realtime: RealtimeThread? = nil, staticsEvery: Duration = .seconds(60),
                log: @escaping @Sendable (DeviceNotice) -> Void) {
        self.staticsEvery = staticsEvery.nanosecondsClamped
        self.endpoint = endpoint
        self.devices = devices
        self.period = period
        self.timeout = timeout
        self.revertSeconds = revertSeconds
        self.phase = phase
        self.realtime = realtime
        self.log = log
    }

    public func start() {
        worker.start(name: "bessd-bus") { [self] in loop() }
    }

    /// Stops the worker after writing a zero setpoint to every inverter (revert armed).
    public func stop() {
        worker.stop { [handback] in handback.signal() }
    }

    /// Tells the worker the cycle has handed over new setpoints (the cycle's side: one non-blocking
    /// write to an eventfd, no allocation). While the poller drives the endpoint, the poller is kicked
    /// instead (`HardwareSite.commandsIssued`).
    public func kick() { wake.signal() }

    // MARK: hand-over to a shared poller
    //
    // A Modbus TCP endpoint whose units are all discovered and answering is driven by the site's
    // `BusPoller`: one thread that puts the per-cycle read and write of every such endpoint on the
    // wire at once and takes the answers as they come, so a cycle costs a few wake-ups for the whole
    // site instead of three or four per endpoint. Everything else stays with this worker's thread:
    // connecting, discovery, the minute's refresh of static values, and every failure. `handedOver`
    // says who owns the connection and the device states: this thread (false) or the poller (true).
    // The owner alone touches them; the flag is stored with release and loaded with acquire, so each
    // side sees what the other did before handing over.

    /// The poller this endpoint is handed to when healthy (TCP endpoints; set before `start`).
    var poller: BusPoller?
    let handedOver = Atomic<Bool>(false)
    /// Set by this thread when the minute's refresh is due: the poller hands back once idle.
    let wantsBack = Atomic<Bool>(false)
    /// Signalled by the poller when it hands back.
    let handback = Wakeup()
    /// Owned by whoever `handedOver` names.
    var states: [DeviceState] = []
    var link = Link()
    /// The failure that made the poller hand back, for this thread to act on.
    var pollerFailure: (index: Int, error: DeviceError)?

    struct DeviceState {
        var inverter: ModbusDevice? { didSet { pollRequest = inverter?.pollRequest } }
        /// The inverter's poll request, kept with it: the poller asks for it every round, and
        /// asking the driver each time copies it (a retain per reference it holds).
        private(set) var pollRequest: (address: Int, count: Int)?
        /// The setpoint last acted on (written, or refused and replaced by 0 W).
        var lastWritten: Watts?
        /// The requests that carried `lastWritten` without the revert's re-arm: a new setpoint that
        /// encodes to the same registers is not sent again. Nil after a refusal.
        var lastPlain: [(address: Int, values: [UInt16])]?
        /// The poller's plan for the round's writes, kept until they are answered.
        var plannedPlain: [(address: Int, values: [UInt16])]?
        /// When the revert timer was last armed (revert value, enable and time written).
        var lastArmedAt: Int64 = 0
        /// When the static values (nameplate, settings, scale factors) were last read.
        var staticsAt: Int64 = 0
        var backoffUntil: Int64 = 0
        var backoff = Backoff(firstNanoseconds: 500_000_000, maximumNanoseconds: 10_000_000_000)
        /// The last reading had an unusable value: command 0 W until a reading is whole again.
        var valueFault = false
        /// A read failure was logged (log once until the unit answers again).
        var logged = false
        /// A refused setpoint was logged (once until a setpoint is accepted).
        var refusalLogged = false
    }

    /// The one connection to the endpoint, shared by every unit id on it; confined to the worker's
    /// thread.
    struct Link {
        var connection: ModbusConnection?
        var backoffUntil: Int64 = 0
        var backoff = Backoff(firstNanoseconds: 500_000_000, maximumNanoseconds: 10_000_000_000)
        /// Timeouts in a row with no answer from any unit: when every unit has been silent, the
        /// connection itself is suspect (a half-open TCP session) and is re-established.
        var silentInARow = 0
        var countedRequests: UInt64 = 0
        var countedConnects: UInt64 = 0
    }

    private func loop() {
        if let realtime {
            for notice in Realtime.enter(realtime, as: "the bus worker").notices {
                log(DeviceNotice("\(endpoint): \(notice)", severity: .warning, code: "REALTIME_DEGRADED"))
            }
        }
        states = devices.map { _ in DeviceState() }
        link = Link()
        let periodNs = max(10_000_000, period.nanosecondsClamped)
        var lead = ReadLead()
        var next = now()
        // The last time the cycle handed over setpoints. A cycle that stops doing so (stalled, not
        // stopped) is missing data: after `stallAfter` the worker commands zero, revert armed, rather
        // than keep refreshing a setpoint nobody confirms.
        var lastKick = now()
        while worker.isRunning {
            if poller != nil, handedOver.load(ordering: .acquiring) {
                awaitHandback()
                lastKick = now()  // the poller watches the cycle meanwhile
                continue
            }
            if let failure = pollerFailure {
                pollerFailure = nil
                failed(failure.index, failure.error, &states, &link)
                lastKick = now()
            } else if let poller, wantsBack.load(ordering: .relaxed) {
                // Handed back for the minute's refresh of static values, right after the cycle's
                // writes: refresh now, between rounds, and hand the endpoint over again before the
                // next reads start, so the refresh never delays a cycle's reading.
                refreshStatics(&states, &link)
                wantsBack.store(false, ordering: .relaxed)
                if canHandOver() {
                    handedOver.store(true, ordering: .releasing)
                    poller.adopt()
                    continue
                }
            }
            let cycleDeadline = phase?.nextDeadline ?? 0
            if cycleDeadline > 0 {
                // Aligned to the cycle: read, wait for its setpoints, write. One wake-up for the
                // reads, one for the writes.
                let cyclePeriod = phase!.periodNanoseconds
                var readAt = cycleDeadline - lead.nanoseconds(period: cyclePeriod)
                if readAt < now() - cyclePeriod / 2 { readAt = now() }
                pause(until: readAt, lastKick: &lastKick)
                if wake.drain() { lastKick = now() }  // kicks meant for an earlier cycle: the cycle lives
                for index in devices.indices { read(index, &states, &link) }
                lead.record(readAt: readAt, done: now())
                // The cycle kicks once it has commanded; give up half a period after its deadline
                // (a stalled cycle: the refresh below keeps to the revert rule either way).
                if wake.wait(until: max(cycleDeadline, now()) + cyclePeriod / 2) { lastKick = now() }
                let stalled = now() - lastKick > max(Self.stallAfterNanoseconds, 5 * cyclePeriod)
                for index in devices.indices { write(index, &states, &link, zeroInstead: stalled) }
                count(&link)
                if let poller, canHandOver() {
                    wantsBack.store(false, ordering: .relaxed)
                    handedOver.store(true, ordering: .releasing)
                    poller.adopt()
                    continue
                }
                // Sleep at least to this cycle's deadline, so the next round reads for the next cycle.
                if now() < cycleDeadline { pause(until: cycleDeadline, lastKick: &lastKick) }
            } else {
                lastKick = now()  // not on a cycle's schedule (yet): nothing to stall
                for index in devices.indices {
                    read(index, &states, &link)
                    write(index, &states, &link)
                }
                count(&link)
                next += periodNs
                let current = now()
                if next < current { next = current }
                sleep(until: next)
            }
        }
        // Safe stop: zero power, revert armed (the poller has stopped and handed back first).
        while handedOver.load(ordering: .acquiring) {
            // Handed over after the poller's last round: its thread has ended, so take it back.
            if let poller, !poller.isAlive { handedOver.store(false, ordering: .releasing); break }
            handback.wait(until: now() + 100_000_000)
        }
        var unconfirmed: [String] = []
        for index in devices.indices where devices[index].meter == nil {
            // Only a write the device acknowledged counts: no link, a device never discovered or a
            // refused write leaves the inverter on its own revert timer, and the stop line says so.
            guard let connection = link.connection, connection.isConnected, let inverter = states[index].inverter else {
                unconfirmed.append(devices[index].name)
                continue
            }
            var unit = connection.unit(devices[index].unitID)
            do throws(DeviceError) {
                try inverter.command(.zero, revertSeconds: revertSeconds, rearm: true, &unit)
            } catch {
                unconfirmed.append(devices[index].name)
            }
        }
        link.connection?.close()
        stopOutcome.withLock { $0 = unconfirmed }
    }

    /// After `stop()`: the units whose inverter did not acknowledge the safe zero (unreachable, never
    /// discovered, or refused), so they rest on their own revert timer; empty when every one did.
    public var unconfirmedStops: [String] { stopOutcome.withLock { $0 } }
    private let stopOutcome = PILock<[String]>([])

    /// Waits while the poller drives the endpoint: until it hands back, or asks it to when the
    /// minute's refresh of static values comes due.
    private func awaitHandback() {
        let due = (states.lazy.map(\.staticsAt).min() ?? 0) + staticsEvery
        if now() >= due, !wantsBack.load(ordering: .relaxed) {
            wantsBack.store(true, ordering: .relaxed)
            poller?.adopt()
        }
        // Until the refresh is due: the poller's hand-back and `stop` signal this wait.
        handback.wait(until: max(due, now() + 10_000_000))
    }

    /// True when the poller can drive the endpoint: connected and settled, every unit discovered and
    /// answering with a whole reading, none backing off, each polled in one request.
    private func canHandOver() -> Bool {
        guard let connection = link.connection, connection.isConnected, connection.socket >= 0 else { return false }
        let current = now()
        return states.allSatisfy { state in
            guard state.pollRequest != nil else { return false }
            return !state.valueFault && state.backoffUntil <= current && state.lastWritten != nil
                && current - state.staticsAt < staticsEvery
        }
    }

    // The poller's side (called on the poller's thread while it owns the endpoint).

    /// The connection (the poller's side, while it owns the endpoint).
    var pollerConnection: ModbusConnection? { link.connection }

    /// The poll request of device `index`.
    func pollRequest(_ index: Int) -> (address: Int, count: Int)? { states[index].pollRequest }

    /// Decodes device `index`'s poll answer and publishes the reading.
    func pollAnswered(_ index: Int, address: Int, words: [UInt16]) throws(DeviceError) {
        guard let inverter = states[index].inverter else {
            throw DeviceError(.sunspecModelMissing, message: "unit id \(devices[index].unitID) not discovered")
        }
        var block = PrefetchedRegisters(address: address, words: words)
        let reading = try inverter.readStatus(&block)
        let roundTrip = link.connection?.lastRoundTrip ?? .zero
        devices[index].slot.publish(Timestamped(reading, at: MonotonicInstant(nanoseconds: now())), roundTrip: roundTrip)
        link.silentInARow = 0
    }

    /// What device `index` needs written this cycle (nil: nothing), by the same rule as the worker's
    /// own `write`: a changed setpoint, or a re-arm of the revert timer at half its period.
    func plannedWrites(_ index: Int, stalled: Bool) throws(DeviceError)
        -> (setpoint: Watts, rearm: Bool, writes: [(address: Int, values: [UInt16])])?
    {
        let setpoint = stalled || states[index].valueFault ? .zero : devices[index].slot.setpoint
        guard let plan = try Self.plan(&states[index], setpoint, revertSeconds: revertSeconds, now: now()) else { return nil }
        states[index].plannedPlain = plan.plain
        return (setpoint, plan.rearm, plan.writes)
    }

    /// Records that device `index`'s planned writes all went through.
    func written(_ index: Int, setpoint: Watts, rearm: Bool) {
        states[index].lastWritten = setpoint
        states[index].lastPlain = states[index].plannedPlain.take()  // moved, not copied
        states[index].refusalLogged = false
        if rearm { states[index].lastArmedAt = now() }
    }

    /// What writing `setpoint` to a device in `state` takes now, or nil when nothing is due: the one
    /// rule of both write paths (the worker's own and the bus poller's). The revert timer is re-armed
    /// (revert value, enable and time, then the setpoint) on the first write after discovery and at
    /// least every half of its period. In between, a setpoint is written when it moved by 1 W or more
    /// from the last one written *and* its registers changed: a device whose scale factor makes a
    /// step of 10 or 100 W is not sent the same value again (no extra request on the bus nor write to
    /// its memory). `plain` is the writes without the re-arm, kept to compare the next setpoint with.
    /// `state` is only read: it is `inout` so that the caller's element is used in place, not
    /// copied (a copy retains every reference a device's state holds, each device and cycle).
    static func plan(_ state: inout DeviceState, _ setpoint: Watts, revertSeconds: Int, now: Int64) throws(DeviceError)
        -> (rearm: Bool, writes: [(address: Int, values: [UInt16])], plain: [(address: Int, values: [UInt16])])?
    {
        guard state.inverter != nil else { return nil }
        let rearm = state.lastWritten == nil || now - state.lastArmedAt >= Int64(revertSeconds) * 500_000_000
        if !rearm, let last = state.lastWritten, abs(last.value - setpoint.value) < 1 { return nil }
        // The driver is used in place (a local would be a copy of it each cycle).
        let plain = try state.inverter!.writes(setpoint, revertSeconds: revertSeconds, rearm: false)
        guard rearm else {
            if let sent = state.lastPlain,
               sent.elementsEqual(plain, by: { $0.address == $1.address && $0.values == $1.values }) { return nil }
            return (false, plain, plain)
        }
        return (true, try state.inverter!.writes(setpoint, revertSeconds: revertSeconds, rearm: true), plain)
    }

    /// Hands the endpoint back to this worker's thread (the poller's side), with the failure that
    /// made it, if any.
    func handBack(failure: (index: Int, error: DeviceError)?) {
        count(&link)
        pollerFailure = failure
        handedOver.store(false, ordering: .releasing)
        handback.signal()
    }

    /// Publishes the request counters (the poller's side, once per round).
    func countRequests() { count(&link) }

    /// Publishes the connection's counters (once per round: one short lock).
    private func count(_ link: inout Link) {
        guard let connection = link.connection else { return }
        let requests = connection.requestCount, connects = connection.connectCount
        let newRequests = requests &- link.countedRequests, newConnects = connects &- link.countedConnects
        link.countedRequests = requests
        link.countedConnects = connects
        if newRequests > 0 || newConnects > 0 {
            counters.withLock {
                $0.requests &+= newRequests
                $0.connects &+= newConnects
            }
        }
    }

    private func sleep(until ns: Int64) { SystemClock.sleep(untilMonotonic: ns) }

    /// Sleeps until `ns` between rounds. With alarms enabled, a hand-over meanwhile is an extra
    /// cycle's, woken by a BMS frame calling for less power: its setpoints are written at once.
    private func pause(until ns: Int64, lastKick: inout Int64) {
        guard phase?.alarmsEnabled == true else { sleep(until: ns); return }
        while now() < ns, worker.isRunning {
            guard wake.wait(until: ns) else { return }
            lastKick = now()
            for index in devices.indices { write(index, &states, &link) }
            count(&link)
        }
    }

    /// The shared connection, opened (or re-opened after its back-off) when needed; nil while the
    /// link backs off or cannot be opened.
    private func connection(_ link: inout Link, _ states: inout [DeviceState]) -> ModbusConnection? {
        if let connection = link.connection, connection.isConnected { return connection }
        if now() < link.backoffUntil { return nil }
        do throws(DeviceError) {
            let connection: ModbusConnection
            if let existing = link.connection {
                connection = existing
            } else {
                connection = try ModbusConnection(endpoint: endpoint, timeout: timeout)
                link.connection = connection
                link.countedRequests = 0
                link.countedConnects = 0
            }
            try connection.connect()
            return connection
        } catch {
            linkFailed(error, &link, &states)
            return nil
        }
    }

    /// Re-reads the static values (nameplate, settings, scale factors) of every discovered device
    /// whose minute is up.
    private func refreshStatics(_ states: inout [DeviceState], _ link: inout Link) {
        for index in devices.indices {
            guard states[index].inverter != nil, now() - states[index].staticsAt >= staticsEvery,
                  let connection = connection(&link, &states) else { continue }
            var unit = connection.unit(devices[index].unitID)
            do throws(DeviceError) {
                states[index].inverter = try states[index].inverter!.refreshed(&unit)
                states[index].staticsAt = now()
                refreshes.add(1, ordering: .relaxed)
            } catch {
                failed(index, error, &states, &link)
            }
        }
    }

    /// Connects and discovers when needed, then reads the inverter and publishes the reading.
    private func read(_ index: Int, _ states: inout [DeviceState], _ link: inout Link) {
        let device = devices[index]
        if now() < states[index].backoffUntil { return }
        guard let connection = connection(&link, &states) else { return }
        var unit = connection.unit(device.unitID)
        do throws(DeviceError) {
            if states[index].inverter == nil {
                let discovered = try ModbusDevice.discover(device.kind, &unit)
                states[index].inverter = discovered.device
                log("unit id \(device.unitID) on \(endpoint): \(discovered.found)", about: device)
                states[index].staticsAt = now()
            } else if now() - states[index].staticsAt >= staticsEvery {
                // Nameplate, settings and scale factors change rarely: re-read them once a minute,
                // not every cycle.
                states[index].inverter = try states[index].inverter!.refreshed(&unit)
                states[index].staticsAt = now()
                refreshes.add(1, ordering: .relaxed)
            }
            let reading = try states[index].inverter!.readStatus(&unit)
            device.slot.publish(Timestamped(reading, at: MonotonicInstant(nanoseconds: now())), roundTrip: connection.lastRoundTrip)
            link.silentInARow = 0
            link.backoff.reset()
            if states[index].valueFault || states[index].logged {
                log(DeviceNotice("unit id \(device.unitID) on \(endpoint): answering again", code: "DEVICE_ANSWERING", units: [device.name]))
            }
            states[index].valueFault = false
            states[index].logged = false
            states[index].backoff.reset()
        } catch {
            failed(index, error, &states, &link)
        }
    }

    /// How often the static values of a discovered inverter are re-read (ns; a minute in bessd).
    let staticsEvery: Int64
    /// Refreshes of static values made so far (one per device and minute).
    let refreshes = Atomic<Int>(0)

    /// How long without a hand-over from a running cycle before the worker commands zero.
    public static let stallAfterNanoseconds: Int64 = 1_000_000_000

    /// Writes the slot's setpoint (zero when the cycle has stalled or the last reading was unusable)
    /// when it changed, or when the revert timer needs refreshing. A setpoint the device cannot
    /// represent is replaced by 0 W, revert armed.
    private func write(_ index: Int, _ states: inout [DeviceState], _ link: inout Link,
                       zeroInstead: Bool = false) {
        guard let connection = link.connection, connection.isConnected, let inverter = states[index].inverter else { return }
        let device = devices[index]
        let setpoint = zeroInstead || states[index].valueFault ? .zero : device.slot.setpoint
        var unit = connection.unit(device.unitID)
        do throws(DeviceError) {
            do throws(DeviceError) {
                guard let plan = try Self.plan(&states[index], setpoint, revertSeconds: revertSeconds, now: now()) else { return }
                do throws(DeviceError) {
                    for write in plan.writes { try unit.writeRegisters(at: write.address, write.values) }
                } catch {
                    throw error
                }
                if plan.rearm { states[index].lastArmedAt = now() }
                states[index].lastPlain = plan.plain
            } catch where Failure(error.kind) == .value && setpoint != .zero {
                // The device cannot take this setpoint: it gets 0 W with the revert armed instead
                // (never its previous setpoint), and the link stays up.
                device.slot.fail("\(error.code)")
                if !states[index].refusalLogged { warn("unit id \(device.unitID) on \(endpoint): \(error); commanding 0 W", error, [device.name]) }
                states[index].refusalLogged = true
                try inverter.command(.zero, revertSeconds: revertSeconds, rearm: true, &unit)
                states[index].lastArmedAt = now()
                states[index].lastWritten = setpoint
                states[index].lastPlain = nil
                return
            }
            states[index].refusalLogged = false
            states[index].lastWritten = setpoint
        } catch {
            failed(index, error, &states, &link)
        }
    }

    private func failed(_ index: Int, _ error: DeviceError, _ states: inout [DeviceState], _ link: inout Link) {
        let device = devices[index]
        var kind = Failure(error.kind)
        // A refusal at discovery (no WSet_SF, no WChaMax…) is the unit's, not a value to zero.
        if kind == .value, states[index].inverter == nil { kind = .unit }
        if error.code == .timeout {
            link.silentInARow += 1
            // Every unit on the connection silent in turn: the connection is suspect.
            if link.silentInARow >= max(1, devices.count) { kind = .link }
        } else if kind != .link {
            link.silentInARow = 0  // the device answered (an exception, a value): the link carries
        }
        switch kind {
        case .link:
            linkFailed(error, &link, &states)
        case .value:
            device.slot.fail("\(error.code)")
            if !states[index].logged { warn("unit id \(device.unitID) on \(endpoint): \(error); commanding 0 W, link kept", error, [device.name]) }
            states[index].logged = true
            states[index].valueFault = true
        case .unit:
            device.slot.fail("\(error.code)")
            if !states[index].logged { warn("unit id \(device.unitID) on \(endpoint): \(error)", error, [device.name]) }
            states[index].logged = true
            // Rediscover this unit after a pause that doubles up to 10 s, with jitter; the
            // connection and the other units on it carry on.
            states[index].inverter = nil
            states[index].lastWritten = nil
            states[index].valueFault = false
            states[index].backoffUntil = now() + states[index].backoff.next()
        }
    }

    /// Closes the shared connection; every unit on it is rediscovered once it is back.
    private func linkFailed(_ error: DeviceError, _ link: inout Link, _ states: inout [DeviceState]) {
        // Once per outage, naming every unit behind the link: their inverters get nothing from bessd
        // until it is back ("answering again" says so, per unit).
        if link.backoff.isFirst {
            warn("\(endpoint): \(error); reconnecting (units \(devices.map(\.name).joined(separator: ", ")) get no setpoint meanwhile)",
                 error, devices.map(\.name))
        }
        if let connection = link.connection {
            count(&link)
            connection.close()
        }
        link.silentInARow = 0
        for index in devices.indices {
            devices[index].slot.fail("\(error.code)")
            states[index].inverter = nil
            states[index].lastWritten = nil
            states[index].valueFault = false
            states[index].backoffUntil = 0
            states[index].backoff.reset()
            states[index].logged = true
        }
        // Reconnect after a pause that doubles up to 10 s, with jitter, so a fleet does not hammer a
        // recovering device in step.
        link.backoffUntil = now() + link.backoff.next()
    }

    private func now() -> Int64 { MonotonicClock.now().nanoseconds }

    /// A plain notice about one device.
    private func log(_ text: String, about device: Device) { log(DeviceNotice(text, units: [device.name])) }

    /// A device's or link's failure, with its code, for `units`.
    private func warn(_ text: String, _ error: DeviceError, _ units: [String]) {
        log(DeviceNotice(text, severity: .warning, code: "\(error.code)", units: units))
    }
}
