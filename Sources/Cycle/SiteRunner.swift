public import BessSystem
public import ControlCore
import Fieldbus
import Glibc
import Synchronization

/// The devices of a site as the cycle sees them: the seam between the control cycle and the
/// world. `HardwareSite` (here) reads and commands real devices through their bus workers;
/// `SimulatedSite` (module Plant) simulates what the configuration asks to simulate and passes
/// everything else to a `HardwareSite`. The cycle never knows which it has: `bessd`'s composition
/// root picks one by mode, and this module never imports the simulator.
///
/// `sample` and `command` run on the cycle thread every period: they must not wait on I/O or allocate.
public protocol SiteIO: AnyObject {
    /// Starts the bus workers.
    func start()
    /// Commands zero power to every inverter (revert armed) and stops the workers.
    func stop()
    /// After `stop()`: the units whose real inverter did not acknowledge the zero (a simulated one always does).
    var unconfirmedStops: [String] { get }
    /// Writes every unit's latest inverter reading and BMS snapshot, with the instants they were
    /// measured, into `inputs`. Returns the grid frequency when it is simulated, else nil.
    func sample(now: MonotonicInstant, into inputs: inout [UnitInputs]) -> Timestamped<Hertz>?
    /// Hands unit `unit`'s setpoint to its inverter.
    func command(unit: Int, setpoint: Watts)
    /// Asks unit `unit`'s contactor open (`connect` false: the utility's disconnect, or a latch of
    /// that unit) or closed; the bus worker opens it once the unit is at zero (`ContactorPlanner`).
    /// Must not wait on I/O or allocate.
    func connect(unit: Int, _ connect: Bool)
    /// Unit `unit`'s contactor as bessd drives it (one lock for a copy, no allocation).
    func contactor(unit: Int) -> ContactorState
    /// Every unit has its setpoint: real workers write now.
    func commandsIssued()
    /// Takes reloaded settings (devices unchanged; control settings and interlocks may change).
    func reconfigure(_ settings: CycleSettings)
    /// True once every real device has answered or failed at least once.
    var devicesProbed: Bool { get }
    /// Bus faults per unit (CAN interface, Modbus), for the status line; any thread may call it.
    func busFaults() -> [[String]]
    /// True while every bus worker's thread runs, callable from any thread.
    var workersAliveCheck: @Sendable () -> Bool { get }
    /// Each bus and CAN worker's last turn, callable from any thread (`WorkerTurn`).
    var workerTurns: @Sendable () -> [WorkerTurn] { get }
    /// The worker slot of each unit whose inverter is real (metrics).
    var inverterSlots: [DeviceSlot?] { get }
    /// The CAN slot of each unit whose BMS is real (metrics).
    var bmsSlots: [BMSSlot?] { get }
    /// The connection-point meter's latest reading (as the meter states it), if the site has one.
    func sampleMeter(now: MonotonicInstant) -> Timestamped<MeterReading>?
    /// The worker slot of a real site meter.
    var meterSlot: DeviceSlot? { get }
}

extension SiteIO {
    /// A site whose units have no contactor bessd drives.
    public func connect(unit: Int, _ connect: Bool) {}
    public func contactor(unit: Int) -> ContactorState { .closed }

    /// A site without bus or CAN workers of its own.
    public var workerTurns: @Sendable () -> [WorkerTurn] { { [] } }

    /// A site without a meter.
    public func sampleMeter(now: MonotonicInstant) -> Timestamped<MeterReading>? { nil }
    public var meterSlot: DeviceSlot? { nil }
}

/// Real devices only: one endpoint worker per Modbus endpoint or serial line, one BMS worker per
/// CAN interface. A configuration that asks for any simulated input is refused
/// (`SIMULATION_REQUIRED`): hardware never runs on a simulated input.
public final class HardwareSite: SiteIO {
    public let inverterSlots: [DeviceSlot?]
    public let bmsSlots: [BMSSlot?]
    public let meterSlot: DeviceSlot?
    let workers: [EndpointWorker]
    let bmsWorkers: [BMSWorker]
    /// Drives the per-cycle exchanges of every healthy Modbus TCP endpoint from one thread.
    let poller: BusPoller?

