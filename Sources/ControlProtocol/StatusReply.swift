/// `status`: the site's mode, each unit, the cycle's health, the uplink, the clock and the grid operator.
public struct StatusReply: ControlReply, Equatable {
    /// The grid operator's AGC (absent from a bessd that predates it).
    public var agc: AGCReply?
    public var clock: ClockReply
    public var cycle: CycleReply
    public var frequencyHz: Double?
    /// Where `frequencyHz` came from in the last cycle: `pmu`, `inverter` (also while a PMU falls
    /// back), `meter` or `simulated` (absent from a bessd that predates it).
    public var frequencySource: String?
    /// How old that frequency was in the last cycle, ms (nil when it had none). Both are left out
    /// of the answer when nil.
    public var frequencyAgeMs: Double?
    public var gridOperator: GridOperatorReply
    /// Dropped worker notices and stalled threads (absent from a bessd that predates it).
    public var health: HealthReply?
    /// `HOLD_STATE_UNREADABLE: …` naming the holds file, when it could not be read at start (every
    /// unit then starts in the operator's standby) and until the operator lifts the site's standby;
    /// left out otherwise.
    public var holdState: String?
    /// The utility's IEEE 2030.5 server as bessd follows it; nil (left out) without `ieee2030_5:`.
    public var ieee2030_5: IEEE2030_5Reply?
    public var mode: String
    public var units: [UnitReply]
    /// nil without `aggregator:`.
    public var uplink: UplinkReply?
    public var version: String

    public init(clock: ClockReply, cycle: CycleReply, frequencyHz: Double?, gridOperator: GridOperatorReply, mode: String,
                units: [UnitReply], uplink: UplinkReply?, version: String, agc: AGCReply? = nil,
                frequencySource: String? = nil, frequencyAgeMs: Double? = nil) {
        self.agc = agc
        self.frequencySource = frequencySource
        self.frequencyAgeMs = frequencyAgeMs
        self.clock = clock
        self.cycle = cycle
        self.frequencyHz = frequencyHz
        self.gridOperator = gridOperator
        self.mode = mode
        self.units = units
        self.uplink = uplink
        self.version = version
    }

    enum CodingKeys: String, CodingKey {
        case agc, clock, cycle, mode, units, uplink, version
        case frequencyHz = "frequency_hz", gridOperator = "grid_operator"
        case frequencySource = "frequency_source", frequencyAgeMs = "frequency_age_ms"
        case ieee2030_5, health
        case holdState = "hold_state"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.agc, ifPresent: agc)
        json.field(CodingKeys.clock, clock)
        json.field(CodingKeys.cycle, cycle)
        json.field(CodingKeys.frequencyAgeMs, ifPresent: frequencyAgeMs)
        json.field(CodingKeys.frequencyHz, frequencyHz)
        json.field(CodingKeys.frequencySource, ifPresent: frequencySource)
        json.field(CodingKeys.gridOperator, gridOperator)
        json.field(CodingKeys.health, ifPresent: health)
        json.field(CodingKeys.holdState, ifPresent: holdState)
        json.field(CodingKeys.ieee2030_5, ifPresent: ieee2030_5)
        json.field(CodingKeys.mode, mode)
        json.field(okKey, true)
        json.field(CodingKeys.units, units)
        json.field(CodingKeys.uplink, uplink)
        json.field(CodingKeys.version, version)
        json.endObject()
    }
}

