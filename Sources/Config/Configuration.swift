public import BessBase
public import BessSystem
public import ControlCore
public import Cycle
public import Fieldbus

/// One battery unit: a BMS and an inverter.
public struct UnitConfiguration: Sendable, Equatable {
    public var id: String
    public var campusID: String?
    public var capacityKWh: Double
    public var maxPowerKW: Double
    public var modbus: ModbusSettings?
    public var inverter: InverterSettings
    public var bms: BMSSettings
    /// Inverter data older than this is stale (`inverter.stale_after_s`).
    public var inverterStaleAfter: Duration
    /// How long after start the inverter may take to answer first before INVERTER_COMM_LOST
    /// (`inverter.startup_grace_s`).
    public var inverterStartupGrace: Duration = .seconds(30)
    /// `max_apparent_power_kva`: the unit's apparent-power rating (`VAMax`), which P and Q share;
    /// nil: the inverter's 702 `VAMax`, else `maxPowerKW`.
    public var maxApparentPowerKVA: Double? = nil
}

/// `site:`: the grid connection point, its limits and the site application.
public struct SiteConfiguration: Sendable, Equatable {
    public var meter: MeterConfiguration?
    /// `grid_limits.import_max_kw` / `export_max_kw`.
    public var importMaxKW: Double?
    public var exportMaxKW: Double?
    public var application: SiteApplication
    /// `soc_reserve_percent`: energy the application may not use.
    public var socReservePercent: Double
    /// `site.reactive_power`: the connection point's nominal voltage (for the meter's per-unit
    /// voltage and the `GRID_OVERVOLTAGE`/`GRID_UNDERVOLTAGE` rules) and the site's reactive mode.
    public var reactivePower = ReactivePowerConfiguration()

    public init(meter: MeterConfiguration? = nil, importMaxKW: Double? = nil, exportMaxKW: Double? = nil,
                application: SiteApplication = .none, socReservePercent: Double = 0) {
        self.meter = meter
        self.importMaxKW = importMaxKW
        self.exportMaxKW = exportMaxKW
        self.application = application
        self.socReservePercent = socReservePercent
    }
}

/// `grid_integration` of the seed design.
public struct GridConfiguration: Sendable, Equatable {
    public var mode: String
    public var frequencySource: FrequencySource
    /// `grid_integration.frequency_events`: when an excursion is an event (docs/frequency-events.md).
    public var frequencyEvents = FrequencyEventSettings()
    public var droop: DroopSettings
    /// `grid_integration.pmu`: the PMU followed when `frequencySource` is `.pmu` (nil otherwise).
    public var pmu: PMUSettings? = nil
    /// `grid_integration.reactive_power`: each unit's nominal voltage (for its per-unit voltage and
    /// the `AC_OVERVOLTAGE`/`AC_UNDERVOLTAGE` rules) and the reactive mode each unit runs.
    public var reactivePower = ReactivePowerConfiguration()
}

/// `aggregator`: where telemetry goes and commands come from.
public struct AggregatorConfiguration: Sendable, Equatable {
    /// `http` (batches POSTed, commands in the answers) or `mqtt` (MQTT 5, commands pushed).
    public enum Transport: String, Sendable { case http, mqtt }
    public var transport: Transport = .http
    /// The aggregator's URL as configured, credentials included: for the connection only. Every
    /// output (status, the support bundle, the journal) shows `shownURL`.
    public var url: String
    /// `url` with any credentials replaced by `<redacted>`.
    public var shownURL: String { Redaction.urlCredentials(in: url) }
    public var tokenFile: String?
    /// `interval_s`: how often the uplink records the site.
    public var interval: Duration
    /// The site's name in the uplink (default: the first unit's campus_id).
    public var siteID: String = "site"
    /// PEM CA bundle trusted for the aggregator's certificate (default: the system's).
    public var caFile: String?
    /// PEM client certificate and key, when the aggregator asks for one.
    public var clientCertFile: String?
    public var clientKeyFile: String?
    /// Largest spool on disk, MB.
    public var spoolMaxMB: Int = 64
    /// MQTT: user name and a file holding the password (beside or instead of a client certificate).
    public var username: String?
    public var passwordFile: String?
    /// MQTT: keepalive, and how long the broker keeps the session (and commands sent to it) while the gateway is away.
    /// `keepalive_s` and `session_expiry_s`, whole seconds as MQTT sends them.
    public var keepalive: Duration = .seconds(30)
    public var sessionExpiry: Duration = .seconds(86_400)
    /// `insecure_transport`: an `http://` or `mqtt://` url to a host other than loopback is meant
    /// (a notice); without it, an error.
    public var insecureTransport = false
}