    /// - Parameter only: when true (the default), every device must be real; `SimulatedSite`
    ///   passes false and serves the simulated ones itself.
    public init(settings: CycleSettings, phase: CyclePhase, only: Bool = true, output: @escaping (DeviceNotice) -> Void)
        throws(RunError)
    {
        if only, settings.usesSimulation {
            throw RunError(.simulationRequired,
                           message: "the configuration simulates a device or the frequency; that needs the simulated site (mode \(settings.mode.rawValue))")
        }
        inverterSlots = settings.devices.map { $0.inverterSimulated ? nil : DeviceSlot() }
        meterSlot = settings.meter != nil && !settings.meterSimulated ? DeviceSlot() : nil
        // The same CPU as the cycle's (`Realtime.placement`); the cycle reports a notice it gives.
        let placement = settings.realtime.map { Realtime.placement($0) }
        workers = Self.makeWorkers(settings, slots: inverterSlots, meter: meterSlot, phase: phase,
                                   realtime: placement?.workers, output: output)
        let tcp = workers.filter { if case .tcp = $0.endpoint { true } else { false } }
        let pollerLog = UncheckedOutput(output)
        // When the poller reads every real Modbus device (no serial line), the cycle starts as
        // soon as its readings are in; otherwise it keeps its deadline.
        poller = tcp.isEmpty ? nil : BusPoller(endpoints: tcp, phase: phase, realtime: placement?.workers,
                                               startsCycles: tcp.count == workers.count) {
            pollerLog.write($0)
        }
        bmsSlots = settings.devices.map { $0.bmsSimulated ? nil : BMSSlot() }
        let log = UncheckedOutput(output)
        bmsWorkers = zip(settings.devices, bmsSlots).compactMap { unit, slot in
            slot.map {
                BMSWorker(interface: unit.bms.interface, slot: $0, units: [unit.id],
                          manage: unit.bms.manageInterface ? (unit.bms.bitrate, Self.restartMs(unit.bms.restartAfter)) : nil, phase: phase,
                          realtime: placement?.workers) { log.write($0) }
            }
        }
        // A BMS on CAN may wake the cycle: a frame that calls for less power is acted on as it
        // arrives, not at the next period.
        if !bmsWorkers.isEmpty { phase.enableAlarms() }
        setWatches(settings)
    }

    /// The kernel's restart-ms for a CAN interface (0: no automatic restart).
    static func restartMs(_ delay: Duration) -> Int { Int(delay.nanosecondsClamped / 1_000_000) }

