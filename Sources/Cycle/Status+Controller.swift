import BessSystem
public import ControlCore

// What the cycle publishes, written in place into the outbox's storage (`SiteRunner.publish`) or
// a status line's (`statusLine`): each status reads the controller's last step. No allocation.

extension SiteRunner {
    /// Writes the cycle's statistics into `stats` (the histogram bucket by bucket; no allocation).
    func fill(_ stats: inout CycleStatistics, now: MonotonicInstant) {
        stats.periodMs = settings.periodMilliseconds
        stats.cycles = counters.cycles
        stats.overruns = counters.overruns
        stats.lateReadings = lateReadings
        stats.startedOnReadings = counters.startedOnReadings
        stats.alarmCycles = counters.alarmCycles
        stats.lastRunAt = counters.lastRunAt
        stats.longestGap = counters.longestGap
        if let lateness = counters.latenessMicroseconds { stats.lastLatenessMicroseconds = lateness }
        stats.histogram.copy(from: counters.histogram)
        stats.frequency = controller.site.frequency?.value ?? .nan
        stats.frequencySource = frequencySourceInUse
        stats.frequencyAge = frequencyTakenAt.map { max(0, now.seconds(since: $0)) } ?? .nan
        stats.realtime = counters.realtime
        stats.clockSteps = controller.clockSteps
        stats.lastClockStep = controller.lastClockStep
    }

    /// The site's status as the last step left it.
    func fill(_ status: inout SiteStatus, now: MonotonicInstant) { status.fill(from: controller, meter: meter, now: now) }

