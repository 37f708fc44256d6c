/// The control law of a whole site: every unit's assess → control → account for one cycle.
///
/// It owns no I/O and reads no clock: the runtime hands it the snapshot, the monotonic instant and the
/// wall clock. Storage is allocated at init; a steady-state `step` allocates nothing.
public final class SiteController {
    public let control: ControlSettings
    public internal(set) var units: [UnitController]
    /// Events for the logging thread; drain after each step.
    public var events: EventRing
    /// Energy blocks closed by recent steps; drain after each step.
    public private(set) var closedBlocks: [EnergyBlock]
    /// Frequency events found and assessed (FrequencyEvents.swift); drain with `drainFrequencyAssessments`.
    public internal(set) var frequencyEvents: FrequencyEventAssessor
    public private(set) var site = SiteConditions()
    /// What the site has become by running that no setting shapes: a reload carries it whole.
    var running: SiteRunningState
    /// Steps taken.
    public internal(set) var cycles: UInt64 { get { running.cycles } set { running.cycles = newValue } }
    var rocof: SlopeEstimator
    var lastStep: MonotonicInstant? { get { running.lastStep } set { running.lastStep = newValue } }
    /// Whether the system clock is synchronised (the service reads the kernel's state; false marks
    /// every energy block measured meanwhile `clockUnsynced`). Set before each step.
    public var clockSynchronized: Bool { get { running.clockSynchronized } set { running.clockSynchronized = newValue } }
    /// Steps of the wall clock against the monotonic clock seen so far (more than
    /// `EnergyAccumulator.stepTolerance` apart in one cycle), and the size of the last one
    /// (negative when the wall clock went back).
    public internal(set) var clockSteps: Int { get { running.clockSteps } set { running.clockSteps = newValue } }
    public internal(set) var lastClockStep: Duration {
        get { running.lastClockStep }
        set { running.lastClockStep = newValue }
    }
    var lastClockOffset: Double? { get { running.lastClockOffset } set { running.lastClockOffset = newValue } }
    let droopCurve: DroopCurve, expectsFrequency: Bool
    /// The allocation stage: shares the pool by headroom and SOC inside the site's bounds; its block schedule.
    var pool: SitePool
    public var schedule: ScheduleExecutor { get { pool.schedule } set { pool.schedule = newValue } }
    /// The last stage: each unit's reactive mode and volt-watt on its share (SiteReactive.swift).
    var reactiveStage: ReactiveStage
    /// The law at the connection point (`site.reactive_power`; SiteReactive+ConnectionPoint.swift).
    var siteReactive: SiteReactiveLaw
    /// Σ the fresh units' measured Q this step, var (+ = injecting).
    var measuredVar = 0.0
    /// The last step's allocation: what the pool was asked and what it was given.
    public var allocation: AllocationResult { pool.allocation }
    /// True while `SITE_SHORTFALL` stands (raised above the threshold, cleared below half of it).
    public var shortfallActive: Bool { pool.shortfallActive }
    /// The shortfall that raises `SITE_SHORTFALL`, W: 1 % of the site's rating, at least 1 kW.
    public var shortfallThreshold: Double { pool.shortfallThreshold }
    /// The connection point: meter, grid limits and the site application.
    public private(set) var connection: ConnectionPoint
    /// The last step's site decision, layer by layer.
    public private(set) var siteDecision = SiteDecision()
    /// Energy through the connection point per block (a site with a meter): `dischargedWh` holds
    /// the energy imported from the grid, `chargedWh` the energy exported; its blocks close into
    /// `closedBlocks` with `unit` -1.
    var gridEnergy: EnergyAccumulator?
    /// The limit reported as binding (released 5 s after it last bound).
    public var bindingReported: GridLimitBinding { pool.bindingReported }
    /// What plant SCADA has written (model 704): the grid operator's percent limit and a site
    /// setpoint. The cycle sets it from the SCADA server's record; `step` applies due reversions.
    public var commands: SiteCommands { get { running.commands } set { running.commands = newValue } }
    /// The grid operator's AGC (in service, target, freshness, band): the cycle sets it from what
    /// the control centre last wrote; `step` follows it while fresh (docs/design/0008-agc.md).
    public var agc: AGCCommand { get { running.agc } set { running.agc = newValue } }
    /// The AGC target the last step followed, W (inside the band); nil when the schedule decided.
    public internal(set) var agcInForce: Double?
    /// The stage that resolves the site-wide requests (AGC, utility, SCADA) each step.
    public private(set) var arbiter = RequestArbiter()
    /// The site-wide request the last step followed (the highest authority in force), nil when none.
    public var requestInForce: SiteRequest? { arbiter.winner }
    /// The site-wide request whose reactive power the last step followed (resolved apart from
    /// `requestInForce`), nil when none.
    public var reactiveRequestInForce: SiteRequest? { arbiter.reactiveWinner }
    /// The part of the site's var request no unit could take in the last step, var (+ = injecting).
    public var reactiveShortfall: Double { reactiveStage.shortfallVar }
    /// The site law's Q at the connection point in the last step, var (+ = injecting); nil when it
    /// gave none (no site mode, stale voltage, a party's request in force).
    public var siteReactiveTarget: Double? { siteReactive.target }
    /// The site's var setpoint in the last step (the law's Q or a party's var; nil: none) and who set
    /// the site's Q (nil: nobody at the site, each unit's own configuration).
    public var siteReactiveSetpoint: Double? { siteReactive.setpoint }
    public var siteReactiveSource: ReactiveSource? { siteReactive.source }
    /// What the units were asked together for the connection point in the last step, var; nil: none.
    public var siteReactiveAsk: Double? { siteReactive.ask }
    /// Whether the last step held Q at the meter (a fresh meter with var), and the reactive load's
    /// bounds then, var.
    public var siteReactiveMetered: Bool { siteReactive.metered }
    public var reactiveLoadRange: (low: Double, high: Double)? {
        siteReactive.loadLow.flatMap { low in siteReactive.loadHigh.map { (low, $0) } }
    }
    /// Unit `unit`'s reactive capability, var, each way (`VarMaxInj` / `VarMaxAbs`, at most `VAMax`);
    /// 0 while its inverter reports no var points.
    public func reactiveCapability(unit: Int) -> (injecting: Double, absorbing: Double) { reactiveStage.capability(unit) }
    /// What the utility's DER server commands (IEEE 2030.5): the cycle sets it from the 2030.5 worker's
    /// slot before each step; nil (never published) is no utility control, a value past its
    /// `validUntil` holds the site at zero as `stale` (docs/design/0009-utility-limits.md).
    public var utilityLimits: UtilityLimits?
    /// The limit the relay contacts assert (`grid_operator.inputs`), percent; nil when none does.
    public var inputLimitPercent: Double? { get { running.inputLimitPercent } set { running.inputLimitPercent = newValue } }
    /// Σ unit ratings, W: what 702 `WMaxRtg` states and what `WMaxLimPct` is a percent of.
    public let ratedPower: Double
    /// The energy kept for frequency response (`droop_settings.sustain_s`): dispatch, AGC, SCADA
    /// setpoints and the application stop at it; the droop response may use it.
    public let responseReserve: ResponseReserve
    /// Whether the last step found any unit at its own reserve, each way.
    public internal(set) var reserveReached = (discharge: false, charge: false)
    /// Each unit's reserve state after the last step (with `ResponseReserve.resumeMarginPercent`'s
    /// hysteresis): dispatch on that unit stops in a reached direction.
    public internal(set) var unitReserveReached: [(discharge: Bool, charge: Bool)]
    /// Each unit's reserve state as last reported (`responseReserveReached` / `…Cleared`).
    var unitReserveReported: [(discharge: Bool, charge: Bool)]
    /// The grid operator's cap on the units' summed power, W, as ramped: it falls at once and rises
    /// at `limits.ramp_percent_per_s`; infinite when no limit stands.
    public internal(set) var operatorCap: Double { get { running.operatorCap } set { running.operatorCap = newValue } }

