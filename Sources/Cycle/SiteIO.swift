public import BessSystem
public import ControlCore

// The devices of a site, in two halves: what the cycle needs every period (`ProcessImageSource`,
// a generic parameter of `SiteCycle`, never an existential on the hot path) and what the service
// needs to start, stop, watch and reload them (`SiteDevices`). `HardwareSite` (here) reads and
// commands real devices through their bus workers; `SimulatedSite` (module Simulation) simulates
// what the configuration asks to simulate and passes everything else to a `HardwareSite`. The cycle
// never knows which it has: `bessd`'s composition root picks one by mode, and this module never
// imports the simulator.

/// What the cycle reads from and writes to the devices each period, on the cycle thread: none of
/// these may wait on I/O or allocate.
public protocol ProcessImageSource: AnyObject {
    /// Writes every unit's latest inverter reading and BMS snapshot, with the instants they were
    /// measured, into `inputs`. Returns the grid frequency when it is simulated, else nil.
    func sample(now: MonotonicInstant, into inputs: inout [UnitInputs]) -> Timestamped<Hertz>?
    /// The connection-point meter's latest reading (as the meter states it), if the site has one.
    func sampleMeter(now: MonotonicInstant) -> Timestamped<MeterReading>?
    /// Hands unit `unit`'s setpoint to its inverter.
    func command(unit: Int, setpoint: Watts)
    /// Hands unit `unit`'s active and reactive setpoint (var, + = injecting; nil: bessd leaves the
    /// inverter's reactive power alone) to its inverter.
    func command(unit: Int, setpoint: Watts, reactive: Double?)
    /// Asks unit `unit`'s contactor open (`connect` false: the utility's disconnect, or a latch of
    /// that unit) or closed; the bus worker opens it once the unit is at zero (`ContactorPlanner`).
    func connect(unit: Int, _ connect: Bool)
    /// Every unit has its setpoint: real workers write now.
    func commandsIssued()
}

extension ProcessImageSource {
    /// A site that commands active power only.
    public func command(unit: Int, setpoint: Watts, reactive: Double?) { command(unit: unit, setpoint: setpoint) }
    /// A site whose units have no contactor bessd drives.
    public func connect(unit: Int, _ connect: Bool) {}
    /// A site without a meter.
    public func sampleMeter(now: MonotonicInstant) -> Timestamped<MeterReading>? { nil }
}

/// What the service does with a site's devices: start and stop them, watch their workers, read
/// their slots for metrics, and hand them reloaded settings.
public protocol SiteDevices: AnyObject {
    /// Starts the bus workers.
    func start()
    /// Commands zero power to every inverter (revert armed) and stops the workers.
    func stop()
    /// After `stop()`: the units whose real inverter did not acknowledge the zero (a simulated one always does).
    var unconfirmedStops: [String] { get }
    /// Takes reloaded settings (devices unchanged; control settings and interlocks may change).
    func reconfigure(_ settings: CycleSettings)
    /// Unit `unit`'s contactor as bessd drives it (one lock for a copy, no allocation; any thread).
    func contactor(unit: Int) -> ContactorState
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
    /// The worker slot of a real site meter.
    var meterSlot: DeviceSlot? { get }
}

extension SiteDevices {
    /// A site whose units have no contactor bessd drives.
    public func contactor(unit: Int) -> ContactorState { .closed }
    /// A site without bus or CAN workers of its own.
    public var workerTurns: @Sendable () -> [WorkerTurn] { { [] } }
    /// A site without a meter.
    public var meterSlot: DeviceSlot? { nil }
}

/// Both halves: what a site conforms to.
public typealias SiteIO = ProcessImageSource & SiteDevices
