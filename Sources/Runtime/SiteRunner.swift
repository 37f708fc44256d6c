public import ControlCore
public import Plant
import Fieldbus
import Glibc
import Synchronization

/// Set by SIGINT/SIGTERM; the run loop stops at the next cycle.
let stopRequested = Atomic<Bool>(false)


/// Set by SIGHUP; the service loop reloads the configuration.
let reloadRequested = Atomic<Bool>(false)

/// Installs SIGINT/SIGTERM handlers that stop the run loop cleanly, and SIGHUP for a reload.
public func installStopHandlers() {
    stopRequested.store(false, ordering: .relaxed)
    reloadRequested.store(false, ordering: .relaxed)
    let handler: @convention(c) (Int32) -> Void = { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGINT, handler)
    signal(SIGTERM, handler)
    let hup: @convention(c) (Int32) -> Void = { _ in reloadRequested.store(true, ordering: .relaxed) }
    signal(SIGHUP, hup)
    // A file-size limit must cost a record (SPOOL_FULL), never the daemon.
    signal(SIGXFSZ, SIG_IGN)
    // A parent may have spawned us with these blocked; a service must always hear them.
    var set = sigset_t()
    sigemptyset(&set)
    for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, number) }
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
}

/// Why a run could not start.
public struct RunError: Error, CustomStringConvertible {
    /// Stable code, e.g. `DEVICE_UNSUPPORTED`.
    public var code: String
    public var message: String
    public var description: String { "\(code): \(message)" }
}

/// Runs the control law against the built-in simulated site: every device simulated in-process,
/// stamped with the monotonic instant it was sampled, on absolute deadlines.
public final class SiteRunner {
    public private(set) var configuration: BessdConfiguration
    public private(set) var controller: SiteController
    public private(set) var units: [SimulatedUnit]
    var grid: GridFrequency
    var inputs: [UnitInputs]
    /// Per unit: a `frequency_loss` fault acts on its simulated inverter.
    var frequencyLost: [Bool]
    var lastNow: MonotonicInstant
    let startedAt: MonotonicInstant
    let output: (String) -> Void
    /// The worker slot of each unit whose inverter is real; nil for simulated ones.
    public let slots: [InverterSlot?]
    let workers: [InverterWorker]
    /// The CAN slot of each unit whose BMS is real; nil for simulated ones.
    public let bmsSlots: [BMSSlot?]
    let bmsWorkers: [BMSWorker]
    /// The cycle's schedule, shared with the inverter workers (CycleThread publishes it).
    public let phase: CyclePhase

    /// - Parameter output: where event and status lines go (stdout in `bessd run`).
    public init(configuration: BessdConfiguration, startedAt: MonotonicInstant,
                output: @escaping (String) -> Void) throws(RunError) {
        self.configuration = configuration
        self.startedAt = startedAt
        lastNow = startedAt
        self.output = output
        controller = SiteController(control: configuration.controlSettings, units: configuration.unitSettings,
                                    startedAt: startedAt)
        let sim = configuration.simulation
        units = configuration.units.map {
            SimulatedUnit(capacityKWh: $0.capacityKWh, maxPowerKW: $0.maxPowerKW,
                          initialSOCPercent: sim.initialSOCPercent, ambientCelsius: sim.ambientCelsius,
                          cellsInSeries: $0.bms.cellsInSeries)
        }
        grid = sim.gridFrequency()
        inputs = [UnitInputs](repeating: UnitInputs(), count: configuration.units.count)
        frequencyLost = [Bool](repeating: false, count: configuration.units.count)
        slots = configuration.units.map { configuration.isSimulated(inverterOf: $0) ? nil : InverterSlot() }
        phase = CyclePhase(periodNanoseconds: Int64(configuration.periodMs) * 1_000_000)
        workers = Self.makeWorkers(configuration, slots: slots, phase: phase, output: output)
        bmsSlots = configuration.units.map { configuration.isSimulated(bmsOf: $0) ? nil : BMSSlot() }
        let log = UncheckedOutput(output)
        bmsWorkers = zip(configuration.units, bmsSlots).compactMap { unit, slot in
            slot.map {
                BMSWorker(interface: unit.bms.interface, slot: $0,
                          manage: unit.bms.manageInterface ? (unit.bms.bitrate, unit.bms.restartMs) : nil) { log.write($0) }
            }
        }
    }