    /// - Parameters:
    ///   - units: one settings value per unit, in configuration order.
    ///   - expectsFrequency: whether a frequency source is configured (if not, `FREQUENCY_LOST` is silent).
    public init(
        control: ControlSettings, units: [UnitSettings], startedAt: MonotonicInstant,
        expectsFrequency: Bool = true, eventCapacity: Int = 1024, site: SiteSettings = .none
    ) {
        self.control = control
        running = SiteRunningState(lastStep: startedAt)
        self.units = units.enumerated().map {
            UnitController(index: $0.offset, settings: $0.element, control: control, startedAt: startedAt)
        }
        events = EventRing(capacity: eventCapacity)
        closedBlocks = []
        closedBlocks.reserveCapacity(max(8, units.count * 2))
        frequencyEvents = FrequencyEventAssessor(settings: control.frequencyEvents, droop: control.droop, units: units)
        rocof = SlopeEstimator(window: control.rocofWindow)
        droopCurve = DroopCurve(control.droop)
        self.expectsFrequency = expectsFrequency
        let rating = units.reduce(0.0) { $0 + ($1.rating.value.isFinite ? max(0, $1.rating.value) : 0) }
        pool = SitePool(units: units.count, rating: rating)
        reactiveStage = ReactiveStage(units: units)
        siteReactive = SiteReactiveLaw(settings: site.gridSupport, metered: site.hasMeter)
        ratedPower = rating
        responseReserve = ResponseReserve(droop: control.droop, units: units)
        unitReserveReached = Array(repeating: (false, false), count: units.count)
        unitReserveReported = unitReserveReached
        connection = ConnectionPoint(settings: site, rating: rating, startedAt: startedAt)
        if site.hasMeter { gridEnergy = EnergyAccumulator(unit: -1, blockLength: control.energyBlockLength) }
    }

