import BessBase
import BessSystem
import ControlCore
import Fieldbus
import Synchronization

/// One Modbus endpoint's session: the connection shared by every unit id on it and the state of
/// every device behind it. It has exactly one owner at a time, the endpoint's `EndpointWorker` or
/// the site's `BusPoller`, and it is moved between them (`SessionMailbox`), never shared: the
/// owner alone touches it, and handing it over gives it away.
struct EndpointSession: ~Copyable, @unchecked Sendable {
    // @unchecked: it holds the connection (a class confined to its owner's thread); a noncopyable
    // value moved through a mailbox has one owner, so no two threads reach it at once.
    var link = EndpointLink()
    var devices: [DeviceState]
    /// Set by the poller when it hands the session back because of a failure: which device, and
    /// the error the worker acts on exactly as if it had met it itself.
    var failure: (index: Int, error: DeviceError)?

    init(devices count: Int) { devices = [DeviceState](repeating: DeviceState(), count: count) }

    /// The connection, when open.
    var connection: ModbusConnection? { link.connection }

    /// Decodes device `index`'s poll answer (`words`, read at `address`) and publishes the reading
    /// to `slot`, stamped `now`.
    mutating func answered(_ index: Int, address: Int, words: [UInt16], unitID: Int, slot: DeviceSlot,
                           now: MonotonicInstant) throws(DeviceError) {
        var block = PrefetchedRegisters(address: address, words: words)
        guard let reading = try devices[index].readStatus(&block) else {
            throw DeviceError(.sunspecModelMissing, message: "unit id \(unitID) not discovered")
        }
        slot.publish(Timestamped(reading, at: now), roundTrip: link.connection?.lastRoundTrip ?? .zero)
        link.silentInARow = 0
    }

    /// What device `index` needs written this round for the cycle's `decided` setpoint (nil:
    /// nothing), by `WritePlanner`'s rule; the plan's plain writes are kept until `written`.
    /// With `slot`, the contactor's write (`ContactorPlanner`) follows the setpoint's in the same plan.
    /// `rating`: the configured unit's rating (bounds the device's own in the contactor's "at zero").
    mutating func plan(_ index: Int, decided: Watts, stalled: Bool, revert: Duration,
                       now: MonotonicInstant, slot: DeviceSlot? = nil, rating: Watts? = nil) throws(DeviceError) -> WritePlan? {
        let setpoint = WritePlanner.setpoint(decided: decided, stalled: stalled, valueFault: devices[index].valueFault)
        // The device is read in place, never bound to a `let`: a copy of it retains and releases
        // every reference it holds, per device and round, and would have to outlive the writes to
        // `devices[index]` below.
        guard devices[index].device != nil else { return nil }
        devices[index].plannedConn = nil
        let request = slot?.reactiveRequest ?? (reactive: nil, priority: false)
        let reactive = WritePlanner.reactive(decided: request.reactive, stalled: stalled, valueFault: devices[index].valueFault,
                                             enabled: devices[index].reactive.enabled)
        if request.reactive != nil, !devices[index].takesReactive, !devices[index].reactiveUnavailableSaid {
            devices[index].reactiveUnavailableSaid = true
            devices[index].reactiveNotice = true
        }
        var plan = try devices[index].writePlan(setpoint: setpoint, reactive: reactive, reactivePriority: request.priority,
                                                revert: revert, now: now)
        // The plan's parts read in place (`if let plan` would copy the whole plan, per device and round).
        if let plain = plan?.plain { devices[index].plannedPlain = plain }
        // Kept until answered (a poller may plan the next round while these are in flight).
        if let reactive = plan?.reactive { devices[index].plannedReactive = reactive }
        if let slot {
            contactor(index, slot: slot, revert: revert, now: now, stalled: stalled, rating: rating, plan: &plan)
        }
        return plan
    }

