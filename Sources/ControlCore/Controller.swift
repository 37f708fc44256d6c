public import GridSupport

/// Why allowed power in one direction is what it is.
public enum LimitReason: Sendable, Equatable, CustomStringConvertible {
    /// Nothing below the unit's rating.
    case rating
    /// The BMS's current limit × pack voltage.
    case bms
    /// A BMS value that the limit depends on is absent or stale.
    case bmsAbsent
    /// The inverter's reading is absent or stale.
    case inverterAbsent
    /// An interlock rule (derate, trip or latch).
    case interlock(TripCode)
    /// Rising towards the target at the configured ramp rate.
    case ramp
    /// BMS communication not yet confirmed.
    case notConfirmed
    /// Operator or aggregator standby.
    case standby
    /// The unit's volt-watt limit, or under reactive priority the room its reactive power leaves in
    /// `VAMax`, as the reactive stage found them in the previous period (SiteReactive.swift).
    case voltWatt

    public var description: String {
        switch self {
        case .rating: "rating"
        case .bms: "bms"
        case .bmsAbsent: "bms_absent"
        case .inverterAbsent: "inverter_absent"
        case .interlock(let code): "\(code.name)"
        case .ramp: "ramp"
        case .notConfirmed: "not_confirmed"
        case .standby: "standby"
        case .voltWatt: "volt_watt"
        }
    }
}

/// Settings of one battery unit.
public struct UnitSettings: Sendable {
    /// Rated active power (the seed's `max_power_kw`).
    public var rating: Watts
    /// Usable energy (the seed's `capacity_kwh`).
    public var capacity: WattHours
    /// The maximum age of BMS data.
    public var bmsStaleAfter: Duration
    /// The maximum age of inverter data.
    public var inverterStaleAfter: Duration
    /// How long after start BMS data may take to arrive for the first time before its age counts
    /// (BMS_COMM_LOST then after `bmsStaleAfter` more). Power is zero meanwhile all the same: the
    /// unit is `starting` until the BMS is confirmed.
    public var bmsStartupGrace: Duration = .zero
    /// The same for the inverter's first reading (INVERTER_COMM_LOST).
    public var inverterStartupGrace: Duration = .zero
    /// The interlock table.
    public var rules: [InterlockRule]
    /// Window for the rise rate of the pack temperature (frame 0x356, 0.1 °C resolution).
    public var temperatureRiseWindow: Duration
    /// Window for the rise rate of the hottest cell (frame 0x373, whole kelvin). A least-squares
    /// slope moves by up to 1.5 K / window when a steady reading ticks over one kelvin, so the window
    /// must be long enough that one tick stays well under the THERMAL_RUNAWAY threshold: 30 s bounds
    /// it at 0.05 °C/s (the rule's hysteresis) against 0.1 °C/s to trip.
    public var cellTemperatureRiseWindow: Duration
    /// `grid_integration.reactive_power`: the unit's reactive mode and volt-watt, stepped by
    /// `ReactiveStage`; nil: none, and bessd leaves the inverter's reactive power alone.
    public var gridSupport: GridSupportSettings? = nil
    /// `grid_integration.reactive_power.nominal_voltage_v` (line to neutral, V): the base of the
    /// unit's per-unit voltage; nil: none is known (`UnitDecision.voltagePU` nil).
    public var nominalVoltageV: Double? = nil
    /// `max_apparent_power_kva` in VA (`VAMax`), which P and Q share; nil: `rating`.
    public var apparentPowerRating: Double? = nil

    public init(
        rating: Watts, capacity: WattHours, bmsStaleAfter: Duration = .seconds(3),
        inverterStaleAfter: Duration = .seconds(3), rules: [InterlockRule]? = nil,
        temperatureRiseWindow: Duration = .seconds(10), cellTemperatureRiseWindow: Duration = .seconds(30)
    ) {
        self.rating = rating
        self.capacity = capacity
        self.bmsStaleAfter = bmsStaleAfter
        self.inverterStaleAfter = inverterStaleAfter
        self.rules = rules ?? InterlockRule.defaultTable(
            InterlockDefaults(bmsStaleAfter: bmsStaleAfter, inverterStaleAfter: inverterStaleAfter))
        self.temperatureRiseWindow = temperatureRiseWindow
        self.cellTemperatureRiseWindow = cellTemperatureRiseWindow
    }
}