    /// The connection point's energy block being accumulated now (import in `dischargedWh`).
    public var currentGridEnergyBlock: EnergyBlock? { gridEnergy?.current }

    /// The decisions of the last step, one per unit.
    public func decision(unit: Int) -> UnitDecision { units[unit].decision }

    /// One cycle over every unit.
    /// - Parameters:
    ///   - frequency: the latest grid frequency with the instant it was measured.
    ///   - inputs: one entry per unit, in configuration order (missing entries are treated as empty).
    ///   - now: the monotonic instant of this cycle.
    ///   - wallClock: Unix time in seconds, for energy blocks.
    ///   - meter: the connection-point meter's latest reading, when the site has one.
    ///   - rocof: a measured rate of change of frequency, Hz/s, with the instant it was measured (a
    ///     PMU's DFREQ while the PMU is the frequency source). While it is no older than
    ///     `frequencyStaleAfter` it is the site's ROCOF (what `GRID_ROCOF` reads); absent or stale, the
    ///     slope of the frequency readings over `rocofWindow` is.
    public func step(
        frequency: Timestamped<Hertz>?, inputs: [UnitInputs], now: MonotonicInstant, wallClock: Double,
        meter: Timestamped<MeterReading>? = nil, rocof measuredRocof: Timestamped<Double>? = nil
    ) {
        let elapsed = lastStep.map { now.seconds(since: $0) } ?? 0
        lastStep = now
        cycles &+= 1
        // A step: the wall clock moved more than the tolerance away from the monotonic clock in one
        // cycle, however long the cycle was (the units' energy intervals are capped; this is not).
        let offset = wallClock - Double(now.nanoseconds) / 1e9
        var steppedNow = false
        if let last = lastClockOffset, abs(offset - last) > EnergyAccumulator.stepTolerance {
            clockSteps &+= 1
            // Signed, and clamped: the offsets are wall-clock seconds, finite or not.
            lastClockStep = .nanoseconds(Int64(max(-9.2e18, min(9.2e18, (offset - last) * 1e9))))
            steppedNow = true
        }
        lastClockOffset = offset

        var conditions = SiteConditions()
        if let stamped = frequency {
            rocof.add(stamped.value.value, at: stamped.takenAt)
        }
        if let f = frequency.fresh(at: now, maxAge: control.frequencyStaleAfter), f.millihertz != nil {
            conditions.frequency = f
            conditions.frequencyDeviation = f.value - control.droop.nominal.value
            conditions.rocof = rocof.slope(at: now).map { abs($0) }
        }
        // A measured ROCOF outranks the estimate: the PMU computes it over its own window from the
        // phasor, finer than a slope over readings (the estimate keeps running, so a fallback is seamless).
        if let measured = measuredRocof.fresh(at: now, maxAge: control.frequencyStaleAfter), measured.isFinite {
            conditions.rocof = abs(measured)
        }
        if expectsFrequency {
            conditions.frequencyAge = frequency.map { now.seconds(since: $0.takenAt) }
                ?? (units.first.map { now.seconds(since: $0.startedAt) } ?? 0)
        }
        conditions.gridVoltagePU = connection.voltagePU(meter, at: now)
        site = conditions
        settleCommands(now: now)

        // The arbiter: AGC, the utility's request and SCADA's setpoint each in its slot; the highest
        // authority in force wins, shared by rating over the units no operator override holds (the
        // pool then shares it by headroom and SOC); each unit ramps to its part at the schedule ramp
        // (SiteRequest.swift; docs/design/0008-agc.md, 0009).
        let agc = self.agc
        agcInForce = agc.follow(at: now, lost: &running.agcLost, events: &events)
        // SCADA's two reactive kinds are compared at the units' setpoints of the last step (carried
        // over a reload with the units).
        var lastSetpoints = 0.0
        for index in units.indices { lastSetpoints += units[index].decision.setpoint.value }
        arbiter.offer(agc: agc, utility: utilityLimits, scada: commands, sitePower: lastSetpoints)
        arbiter.resolve(at: now)
        arbiter.share(ratings: { units[$0].ratingForShare }, count: units.count) {
            Self.overridden($0 < inputs.count ? inputs[$0] : nil, at: now)
        }
        responseReserve.update(&unitReserveReached, reported: &unitReserveReported, events: &events, at: now) { index in
            index < inputs.count ? inputs[index].bms.status.fresh(at: now, maxAge: units[index].settings.bmsStaleAfter)?.soc.value : nil
        }
        reserveReached = (unitReserveReached.contains { $0.discharge }, unitReserveReached.contains { $0.charge })
        let empty = UnitInputs()
        measuredVar = 0
        let utilityDroop = UtilityStage(published: utilityLimits, now: now).inForce?.droop
        frequencyEvents.retune(utilityDroop.map { $0.applied(to: control.droop) } ?? control.droop)
        for index in units.indices {
            units[index].utilityDroop = utilityDroop
            units[index].reactiveCap = reactiveStage.dischargeCap(index)
            let unitInputs = index < inputs.count ? inputs[index] : empty
            // The reading's fields are read in place: a copy of the whole reading per unit and cycle costs more.
            reactiveStage.observe(unit: index, inverter: unitInputs.inverter)
            if unitInputs.inverter?.isFresh(at: now, maxAge: units[index].settings.inverterStaleAfter) == true,
               let q = unitInputs.inverter?.value.reactivePower, q.isFinite
            {
                measuredVar += q
            }
            reactiveStage.unitVar[index] = unitInputs.dispatch.flatMap { $0.expiresAt > now ? $0.reactive : nil }
            let held = Self.overridden(unitInputs, at: now)
            var asked = arbiter.command(rating: units[index].ratingForShare, held: held, dispatch: unitInputs.dispatch)
            if !held { units[index].keepOutOfReserve(unitReserveReached[index], dispatch: &asked) }
            units[index].clockSynchronized = clockSynchronized
            units[index].clockStepped = steppedNow
            if let block = units[index].step(
                unitInputs, asked: asked, site: conditions, control: control, now: now, elapsedSeconds: elapsed,
                wallClock: wallClock, events: &events)
            {
                if closedBlocks.count < closedBlocks.capacity { closedBlocks.append(block) }
            }
        }
        allocate(now: now, meter: meter, elapsed: elapsed, wallClock: wallClock)
        if gridEnergy != nil {
            // Only fresh meter readings count; a stale stretch shows as less coverage.
            let grid = connection.gridPower.map { Watts($0) }
            if let block = gridEnergy!.integrate(power: grid, elapsedSeconds: elapsed, wallClock: wallClock, synchronized: clockSynchronized,
                                                      stepped: steppedNow),
               closedBlocks.count < closedBlocks.capacity
            {
                closedBlocks.append(block)
            }
        }
        assessFrequency(frequency, now: now, wallClock: wallClock, elapsed: elapsed)
    }