    /// Commands device `index`, an inverter driven by its profile (`ProfiledInverter`), the cycle's
    /// `decided` setpoint (0 W when the cycle stalled or the last reading was unusable): the start
    /// sequence, the fallback and the setpoint as the profile says, on the device's own state (in
    /// place). An unchanged setpoint goes again at least every `profiledRefresh`, so a watchdog or a
    /// time slot (2 s or more, refreshed at half) never lapses while bessd runs.
    mutating func commandProfiled(_ index: Int, decided: Watts, stalled: Bool, revert: Duration, now: MonotonicInstant,
                                  _ unit: inout ModbusUnit) throws(DeviceError) {
        let setpoint = WritePlanner.setpoint(decided: decided, stalled: stalled, valueFault: devices[index].valueFault)
        if devices[index].lastWritten == setpoint, now - devices[index].lastArmedAt < Self.profiledRefresh { return }
        try devices[index].device?.command(setpoint, revert: revert, now: now, &unit)
        written(index, setpoint: setpoint, rearm: true, conn: nil, at: now)
    }

    /// The longest a profiled inverter goes without a command (its profile's fallback refreshes at half
    /// of 2 s or more).
    static let profiledRefresh = Duration.seconds(1)

    /// Adds to `plan` the contactor's write device `index` needs, and publishes its state to `slot`.
    private mutating func contactor(_ index: Int, slot: DeviceSlot, revert: Duration,
                                    now: MonotonicInstant, stalled: Bool, rating: Watts?, plan: inout WritePlan?) {
        let wantOpen = !slot.wantsConnect
        // A request ended: a unit that refused `Conn` may be tried again at the next one.
        if !wantOpen { devices[index].connRefused = false }
        let canOpen = devices[index].canOpen && !devices[index].connRefused
        let state = ContactorPlanner.state(wantOpen: wantOpen, canOpen: canOpen, conn: devices[index].conn,
                                           expired: now - devices[index].connArmedAt >= revert)
        if state != devices[index].contactor {
            devices[index].contactor = state
            slot.publish(contactor: state)
        }
        if !wantOpen { devices[index].cannotOpenSaid = false }
        // The setpoint on the wire once this round's plan is written: a first open only at 0 W.
        let onWire = plan?.setpoint ?? devices[index].lastWritten ?? .zero
        // The reading (a lock and a copy per device and round) only where `step` reads it: with
        // no open asked for, it answers from `conn` alone.
        let step = ContactorPlanner.step(wantOpen: wantOpen, canOpen: canOpen, conn: devices[index].conn,
                                         armedAt: devices[index].connArmedAt, zeroSince: devices[index].zeroSince,
                                         reading: wantOpen ? slot.reading : nil, revert: revert, now: now,
                                         onWire: onWire, unitRating: rating, stalled: stalled)
        switch step {
        case .none: return
        case .cannotOpen:
            if !devices[index].cannotOpenSaid {
                devices[index].cannotOpenSaid = true
                devices[index].contactorNotice = true
            }
        case .open, .close:
            guard let write = devices[index].device?.connectionWrite(connect: step == .close, revert: revert) else { return }
            if plan == nil {
                // Only the contactor this round: the setpoint on the wire stays as it was.
                let last = devices[index].lastPlain ?? []
                plan = WritePlan(setpoint: devices[index].lastWritten ?? .zero, rearm: false, writes: [], plain: last)
                devices[index].plannedPlain = devices[index].lastPlain
            }
            // Closing: `Conn` 1 before the setpoint, so a setpoint the device refuses does not keep
            // the unit open. Opening: after the 0 W.
            if step == .close { plan?.writes.insert(write, at: 0) } else { plan?.writes.append(write) }
            devices[index].plannedConn = step == .open ? SunSpec.Controls.disconnect : SunSpec.Controls.connect
        }
    }

    /// Whether `address` is device `index`'s planned `Conn` write; if so, records that the device
    /// refused it: the unit cannot open for the request in force (said once, coded, never retried
    /// for it), and the unit is not rediscovered for it.
    /// (Only a refusal path: it builds the write to compare its address.)
    mutating func refusedConn(_ index: Int, address: Int) -> Bool {
        guard let write = devices[index].device?.connectionWrite(connect: true, revert: .zero), write.address == address else {
            return false
        }
        devices[index].plannedConn = nil
        devices[index].connRefused = true
        return true
    }