/// Settings shared by every unit of a site.
public struct ControlSettings: Sendable {
    public var droop: DroopSettings
    /// How fast allowed power may rise, % of rating per second (it falls at once).
    public var limitRampPercentPerSecond: Double
    /// How fast the schedule (dispatch, override or base) may change, % of rating per second.
    /// Frequency response does not pass through this ramp.
    public var scheduleRampPercentPerSecond: Double
    /// Grid frequency older than this is absent.
    public var frequencyStaleAfter: Duration
    /// Window for the rate of change of frequency.
    public var rocofWindow: Duration
    /// Settlement block length.
    public var energyBlockLength: Duration
    /// When a frequency excursion is an event, and the assessment's tolerance (FrequencyEvents.swift).
    public var frequencyEvents = FrequencyEventSettings()

    public init(
        droop: DroopSettings = .seedDefault, limitRampPercentPerSecond: Double = 10,
        scheduleRampPercentPerSecond: Double = 10, frequencyStaleAfter: Duration = .seconds(2),
        rocofWindow: Duration = .milliseconds(500), energyBlockLength: Duration = .seconds(900)
    ) {
        self.droop = droop
        self.limitRampPercentPerSecond = limitRampPercentPerSecond
        self.scheduleRampPercentPerSecond = scheduleRampPercentPerSecond
        self.frequencyStaleAfter = frequencyStaleAfter
        self.rocofWindow = rocofWindow
        self.energyBlockLength = energyBlockLength
    }
}

/// Site-wide values of one cycle, computed once and shared by every unit.
public struct SiteConditions: Sendable {
    /// Fresh grid frequency, or `nil`.
    public var frequency: Hertz?
    /// Frequency minus nominal.
    public var frequencyDeviation: Double?
    /// |df/dt| in Hz/s.
    public var rocof: Double?
    /// Age of the frequency (seconds), `nil` when no frequency is expected.
    public var frequencyAge: Double?
    /// The connection point's voltage, p.u., from a fresh meter (`ConnectionPoint.voltagePU`).
    public var gridVoltagePU: Double?
    public init(frequency: Hertz? = nil, frequencyDeviation: Double? = nil, rocof: Double? = nil, frequencyAge: Double? = nil) {
        self.frequency = frequency
        self.frequencyDeviation = frequencyDeviation
        self.rocof = rocof
        self.frequencyAge = frequencyAge
    }
}

/// What the control law decided for one unit in one cycle.
public struct UnitDecision: Sendable, Equatable {
    public var state: UnitState = .starting
    /// The setpoint to write, + = discharge. Always inside `[-allowedCharge, +allowedDischarge]`.
    public var setpoint: Watts = .zero
    /// What dispatch (or base) plus droop asked for, before limits.
    public var request: Watts = .zero
    /// The schedule after its ramp (or the latched pre-disturbance power during a frequency event).
    public var base: Watts = .zero
    /// The frequency response part.
    public var droop: Watts = .zero
    /// Allowed charge power, a magnitude.
    public var allowedCharge: Watts = .zero
    /// Allowed discharge power, a magnitude.
    public var allowedDischarge: Watts = .zero
    public var chargeLimitedBy: LimitReason = .notConfirmed
    public var dischargeLimitedBy: LimitReason = .notConfirmed
    /// Interlock rules acting now.
    public var activeCodes = TripCodeSet()
    /// Latched rules.
    public var latchedCodes = TripCodeSet()
    /// A latched fault asks for the unit to be disconnected.
    public var disconnectRequested = false
    /// False when the unit is held at its own command (override, or a dispatch for it alone); true
    /// when it shares the site's request.
    public var pooled = true
    /// Why the site's allocation gave it this setpoint.
    public var share: ShareReason = .idle
    /// True while an aggregator dispatch is in force for the unit (the site application then rests).
    public var dispatched = false
    /// State of charge, if fresh.
    public var soc: Percent?
    /// Measured inverter power, if fresh.
    public var measuredPower: Watts?
    /// The reactive setpoint to write, var (+ = injecting, over-excited); nil: bessd leaves the
    /// inverter's reactive power alone (no reactive mode configured and no party asking).
    public var reactive: Double? = nil
    /// What sets `reactive` (the configured mode, `staleVoltage`, `stopped`, or `off`).
    public var reactiveSource = ReactiveSource.off
    /// The inverter's AC voltage in p.u. of `UnitSettings.nominalVoltageV` (`VoltageScale.perUnit`);
    /// nil when the reading is stale, has no voltage, or the voltage is implausible.
    public var voltagePU: Double? = nil
    public init() {}
}