    /// One decision for the site, stage by stage (SitePool.swift, in the order of authority of
    /// docs/design/0005-site.md): the units' totals, the utility's ramped limits and the connection
    /// point, the pool with the application and the grid limits, the operator's and the utility's
    /// bounds, the sharing, each unit's reactive power (which may lower its share: volt-watt, `VAMax`),
    /// and what is reported.
    func allocate(now: MonotonicInstant, meter: Timestamped<MeterReading>?, elapsed: Double = 0, wallClock: Double = 0) {
        let utility = UtilityStage(published: utilityLimits, now: now)
        let totals = pool.gather(units, kept: unitReserveReached, socReserve: connection.settings.socReservePercent)
        var decision = SiteDecision()
        decision.utility = utility.update(&running.utility, metered: connection.settings.hasMeter, rate: limitRamp,
                                          rating: ratedPower, elapsed: elapsed)
        meet(meter: meter, battery: totals.battery, utility: decision.utility, now: now)
        var target = pool.target(totals, connection: connection, reserveReached: reserveReached, clock: (wallClock, elapsed), decision: &decision)
        decision.operatorCap = updateOperatorCap(elapsed: elapsed)
        decision.scadaSetpoint = arbiter.inForce(.scada, at: now)?.activePower
        var bounds = UtilityStage.bounds(cap: decision.operatorCap, utility: &decision.utility, connection: connection)
        let marked = (decision.operatorLimited, decision.utility.binding)
        // The site's volt-watt (last period's law) caps Σ units' discharge beside the other caps.
        decision.voltWattCap = siteReactive.voltWattCap
        bounds.upper = min(bounds.upper, decision.voltWattCap)
        target = SitePool.bound(target, held: totals.held, bounds: bounds, utility: utility, connection: connection, decision: &decision)
        pool.share(target, held: totals.held, bounds: bounds, utility: utility, connection: connection, decision: &decision)
        noteVoltWatt(&decision, held: totals.held, before: marked)
        pool.apply(to: &units, totals: totals, decision: &decision)
        // Q on its own axis: the highest authority whose reactive request holds (AGC asks none), held
        // at the connection point with a fresh meter; else the site's law, if configured.
        let party = arbiter.reactiveWinner.flatMap { winner in
            winner.reactive(at: now).flatMap { request in ReactiveSource(party: winner.source).map { (ask: request.ask, source: $0) } }
        }
        // The stage is read (a copy of it, out of this class) only where the site has a law: with
        // none, `rerate` does nothing and `carrying` is not looked at.
        if siteReactive.configured { siteReactive.rerate(reactiveStage) }
        siteReactive.useVoltWatt(utility.inForce?.voltWatt)
        let carrying = siteReactive.law == nil || reactiveStage.anyCarries(units, ceased: decision.utility.disconnected)
        let reactive = siteReactive.step(units: units, request: party, measuredVar: measuredVar, meter: connection.reactiveReading(meter, units: units, gridVoltagePU: site.gridVoltagePU),
                                         maxLag: connection.settings.meterMaxLag, carrying: carrying, now: now,
                                         elapsedSeconds: elapsed)
        reactiveStage.useVoltWatt(utility.inForce?.voltWatt)
        // A negative volt-watt point charges a unit only into the import headroom the site's limits leave.
        let floor = max(bounds.lower, connection.floor ?? -.infinity)
        decision.delivered += reactiveStage.apply(to: &units, request: reactive, elapsedSeconds: elapsed, ceased: decision.utility.disconnected,
                                                  siteLaw: party == nil, floor: floor)
        pool.lastCommanded = decision.delivered
        siteDecision = decision
        pool.report(decision, winner: arbiter.winner?.source, connection: connection, events: &events, now: now)
    }