/// One unit in `status`.
public struct UnitReply: Codable, Sendable, Equatable, JSONWritable {
    public var allowedChargeW: Double?
    public var allowedDischargeW: Double?
    /// The unit's BMS as its protocol or profile maps it (absent from a bessd that predates it).
    public var bms: BMSReply?
    /// Aggregator dispatch in force (absent when none).
    public var dispatch: PowerReply?
    public var droopW: Double?
    /// Who holds the unit where it is (`operator`, `aggregator`, `override`…), nil in auto.
    public var heldBy: String?
    /// When that hold ends (absent when it does not by itself).
    public var heldUntilUnix: Double?
    public var id: String
    public var latched: [String]
    public var mode: String
    /// The operator's override in force (absent when none).
    public var override: TimedPowerReply?
    public var powerW: Double?
    /// What sets the unit's reactive power (`ReactiveSource`: `off`, a mode, `stale_voltage`,
    /// `unavailable`, `stopped`, or a party). With it come `reactive_kvar` (measured, + = injecting),
    /// `reactive_setpoint_kvar` and `voltage_pu`, null when unknown; all four absent when nil (a
    /// bessd that predates them).
    public var reactive: String?
    public var reactiveKvar: Double?
    public var reactiveSetpointKvar: Double?
    public var setpointW: Double?
    public var socPercent: Double?
    public var state: String
    public var trips: [String]
    public var voltagePU: Double?

    public init(id: String, state: String, mode: String, setpointW: Double?, droopW: Double?, allowedChargeW: Double?,
                allowedDischargeW: Double?, trips: [String], latched: [String], socPercent: Double?, powerW: Double?,
                override: TimedPowerReply? = nil, dispatch: PowerReply? = nil, heldBy: String? = nil, heldUntilUnix: Double? = nil) {
        self.id = id
        self.state = state
        self.mode = mode
        self.setpointW = setpointW
        self.droopW = droopW
        self.allowedChargeW = allowedChargeW
        self.allowedDischargeW = allowedDischargeW
        self.trips = trips
        self.latched = latched
        self.socPercent = socPercent
        self.powerW = powerW
        self.override = override
        self.dispatch = dispatch
        self.heldBy = heldBy
        self.heldUntilUnix = heldUntilUnix
    }

    enum CodingKeys: String, CodingKey {
        case bms, dispatch, id, latched, mode, override, state, trips
        case allowedChargeW = "allowed_charge_w", allowedDischargeW = "allowed_discharge_w", droopW = "droop_w"
        case heldBy = "held_by", heldUntilUnix = "held_until_unix", powerW = "power_w", setpointW = "setpoint_w"
        case socPercent = "soc_percent", reactive, reactiveKvar = "reactive_kvar"
        case reactiveSetpointKvar = "reactive_setpoint_kvar", voltagePU = "voltage_pu"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.allowedChargeW, allowedChargeW)
        json.field(CodingKeys.allowedDischargeW, allowedDischargeW)
        json.field(CodingKeys.bms, ifPresent: bms)
        json.field(CodingKeys.dispatch, ifPresent: dispatch)
        json.field(CodingKeys.droopW, droopW)
        json.field(CodingKeys.heldBy, heldBy)
        json.field(CodingKeys.heldUntilUnix, ifPresent: heldUntilUnix)
        json.field(CodingKeys.id, id)
        json.field(CodingKeys.latched, latched)
        json.field(CodingKeys.mode, mode)
        json.field(CodingKeys.override, ifPresent: override)
        json.field(CodingKeys.powerW, powerW)
        if let reactive {
            json.field(CodingKeys.reactive, reactive)
            json.field(CodingKeys.reactiveKvar, reactiveKvar)
            json.field(CodingKeys.reactiveSetpointKvar, reactiveSetpointKvar)
        }
        json.field(CodingKeys.setpointW, setpointW)
        json.field(CodingKeys.socPercent, socPercent)
        json.field(CodingKeys.state, state)
        json.field(CodingKeys.trips, trips)
        if reactive != nil { json.field(CodingKeys.voltagePU, voltagePU) }
        json.endObject()
    }
}

/// `{"power_w": …}`.
public struct PowerReply: Codable, Sendable, Equatable, JSONWritable {
    public var powerW: Double?
    public init(powerW: Double?) { self.powerW = powerW }
    enum CodingKeys: String, CodingKey { case powerW = "power_w" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.powerW, powerW)
        json.endObject()
    }
}

