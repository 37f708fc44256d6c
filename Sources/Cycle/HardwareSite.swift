public import BessBase
public import BessSystem
public import ControlCore
import Fieldbus
import Glibc
import GridSupport
import Synchronization

/// Real devices only: one endpoint worker per Modbus endpoint or serial line, one BMS worker per
/// CAN interface, one Modbus BMS worker per BMS on Modbus (`bms.transport: modbus`). A configuration
/// that asks for any simulated input is refused (`SIMULATION_REQUIRED`): hardware never runs on a
/// simulated input.
public final class HardwareSite: SiteIO {
    public let inverterSlots: [DeviceSlot?]
    public let bmsSlots: [BMSSlot?]
    public let meterSlot: DeviceSlot?
    let workers: [EndpointWorker]
    let bmsWorkers: [BMSWorker]
    let modbusBMSWorkers: [ModbusBMSWorker]
    /// Drives the per-cycle exchanges of every healthy Modbus TCP endpoint from one thread.
    let poller: BusPoller?

    /// Every device real: a configuration that simulates any is refused (`SIMULATION_REQUIRED`).
    public convenience init(settings: CycleSettings, phase: CyclePhase, output: @escaping (DeviceNotice) -> Void) throws(RunError) {
        if settings.usesSimulation {
            throw RunError(.simulationRequired,
                           message: "the configuration simulates a device or the frequency; that needs the simulated site (mode \(settings.mode.rawValue))")
        }
        self.init(realOf: settings, phase: phase, output: output)
    }

    /// The real devices of a site whose other devices `SimulatedSite` serves itself.
    public static func beside(simulated settings: CycleSettings, phase: CyclePhase,
                              output: @escaping (DeviceNotice) -> Void) -> HardwareSite {
        HardwareSite(realOf: settings, phase: phase, output: output)
    }

    private init(realOf settings: CycleSettings, phase: CyclePhase, output: @escaping (DeviceNotice) -> Void) {
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
        (bmsWorkers, modbusBMSWorkers) = Self.makeBMSWorkers(settings, slots: bmsSlots, phase: phase, realtime: placement?.workers,
                                                             busLines: workers.map(\.endpoint), output: output)
        // A real BMS may wake the cycle: a frame or a read that calls for less power is acted on as
        // it arrives, not at the next period.
        if !bmsWorkers.isEmpty || !modbusBMSWorkers.isEmpty { phase.enableAlarms() }
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
            let profile = Self.inverterProfile(unit, index: index, slot: slot, period: c.period, output: output)
            guard profile.usable else { continue }
            devices.append(("bess_units[\(index)]", modbus,
                            EndpointWorker.Device(unitID: modbus.unitID, slot: slot, registerMap: unit.inverter.registerMap,
                                                  name: unit.id, rating: unit.rating, profile: profile.profile)))
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
        for worker in modbusBMSWorkers { worker.start() }
    }

    /// The units whose inverter did not acknowledge the safe zero at `stop()`.
    public var unconfirmedStops: [String] { workers.flatMap(\.unconfirmedStops) }

    public func stop() {
        for slot in inverterSlots { slot?.setSetpoint(.zero) }
        // The poller first: it hands every endpoint back, and each worker writes its safe zero.
        poller?.stop()
        for worker in workers { worker.stop() }
        for worker in bmsWorkers { worker.stop() }
        for worker in modbusBMSWorkers { worker.stop() }
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

    public func command(unit: Int, setpoint: Watts, reactive: Double?) {
        inverterSlots[unit]?.setSetpoint(setpoint, reactive: reactive)
    }

    public func connect(unit: Int, _ connect: Bool) { inverterSlots[unit]?.setConnect(connect) }

    public func contactor(unit: Int) -> ContactorState { inverterSlots[unit]?.contactor ?? .closed }

    /// Each CAN BMS judged by its unit's critical thresholds (after a reload, the new ones), and
    /// each inverter told whether reactive power has priority (704 `VarSetPri`, `reactive_priority`).
    func setWatches(_ settings: CycleSettings) {
        for (i, slot) in bmsSlots.enumerated() { slot?.setWatch(BMSAlarmWatch(rules: settings.units[i].rules)) }
        for (i, slot) in inverterSlots.enumerated() where i < settings.units.count {
            slot?.setReactivePriority(settings.units[i].gridSupport?.reactivePriority ?? false)
        }
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
        let modbusBMS = modbusBMSWorkers
        let poller = poller
        return {
            inverters.allSatisfy(\.isAlive) && bms.allSatisfy(\.isAlive) && modbusBMS.allSatisfy(\.isAlive) && (poller?.isAlive ?? true)
        }
    }
}