/// The control law for one battery unit: assess → control, a pure function of its inputs, its own
/// state and the instant it runs at.
public struct UnitController: Sendable {
    public let index: Int
    public let settings: UnitSettings
    public private(set) var interlocks: InterlockEngine
    /// What the unit has become by running that no setting shapes: a reload carries it whole.
    var running = UnitRunningState()
    public internal(set) var state: UnitState { get { running.state } set { running.state = newValue } }
    public internal(set) var bmsConfirmed: Bool { get { running.bmsConfirmed } set { running.bmsConfirmed = newValue } }
    public internal(set) var decision: UnitDecision { get { running.decision } set { running.decision = newValue } }
    /// Who holds the unit in standby (operator, site operator, aggregator).
    public var holds: ModeHolds { get { running.holds } set { running.holds = newValue } }
    /// The effective mode of the last step: standby while any party asks for it.
    public internal(set) var mode: OperatingMode { get { running.mode } set { running.mode = newValue } }
    /// Commands ignored because they were not finite numbers.
    public internal(set) var rejectedCommands: UInt64 { get { running.rejectedCommands } set { running.rejectedCommands = newValue } }

    var droop: DroopController
    var metrics = MetricFrame()
    /// Rise rate of the pack temperature (0x356). One estimator per source: a slope across two
    /// sources reads their offset as a rise.
    var packTemperatureRise: SlopeEstimator
    /// Rise rate of the hottest cell (0x373).
    var cellTemperatureRise: SlopeEstimator
    var energy: EnergyAccumulator
    /// Whether the system clock is synchronised now, and whether it stepped in this cycle (set by
    /// the site each cycle; blocks say so).
    var clockSynchronized = true
    var clockStepped = false
    /// Set by the site before each step: the pooled units' allowed power over their rating (last
    /// cycle), which bounds this unit's frequency response so the pool's total never winds past what
    /// the pool can deliver. Nil: the unit's own allowed power bounds it.
    var poolFraction: (charge: Double, discharge: Double)?
    /// What the last step could deliver before the rise ramp (charge, discharge), and its rating: the
    /// site sums these into `poolFraction`.
    var capability = (charge: 0.0, discharge: 0.0, rating: 0.0)
    /// Set by the site before each step: the utility's `opModFreqDroop` in force, applied over the
    /// configured droop settings; nil: the configured droop.
    var utilityDroop: UtilityDroop?
    /// Set by the site before each step: the reactive stage's cap on discharge from the previous
    /// period, W (`ReactiveStage.dischargeCap`); infinite: none.
    var reactiveCap = Double.infinity
    let startedAt: MonotonicInstant

    public init(index: Int, settings: UnitSettings, control: ControlSettings, startedAt: MonotonicInstant) {
        self.index = index
        self.settings = settings
        interlocks = InterlockEngine(rules: settings.rules)
        droop = DroopController(settings: control.droop)
        packTemperatureRise = SlopeEstimator(window: settings.temperatureRiseWindow)
        cellTemperatureRise = SlopeEstimator(window: settings.cellTemperatureRiseWindow)
        energy = EnergyAccumulator(unit: index, blockLength: control.energyBlockLength)
        self.startedAt = startedAt
    }

    /// The configured rating, W (0 when not a number): how a site setpoint is shared out.
    var ratingForShare: Double { settings.rating.value.isFinite ? max(0, settings.rating.value) : 0 }

    /// The energy block being accumulated now.
    public var currentEnergyBlock: EnergyBlock? { energy.current }