    /// Names the site's volt-watt as what bounded the units' discharge when its cap is the lowest in
    /// force and the units' sum stands at it; the grid operator's or utility's mark set meanwhile
    /// (`before`) is put back.
    func noteVoltWatt(_ decision: inout SiteDecision, held: Double, before: (Bool, UtilityBinding)) {
        let cap = decision.voltWattCap
        guard cap.isFinite, cap < decision.operatorCap, cap < decision.utility.dischargeCap,
              pool.allocation.delivered + held >= cap - 1 else { return }
        decision.voltWattLimited = true
        (decision.operatorLimited, decision.utility.binding) = before
    }

    /// The connection point takes the meter's reading with the utility's export and import limits;
    /// the meter going stale or fresh is reported.
    func meet(meter: Timestamped<MeterReading>?, battery: Double, utility: UtilityDecision, now: MonotonicInstant) {
        let change = connection.update(meter: meter, battery: battery, commanded: pool.lastCommanded, now: now,
                                       importMax: utility.importLimit, exportMax: utility.exportLimit)
        if change.becameStale {
            let age = meter.map { now.seconds(since: $0.takenAt) } ?? now.seconds(since: units.first?.startedAt ?? now)
            events.push(ControlEvent(kind: .meterStale, unit: -1, value: age, at: now))
        }
        if change.becameFresh { events.push(ControlEvent(kind: .meterFresh, unit: -1, at: now)) }
    }