    /// One worker per Modbus TCP endpoint or serial line, serving every unit id on it (the site
    /// meter's too, when it shares one).
    static func makeWorkers(_ c: CycleSettings, slots: [DeviceSlot?], meter: DeviceSlot? = nil, phase: CyclePhase,
                            realtime: RealtimeThread? = nil, output: @escaping (DeviceNotice) -> Void)
        -> [EndpointWorker]
    {
        var groups: [(ModbusEndpoint, Duration, [EndpointWorker.Device])] = []
        var devices: [(name: String, modbus: ModbusSettings, device: EndpointWorker.Device)] = []
        for (index, unit) in c.devices.enumerated() {
            guard let slot = slots[index], let modbus = unit.modbus else { continue }
            devices.append(("bess_units[\(index)]", modbus,
                            EndpointWorker.Device(unitID: modbus.unitID, slot: slot, registerMap: unit.inverter.registerMap,
                                                  name: unit.id, rating: unit.rating)))
        }
        if let meter, let settings = c.meter, let modbus = settings.modbus {
            let driver: EndpointWorker.MeterDriver = settings.registerMap.map { .registerMap($0) } ?? .sunspec
            devices.append(("site.meter", modbus, EndpointWorker.Device(unitID: modbus.unitID, slot: meter, meter: driver, name: "site")))
        }
        for (name, modbus, device) in devices {
            let endpoint = modbus.endpoint
            // One worker, so one context, per TCP endpoint and per serial line.
            if let i = groups.firstIndex(where: { $0.0.line == endpoint.line }) {
                if groups[i].0 != endpoint {
                    output(DeviceNotice("bessd: warning: \(name) names \(endpoint), but \(groups[i].0) is already on that line; "
                                        + "using \(groups[i].0)", severity: .warning, units: [device.name]))
                }
                groups[i].2.append(device)
            } else {
                groups.append((endpoint, modbus.timeout, [device]))
            }
        }
        let log = UncheckedOutput(output)
        return groups.map { endpoint, timeout, devices in
            EndpointWorker(endpoint: endpoint, devices: devices, period: c.period,
                           timeout: timeout, revert: .seconds(10), phase: phase,
                           realtime: realtime) { log.write($0) }
        }
    }

    public func start() {
        poller?.start()
        for worker in workers { worker.start() }
        for worker in bmsWorkers { worker.start() }
    }

    /// The units whose inverter did not acknowledge the safe zero at `stop()`.
    public var unconfirmedStops: [String] { workers.flatMap(\.unconfirmedStops) }

    public func stop() {
        for slot in inverterSlots { slot?.setSetpoint(.zero) }
        // The poller first: it hands every endpoint back, and each worker writes its safe zero.
        poller?.stop()
        for worker in workers { worker.stop() }
        for worker in bmsWorkers { worker.stop() }
    }

    public func sample(now: MonotonicInstant, into inputs: inout [UnitInputs]) -> Timestamped<Hertz>? {
        for i in inputs.indices {
            if let slot = inverterSlots[i] {
                let sample = slot.sample
                inputs[i].inverter = sample.reading
                inputs[i].inverterUnreachable = sample.neverAnswered
            }
            if let slot = bmsSlots[i] { inputs[i].bms = slot.snapshot }
        }
        return nil
    }

    public func command(unit: Int, setpoint: Watts) {
        inverterSlots[unit]?.setSetpoint(setpoint)
    }

    public func connect(unit: Int, _ connect: Bool) { inverterSlots[unit]?.setConnect(connect) }

    public func contactor(unit: Int) -> ContactorState { inverterSlots[unit]?.contactor ?? .closed }

    /// Each CAN BMS judged by its unit's critical thresholds (after a reload, the new ones).
    func setWatches(_ settings: CycleSettings) {
        for (i, slot) in bmsSlots.enumerated() { slot?.setWatch(BMSAlarmWatch(rules: settings.units[i].rules)) }
    }

    public func sampleMeter(now: MonotonicInstant) -> Timestamped<MeterReading>? {
        guard let reading = meterSlot?.reading else { return nil }
        return Timestamped(MeterReading(gridPower: reading.value.activePower, frequency: reading.value.frequency,
                                        reactivePower: reading.value.reactivePower, voltage: reading.value.voltage), at: reading.takenAt)
    }

    public func commandsIssued() {
        // The workers (or the poller, for the endpoints it drives) write the new setpoints now, not
        // at their next poll.
        poller?.kick()
        for worker in workers where !worker.handedOver.load(ordering: .relaxed) { worker.kick() }
    }

    public func reconfigure(_ settings: CycleSettings) { setWatches(settings) }

    public var devicesProbed: Bool {
        let inverters = (inverterSlots + [meterSlot]).allSatisfy { slot in slot.map { $0.reading != nil || $0.lastError != nil } ?? true }
        let bms = bmsSlots.allSatisfy { slot in slot.map { $0.snapshot.newestTakenAt != nil || $0.fault != nil } ?? true }
        return inverters && bms
    }