    /// One cycle. Returns the energy block that closed during it, if any.
    public mutating func step(
        _ inputs: UnitInputs, site: SiteConditions, control: ControlSettings, now: MonotonicInstant,
        elapsedSeconds: Double, wallClock: Double, events: inout EventRing
    ) -> EnergyBlock? {
        step(inputs, asked: inputs.dispatch, site: site, control: control, now: now, elapsedSeconds: elapsedSeconds,
             wallClock: wallClock, events: &events)
    }

    /// One cycle of the unit following `asked`, what `RequestArbiter` resolved for it (its part of
    /// the site's request, or its own aggregator dispatch); an operator override in `inputs` outranks it.
    mutating func step(
        _ inputs: UnitInputs, asked: PowerCommand?, site: SiteConditions, control: ControlSettings, now: MonotonicInstant,
        elapsedSeconds: Double, wallClock: Double, events: inout EventRing
    ) -> EnergyBlock? {
        let dt = elapsedSeconds.isFinite ? min(max(0, elapsedSeconds), 10) : 0
        let bms = inputs.bms
        let limits = bms.limits.fresh(at: now, maxAge: settings.bmsStaleAfter)
        let status = bms.status.fresh(at: now, maxAge: settings.bmsStaleAfter)
        let measurements = bms.measurements.fresh(at: now, maxAge: settings.bmsStaleAfter)
        let inverter = inputs.inverter.fresh(at: now, maxAge: settings.inverterStaleAfter)

        // 2. Assess.
        fillMetrics(inputs, site: site, now: now, limits: limits, status: status, measurements: measurements,
                    inverter: inverter)
        let verdict = interlocks.evaluate(metrics, now: now, unit: index, events: &events)
        if limits != nil, status != nil, measurements != nil { bmsConfirmed = true }
        if holds.remoteUntil.map({ $0 <= now }) == true {
            holds.remoteUntil = nil
            holds.remoteEmergency = false
        }
        mode = holds.mode(at: now)
        let previous = state
        state = state.next(.init(bmsConfirmed: bmsConfirmed, mode: mode, verdict: verdict))
        if state != previous {
            events.push(ControlEvent(kind: .stateChanged, unit: index, state: state, at: now))
        }

        // 3. Control: allowed power, schedule, droop, setpoint.
        var rating = settings.rating.value.isFinite ? max(0, settings.rating.value) : 0
        if let nameplate = inverter?.ratedPower?.value, nameplate.isFinite, nameplate > 0 {
            rating = min(rating, nameplate)
        }
        let (chargeTarget, chargeReason) = target(
            direction: .charge, rating: rating, limits: limits, measurements: measurements,
            inverterFresh: inverter != nil, verdict: verdict)
        var (dischargeTarget, dischargeReason) = target(
            direction: .discharge, rating: rating, limits: limits, measurements: measurements,
            inverterFresh: inverter != nil, verdict: verdict)
        if reactiveCap < dischargeTarget {
            dischargeTarget = max(0, reactiveCap)
            dischargeReason = .voltWatt
        }
        capability = (chargeTarget, dischargeTarget, rating)
        let rise = max(0, control.limitRampPercentPerSecond) / 100 * rating * dt
        let chargeRamped = Self.rampLimit(&running.chargeLimit, toward: chargeTarget, rise: rise)
        let dischargeRamped = Self.rampLimit(&running.dischargeLimit, toward: dischargeTarget, rise: rise)

        let command = activeCommand(inputs, asked: asked, now: now, events: &events)
        let step = max(0, control.scheduleRampPercentPerSecond) / 100 * rating * dt
        running.schedule += ControlMath.clamp(command - running.schedule, -step, step)
        if !running.schedule.isFinite { running.schedule = 0 }

        // An operator override acts at once even during a frequency event; dispatch waits for the
        // event to end (IEEE 1547's latched pre-disturbance power).
        let overriding = inputs.override.map { $0.expiresAt > now && $0.power.value.isFinite } ?? false
        let pinned = overriding
            || (asked.map { $0.pinned && $0.expiresAt > now && $0.power.value.isFinite } ?? false)
        // A pooled unit's response is bounded by its fair part of the pool's room, so a tripped or
        // limited unit's share is still asked for and the others take it up.
        let chargeBound = pinned ? chargeTarget : (poolFraction.map { rating * $0.charge } ?? chargeTarget)
        let dischargeBound = pinned ? dischargeTarget : (poolFraction.map { rating * $0.discharge } ?? dischargeTarget)
        droop.retune(utilityDroop.map { $0.applied(to: control.droop) } ?? control.droop)
        let (base, droopPower) = droop.step(
            frequency: site.frequency, schedule: Watts(running.schedule), rating: Watts(rating),
            allowedCharge: Watts(Self.windupBound(chargeBound, rating: rating)),
            allowedDischarge: Watts(Self.windupBound(dischargeBound, rating: rating)), elapsedSeconds: dt,
            followSchedule: overriding)
        // The schedule stays where the base is: held at the latched pre-disturbance power during an
        // event, so that when the event ends it ramps from there to the command instead of jumping.
        running.schedule = base.value
        let request = base.value + droopPower.value
        let setpoint = ControlMath.clamp(request, -running.chargeLimit, running.dischargeLimit)

        var d = UnitDecision()
        d.state = state
        d.setpoint = Watts(setpoint.isFinite ? setpoint : 0)
        d.request = Watts(request.isFinite ? request : 0)
        d.base = base
        d.droop = droopPower
        d.allowedCharge = Watts(running.chargeLimit)
        d.allowedDischarge = Watts(running.dischargeLimit)
        d.chargeLimitedBy = chargeRamped ? .ramp : chargeReason
        d.dischargeLimitedBy = dischargeRamped ? .ramp : dischargeReason
        d.activeCodes = verdict.active
        d.latchedCodes = verdict.latched
        d.disconnectRequested = verdict.disconnectRequested
        d.pooled = !pinned
        d.share = pinned ? .held : .idle
        d.dispatched = !overriding && (asked.map { $0.expiresAt > now && $0.power.value.isFinite } ?? false)
        d.soc = status?.soc
        d.measuredPower = inverter?.activePower
        let perUnit = VoltageScale.perUnit(inverter?.voltage, nominal: settings.nominalVoltageV)
        d.voltagePU = perUnit.isNaN ? nil : perUnit
        decision = d

        // 5. Account.
        return energy.integrate(power: inverter?.activePower, elapsedSeconds: dt, wallClock: wallClock, synchronized: clockSynchronized,
                                stepped: clockStepped)
    }