    /// The site's limit ramp, W/s (`limits.ramp_percent_per_s` of the rating).
    var limitRamp: Double { max(0, control.limitRampPercentPerSecond) / 100 * ratedPower }

    /// True when an unexpired operator override holds the unit.
    static func overridden(_ inputs: UnitInputs?, at now: MonotonicInstant) -> Bool {
        guard let command = inputs?.override else { return false }
        return command.expiresAt > now && command.power.value.isFinite
    }

    /// Applies due reversions of the SCADA commands and reports them.
    func settleCommands(now: MonotonicInstant) {
        let before = commands
        commands = before.settled(at: now)
        if commands.limit != before.limit {
            events.push(ControlEvent(kind: .operatorLimitReverted, unit: -1,
                                     value: commands.limit.active(at: now) ?? .nan, at: now))
        }
        if commands.setpoint != before.setpoint {
            events.push(ControlEvent(kind: .siteSetpointReverted, unit: -1,
                                     value: commands.setpoint.active(at: now).map { $0 / 1000 } ?? .nan, at: now))
        }
        if commands.reactive != before.reactive {
            events.push(ControlEvent(kind: .siteReactiveReverted, unit: -1,
                                     value: commands.reactive.active(at: now).map { $0 / 1000 } ?? .nan, at: now))
        }
        if commands.powerFactorInjecting != before.powerFactorInjecting {
            events.push(ControlEvent(kind: .sitePowerFactorInjectingReverted, unit: -1,
                                     value: commands.powerFactorInjecting.active(at: now) ?? .nan, at: now))
        }
        if commands.powerFactorAbsorbing != before.powerFactorAbsorbing {
            events.push(ControlEvent(kind: .sitePowerFactorAbsorbingReverted, unit: -1,
                                     value: commands.powerFactorAbsorbing.active(at: now) ?? .nan, at: now))
        }
    }