    public func busFaults() -> [[String]] {
        zip(bmsSlots, inverterSlots).map { bms, inverter in [bms?.fault, inverter?.lastError].compactMap { $0 } }
    }

    public var workersAliveCheck: @Sendable () -> Bool {
        let inverters = workers
        let bms = bmsWorkers
        let poller = poller
        return { inverters.allSatisfy(\.isAlive) && bms.allSatisfy(\.isAlive) && (poller?.isAlive ?? true) }
    }
}

/// The cycle's view of the site: builds the process image from the `SiteIO`, runs the control
/// law (`SiteController`), and hands the setpoints back — devices → cycle → control law → cycle →
/// devices, one way. It holds no device and no simulator of its own.
public final class SiteRunner {
    /// What the cycle runs on (a reload replaces it).
    public private(set) var settings: CycleSettings
    public private(set) var controller: SiteController
    /// The devices: real, or simulated where the configuration asks.
    public let io: any SiteIO
    var inputs: [UnitInputs]
    /// Storage for the site frequency's median (one slot per unit, allocated once).
    var frequencyScratch: [Timestamped<Hertz>]
    let startedAt: MonotonicInstant
    /// The cycle's schedule, shared with the endpoint workers (CycleThread publishes it).
    public let phase: CyclePhase
    /// Unit-cycles that ran on an inverter reading taken before the previous cycle began: the
    /// worker's read for this cycle landed after it woke (a lost period). A reading more than two
    /// periods old is not counted: that unit is not answering, which its staleness rule handles.
    public private(set) var lateReadings: UInt64 = 0
    private var previousStep: MonotonicInstant?
    /// The site meter's reading of the last step, + = import.
    public private(set) var meter: Timestamped<MeterReading>?
    /// The PMU's newest usable sample (`PMUReader.latest`), handed over before the cycle starts when
    /// `frequency_source` is `pmu`; without it the cycle follows the inverters' median.
    public var pmuSamples: FrequencySampleSlot?
    /// The utility's controls in force (IEEE 2030.5), published by the 2030.5 worker; read before each
    /// step and handed to the controller. Absent (never published) is no utility control.
    public var utilityLimits: UtilityLimitSlot?
    /// Where the last step's frequency came from: the configured source, or `.inverter` while a PMU
    /// falls back.
    public internal(set) var frequencySourceInUse: FrequencySource
    /// When the frequency the last step used was measured (nil when it had none).
    public internal(set) var frequencyTakenAt: MonotonicInstant?
    /// True while `FREQUENCY_SOURCE_FALLBACK` stands: announced, and the PMU not back.
    public internal(set) var frequencyFallback = false
    /// True once a PMU sample was followed (before that, the start's grace applies).
    var pmuFollowed = false

    public init(settings: CycleSettings, io: any SiteIO, phase: CyclePhase, startedAt: MonotonicInstant) {
        self.settings = settings
        self.io = io
        self.phase = phase
        self.startedAt = startedAt
        controller = SiteController(control: settings.control, units: settings.units, startedAt: startedAt, site: settings.site)
        inputs = [UnitInputs](repeating: UnitInputs(), count: settings.devices.count)
        frequencySourceInUse = settings.frequencySource == .pmu ? .inverter : settings.frequencySource
        frequencyScratch = []
        frequencyScratch.reserveCapacity(settings.devices.count)
    }

    /// A site of real devices only (mode hardware, or hil with nothing simulated).
    public static func hardware(settings: CycleSettings, startedAt: MonotonicInstant,
                                output: @escaping (DeviceNotice) -> Void) throws(RunError) -> SiteRunner
    {
        let phase = CyclePhase(period: settings.period)
        let io = try HardwareSite(settings: settings, phase: phase, output: output)
        return SiteRunner(settings: settings, io: io, phase: phase, startedAt: startedAt)
    }