    /// The site's allocation sets the unit's setpoint (already inside its allowed power).
    mutating func allocate(_ setpoint: Double, reason: ShareReason) {
        decision.setpoint = Watts(setpoint.isFinite ? setpoint : 0)
        decision.share = reason
    }

    /// An operator reset of latched faults.
    public mutating func reset(now: MonotonicInstant, events: inout EventRing) -> ResetOutcome {
        interlocks.reset(now: now, unit: index, events: &events)
    }

    /// Restores latches persisted by an earlier run; call before the first step.
    public mutating func restoreLatches(_ codes: TripCodeSet, since: MonotonicInstant) {
        for code in codes { interlocks.restoreLatch(code, since: since) }
        decision.latchedCodes = interlocks.latchedCodes
        decision.activeCodes.bits |= decision.latchedCodes.bits
    }

    /// What the frequency response may not wind past in one direction: the power the unit could
    /// deliver now (BMS limit × derates, before the rise ramp). Zero is a gate, not a capability
    /// (a trip, stale data, standby, start-up): the response then keeps tracking within the rating,
    /// so that when the gate opens the limit ramp alone shapes the return, as it does without an event.
    static func windupBound(_ allowed: Double, rating: Double) -> Double {
        allowed.isFinite && allowed > 0 ? allowed : rating
    }

    /// Moves `limit` to `target`: down at once, up by at most `rise`. Returns true when the ramp held
    /// it below the target.
    static func rampLimit(_ limit: inout Double, toward target: Double, rise: Double) -> Bool {
        if !limit.isFinite || target <= limit {
            limit = target
            return false
        }
        let next = limit + rise
        if next >= target {
            limit = target
            return false
        }
        limit = next
        return true
    }