    /// The percent limit in force: the lower of SCADA's `WMaxLimPct` and the relay contacts'.
    public func operatorLimitPercent(at now: MonotonicInstant) -> Double? {
        let written = commands.limit.active(at: now)
        switch (written, inputLimitPercent) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b?): return b
        case (nil, nil): return nil
        }
    }

    /// Moves the operator cap toward the limit in force: down at once, up at the limit ramp; it
    /// becomes infinite again once it has risen to the site's rating with no limit standing.
    func updateOperatorCap(elapsed: Double) -> Double {
        guard let now = lastStep else { return operatorCap }
        let target = operatorLimitPercent(at: now).map { ratedPower * ControlMath.clamp($0, 0, 100) / 100 } ?? .infinity
        // The same rule as the utility's limits (RampedLimit), at the site's limit ramp.
        var cap = RampedLimit(value: operatorCap, target: operatorCap, from: operatorCap)
        cap.move(to: target, elapsed: elapsed, ramp: nil, rate: limitRamp, rating: ratedPower)
        operatorCap = cap.value
        return operatorCap
    }

    /// Hands every energy block closed since the last call to `body`, oldest first, and forgets
    /// them (keeping the storage, so draining allocates nothing).
    public func drainClosedBlocks(_ body: (EnergyBlock) throws -> Void) rethrows {
        defer { closedBlocks.removeAll(keepingCapacity: true) }
        for block in closedBlocks { try body(block) }
    }

    /// Operator reset of latched faults on one unit, or on all when `unit` is nil.
    public func reset(unit: Int?, now: MonotonicInstant) -> [(unit: Int, outcome: ResetOutcome)] {
        var results: [(unit: Int, outcome: ResetOutcome)] = []
        for index in units.indices where unit == nil || unit == index {
            results.append((index, units[index].reset(now: now, events: &events)))
        }
        return results
    }

    /// Restores latches persisted by an earlier run into one unit; call before the first step.
    public func restoreLatches(_ codes: TripCodeSet, unit: Int, since: MonotonicInstant) {
        guard units.indices.contains(unit) else { return }
        units[unit].restoreLatches(codes, since: since)
    }

    /// The local operator's mode: for one unit, or (`unit` nil) for the whole site. A unit standby
    /// and a site standby are separate holds: `auto` lifts only the hold it names.
    public func setOperatorMode(_ mode: OperatingMode, unit: Int? = nil) {
        for index in units.indices where unit == nil || unit == index {
            if unit == nil { units[index].holds.operatorSite = mode == .standby } else { units[index].holds.operatorUnit = mode == .standby }
        }
    }

    /// A remote party's (the aggregator's) mode for one unit: standby until `until`, or `auto` to
    /// lift its own standby. It never lifts an operator's standby.
    public func setRemoteMode(_ mode: OperatingMode, until: MonotonicInstant, emergency: Bool = false, unit: Int) {
        guard units.indices.contains(unit) else { return }
        if mode == .standby {
            units[unit].holds.remoteUntil = until
            units[unit].holds.remoteEmergency = emergency
        } else {
            units[unit].holds.remoteUntil = nil
            units[unit].holds.remoteEmergency = false
        }
    }

    /// Operator mode for one unit or all (kept for tests and tools): same as `setOperatorMode`.
    public func setMode(_ mode: OperatingMode, unit: Int? = nil) { setOperatorMode(mode, unit: unit) }
}
