import BessBase
public import BessSystem
public import ControlCore
public import Fieldbus
import Glibc

/// Polls a BMS over Modbus (a rack BMS on RS-485, or behind an RTU/TCP gateway) with its compiled
/// profile (`ProfiledModbusBMS`) and publishes into the unit's `BMSSlot`, the one the cycle reads a
/// CAN BMS through: the same snapshot, counters and fault codes (`MODBUS_TIMEOUT`,
/// `MODBUS_CONNECTION_LOST`, …). A read that calls for less power wakes the cycle, as a CAN frame does.
///
/// Each round reads the profile's read plan (blocks of at most its `max_read_registers`, holding or
/// input registers) on the worker's own connection; a failure closes the connection when the link is
/// gone and retries with the house's back-off (500 ms doubling to 10 s, jittered). A BMS that stops
/// answering keeps its last snapshot, which ages: the cycle's `stale_after_s` turns it into
/// BMS_COMM_LOST. Runs on its own thread; the decoding runs there, never in the cycle.
///
/// `@unchecked Sendable`: the connection and the decoder live on the worker's thread; what others
/// read is the slot (locked) and the worker's state.
public final class ModbusBMSWorker: @unchecked Sendable {
    public let endpoint: ModbusEndpoint
    public let unitID: Int
    public let slot: BMSSlot
    /// The battery units the notices concern (`BESS_UNIT`).
    public let units: [String]
    /// How often the read plan is read: the profile's shortest group period (1 s without one).
    public let period: Duration
    let timeout: Duration
    /// The profile's least gap between requests (`transport.modbus.request_gap_ms`).
    let requestGap: Duration
    /// The reads of one round (the profile's read plan).
    let reads: Int
    let decoder: ProfiledModbusBMS
    /// The signals stating the charge and discharge power limits, when the profile has them.
    let powerSignals: (charge: String?, discharge: String?)
    let phase: CyclePhase?
    let realtime: RealtimeThread?
    let clock: any MonotonicClock
    let log: @Sendable (Notice) -> Void
    private let worker = WorkerThread()
    /// Signalled by `stop`: ends the wait between rounds.
    private let stopping = Wakeup()

    /// True while the worker's thread runs its loop (the watchdog checks it).
    public var isAlive: Bool { worker.isAlive }
    /// When the thread's loop last turned (`WorkerTurn`).
    public var lastTurn: MonotonicInstant? { worker.lastTurn }

    /// - Parameters:
    ///   - profile: a `kind: bms` profile with a Modbus transport, compiled here (`ProfileError` when
    ///     it cannot be; check-config refuses such a profile first).
    ///   - period: the poll period; nil: the profile's shortest group period, else 1 s.
    ///   - clock: the time and the waits (tests may pass a `ManualClock`).
    public init(endpoint: ModbusEndpoint, unitID: Int, profile: DeviceProfile, slot: BMSSlot, units: [String] = [],
                timeout: Duration = .milliseconds(500), period: Duration? = nil, phase: CyclePhase? = nil,
                realtime: RealtimeThread? = nil, clock: any MonotonicClock = SystemClock.shared,
                log: @escaping @Sendable (Notice) -> Void) throws(ProfileError) {
        decoder = try ProfiledModbusBMS(profile: profile)
        reads = decoder.readPlan.count
        powerSignals = (profile.signals.first { $0.quantity == .chargePowerLimit }?.name,
                        profile.signals.first { $0.quantity == .dischargePowerLimit }?.name)
        self.endpoint = endpoint
        self.unitID = unitID
        self.slot = slot
        self.units = units
        self.timeout = timeout
        requestGap = if case .modbus(let link) = profile.transport { link.requestGap } else { .zero }
        self.period = max(.milliseconds(50), period ?? Self.pollPeriod(profile))
        self.phase = phase
        self.realtime = realtime
        self.clock = clock
        self.log = log
    }

