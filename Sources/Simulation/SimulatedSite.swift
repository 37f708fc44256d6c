public import ControlCore
public import Config
public import Cycle

/// The site as `mode: simulation` or `mode: hil` describes it: every device the configuration
/// simulates runs here (battery, BMS and inverter models, the grid frequency, scheduled faults),
/// and every real one goes through a `HardwareSite` and its bus workers. A simulated BMS beside a
/// real inverter integrates the power that inverter measured. Only `bessd`'s composition root
/// creates one, and only when the configuration simulates something.
public final class SimulatedSite: SiteIO, ConfiguredSite {
    /// How old an inverter's measured power may be for the simulated BMS to integrate it (a
    /// constant: a `Duration` built from an integer is a 128-bit multiplication, per unit and cycle).
    static let measuredMaxAge = Duration.seconds(3)
    public private(set) var configuration: BessdConfiguration
    /// Every unit's models (used for the units whose devices are simulated).
    public private(set) var units: [SimulatedUnit]
    let hardware: HardwareSite
    var grid: GridFrequency
    /// Per unit: a `frequency_loss` fault acts on its simulated inverter.
    var frequencyLost: [Bool]
    var lastNow: MonotonicInstant
    let startedAt: MonotonicInstant
    /// The connection-point meter, when the site has one and simulates it (without one it keeps no
    /// history: its minutes of records are 192 kB, written at start).
    public private(set) var meter: SimulatedMeter
    var meterReading: Timestamped<MeterReading>?
    /// Σ units' rated power, W (sizes the simulated grid voltage's swing).
    let ratingW: Double

    public init(configuration: BessdConfiguration, phase: CyclePhase, startedAt: MonotonicInstant,
                output: @escaping (DeviceNotice) -> Void) throws(RunError)
    {
        self.configuration = configuration
        self.startedAt = startedAt
        lastNow = startedAt
        let sim = configuration.simulation
        units = configuration.units.map {
            SimulatedUnit(capacityKWh: $0.capacityKWh, maxPowerKW: $0.maxPowerKW,
                          initialSOCPercent: sim.initialSOC(of: $0.id), ambientCelsius: sim.ambientCelsius,
                          cellsInSeries: $0.bms.cellsInSeries, hottestCellAbovePackK: sim.hottestCellAbovePackK)
        }
        grid = sim.gridFrequency()
        frequencyLost = [Bool](repeating: false, count: configuration.units.count)
        ratingW = configuration.units.reduce(0) { $0 + max(0, $1.maxPowerKW) * 1000 }
        meter = configuration.meterSimulated ? SimulatedMeter() : SimulatedMeter(history: 0)
        hardware = HardwareSite.beside(simulated: configuration, phase: phase, output: output)
    }

    /// Replaces the grid frequency profile (tests and scenarios).
    public func setFrequency(_ profile: GridFrequency.Profile) { grid = GridFrequency(profile) }

    /// Mutates one simulated unit (fault injection in tests and scenarios).
    public func withUnit(_ index: Int, _ body: (inout SimulatedUnit) -> Void) { body(&units[index]) }

    public func start() { hardware.start() }

    public func stop() {
        for i in units.indices { units[i].inverter.command(setpointW: 0) }
        hardware.stop()
    }

    /// The real inverters that did not acknowledge the zero (a simulated one always does).
    public var unconfirmedStops: [String] { hardware.unconfirmedStops }

    /// Advances the models to `now`, applies the fault schedule, and samples real and simulated
    /// devices alike.
    public func sample(now: MonotonicInstant, into inputs: inout [UnitInputs]) -> Timestamped<Hertz>? {
        let dt = max(.zero, now - lastNow)
        lastNow = now
        let elapsed = now - startedAt
        let hz = grid.frequency(at: elapsed)
        if !configuration.simulation.faults.isEmpty {
            for i in units.indices {
                let faults = units[i].follow(configuration.simulation, at: elapsed, unitID: configuration.units[i].id)
                frequencyLost[i] = faults.contains(.frequencyLoss)
            }
        }
        _ = hardware.sample(now: now, into: &inputs)
        for i in units.indices {
            if hardware.inverterSlots[i] != nil {
                // A real inverter: the simulated BMS integrates what it measured.
                if let measured = inputs[i].inverter?.value(at: now, maxAge: Self.measuredMaxAge) {
                    units[i].stepBattery(measuredACPowerW: measured.activePower.value, by: dt)
                }
            } else {
                units[i].step(by: dt)
                inputs[i].inverter = Timestamped(units[i].inverterReading(at: now, frequency: frequencyLost[i] ? nil : hz,
                                                                          gridVoltage: SimulatedMeter.voltage(gridW: meter.gridPowerW, ratingW: ratingW)),
                                                 at: now)
            }
            if hardware.bmsSlots[i] == nil, !units[i].bmsSilent {
                inputs[i].bms = units[i].bmsSnapshot(at: now)
            }
        }
        if configuration.meterSimulated { sampleSimulatedMeter(now: now, elapsed: elapsed, inputs: inputs) }
        return configuration.grid.frequencySource == .simulated ? Timestamped(Hertz(hz), at: now) : nil
    }

    public func command(unit: Int, setpoint: Watts) {
        command(unit: unit, setpoint: setpoint, reactive: nil)
    }