/// `{"power_w": …, "remaining_s": …}`: a power that reverts when its time runs out.
public struct TimedPowerReply: Codable, Sendable, Equatable, JSONWritable {
    public var powerW: Double?
    public var remainingS: Double?
    public init(powerW: Double?, remainingS: Double?) {
        self.powerW = powerW
        self.remainingS = remainingS
    }
    enum CodingKeys: String, CodingKey { case powerW = "power_w", remainingS = "remaining_s" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.powerW, powerW)
        json.field(CodingKeys.remainingS, remainingS)
        json.endObject()
    }
}

/// The cycle's timing in `status`.
public struct CycleReply: Codable, Sendable, Equatable, JSONWritable {
    public var alarmCycles: UInt64
    public var cycles: UInt64
    public var jitterMaxUs: Int64
    public var jitterP50Us: Int64
    public var jitterP99Us: Int64
    public var lateReadings: UInt64
    /// The longest interval between the starts of two cycles since start, reloads included, ms
    /// (nil, and left out, from a bessd that predates it).
    public var longestGapMs: Double?
    public var overruns: UInt64
    public var periodMs: Int
    public var realtime: Bool
    public var startedOnReadings: UInt64

    public init(periodMs: Int, cycles: UInt64, overruns: UInt64, lateReadings: UInt64, startedOnReadings: UInt64,
                alarmCycles: UInt64, jitterP50Us: Int64, jitterP99Us: Int64, jitterMaxUs: Int64, realtime: Bool,
                longestGapMs: Double? = nil) {
        self.longestGapMs = longestGapMs
        self.periodMs = periodMs
        self.cycles = cycles
        self.overruns = overruns
        self.lateReadings = lateReadings
        self.startedOnReadings = startedOnReadings
        self.alarmCycles = alarmCycles
        self.jitterP50Us = jitterP50Us
        self.jitterP99Us = jitterP99Us
        self.jitterMaxUs = jitterMaxUs
        self.realtime = realtime
    }

    enum CodingKeys: String, CodingKey {
        case cycles, overruns, realtime
        case alarmCycles = "alarm_cycles", jitterMaxUs = "jitter_max_us", jitterP50Us = "jitter_p50_us"
        case jitterP99Us = "jitter_p99_us", lateReadings = "late_readings", periodMs = "period_ms"
        case startedOnReadings = "started_on_readings", longestGapMs = "longest_gap_ms"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.alarmCycles, alarmCycles)
        json.field(CodingKeys.cycles, cycles)
        json.field(CodingKeys.jitterMaxUs, jitterMaxUs)
        json.field(CodingKeys.jitterP50Us, jitterP50Us)
        json.field(CodingKeys.jitterP99Us, jitterP99Us)
        json.field(CodingKeys.lateReadings, lateReadings)
        json.field(CodingKeys.longestGapMs, ifPresent: longestGapMs)
        json.field(CodingKeys.overruns, overruns)
        json.field(CodingKeys.periodMs, periodMs)
        json.field(CodingKeys.realtime, realtime)
        json.field(CodingKeys.startedOnReadings, startedOnReadings)
        json.endObject()
    }
}

/// The system clock as settlement sees it (`CLOCK_UNSYNCED`, `CLOCK_STEPPED`).
public struct ClockReply: Codable, Sendable, Equatable, JSONWritable {
    /// `CLOCK_UNSYNCED` while the clock is known not to be synchronised, else nil.
    public var code: String?
    /// The last wall-clock step's size, nil before the first.
    public var lastStepS: Double?
    public var source: String
    public var steps: Int
    /// nil when nothing bessd may read says.
    public var synchronized: Bool?

    public init(synchronized: Bool?, source: String, code: String?, steps: Int, lastStepS: Double?) {
        self.synchronized = synchronized
        self.source = source
        self.code = code
        self.steps = steps
        self.lastStepS = lastStepS
    }