    /// Records that device `index`'s planned writes all went through; `conn`: the `Conn` they
    /// carried (the worker passes its plan's `plannedConn`; the bus poller the value queued with
    /// the writes, since its next plan may be built while they are in flight).
    mutating func written(_ index: Int, setpoint: Watts, rearm: Bool, conn: UInt16?, at now: MonotonicInstant) {
        devices[index].lastWritten = setpoint
        devices[index].lastPlain = devices[index].plannedPlain.take()  // moved, not copied
        if let reactive = devices[index].plannedReactive.take() { devices[index].reactive = reactive }
        devices[index].refusalLogged = false
        if rearm { devices[index].lastArmedAt = now }
        if setpoint == .zero {
            if devices[index].zeroSince == nil { devices[index].zeroSince = now }
        } else {
            devices[index].zeroSince = nil
        }
        devices[index].plannedConn = nil
        if let conn {
            devices[index].conn = conn
            if conn == SunSpec.Controls.disconnect { devices[index].connArmedAt = now }
        }
    }

    /// Publishes the connection's request and connect counts to `counters` (one short lock, only
    /// when they moved).
    mutating func count(into counters: PILock<EndpointWorker.Counters>) {
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
}

/// One device's state on its endpoint (part of the session).
struct DeviceState {
    /// The discovered device (nil until discovery, and after a failure that calls for it again).
    var device: ModbusDevice? {
        didSet {
            // A profiled inverter stays with its endpoint's worker, which keeps its fallback armed
            // (`commandProfiled`); the poller's write plan would write its setpoint alone.
            pollRequest = device?.isProfiled == true ? nil : device?.pollRequest
            canOpen = device?.canOpen ?? false
            takesReactive = device?.reactiveControl != nil
            // Rediscovered: the reactive setpoint is re-armed at its first write (`enabled` is kept).
            if device == nil {
                reactive.lastWritten = nil
                plannedReactive = nil
            }
        }
    }
    /// The device's poll request, kept with it: the poller asks for it every round, and asking the
    /// driver each time copies it (a retain per reference it holds).
    private(set) var pollRequest: (address: Int, count: Int)?
    /// `ModbusDevice.canOpen` and whether it has 704's var points, kept with it for the same reason:
    /// asking the enum copies the whole inverter out of it to read two fields.
    private(set) var canOpen = false
    private(set) var takesReactive = false
    /// The setpoint last acted on (written, or refused and replaced by 0 W).
    var lastWritten: Watts?
    /// The requests that carried `lastWritten` without the revert's re-arm: a new setpoint that
    /// encodes to the same registers is not sent again. Nil after a refusal.
    var lastPlain: [(address: Int, values: [UInt16])]?
    /// The plan for the round's writes, kept until they are answered.
    var plannedPlain: [(address: Int, values: [UInt16])]?
    /// When the revert timer was last armed (revert value, enable and time written).
    var lastArmedAt = MonotonicInstant.zero
    /// When the static values (nameplate, settings, scale factors) were last read.
    var staticsAt = MonotonicInstant.zero
    var backoffUntil = MonotonicInstant.zero
    var backoff = Backoff(first: .milliseconds(500), maximum: .seconds(10))
    /// The last reading had an unusable value: command 0 W until a reading is whole again.
    var valueFault = false
    /// A read failure was logged (log once until the unit answers again).
    var logged = false
    /// A refused setpoint was logged (once until a setpoint is accepted).
    var refusalLogged = false
    /// The contactor (`ContactorPlanner`): the `Conn` last acknowledged (kept across a rediscovery,
    /// so an open unit is closed again once the request ends), when an open was last armed, since
    /// when 0 W has been on the wire, the `Conn` of the writes in flight, and the state published.
    var conn: UInt16?
    var connArmedAt = MonotonicInstant.zero
    var zeroSince: MonotonicInstant?
    var plannedConn: UInt16?
    /// The device refused a `Conn` write: it cannot open for the request in force (kept across a
    /// rediscovery; cleared when the request ends).
    var connRefused = false
    var contactor = ContactorState.closed
    /// "Cannot open" was said for the request in force; `contactorNotice`: it is to be said now.
    var cannotOpenSaid = false
    var contactorNotice = false
    /// The reactive axis (`ReactiveWriteState`), and the one the round's writes carry until answered.
    var reactive = ReactiveWriteState()
    var plannedReactive: ReactiveWriteState?
    /// Asked for reactive power, the device has no var points: `REACTIVE_UNAVAILABLE` was said (once
    /// per unit, kept across rediscoveries); `reactiveNotice`: it is to be said now.
    var reactiveUnavailableSaid = false
    var reactiveNotice = false
}

/// The one connection to an endpoint, shared by every unit id on it (part of the session).
struct EndpointLink {
    var connection: ModbusConnection?
    var backoffUntil = MonotonicInstant.zero
    var backoff = Backoff(first: .milliseconds(500), maximum: .seconds(10))
    /// Timeouts in a row with no answer from any unit: when every unit has been silent, the
    /// connection itself is suspect (a half-open TCP session) and is re-established.
    var silentInARow = 0
    var countedRequests: UInt64 = 0
    var countedConnects: UInt64 = 0
}

/// Where a session waits while it moves from one owner to the other: the giver puts it, the
/// taker takes it. One lock for the move; nothing else is ever shared.
final class SessionMailbox: Sendable {
    private let slot = Mutex<EndpointSession?>(nil)