    public func command(unit: Int, setpoint: Watts, reactive: Double?) {
        if hardware.inverterSlots[unit] != nil {
            hardware.command(unit: unit, setpoint: setpoint, reactive: reactive)
        } else {
            units[unit].inverter.command(setpointW: setpoint.value)
            // No revert timer: bessd is its plant. Without a command, back to 0 var (its own mode).
            if let reactive {
                units[unit].inverter.command(reactiveVar: reactive, revert: nil)
            } else if units[unit].inverter.reactiveSetpointVar != 0 {
                units[unit].inverter.command(reactiveVar: 0, revert: nil)
            }
        }
    }

    public func connect(unit: Int, _ connect: Bool) {
        if hardware.inverterSlots[unit] != nil {
            hardware.connect(unit: unit, connect)
        } else if connect != units[unit].inverter.connected {
            // A simulated unit opens as a real one is opened (ContactorPlanner): once its power is
            // down to 50 W or 1 % of its rating; it closes at once. No revert timer: bessd is its plant.
            let inverter = units[unit].inverter
            if connect || abs(inverter.powerW) <= max(50, 0.01 * inverter.ratingW) { units[unit].inverter.setConnected(connect) }
        }
    }

    public func contactor(unit: Int) -> ContactorState {
        hardware.inverterSlots[unit] != nil ? hardware.contactor(unit: unit) : units[unit].inverter.connected ? .closed : .open
    }

    public func commandsIssued() { hardware.commandsIssued() }

    /// The connection point: load − PV − the batteries' power and var (simulated inverters' own, real
    /// ones' measured), read by the simulated meter with its faults (`meter_silence`, `meter_delay`,
    /// `meter_garbage`).
    func sampleSimulatedMeter(now: MonotonicInstant, elapsed: Duration, inputs: [UnitInputs]) {
        var battery = 0.0, batteryVar = 0.0
        for i in units.indices {
            if hardware.inverterSlots[i] != nil {
                let measured = inputs[i].inverter?.value(at: now, maxAge: Self.measuredMaxAge)
                battery += measured?.activePower.value ?? 0
                batteryVar += measured?.reactivePower ?? 0
            } else {
                battery += units[i].inverter.powerW
                batteryVar += units[i].inverter.reactiveVar
            }
        }
        let site = configuration.simulation.sitePower(at: elapsed)
        meter.record(elapsed: elapsed, loadW: site.load, pvW: site.pv, batteryW: battery, batteryVar: batteryVar)
        let faults = configuration.simulation.activeFaults(at: elapsed, unitID: "")
        if faults.contains(.meterSilence) { return }
        if faults.contains(.meterGarbage) {
            // What a meter answering "not implemented" in W gives bessd: nothing usable.
            meterReading = Timestamped(MeterReading(gridPower: Watts(.nan)), at: now)
            return
        }
        let delay = configuration.simulation.activeDelay(.meterDelay, at: elapsed, unitID: "")
        var w = meter.reading(at: elapsed, delay: delay)
        var reactive = meter.gridReactiveVar
        if configuration.site.meter?.importPositive == false {  // as such a meter states them
            w = -w
            reactive = -reactive
        }
        meterReading = Timestamped(MeterReading(gridPower: Watts(w), frequency: Hertz(grid.frequency(at: elapsed)), reactivePower: reactive,
                                                voltage: SimulatedMeter.voltage(gridW: meter.gridPowerW, ratingW: ratingW)), at: now)
    }

    public func sampleMeter(now: MonotonicInstant) -> Timestamped<MeterReading>? {
        configuration.meterSimulated ? meterReading : hardware.sampleMeter(now: now)
    }

    public var meterSlot: DeviceSlot? { hardware.meterSlot }

    public func reconfigure(_ settings: CycleSettings) { hardware.reconfigure(settings) }

    /// The simulation's profiles and faults of a reloaded configuration.
    public func reconfigure(configuration: BessdConfiguration) { self.configuration = configuration }

    public var devicesProbed: Bool { hardware.devicesProbed }
    public func busFaults() -> [[String]] { hardware.busFaults() }
    public var workersAliveCheck: @Sendable () -> Bool { hardware.workersAliveCheck }
    public var workerTurns: @Sendable () -> [WorkerTurn] { hardware.workerTurns }
    public var inverterSlots: [DeviceSlot?] { hardware.inverterSlots }
    public var bmsSlots: [BMSSlot?] { hardware.bmsSlots }
}

extension SiteRunner {
    /// The site the configuration describes: simulated where it asks, real elsewhere. The
    /// composition root (bessd) and tests call this; a configuration that simulates nothing gets
    /// the plain hardware site.
    public static func make(configuration: BessdConfiguration, startedAt: MonotonicInstant,
                            output: @escaping (DeviceNotice) -> Void) throws(RunError) -> SiteRunner
    {
        guard configuration.usesSimulation else {
            return try hardware(configuration: configuration, startedAt: startedAt, output: output)
        }
        let phase = CyclePhase(period: .milliseconds(configuration.periodMs))
        let io = try SimulatedSite(configuration: configuration, phase: phase, startedAt: startedAt, output: output)
        return SiteCycle(configuration: configuration, io: io, phase: phase, startedAt: startedAt)
    }

    /// The simulated site behind this runner, if any (tests and scenarios inject faults through it).
    public var simulation: SimulatedSite? { io as? SimulatedSite }
}