/// `simulation`: the built-in simulated site, and the plant of a HIL rig.
public struct SimulationConfiguration: Sendable, Equatable {
    public enum FrequencyProfile: String, Sendable { case steady, walk, steps, ramp, trace }
    public var initialSOCPercent: Double
    public var ambientCelsius: Double
    public var frequencyProfile: FrequencyProfile
    /// Centre frequency of the profile (and the start of a ramp).
    public var baseHz: Double
    /// Size of a step (`steps`) or scale of the wander (`walk`).
    public var amplitudeHz: Double
    /// Time between steps (`step_period_s`).
    public var stepPeriod: Duration
    /// Seed of the `walk` profile, so runs repeat.
    public var seed: UInt64
    /// `ramp`: where the ramp ends, when it starts (after the run's start) and how long it takes.
    public var rampToHz: Double
    public var rampStart: Duration
    public var rampDuration: Duration
    /// `trace`: (time since the run started, Hz) points read from `trace_file`.
    public var trace: [TracePoint]
    /// Faults the plant injects on a schedule.
    public var faults: [FaultInjection]
    /// How much warmer the simulated hottest cell (0x373) reads than the pack (0x356), K.
    public var hottestCellAbovePackK: Double = 2
    /// A unit's own starting SOC, by unit id (`initial_soc_percent_by_unit`); others start at
    /// `initialSOCPercent`.
    public var initialSOCByUnit: [String: Double] = [:]
    /// The SOC unit `id` starts at, percent.
    public func initialSOC(of id: String) -> Double { initialSOCByUnit[id] ?? initialSOCPercent }
    /// The site's load and PV around the simulated meter (kW).
    public var load = PowerProfile(base: 0)
    public var pv = PowerProfile(base: 0)
    /// The SunSpec model the simulated meter serves (`meter_model`: 201 single-phase, 202 split-phase,
    /// 203 wye or 204 delta three-phase; default 203).
    public var meterModel: UInt16 = 203
}

/// A power profile of the simulated site (`simulation.load`, `simulation.pv`), kW.
public struct PowerProfile: Sendable, Equatable {
    public enum Shape: String, Sendable, CaseIterable { case steady, steps, trace }
    public var shape: Shape = .steady
    /// The level (`steady`), or the first level (`steps`).
    public var baseKW: Double
    /// `steps`: the levels visited in turn, each for `stepPeriod` (base first).
    public var levelsKW: [Double] = []
    public var stepPeriod: Duration = .seconds(30)
    /// `trace`: (time since the run started, kW) points, each held until the next.
    public var trace: [PowerPoint] = []

    public init(base: Double) { baseKW = base }

    /// The largest power the profile reaches, kW.
    public var largestKW: Double {
        ([baseKW] + levelsKW + trace.map(\.kilowatts)).map { abs($0) }.max() ?? 0
    }

    /// The power `elapsed` into the run, kW.
    public func kilowatts(at elapsed: Duration) -> Double {
        switch shape {
        case .steady: return baseKW
        case .steps:
            // No array built here: the simulated meter asks every cycle.
            let k = Int(max(.zero, elapsed) / max(Self.shortestStep, stepPeriod)) % (levelsKW.count + 1)
            return k == 0 ? baseKW : levelsKW[k - 1]
        case .trace:
            guard let first = trace.first else { return baseKW }
            return trace.last(where: { $0.at <= elapsed })?.kilowatts ?? first.kilowatts
        }
    }

    /// The shortest step the `steps` shape takes (a constant: built once, not per cycle).
    static let shortestStep = Duration.milliseconds(100)
}

/// One point of a recorded power trace.
public struct PowerPoint: Sendable, Equatable {
    /// When the point applies, from the run's start.
    public var at: Duration
    public var kilowatts: Double
    public init(at: Duration, kilowatts: Double) {
        self.at = at
        self.kilowatts = kilowatts
    }
}