    /// One worker per Modbus TCP endpoint or serial line, serving every unit id on it.
    static func makeWorkers(_ c: BessdConfiguration, slots: [InverterSlot?], phase: CyclePhase,
                            output: @escaping (String) -> Void)
        -> [InverterWorker]
    {
        var groups: [(ModbusEndpoint, Int, [InverterWorker.Device])] = []
        for (index, unit) in c.units.enumerated() {
            guard let slot = slots[index], let modbus = unit.modbus else { continue }
            let endpoint = modbus.endpoint
            let device = InverterWorker.Device(unitID: modbus.unitID, slot: slot, registerMap: unit.inverter.registerMap)
            // One worker, so one context, per TCP endpoint and per serial line.
            if let i = groups.firstIndex(where: { $0.0.line == endpoint.line }) {
                if groups[i].0 != endpoint {
                    output("bessd: warning: bess_units[\(index)] names \(endpoint), but \(groups[i].0) is already on that line; "
                           + "using \(groups[i].0)")
                }
                groups[i].2.append(device)
            } else {
                groups.append((endpoint, modbus.timeoutMs, [device]))
            }
        }
        let log = UncheckedOutput(output)
        return groups.map { endpoint, timeoutMs, devices in
            InverterWorker(endpoint: endpoint, devices: devices, period: .milliseconds(c.periodMs),
                           timeout: .milliseconds(timeoutMs), revertSeconds: 10, phase: phase) { log.write($0) }
        }
    }

    /// Starts the bus workers (real inverters).
    public func startWorkers() {
        for worker in workers { worker.start() }
        for worker in bmsWorkers { worker.start() }
    }

    /// Stops the bus workers; each writes zero power with its revert timer armed first.
    public func stopWorkers() {
        for worker in workers { worker.stop() }
        for worker in bmsWorkers { worker.stop() }
    }

    /// Replaces the grid frequency profile (tests and scenarios).
    public func setFrequency(_ profile: GridFrequency.Profile) { grid = GridFrequency(profile) }

    /// Mutates one simulated unit (fault injection in tests and scenarios).
    public func withUnit(_ index: Int, _ body: (inout SimulatedUnit) -> Void) { body(&units[index]) }

    /// One cycle at `now`: advance the plant, sample it, run the control law, command the inverters.
    public func step(now: MonotonicInstant, wallClock: Double) {
        let dt = max(0, now.seconds(since: lastNow))
        lastNow = now
        let elapsed = now.seconds(since: startedAt)
        let hz = grid.frequency(at: elapsed)
        if !configuration.simulation.faults.isEmpty {
            for i in units.indices {
                let id = configuration.units[i].id
                let faults = configuration.simulation.activeFaults(at: elapsed, unitID: id)
                units[i].apply(faults)
                units[i].bmsOverride = configuration.simulation.activeBMSOverride(at: elapsed, unitID: id)
                frequencyLost[i] = faults.contains(.frequencyLoss)
            }
        }
        for i in units.indices {
            if let slot = slots[i] {
                // A real inverter: its latest reading as the worker published it; the simulated BMS
                // integrates what it measured.
                let reading = slot.reading
                inputs[i].inverter = reading
                if let measured = reading?.value(at: now, maxAge: .seconds(3)) {
                    units[i].stepBattery(measuredACPowerW: measured.activePower.value, seconds: dt)
                }
            } else {
                units[i].step(seconds: dt)
                inputs[i].inverter = Timestamped(units[i].inverterReading(at: now, frequency: frequencyLost[i] ? nil : hz), at: now)
            }
            if let slot = bmsSlots[i] {
                inputs[i].bms = slot.snapshot
            } else if !units[i].bmsSilent {
                inputs[i].bms = units[i].bmsSnapshot(at: now)
            }
        }
        let frequency: Timestamped<Hertz>?
        switch configuration.grid.frequencySource {
        case .simulated: frequency = Timestamped(Hertz(hz), at: now)
        case .inverter:
            frequency = inputs.first?.inverter.flatMap { reading in
                reading.value.frequency.map { Timestamped($0, at: reading.takenAt) }
            }
        }
        controller.step(frequency: frequency, inputs: inputs, now: now, wallClock: wallClock)
        for i in units.indices {
            let setpoint = controller.decision(unit: i).setpoint
            if let slot = slots[i] { slot.setSetpoint(setpoint) } else { units[i].inverter.command(setpointW: setpoint.value) }
        }
        // The workers write the new setpoints now, not at their next poll.
        for worker in workers { worker.kick() }
    }

    /// Writes zero power to every inverter (what a clean stop does).
    public func commandSafeSetpoints() {
        for i in units.indices {
            units[i].inverter.command(setpointW: 0)
            slots[i]?.setSetpoint(.zero)
        }
        stopWorkers()
    }