    /// Leaves `session` for the other side.
    func put(_ session: consuming EndpointSession) {
        var parcel: EndpointSession? = consume session
        slot.withLock { $0 = parcel.take() }
    }

    /// The session left here, if any (now the caller's).
    func take() -> EndpointSession? { slot.withLock { $0.take() } }
}

/// The sessions the bus poller owns, one place per endpoint (a Swift array cannot hold a
/// noncopyable value). Confined to the poller's thread.
struct HeldSessions: ~Copyable {
    private let base: UnsafeMutablePointer<EndpointSession>
    private var held: [Bool]

    init(count: Int) {
        base = .allocate(capacity: max(1, count))
        held = [Bool](repeating: false, count: count)
    }

    deinit {
        for i in held.indices where held[i] { (base + i).deinitialize(count: 1) }
        base.deallocate()
    }

    func isHeld(_ i: Int) -> Bool { held[i] }

    /// Takes ownership of endpoint `i`'s session.
    mutating func hold(_ i: Int, _ session: consuming EndpointSession) {
        precondition(!held[i], "endpoint \(i) already holds a session")
        (base + i).initialize(to: session)
        held[i] = true
    }

    /// Gives up endpoint `i`'s session (to hand it back).
    mutating func release(_ i: Int) -> EndpointSession {
        precondition(held[i], "endpoint \(i) holds no session")
        held[i] = false
        return (base + i).move()
    }

    /// Endpoint `i`'s session, in place (it must be held).
    subscript(i: Int) -> EndpointSession {
        _read {
            precondition(held[i])
            yield base[i]
        }
        nonmutating _modify {
            yield &base[i]
        }
    }
}

extension DeviceState {
    /// `ModbusDevice.readStatus` on the device (nil without a device); it writes nothing. Out of
    /// line and `mutating` for the reason `writePlan` is: the device is borrowed, not copied.
    @inline(never)
    mutating func readStatus(_ block: inout PrefetchedRegisters) throws(DeviceError) -> InverterReading? {
        guard let device else { return nil }
        return try device.readStatus(&block)
    }

    /// `WritePlanner.plan` for the device's state (nil without a device); it writes nothing.
    /// `mutating` and out of line, so that the state is reached in place (the array's element,
    /// not a copy of it) as an `inout` nothing else can write while the plan is built: the device
    /// is then borrowed, not copied. In `EndpointSession.plan` a `let` of it had to be a copy,
    /// because the session's state is written around it.
    @inline(never)
    mutating func writePlan(setpoint: Watts, reactive: Double?, reactivePriority: Bool, revert: Duration,
                            now: MonotonicInstant) throws(DeviceError) -> WritePlan? {
        guard let device else { return nil }
        return try WritePlanner.plan(device, setpoint: setpoint, reactive: reactive, reactivePriority: reactivePriority,
                                     lastWritten: lastWritten, lastPlain: lastPlain, lastArmedAt: lastArmedAt,
                                     axis: self.reactive, revert: revert, now: now)
    }
}