/// One point of a recorded frequency trace.
public struct TracePoint: Sendable, Equatable {
    /// When the point applies, from the run's start.
    public var at: Duration
    public var hz: Double
    public init(at: Duration, hz: Double) {
        self.at = at
        self.hz = hz
    }
}

/// A fault the simulated plant injects, from `at_s` for `duration_s` (0 = until the end).
public struct FaultInjection: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// The BMS stops sending.
        case bmsSilence = "bms_silence"
        /// The BMS sends its frames `delay_s` late.
        case bmsDelay = "bms_delay"
        /// Malformed frames among the BMS's own.
        case bmsGarbage = "bms_garbage"
        /// The BMS sends invalid values (SOC 150 %, the 0x8000 marker in its limits) instead of its frames.
        case bmsOutOfRange = "bms_out_of_range"
        /// The BMS's CAN link goes down (bus-off as bessd sees it).
        case canBusOff = "can_bus_off"
        /// Heat injected into the pack: temperature rises fast.
        case thermalRunaway = "thermal_runaway"
        /// The inverter reports a fault and stops.
        case inverterFault = "inverter_fault"
        /// The inverter's Modbus server stops answering.
        case modbusSilence = "modbus_silence"
        /// The inverter's Modbus server answers `delay_s` late.
        case modbusDelay = "modbus_delay"
        /// The BMS reports the given values instead of the model's (`bms:` holds them).
        case bmsValues = "bms_values"
        /// The inverter reports no grid frequency (its "not implemented" value).
        case frequencyLoss = "frequency_loss"
        /// The BMS stops sending one optional frame group (`group:` cells, protection or requests).
        case bmsGroupSilence = "bms_group_silence"
        /// The site meter stops answering.
        case meterSilence = "meter_silence"
        /// The site meter reports the connection point `delay_s` late.
        case meterDelay = "meter_delay"
        /// The site meter answers with garbage (values it marks as not implemented).
        case meterGarbage = "meter_garbage"
    }
    public var kind: Kind
    /// The unit it hits; nil = every unit.
    public var unit: String?
    /// When it starts, from the run's start (`at_s`).
    public var at: Duration
    /// How long it acts (`duration_s`; zero = until the end).
    public var duration: Duration
    /// How late a delay fault makes its device answer (`delay_s`).
    public var delay: Duration
    /// For `bms_values`: what the BMS reports.
    public var bmsValues: BMSOverride?
    /// For `bms_group_silence`: the groups the BMS stops sending.
    public var silencedGroups = BMSGroups()

    /// True while the fault acts, `elapsed` into the run: from `at` inclusive to `at + duration` exclusive.
    public func isActive(at elapsed: Duration, unitID: String) -> Bool {
        guard unit == nil || unit == unitID, elapsed >= at else { return false }
        return duration <= .zero || elapsed < at + duration
    }
}

/// One entry of `interlocks:`, overriding a row of the default table.
public struct InterlockOverride: Sendable, Equatable {
    public var threshold: Double?
    public var hysteresis: Double?
    /// `delay_s` and `hold_s`.
    public var delay: Duration?
    public var hold: Duration?
    public var severity: String?
    public var derateStart: Double?
    public var direction: PowerDirection?
    public var enabled: Bool
}

/// The whole configuration of bessd. See config/bessd.yaml for every key with its default.
public struct BessdConfiguration: Sendable {
    public var mode: RunMode
    public var periodMs: Int
    public var controlSocket: String
    public var stateDirectory: String
    public var units: [UnitConfiguration]
    public var grid: GridConfiguration
    public var limitRampPercentPerSecond: Double
    public var scheduleRampPercentPerSecond: Double
    public var interlocks: [TripCode: InterlockOverride]
    public var aggregator: AggregatorConfiguration?
    public var simulation: SimulationConfiguration
    /// Real-time scheduling of the cycle thread, when asked for.
    public var realtime: RealtimeSettings?
    /// `HOST:PORT` for Prometheus `GET /metrics`, when asked for.
    public var metricsListen: String?
    /// Notices about keys that load but do nothing in bessd.
    public var notices: [ConfigDiagnostic]
    /// `site:`: connection point, limits, application (empty when absent).
    public var site = SiteConfiguration()
    /// `scada:`: the site served as a SunSpec device on Modbus TCP (nil when absent).
    public var scada: ScadaConfiguration?
    /// `grid_operator.inputs`: relay contacts mapped to percent limits.
    public var gridLimitInputs: GridLimitInputsConfiguration?
    /// `iec104:`: the grid operator's control centre (so far its AGC band and expiry; nil when absent).
    public var iec104: IEC104Configuration?
    /// `ieee2030_5:`: the utility's IEEE 2030.5 server bessd follows as a client (nil when absent).
    public var ieee2030_5: IEEE2030_5Settings?
    /// `schedule:`: the block schedule's length, fallback and revision gate (nil when absent: no
    /// schedule layer, and `bessctl schedule load` is refused SCHEDULE_DISABLED).
    public var schedule: ScheduleConfiguration?
    /// `optimiser:`: the plan written as the block schedule (nil when absent).
    public var optimiser: OptimiserConfiguration?
    /// `profile_directories:`: where device profiles were read, earlier first (`ProfileLibrary`).
    public var profileDirectories = ProfileLibrary.defaultDirectories

