public import BessSystem
public import ControlCore

/// Everything the cycle runs on: its period and real-time placement, the control law's settings,
/// and the devices of each unit and of the connection point. Cycle defines it; Config maps the
/// YAML into it (`BessdConfiguration.cycleSettings`), so the real-time module never compiles
/// against the whole configuration model (the uplink, SCADA, the simulation's profiles).
public struct CycleSettings: Sendable {
    /// Real or simulated devices; named in messages and in `STATUS=`.
    public var mode: RunMode
    /// The control period.
    public var period: Duration
    /// The cycle's priority and CPU (`realtime:`), nil for the default policy.
    public var realtime: RealtimeSettings?
    /// The site-wide settings of the control law.
    public var control: ControlSettings
    /// Each unit's settings of the control law (interlock table, ratings, staleness).
    public var units: [UnitSettings]
    /// The connection point's settings of the control law.
    public var site: SiteSettings
    /// Each unit's devices, in the order of `units`.
    public var devices: [UnitDevices]
    /// The connection-point meter, if the site has one.
    public var meter: MeterConfiguration?
    /// True when that meter is simulated inside bessd.
    public var meterSimulated: Bool
    /// Where the site frequency comes from.
    public var frequencySource: FrequencySource
    /// True when any input of the control law is simulated (the site needs a simulated plant).
    public var usesSimulation: Bool
    /// The PMU followed when `frequencySource` is `.pmu` (`grid_integration.pmu`); nil otherwise.
    public var pmu: PMUSettings?
    /// The block schedule's layer (`schedule:`): its block length and fallback; nil: no schedule
    /// layer, the site as without one (docs/design/0011-block-schedule.md).
    public var schedule: ScheduleSettings?

    public init(mode: RunMode, period: Duration, realtime: RealtimeSettings?, control: ControlSettings, units: [UnitSettings],
                site: SiteSettings, devices: [UnitDevices], meter: MeterConfiguration?, meterSimulated: Bool,
                frequencySource: FrequencySource, usesSimulation: Bool, pmu: PMUSettings? = nil, schedule: ScheduleSettings? = nil) {
        self.mode = mode
        self.period = period
        self.realtime = realtime
        self.control = control
        self.units = units
        self.site = site
        self.devices = devices
        self.meter = meter
        self.meterSimulated = meterSimulated
        self.frequencySource = frequencySource
        self.usesSimulation = usesSimulation
        self.pmu = pmu
        self.schedule = schedule
    }

    /// The period in whole milliseconds, as statistics and messages show it.
    public var periodMilliseconds: Int { Int(period.nanosecondsClamped / 1_000_000) }
}

/// One unit's devices as the cycle drives them.
public struct UnitDevices: Sendable, Equatable {
    /// The unit's id (`bess_units[].id`), in notices and the status line.
    public var id: String
    /// The inverter's Modbus endpoint, when it has one.
    public var modbus: ModbusSettings?
    public var inverter: InverterSettings
    public var bms: BMSSettings
    /// True when the inverter is simulated inside bessd.
    public var inverterSimulated: Bool
    /// True when the BMS is simulated inside bessd.
    public var bmsSimulated: Bool
    /// The unit's configured rating (`max_power_kw`), when known.
    public var rating: Watts?

    public init(id: String, modbus: ModbusSettings?, inverter: InverterSettings, bms: BMSSettings, inverterSimulated: Bool,
                bmsSimulated: Bool, rating: Watts? = nil) {
        self.rating = rating
        self.id = id
        self.modbus = modbus
        self.inverter = inverter
        self.bms = bms
        self.inverterSimulated = inverterSimulated
        self.bmsSimulated = bmsSimulated
    }
}