    /// Starts the bus workers.
    public func startWorkers() { io.start() }

    /// Stops the bus workers; each writes zero power with its revert timer armed first.
    public func stopWorkers() { io.stop() }

    /// One cycle at `now`: 1 snapshot (process image), 2–4 assess, decide, allocate (the control
    /// law), 5 command.
    /// - Parameter extra: an extra cycle an alarm woke, off the schedule: its readings are not
    ///   counted late, and the next regular cycle's are counted against the previous regular one.
    public func step(now: MonotonicInstant, wallClock: Double, extra: Bool = false) {
        let simulatedHz = io.sample(now: now, into: &inputs)
        if !extra {
            if let previousStep {
                let horizon = now - settings.period * 2
                for i in inputs.indices {
                    if let at = inputs[i].inverter?.takenAt, at <= previousStep, at > horizon { lateReadings &+= 1 }
                }
            }
            previousStep = now
        }
        meter = io.sampleMeter(now: now)
        if let stamped = meter, settings.meter?.importPositive == false {
            // A meter that counts export as positive (its var too): bessd's convention is + = import.
            meter = Timestamped(MeterReading(gridPower: Watts(-stamped.value.gridPower.value), frequency: stamped.value.frequency,
                                             importedEnergy: stamped.value.importedEnergy, exportedEnergy: stamped.value.exportedEnergy,
                                             reactivePower: stamped.value.reactivePower.map { -$0 }, voltage: stamped.value.voltage),
                                at: stamped.takenAt)
        }
        var frequency: Timestamped<Hertz>?
        var rocof: Timestamped<Double>?
        switch settings.frequencySource {
        case .simulated: frequency = simulatedHz
        case .inverter: frequency = inverterFrequency(now: now)
        case .meter: frequency = meter.flatMap { m in m.value.frequency.map { Timestamped($0, at: m.takenAt) } }
        case .pmu:
            // The PMU's newest usable sample while it is young enough, else the inverters' median:
            // never a simulated source.
            if let sample = followPMU(now: now) {
                frequency = Timestamped(sample.frequency, at: sample.takenAt)
                rocof = sample.rocofHzPerSecond.map { Timestamped($0, at: sample.takenAt) }
            } else {
                frequency = inverterFrequency(now: now)
            }
        }
        frequencyTakenAt = frequency?.takenAt
        if let slot = utilityLimits {
            // A read overtaken by publications keeps the last value read; never published is none.
            if let limits = slot.read() { controller.utilityLimits = limits } else if !slot.published { controller.utilityLimits = nil }
        }
        controller.step(frequency: frequency, inputs: inputs, now: now, wallClock: wallClock, meter: meter, rocof: rocof)
        // opModConnect / opModEnergize false: the units are at zero; their contactors open where
        // they can (the bus workers, ContactorPlanner) and close when the control ends. A latch
        // (zero power both ways) opens its own unit the same way until the operator's reset clears it.
        let connect = !controller.siteDecision.utility.disconnected
        for i in inputs.indices {
            let decision = controller.decision(unit: i)
            io.command(unit: i, setpoint: decision.setpoint)
            io.connect(unit: i, connect && !decision.disconnectRequested)
        }
        io.commandsIssued()
    }

    /// Writes zero power to every inverter (what a clean stop does) and stops the workers.
    /// Stops the devices after writing zero with the revert armed to every inverter; returns the
    /// units whose inverter did not acknowledge it (they rest on their own revert timer).
    @discardableResult
    public func commandSafeSetpoints() -> [String] {
        io.stop()
        return io.unconfirmedStops
    }