    private func target(
        direction: PowerDirection, rating: Double, limits: BMSLimits?, measurements: BMSMeasurements?,
        inverterFresh: Bool, verdict: InterlockVerdict
    ) -> (Double, LimitReason) {
        switch state {
        case .starting: return (0, .notConfirmed)
        case .standby: return (0, .standby)
        case .faulted, .tripped, .running, .limited: break
        }
        let factor = direction == .charge ? verdict.chargeFactor : verdict.dischargeFactor
        let code = direction == .charge ? verdict.chargeLimitedBy : verdict.dischargeLimitedBy
        if factor <= 0 || !factor.isFinite { return (0, code.map(LimitReason.interlock) ?? .notConfirmed) }
        guard let limits, let measurements else { return (0, .bmsAbsent) }
        guard inverterFresh else { return (0, .inverterAbsent) }
        let current = direction == .charge ? limits.chargeCurrentLimit.value : limits.dischargeCurrentLimit.value
        let voltage = measurements.packVoltage.value
        var bmsPower = current * voltage
        if !bmsPower.isFinite || current < 0 || voltage < 0 { bmsPower = 0 }
        var value = rating
        var reason = LimitReason.rating
        if bmsPower < value {
            value = bmsPower
            reason = .bms
        }
        if factor < 1, let code {
            let derated = value * factor
            if derated < value {
                value = derated
                reason = .interlock(code)
            }
        }
        return (max(0, value), reason)
    }

    /// The command in force: an unexpired override, else an unexpired dispatch, else zero (the base).
    /// A command that is not a finite number is ignored, counted, and reported once.
    private mutating func activeCommand(
        _ inputs: UnitInputs, asked: PowerCommand?, now: MonotonicInstant, events: inout EventRing
    ) -> Double {
        var rejectedNow = false
        var chosen: Double?
        if let command = inputs.override, command.expiresAt > now {
            if command.power.value.isFinite { chosen = command.power.value } else { rejectedNow = true }
        }
        if chosen == nil, let command = asked, command.expiresAt > now {
            if command.power.value.isFinite { chosen = command.power.value } else { rejectedNow = true }
        }
        if rejectedNow {
            rejectedCommands &+= 1
            if !running.rejecting { events.push(ControlEvent(kind: .commandRejected, unit: index, at: now)) }
        }
        running.rejecting = rejectedNow
        return chosen ?? 0
    }