    /// Unit `i`'s status as the last step left it.
    func fill(_ status: inout UnitStatus, unit i: Int, now: MonotonicInstant) {
        status.fill(from: controller, unit: i, inputs: inputs[i], driven: contactor(unit: i), now: now)
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
}

extension SiteStatus {
    /// The site's operator view from `controller`'s last step and the `meter` reading it took
    /// (no allocation).
    mutating func fill(from controller: SiteController, meter: Timestamped<MeterReading>?, now: MonotonicInstant) {
        let c = controller.connection
        let d = controller.siteDecision
        let commands = controller.commands
        self.operatorLimitPercent = controller.operatorLimitPercent(at: now) ?? .nan
        self.scadaLimitPercent = commands.limit.active(at: now) ?? .nan
        self.scadaLimitRemaining = commands.limit.active(at: now) == nil ? .zero : commands.limit.remaining(at: now)
        self.scadaLimitReverted = commands.limit.reverted && commands.limit.active(at: now) != nil
        self.inputLimitPercent = controller.inputLimitPercent ?? .nan
        self.operatorCap = d.operatorCap
        self.operatorLimited = d.operatorLimited
        self.scadaSetpoint = commands.setpoint.active(at: now) ?? .nan
        self.scadaSetpointRemaining = commands.setpoint.active(at: now) == nil ? .zero : commands.setpoint.remaining(at: now)
        self.gridPower = c.gridPower ?? .nan
        let schedule = controller.schedule
        self.scheduleBlock = schedule.open
        self.scheduleFallback = schedule.fallbackActive
        self.scheduleAsk = schedule.askW
        self.meterStale = c.stale
        // Var and V of the reading the connection point took (none while it is stale).
        let metered = c.gridPower == nil ? nil : meter?.value
        self.gridReactivePower = metered?.reactivePower ?? .nan
        self.gridVoltage = metered?.voltage ?? .nan
        // In p.u. of `site.reactive_power.nominal_voltage_v`, as GRID_OVERVOLTAGE/UNDERVOLTAGE read it.
        self.gridVoltagePU = controller.site.gridVoltagePU ?? .nan
        self.binding = d.binding
        self.applicationActive = d.applicationActive
        self.applicationTarget = c.target
        self.requested = d.requested
        self.held = d.held
        self.application = d.application
        self.pool = d.pool
        self.delivered = d.delivered
        self.shortfall = controller.allocation.shortfall
        self.shortfallActive = controller.shortfallActive
        self.reactiveShortfall = controller.reactiveShortfall
        self.voltWattLimited = d.voltWattLimited
        self.reactiveSetpoint = controller.siteReactiveSetpoint ?? .nan
        self.reactiveSource = controller.siteReactiveSource
        self.loadLow = c.loadLow ?? .nan
        self.loadHigh = c.loadHigh ?? .nan
        self.utility = d.utility
        agc.fill(from: controller, now: now)
    }
}

extension AGCStatus {
    /// The AGC's operator view from `controller`'s last step (no allocation).
    mutating func fill(from controller: SiteController, now: MonotonicInstant) {
        let agc = controller.agc
        self.configured = agc.limits != nil
        self.inService = agc.inService
        self.target = agc.target ?? .nan
        self.following = controller.agcInForce != nil
        self.followed = controller.agcFollowed ?? .nan
        self.signalLost = controller.agcSignalLost
        self.remaining = agc.remaining(at: now)
        self.upperLimit = agc.limits?.upper ?? .nan
        self.lowerLimit = agc.limits?.lower ?? .nan
        self.ramp = max(0, controller.control.scheduleRampPercentPerSecond) / 100 * controller.ratedPower
    }
}

extension UnitStatus {
    /// Unit `i`'s operator view from `controller`'s last step, the unit's process image and its
    /// contactor as bessd drives it (no allocation).
    mutating func fill(from controller: SiteController, unit i: Int, inputs: UnitInputs, driven: ContactorState, now: MonotonicInstant) {
        let d = controller.decision(unit: i)
        self.state = d.state
        self.share = d.share
        self.pooled = d.pooled
        self.soc = d.soc?.value ?? .nan
        self.power = d.measuredPower?.value ?? .nan
        self.setpoint = d.setpoint.value
        self.droop = d.droop.value
        self.allowedCharge = d.allowedCharge.value
        self.allowedDischarge = d.allowedDischarge.value
        // The reactive stage's command (var, NaN: the inverter's Q is left alone) and what set it.
        self.reactiveSetpoint = d.reactive ?? .nan
        self.reactiveSource = d.reactiveSource
        (self.varMaxInjecting, self.varMaxAbsorbing) = controller.reactiveCapability(unit: i)
        self.apparentPowerVA = controller.apparentRating(unit: i)
        self.active = d.activeCodes
        self.latched = d.latchedCodes
        self.mode = controller.units[i].mode
        self.holds = controller.units[i].holds
        self.remoteRemaining = holds.remoteStandby(at: now).map { $0 - now } ?? .zero
        if let o = inputs.override, o.expiresAt > now {
            self.overrideW = o.power.value
            self.overrideRemaining = o.expiresAt - now
        } else {
            self.overrideW = nil
            self.overrideRemaining = .zero
        }
        if let d = inputs.dispatch, d.expiresAt > now { self.dispatchW = d.power.value } else { self.dispatchW = nil }
        // The unit's settings are read in place: a copy of the unit's controller would retain
        // every reference it holds, for each unit and cycle.
        let bms = inputs.bms
        let maxAge = controller.units[i].settings.bmsStaleAfter
        let measurements = bms.measurements.fresh(at: now, maxAge: maxAge)
        let cells = bms.cells.fresh(at: now, maxAge: maxAge)
        self.soh = bms.status.fresh(at: now, maxAge: maxAge)?.soh?.value ?? .nan
        self.voltage = measurements?.packVoltage.value ?? .nan
        self.current = measurements?.packCurrent.value ?? .nan
        self.temperatureMin = cells?.minTemperature.value ?? measurements?.temperature.value ?? .nan
        self.temperatureMax = cells?.maxTemperature.value ?? measurements?.temperature.value ?? .nan
        let limits = bms.limits.fresh(at: now, maxAge: maxAge)
        self.chargeCurrentLimit = limits?.chargeCurrentLimit.value ?? .nan
        self.dischargeCurrentLimit = limits?.dischargeCurrentLimit.value ?? .nan
        self.bmsOnline = measurements != nil
        // The fresh reading's fields read in place, not a copy of the whole reading per unit and cycle.
        let online = inputs.inverter?.isFresh(at: now, maxAge: controller.units[i].settings.inverterStaleAfter) == true
        self.inverterOnline = online
        // As bessd drives it, corrected by what the inverter says (701 ConnSt, 101–103 St): open is open.
        self.contactor = ContactorState.reported(driven: driven, connected: online ? inputs.inverter?.value.connected : nil)
        self.reactivePower = (online ? inputs.inverter?.value.reactivePower : nil) ?? .nan
        self.acVoltage = (online ? inputs.inverter?.value.voltage : nil) ?? .nan
        // In p.u. of `grid_integration.reactive_power.nominal_voltage_v`, as the step read it.
        self.voltagePU = d.voltagePU ?? .nan
    }
}