    /// Applies reloaded settings while the cycle is paused: the live keys of
    /// `CycleSettings.reloadRules` (control settings, interlocks, droop, limits) apply, with the
    /// running state (latches included) carried over; a changed restart key (the units and their
    /// devices, mode, frequency source, meter, or a field no rule declares) refuses it all,
    /// `RELOAD_REFUSED: <keys> changed; restart bessd to apply`.
    public func reconfigure(_ new: CycleSettings, now: MonotonicInstant) throws(RunError) {
        // The cycle's restart keys (`CycleSettings.reloadRules`): any of them changed refuses it all.
        if let restart = CycleSettings.reloadRules.restartNeeded(from: settings, to: new) {
            throw RunError(.reloadRefused, message: "\(restart)")
        }
        let fresh = SiteController(control: new.control, units: new.units, startedAt: startedAt, expectsFrequency: true,
                                   site: new.site)
        fresh.adopt(from: controller, mapping: new.devices.indices.map { $0 })
        controller.events.drain { fresh.events.push($0) }
        controller = fresh
        settings = new
        io.reconfigure(new)
    }

    /// Sets (or clears) a unit's operator override.
    public func setOverride(_ command: PowerCommand?, unit: Int) { inputs[unit].override = command }

    /// Sets (or clears) a unit's aggregator dispatch.
    public func setDispatch(_ command: PowerCommand?, unit: Int) { inputs[unit].dispatch = command }

    /// Writes the site's operator view into `status` (no allocation).
    func fill(_ status: inout SiteStatus, now: MonotonicInstant) {
        let c = controller.connection
        let d = controller.siteDecision
        let commands = controller.commands
        status.operatorLimitPercent = controller.operatorLimitPercent(at: now) ?? .nan
        status.scadaLimitPercent = commands.limit.active(at: now) ?? .nan
        status.scadaLimitRemaining = commands.limit.active(at: now) == nil ? .zero : commands.limit.remaining(at: now)
        status.scadaLimitReverted = commands.limit.reverted && commands.limit.active(at: now) != nil
        status.inputLimitPercent = controller.inputLimitPercent ?? .nan
        status.operatorCap = d.operatorCap
        status.operatorLimited = d.operatorLimited
        status.scadaSetpoint = commands.setpoint.active(at: now) ?? .nan
        status.scadaSetpointRemaining = commands.setpoint.active(at: now) == nil ? .zero : commands.setpoint.remaining(at: now)
        status.gridPower = c.gridPower ?? .nan
        status.meterStale = c.stale
        // Var and V of the reading the connection point took (none while it is stale).
        let metered = c.gridPower == nil ? nil : meter?.value
        status.gridReactivePower = metered?.reactivePower ?? .nan
        status.gridVoltage = metered?.voltage ?? .nan
        status.binding = d.binding
        status.applicationActive = d.applicationActive
        status.applicationTarget = c.target
        status.requested = d.requested
        status.held = d.held
        status.application = d.application
        status.pool = d.pool
        status.delivered = d.delivered
        status.shortfall = controller.allocation.shortfall
        status.shortfallActive = controller.shortfallActive
        status.loadLow = c.loadLow ?? .nan
        status.loadHigh = c.loadHigh ?? .nan
        status.utility = d.utility
        fill(&status.agc, now: now)
    }

    /// Writes the AGC's operator view into `status` (no allocation).
    func fill(_ status: inout AGCStatus, now: MonotonicInstant) {
        let agc = controller.agc
        status.configured = agc.limits != nil
        status.inService = agc.inService
        status.target = agc.target ?? .nan
        status.following = controller.agcInForce != nil
        status.followed = controller.agcFollowed ?? .nan
        status.signalLost = controller.agcSignalLost
        status.remaining = agc.remaining(at: now)
        status.upperLimit = agc.limits?.upper ?? .nan
        status.lowerLimit = agc.limits?.lower ?? .nan
        status.ramp = max(0, controller.control.scheduleRampPercentPerSecond) / 100 * controller.ratedPower
    }