    private mutating func fillMetrics(
        _ inputs: UnitInputs, site: SiteConditions, now: MonotonicInstant, limits: BMSLimits?,
        status: BMSStatus?, measurements: BMSMeasurements?, inverter: InverterReading?
    ) {
        metrics.clear()
        let bms = inputs.bms
        let cellsStamped = bms.cells
        let cells = cellsStamped.fresh(at: now, maxAge: settings.bmsStaleAfter)
        if let cells {
            metrics[.cellVoltageMax] = cells.maxCellVoltage.value
            metrics[.cellVoltageMin] = cells.minCellVoltage.value
            metrics[.cellVoltageSpread] = cells.maxCellVoltage.value - cells.minCellVoltage.value
            metrics[.temperatureMax] = cells.maxTemperature.value
            metrics[.temperatureMin] = cells.minTemperature.value
        } else if let measurements {
            metrics[.temperatureMax] = measurements.temperature.value
            metrics[.temperatureMin] = measurements.temperature.value
        }
        // Each temperature source feeds its own rise-rate estimator, stamped when it was measured,
        // and a stale source starts over: a rate never spans two sources or a gap. The rule reads
        // the faster of the fresh sources' rates: the hottest cell's (0x373, the first to see one
        // cell run away; a 30 s window against its whole-kelvin steps) and the pack's (0x356, 0.1 °C,
        // a 10 s window that sees a whole-pack rise sooner).
        if let stamped = cellsStamped, cells != nil {
            cellTemperatureRise.add(stamped.value.maxTemperature.value, at: stamped.takenAt)
        } else {
            cellTemperatureRise.reset()
        }
        if let stamped = bms.measurements, measurements != nil {
            packTemperatureRise.add(stamped.value.temperature.value, at: stamped.takenAt)
        } else {
            packTemperatureRise.reset()
        }
        let cellRate = cells != nil ? cellTemperatureRise.leastSquaresSlope(at: now) : nil
        let packRate = measurements != nil ? packTemperatureRise.leastSquaresSlope(at: now) : nil
        if let cellRate, let packRate {
            metrics[.temperatureRiseRate] = max(cellRate, packRate)
        } else {
            metrics[.temperatureRiseRate] = cellRate ?? packRate
        }
        if let measurements {
            metrics[.packVoltage] = measurements.packVoltage.value
            if let limits {
                let current = measurements.packCurrent.value
                metrics[.chargeCurrentPercentOfLimit] =
                    max(0, current) / max(1, limits.chargeCurrentLimit.value) * 100
                metrics[.dischargeCurrentPercentOfLimit] =
                    max(0, -current) / max(1, limits.dischargeCurrentLimit.value) * 100
            }
        }
        if let status { metrics[.soc] = status.soc.value }
        if let protection = bms.protection.fresh(at: now, maxAge: settings.bmsStaleAfter) {
            metrics[.bmsProtection] = protection.protections.subtracting(.systemError).isEmpty ? 0 : 1
            metrics[.bmsAlarm] = protection.alarms.isEmpty ? 0 : 1
            metrics[.bmsCritical] = protection.protections.contains(.systemError) ? 1 : 0
        }
        if let requests = bms.requests.fresh(at: now, maxAge: settings.bmsStaleAfter) {
            metrics[.bmsChargeDisabled] = requests.chargeEnabled ? 0 : 1
            metrics[.bmsDischargeDisabled] = requests.dischargeEnabled ? 0 : 1
        }
        if let inverter { metrics[.inverterFault] = inverter.faulted ? 1 : 0 }
        metrics[.frequencyDeviation] = site.frequencyDeviation
        metrics[.rocof] = site.rocof
        metrics[.frequencyDataAge] = site.frequencyAge
        metrics[.acVoltage] = VoltageScale.perUnit(inverter?.voltage, nominal: settings.nominalVoltageV)
        metrics[.gridVoltage] = site.gridVoltagePU
        let bmsGrace = settings.bmsStartupGrace.secondsDouble
        metrics[.bmsDataAge] = max(age(bms.limits?.takenAt, now, grace: bmsGrace), age(bms.status?.takenAt, now, grace: bmsGrace),
                                   age(bms.measurements?.takenAt, now, grace: bmsGrace))
        metrics[.inverterDataAge] = age(inputs.inverter?.takenAt, now,
                                        grace: inputs.inverterUnreachable ? 0 : settings.inverterStartupGrace.secondsDouble)
        // Optional groups: judged only while the required ones are fresh (else BMS_COMM_LOST speaks),
        // and only those the BMS is expected to send: an extension its protocol does not define (0x373
        // of a genuine Pylontech) is missing only once it has been seen.
        if limits != nil, status != nil, measurements != nil {
            var missing = BMSGroups()
            if cells == nil { missing.insert(.cells) }
            if bms.protection.fresh(at: now, maxAge: settings.bmsStaleAfter) == nil { missing.insert(.protection) }
            if bms.requests.fresh(at: now, maxAge: settings.bmsStaleAfter) == nil { missing.insert(.requests) }
            metrics[.bmsGroupsMissing] = Double(missing.intersection(bms.expectedGroups).rawValue)
        }
    }

    /// Seconds since `instant`; for a value never received, since start-up less the start-up grace.
    private func age(_ instant: MonotonicInstant?, _ now: MonotonicInstant, grace: Double = 0) -> Double {
        guard let instant else { return max(0, now.seconds(since: startedAt) - grace) }
        return now.seconds(since: instant)
    }
}

/// A unit's running state that no setting shapes: its state machine, holds, ramps and last
/// decision. `UnitController.adopt` carries it whole across a configuration reload.
struct UnitRunningState: Sendable {
    var state: UnitState = .starting
    var bmsConfirmed = false
    var decision = UnitDecision()
    var holds = ModeHolds()
    var mode: OperatingMode = .auto
    var rejectedCommands: UInt64 = 0
    /// Whether the last step rejected a command (an event is logged on the first of a run).
    var rejecting = false
    /// The allowed charge and discharge power as ramped, W.
    var chargeLimit = 0.0
    var dischargeLimit = 0.0
    /// The schedule as ramped, W.
    var schedule = 0.0
}