    enum CodingKeys: String, CodingKey { case code, source, steps, synchronized, lastStepS = "last_step_s" }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.code, code)
        json.field(CodingKeys.lastStepS, lastStepS)
        json.field(CodingKeys.source, source)
        json.field(CodingKeys.steps, steps)
        json.field(CodingKeys.synchronized, synchronized)
        json.endObject()
    }
}

/// The uplink's transport, connection, last acknowledgement and backlog. Without a sender (its
/// transport could not be built) only the spool's fields are there.
public struct UplinkReply: Codable, Sendable, Equatable, JSONWritable {
    public var acknowledgedSeq: UInt64?
    public var backlogRecords: UInt64?
    /// nil when no sender runs.
    public var connected: Bool?
    /// When the broker last acknowledged a batch (MQTT only).
    public var lastAckUnix: Double?
    public var lastError: String?
    public var site: String
    public var transport: String
    public var url: String

    public init(transport: String, url: String, site: String, backlogRecords: UInt64? = nil, acknowledgedSeq: UInt64? = nil,
                connected: Bool? = nil, lastAckUnix: Double? = nil, lastError: String? = nil) {
        self.transport = transport
        self.url = url
        self.site = site
        self.backlogRecords = backlogRecords
        self.acknowledgedSeq = acknowledgedSeq
        self.connected = connected
        self.lastAckUnix = lastAckUnix
        self.lastError = lastError
    }

    enum CodingKeys: String, CodingKey {
        case connected, site, transport, url
        case acknowledgedSeq = "acknowledged_seq", backlogRecords = "backlog_records", lastAckUnix = "last_ack_unix"
        case lastError = "last_error"
    }

    /// With a sender, `last_error` is always written (null when none) and, over MQTT,
    /// `last_ack_unix` too; without one neither is.
    public func write(to json: inout JSONText) {
        let sending = connected != nil
        json.beginObject()
        json.field(CodingKeys.acknowledgedSeq, ifPresent: acknowledgedSeq)
        json.field(CodingKeys.backlogRecords, ifPresent: backlogRecords)
        json.field(CodingKeys.connected, ifPresent: connected)
        if sending && transport == "mqtt" { json.field(CodingKeys.lastAckUnix, lastAckUnix) }
        if sending { json.field(CodingKeys.lastError, lastError) }
        json.field(CodingKeys.site, site)
        json.field(CodingKeys.transport, transport)
        json.field(CodingKeys.url, url)
        json.endObject()
    }
}

/// The grid operator's limit and SCADA's setpoint in force, with when they revert (`status`, `site`).
public struct GridOperatorReply: Codable, Sendable, Equatable, JSONWritable {
    /// The cap on the units' summed power as ramped; nil when none.
    public var capW: Double?
    public var inputLimitPercent: Double?
    /// The relay contacts: `{"configured": false}`, or configured with whether their module is lost.
    public var inputs: InputsReply
    public var limitPercent: Double?
    public var limiting: Bool
    public var scadaLimit: ScadaLimitReply?
    public var scadaSetpoint: TimedPowerReply?

    public init(inputs: InputsReply, limitPercent: Double?, capW: Double?, limiting: Bool, scadaLimit: ScadaLimitReply?,
                inputLimitPercent: Double?, scadaSetpoint: TimedPowerReply?) {
        self.inputs = inputs
        self.limitPercent = limitPercent
        self.capW = capW
        self.limiting = limiting
        self.scadaLimit = scadaLimit
        self.inputLimitPercent = inputLimitPercent
        self.scadaSetpoint = scadaSetpoint
    }