    /// The profile's shortest group period, 1 s when it declares none.
    static func pollPeriod(_ profile: DeviceProfile) -> Duration {
        profile.groups.map(\.period).filter { $0 > .zero }.min() ?? .seconds(1)
    }

    public func start() {
        worker.start(name: "bessd-bms") { [self] in loop() }
    }

    public func stop() {
        worker.stop { [stopping] in stopping.signal() }
    }

    /// Reads and answers counted so far (tests, diagnostics).
    public var rounds: (answered: UInt64, failed: UInt64) { state.withLock { ($0.answered, $0.failed) } }
    private let state = PILock((answered: UInt64(0), failed: UInt64(0)))

    private func loop() {
        if let realtime {
            for notice in Realtime.enter(realtime, as: "the Modbus BMS worker").notices {
                log(Notice(DeviceCode.realtimeDegraded, "\(endpoint): \(notice)", units: units))
            }
        }
        var decoder = self.decoder
        let plan = decoder.readPlan
        var connection: ModbusConnection?
        var backoff = Backoff(first: .milliseconds(500), maximum: .seconds(10))
        var retryAt = MonotonicInstant.zero
        // The code last warned about (once per outage), and the refusal last said (once until a whole read).
        var reported: DeviceError.Code?
        var refusalSaid = false
        var next = clock.now()
        while worker.turn() {
            if clock.now() >= retryAt {
                do throws(DeviceError) {
                    let link: ModbusConnection
                    if let existing = connection {
                        link = existing
                    } else {
                        link = try ModbusConnection(endpoint: endpoint, unitID: unitID, timeout: timeout, clock: clock)
                        connection = link
                    }
                    if !link.isConnected { try link.connect() }
                    var refusal: DeviceError?
                    for (k, block) in plan.enumerated() {
                        // The device's least gap between requests (BYD's rack: 300 ms), waited on the
                        // worker's own clock; a stop ends the wait.
                        if k > 0, requestGap > .zero, clock.wait(for: stopping, until: clock.now() + requestGap) { break }
                        let words = try link.readRegisters(unit: unitID, table: block.table, at: block.address, count: block.count)
                        if let refused = decoder.ingest(block, words: words, at: clock.now()) { refusal = refused }
                    }
                    if slot.publish(decoder.snapshot, reads: decoder.counters) { phase?.raiseAlarm() }
                    if powerSignals.charge != nil || powerSignals.discharge != nil {
                        let read = decoder
                        let stated = (powerSignals.charge.flatMap { read.value(of: $0) }, powerSignals.discharge.flatMap { read.value(of: $0) },
                                      clock.now())
                        slot.update { $0.statedPower = stated }
                    }
                    slot.update { $0.fault = nil }
                    state.withLock { $0.answered &+= 1 }
                    backoff.reset()
                    if reported != nil {
                        log(Notice(DeviceCode.deviceAnswering, "BMS unit id \(unitID) on \(endpoint): answering again", units: units))
                        reported = nil
                    }
                    if let refusal, !refusalSaid {
                        log(Notice("BMS unit id \(unitID) on \(endpoint): a read refused: \(refusal)", failure: refusal, units: units))
                    }
                    refusalSaid = refusal != nil
                } catch {
                    state.withLock { $0.failed &+= 1 }
                    slot.update { $0.fault = "\(error.code)" }
                    if reported != error.code {
                        log(Notice("BMS unit id \(unitID) on \(endpoint): \(error); retrying", failure: error, units: units))
                        reported = error.code
                    }
                    // The link gone (or a whole unit silent): reconnect after the back-off.
                    if error.kind == .linkLost || error.kind == .timeout { connection?.close() }
                    retryAt = clock.now() + backoff.next()
                }
            }
            next = next + period
            let current = clock.now()
            if next < current { next = current }
            // One period between rounds; while backing off, the rounds skip the wire until `retryAt`.
            _ = clock.wait(for: stopping, until: next)
        }
        connection?.close()
    }
}