    /// True when the site meter is simulated inside bessd (never in hardware mode).
    public var meterSimulated: Bool {
        guard let meter = site.meter else { return false }
        switch mode {
        case .simulation: return true
        case .hil: return meter.simulated
        case .hardware: return false
        }
    }

    /// True when this unit's inverter is simulated inside bessd (never in hardware mode).
    public func isSimulated(inverterOf unit: UnitConfiguration) -> Bool {
        switch mode {
        case .simulation: true
        case .hil: unit.inverter.simulated
        case .hardware: false
        }
    }

    /// True when this unit's BMS is simulated inside bessd (never in hardware mode).
    public func isSimulated(bmsOf unit: UnitConfiguration) -> Bool {
        switch mode {
        case .simulation: true
        case .hil: unit.bms.simulated
        case .hardware: false
        }
    }

    /// True when any input of the control law is simulated (the site needs a simulated plant).
    public var usesSimulation: Bool {
        grid.frequencySource == .simulated || meterSimulated
            || units.contains { isSimulated(inverterOf: $0) || isSimulated(bmsOf: $0) }
    }
}

/// Values a BMS reports in place of the battery model's: how a HIL scenario makes each interlock
/// see its condition. nil = the model's own value.
public struct BMSOverride: Sendable, Equatable {
    public var socPercent: Double?
    public var packVoltage: Double?
    /// A, + = charge.
    public var packCurrent: Double?
    public var cellVoltageMin: Double?
    public var cellVoltageMax: Double?
    public var temperatureMin: Double?
    public var temperatureMax: Double?
    public var chargeCurrentLimit: Double?
    public var dischargeCurrentLimit: Double?
    public var protections: BMSConditions?
    public var alarms: BMSConditions?
    public var chargeEnabled: Bool?
    public var dischargeEnabled: Bool?
    public init() {}
    public var isEmpty: Bool { self == BMSOverride() }
}

/// `scada:` — the whole site served as a SunSpec device for plant SCADA, the site EMS and the grid
/// operator (docs/scada.md).
public struct ScadaConfiguration: Sendable, Equatable {
    /// Where to listen (IPv4).
    public var host: String
    public var port: Int
    public var unitID: Int
    /// Clients allowed to connect: IPv4 networks (address, prefix length). Empty: loopback only.
    public var allowFrom: [IPv4Network]
    /// Whether the grid operator limit and the site setpoint of model 704 may be written.
    public var writes: Bool
    /// `max_hold_s`: the longest a write holds without a refresh.
    public var maxHold: Duration
    /// `idle_timeout_s`: a connection that sends nothing for this long is closed.
    public var idleTimeout: Duration
    /// Connections open at once; more are closed at accept.
    public var maxClients: Int
    /// An RS-485 line of its own (`scada.serial`), served as Modbus RTU beside TCP, and the unit id
    /// answered there.
    public var serial: SerialSettings?
    public var serialUnitID = 1

    public init(host: String, port: Int, unitID: Int = 1, allowFrom: [IPv4Network] = [], writes: Bool = false,
                maxHold: Duration = .seconds(60), idleTimeout: Duration = .seconds(60), maxClients: Int = 32) {
        self.host = host
        self.port = port
        self.unitID = unitID
        self.allowFrom = allowFrom
        self.writes = writes
        self.maxHold = maxHold
        self.idleTimeout = idleTimeout
        self.maxClients = maxClients
    }
}