    /// Applies a reloaded configuration while the cycle is paused. The units and their devices must
    /// be the same (ids, order, Modbus and CAN settings); control settings, interlocks, droop, limits and
    /// the simulation may change. Running state (latches included) is carried over.
    public func reconfigure(_ new: BessdConfiguration, now: MonotonicInstant) throws(RunError) {
        let old = configuration
        guard new.units.map(\.id) == old.units.map(\.id) else {
            throw RunError(code: "RELOAD_REFUSED", message: "the units changed; restart bessd to apply a new unit list")
        }
        for (a, b) in zip(old.units, new.units) where a.modbus != b.modbus || a.bms != b.bms || a.inverter != b.inverter
            || old.isSimulated(inverterOf: a) != new.isSimulated(inverterOf: b) || old.isSimulated(bmsOf: a) != new.isSimulated(bmsOf: b)
        {
            throw RunError(code: "RELOAD_REFUSED", message: "unit \(a.id): its devices changed; restart bessd to apply")
        }
        guard new.mode == old.mode, new.grid.frequencySource == old.grid.frequencySource else {
            throw RunError(code: "RELOAD_REFUSED", message: "mode or frequency_source changed; restart bessd to apply")
        }
        let fresh = SiteController(control: new.controlSettings, units: new.unitSettings, startedAt: startedAt,
                                   expectsFrequency: true)
        fresh.adopt(from: controller, mapping: new.units.indices.map { $0 })
        controller.events.drain { fresh.events.push($0) }
        controller = fresh
        configuration = new
    }

    /// Sets (or clears) a unit's operator override.
    public func setOverride(_ command: PowerCommand?, unit: Int) { inputs[unit].override = command }

    /// Writes unit `i`'s operator view into `status` (no allocation).
    func fill(_ status: inout UnitStatus, unit i: Int, now: MonotonicInstant) {
        let d = controller.decision(unit: i)
        status.state = d.state
        status.soc = d.soc?.value ?? .nan
        status.power = d.measuredPower?.value ?? .nan
        status.setpoint = d.setpoint.value
        status.droop = d.droop.value
        status.allowedCharge = d.allowedCharge.value
        status.allowedDischarge = d.allowedDischarge.value
        status.active = d.activeCodes
        status.latched = d.latchedCodes
        status.mode = controller.units[i].mode
        if let o = inputs[i].override, o.expiresAt > now {
            status.overrideW = o.power.value
            status.overrideRemaining = o.expiresAt.seconds(since: now)
        } else {
            status.overrideW = nil
            status.overrideRemaining = 0
        }
        if let d = inputs[i].dispatch, d.expiresAt > now { status.dispatchW = d.power.value } else { status.dispatchW = nil }
        let unit = controller.units[i]
        let bms = inputs[i].bms
        let maxAge = unit.settings.bmsStaleAfter
        let measurements = bms.measurements.fresh(at: now, maxAge: maxAge)
        let cells = bms.cells.fresh(at: now, maxAge: maxAge)
        status.soh = bms.status.fresh(at: now, maxAge: maxAge)?.soh?.value ?? .nan
        status.voltage = measurements?.packVoltage.value ?? .nan
        status.current = measurements?.packCurrent.value ?? .nan
        status.temperatureMin = cells?.minTemperature.value ?? measurements?.temperature.value ?? .nan
        status.temperatureMax = cells?.maxTemperature.value ?? measurements?.temperature.value ?? .nan
        status.bmsOnline = measurements != nil
        status.inverterOnline = inputs[i].inverter.fresh(at: now, maxAge: unit.settings.inverterStaleAfter) != nil
    }

    /// Sets a unit's dispatch (tests, and the aggregator later).
    public func setDispatch(_ command: PowerCommand?, unit: Int) { inputs[unit].dispatch = command }

    /// One status line: time, frequency, and per unit state, SOC, power, setpoint and active codes.
    public func statusLine(now: MonotonicInstant) -> String {
        var statuses = [UnitStatus](repeating: UnitStatus(), count: units.count)
        for i in units.indices { fill(&statuses[i], unit: i, now: now) }
        return StatusText.line(configuration: configuration, units: statuses,
                               frequency: controller.site.frequency?.value ?? .nan,
                               elapsed: now.seconds(since: startedAt), busFaults: busFaults())
    }

    /// True once every real device has answered or failed at least once.
    public var devicesProbed: Bool {
        let inverters = slots.allSatisfy { slot in slot.map { $0.reading != nil || $0.lastError != nil } ?? true }
        let bms = bmsSlots.allSatisfy { slot in slot.map { $0.snapshot.newestTakenAt != nil || $0.fault != nil } ?? true }
        return inverters && bms
    }

    /// Bus faults per unit (CAN interface, Modbus), for the status line.
    public func busFaults() -> [[String]] {
        units.indices.map { i in [bmsSlots[i]?.fault, slots[i]?.lastError].compactMap { $0 } }
    }

}

func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "--" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    var fraction = String(Int64(scaled) - whole * Int64(scale))
    while fraction.count < digits { fraction = "0" + fraction }
    return (value < 0 && scaled != 0 ? "-" : "") + String(whole) + (digits > 0 ? "." + fraction : "")
}

func signed(_ value: Double) -> String {
    let text = fixed(value, 1)
    return text.hasPrefix("-") || text == "0.0" ? text : "+" + text
}

/// Lets a worker thread write lines through the runner's output closure; lines are written whole.
final class UncheckedOutput: @unchecked Sendable {
    let output: (String) -> Void
    let lock = Mutex<Void>(())
    init(_ output: @escaping (String) -> Void) { self.output = output }
    func write(_ line: String) { lock.withLock { _ in output(line) } }
}