    /// Writes unit `i`'s operator view into `status` (no allocation).
    func fill(_ status: inout UnitStatus, unit i: Int, now: MonotonicInstant) {
        let d = controller.decision(unit: i)
        status.state = d.state
        status.share = d.share
        status.pooled = d.pooled
        status.soc = d.soc?.value ?? .nan
        status.power = d.measuredPower?.value ?? .nan
        status.setpoint = d.setpoint.value
        status.droop = d.droop.value
        status.allowedCharge = d.allowedCharge.value
        status.allowedDischarge = d.allowedDischarge.value
        status.active = d.activeCodes
        status.latched = d.latchedCodes
        status.mode = controller.units[i].mode
        status.holds = controller.units[i].holds
        status.remoteRemaining = status.holds.remoteStandby(at: now).map { $0 - now } ?? .zero
        if let o = inputs[i].override, o.expiresAt > now {
            status.overrideW = o.power.value
            status.overrideRemaining = o.expiresAt - now
        } else {
            status.overrideW = nil
            status.overrideRemaining = .zero
        }
        if let d = inputs[i].dispatch, d.expiresAt > now { status.dispatchW = d.power.value } else { status.dispatchW = nil }
        // The unit's settings are read in place: a copy of the unit's controller would retain
        // every reference it holds, for each unit and cycle.
        let bms = inputs[i].bms
        let maxAge = controller.units[i].settings.bmsStaleAfter
        let measurements = bms.measurements.fresh(at: now, maxAge: maxAge)
        let cells = bms.cells.fresh(at: now, maxAge: maxAge)
        status.soh = bms.status.fresh(at: now, maxAge: maxAge)?.soh?.value ?? .nan
        status.voltage = measurements?.packVoltage.value ?? .nan
        status.current = measurements?.packCurrent.value ?? .nan
        status.temperatureMin = cells?.minTemperature.value ?? measurements?.temperature.value ?? .nan
        status.temperatureMax = cells?.maxTemperature.value ?? measurements?.temperature.value ?? .nan
        let limits = bms.limits.fresh(at: now, maxAge: maxAge)
        status.chargeCurrentLimit = limits?.chargeCurrentLimit.value ?? .nan
        status.dischargeCurrentLimit = limits?.dischargeCurrentLimit.value ?? .nan
        status.bmsOnline = measurements != nil
        let inverter = inputs[i].inverter.fresh(at: now, maxAge: controller.units[i].settings.inverterStaleAfter)
        status.inverterOnline = inverter != nil
        // As bessd drives it, corrected by what the inverter says (701 ConnSt, 101–103 St): open is open.
        status.contactor = ContactorState.reported(driven: io.contactor(unit: i), connected: inverter?.connected)
        status.reactivePower = inverter?.reactivePower ?? .nan
        status.acVoltage = inverter?.voltage ?? .nan
    }

    /// One status line: time, frequency, and per unit state, SOC, power, setpoint and active codes.
    public func statusLine(now: MonotonicInstant) -> String {
        var statuses = [UnitStatus](repeating: UnitStatus(), count: inputs.count)
        for i in inputs.indices { fill(&statuses[i], unit: i, now: now) }
        var site = SiteStatus()
        fill(&site, now: now)
        return StatusText.line(settings: settings, units: statuses,
                               frequency: controller.site.frequency?.value ?? .nan,
                               elapsed: now.seconds(since: startedAt), busFaults: busFaults(), site: site)
    }

    /// True once every real device has answered or failed at least once.
    public var devicesProbed: Bool { io.devicesProbed }
    /// True while every bus worker's thread runs (any thread may call the closure).
    public var workersAliveCheck: @Sendable () -> Bool { io.workersAliveCheck }
    /// Bus faults per unit, for the status line (any thread).
    public func busFaults() -> [[String]] { io.busFaults() }
    /// The worker slot of each unit whose inverter is real.
    public var slots: [DeviceSlot?] { io.inverterSlots }
    /// The CAN slot of each unit whose BMS is real.
    public var bmsSlots: [BMSSlot?] { io.bmsSlots }
}