    enum CodingKeys: String, CodingKey {
        case inputs, limiting
        case capW = "cap_w", inputLimitPercent = "input_limit_percent", limitPercent = "limit_percent"
        case scadaLimit = "scada_limit", scadaSetpoint = "scada_setpoint"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.capW, capW)
        json.field(CodingKeys.inputLimitPercent, inputLimitPercent)
        json.field(CodingKeys.inputs, inputs)
        json.field(CodingKeys.limitPercent, limitPercent)
        json.field(CodingKeys.limiting, limiting)
        json.field(CodingKeys.scadaLimit, scadaLimit)
        json.field(CodingKeys.scadaSetpoint, scadaSetpoint)
        json.endObject()
    }
}

/// `{"configured": true, "lost": false}` or `{"configured": false}`.
public struct InputsReply: Codable, Sendable, Equatable, JSONWritable {
    public var configured: Bool
    /// nil when not configured.
    public var lost: Bool?
    public init(configured: Bool, lost: Bool?) {
        self.configured = configured
        self.lost = lost
    }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.configured, configured)
        json.field(CodingKeys.lost, ifPresent: lost)
        json.endObject()
    }
}

/// SCADA's `WMaxLimPct` in force: the percent, the seconds until it reverts, whether it is the reversion value.
public struct ScadaLimitReply: Codable, Sendable, Equatable, JSONWritable {
    public var percent: Double?
    public var remainingS: Double?
    public var reverted: Bool
    public init(percent: Double?, remainingS: Double?, reverted: Bool) {
        self.percent = percent
        self.remainingS = remainingS
        self.reverted = reverted
    }
    enum CodingKeys: String, CodingKey { case percent, reverted, remainingS = "remaining_s" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.percent, percent)
        json.field(CodingKeys.remainingS, remainingS)
        json.field(CodingKeys.reverted, reverted)
        json.endObject()
    }
}


/// The grid operator's AGC (`status`, `site`; docs/design/0008-agc.md): whether it is in service,
/// the target received and what the site follows now, how long the signal stays fresh, the declared
/// regulation band and the ramp toward a new target. W are + = discharge.
public struct AGCReply: Codable, Sendable, Equatable, JSONWritable {
    public var configured: Bool
    /// The schedule as ramped toward the target (null when not following).
    public var followedW: Double?
    public var following: Bool
    public var inService: Bool
    public var lowerLimitW: Double?
    public var rampWPerS: Double?
    /// Seconds the signal stays fresh without a refresh (0 when out of service or lost).
    public var remainingS: Double
    /// `AGC_SIGNAL_LOST` stands: in service, not refreshed, the schedule decides.
    public var signalLost: Bool
    /// The last target accepted (null before the first, or out of service).
    public var targetW: Double?
    public var upperLimitW: Double?

    public init(configured: Bool, inService: Bool, targetW: Double?, following: Bool, followedW: Double?, signalLost: Bool,
                remainingS: Double, upperLimitW: Double?, lowerLimitW: Double?, rampWPerS: Double?) {
        self.configured = configured
        self.inService = inService
        self.targetW = targetW
        self.following = following
        self.followedW = followedW
        self.signalLost = signalLost
        self.remainingS = remainingS
        self.upperLimitW = upperLimitW
        self.lowerLimitW = lowerLimitW
        self.rampWPerS = rampWPerS
    }

    enum CodingKeys: String, CodingKey {
        case configured, following
        case followedW = "followed_w", inService = "in_service", lowerLimitW = "lower_limit_w", rampWPerS = "ramp_w_per_s"
        case remainingS = "remaining_s", signalLost = "signal_lost", targetW = "target_w", upperLimitW = "upper_limit_w"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.configured, configured)
        json.field(CodingKeys.followedW, followedW)
        json.field(CodingKeys.following, following)
        json.field(CodingKeys.inService, inService)
        json.field(CodingKeys.lowerLimitW, lowerLimitW)
        json.field(CodingKeys.rampWPerS, rampWPerS)
        json.field(CodingKeys.remainingS, remainingS)
        json.field(CodingKeys.signalLost, signalLost)
        json.field(CodingKeys.targetW, targetW)
        json.field(CodingKeys.upperLimitW, upperLimitW)
        json.endObject()
    }
}