/// The site's running state that no setting shapes, carried whole across a reload by
/// `SiteController.adopt`: time goes on from the old controller's last step (so ramps do not see one
/// long step), and SCADA's commands, the relay contacts' limit, the operator cap as ramped and the
/// clock's history are the site's, not the configuration's.
struct SiteRunningState: Sendable {
    var lastStep: MonotonicInstant?
    var cycles: UInt64 = 0
    var commands = SiteCommands()
    /// The grid operator's AGC, and whether `AGC_SIGNAL_LOST` stands.
    var agc = AGCCommand()
    var agcLost = false
    var inputLimitPercent: Double?
    var operatorCap = Double.infinity
    /// The utility's limits as ramped (docs/design/0009-utility-limits.md).
    var utility = UtilityRamps()
    var clockSynchronized = true
    var clockSteps = 0
    var lastClockStep = Duration.zero
    var lastClockOffset: Double?
}

extension UnitController {
    /// Takes over the running state of `other` (the same unit under its previous settings) after a
    /// configuration reload: ramps, schedule, droop, energy block, state, mode and every rule state
    /// whose code both tables have. Latched rules stay latched whatever the new table says; only an
    /// operator reset clears them.
    public mutating func adopt(_ other: UnitController) {
        running = other.running
        // What follows is shaped by settings: carried where the new settings keep its shape.
        droop.adopt(other.droop)
        if packTemperatureRise.window == other.packTemperatureRise.window {
            packTemperatureRise = other.packTemperatureRise
        }
        if cellTemperatureRise.window == other.cellTemperatureRise.window {
            cellTemperatureRise = other.cellTemperatureRise
        }
        if energy.lengthSeconds == other.energy.lengthSeconds { energy = other.energy }
        interlocks.adopt(other.interlocks)
    }
}

extension DroopController {
    /// Carries the latched pre-disturbance power and the response's present output over.
    mutating func adopt(_ other: DroopController) {
        latchedBase = other.latchedBase
        response.reset(to: other.response.output)
    }
}

extension InterlockEngine {
    /// Carries each rule's state over by code. A reload never drops a latch: a latched code the new
    /// table lacks, or no longer latches, is carried until an operator reset.
    mutating func adopt(_ other: InterlockEngine) {
        carried = other.carried
        for (index, rule) in rules.enumerated() {
            guard let old = other.rules.firstIndex(where: { $0.code == rule.code }) else { continue }
            if case .latched = other.states[old], rule.severity != .latch {
                carried.insert(rule.code)
                continue
            }
            states[index] = other.states[old]
            lastValues[index] = other.lastValues[old]
        }
        for (old, rule) in other.rules.enumerated() where !rules.contains(where: { $0.code == rule.code }) {
            if case .latched = other.states[old] { carried.insert(rule.code) }
        }
    }
}

extension SiteController {
    /// Takes over every unit's running state from `old`; `mapping[i]` is unit i's index in `old`.
    public func adopt(from old: SiteController, mapping: [Int?]) {
        running = old.running
        // What follows is shaped by settings: carried where the new settings keep its shape.
        if rocof.window == old.rocof.window { rocof = old.rocof }
        if gridEnergy != nil, let open = old.gridEnergy, open.lengthSeconds == gridEnergy!.lengthSeconds { gridEnergy = open }
        frequencyEvents.adopt(old.frequencyEvents, mapping: mapping)
        reactiveStage.adopt(old.reactiveStage, mapping: mapping)
        siteReactive.adopt(old.siteReactive)
        for (i, j) in mapping.enumerated() where i < units.count {
            guard let j, j < old.units.count else { continue }
            units[i].adopt(old.units[j])
            if i < unitReserveReported.count, j < old.unitReserveReported.count { unitReserveReported[i] = old.unitReserveReported[j] }
        }
    }
}
