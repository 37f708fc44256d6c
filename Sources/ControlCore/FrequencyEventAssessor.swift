/// Finds frequency events in the cycle's frequency and assesses each one against the droop law
/// (docs/frequency-events.md). A value type of fixed size: `observe` allocates nothing.
///
/// An excursion starts at the first fresh sample outside the deadband; from that instant the
/// required power is computed as EPRI OpenDER computes a 'pre-disturbance power + droop' response:
/// the site's power just before the excursion, plus the droop law's change (clamped to the site's
/// rating) through the response-time lag. The excursion becomes an event once frequency has been
/// outside for the entry delay (else it is forgotten), and the event ends at the instant frequency came
/// back, once it has stayed back for the exit delay; leaving again meanwhile continues the event.
public struct FrequencyEventAssessor: Sendable {
    /// The settings it was made with.
    public let settings: FrequencyEventSettings
    /// The droop law required power is computed from (the configured one, or the utility's
    /// `opModFreqDroop` while it is in force: `retune`).
    public internal(set) var curve: DroopCurve
    /// The site's rating, W: the droop law's per-unit base and the tolerance's.
    public let rating: Double
    /// Assessed events not yet drained.
    public internal(set) var ring: FrequencyAssessmentRing
    /// Events assessed since the daemon started.
    public internal(set) var sequence: UInt64 = 0
    /// Where the detector is.
    public internal(set) var phase: Phase = .idle
    /// The event (or candidate) being accumulated, and a copy of it as it stood when frequency came back.
    var live = Accumulated()
    var atReturn = Accumulated()
    /// The site's power at the last cycle before an excursion, at the connection point and summed over the units.
    var lastMetered: Double?
    var lastUnits: Double?
    /// Per unit, in configuration order, allocated at init (the cycle only writes into them): each
    /// unit's rating, its power at the last cycle before an excursion (NaN: unknown), its part of the
    /// event being accumulated and as it stood at the return, and a scratch mark for choosing which
    /// units an assessment itemises.
    let unitRatings: [Double]
    var unitLast: [Double]
    var unitLive: [UnitAccumulated]
    var unitAtReturn: [UnitAccumulated]
    var unitChosen: [Bool]

    /// The detector's state.
    public enum Phase: Sendable, Equatable {
        /// Frequency inside the deadband (or absent).
        case idle
        /// Outside since `since`, not yet for the entry delay.
        case pending(since: MonotonicInstant)
        /// An event: outside for at least the entry delay.
        case active
        /// Back inside since `since`, not yet for the exit delay.
        case returning(since: MonotonicInstant)
    }

    /// What one event has gathered so far.
    struct Accumulated: Sendable {
        var start = 0.0
        var startInstant = MonotonicInstant.zero
        var end = 0.0
        var direction = FrequencyEventDirection.under
        var extremeHz = Double.nan
        var maxRocof = Double.nan
        var pre = 0.0
        var metered = false
        var response = FirstOrderResponse(responseTime: .zero)
        var lastFrequency: Hertz?
        var atResponse: (required: Double, delivered: Double)?
        var lastSeen = (required: 0.0, delivered: 0.0)
        var seconds = 0.0
        var requiredSum = 0.0
        var deliveredSum = 0.0
        var requiredResponse = 0.0
        var creditedResponse = 0.0
        var worstShortfall = 0.0
        var cause = FrequencyEventCause.none
        var causeCode: TripCode?
        var causeUnit = -1
    }

    /// What one unit's part of an event has gathered so far.
    struct UnitAccumulated: Sendable {
        var pre = 0.0
        var response = FirstOrderResponse(responseTime: .zero)
        var atResponse: (required: Double, delivered: Double)?
        var lastSeen = (required: 0.0, delivered: 0.0)
        var requiredSum = 0.0
        var deliveredSum = 0.0
    }

    /// What the site did in one cycle, as the assessor needs it.
    public struct Observation: Sendable {
        /// The fresh grid frequency (nil: absent or stale) and when it was measured.
        public var frequency: Hertz?
        public var takenAt: MonotonicInstant
        /// |ROCOF|, Hz/s.
        public var rocof: Double?
        /// The connection point's power, + = export (nil: no meter, or stale).
        public var meteredW: Double?
        /// The units' measured power summed, and whether any unit had a fresh reading.
        public var unitsW: Double?
        /// The grid operator's limit or a connection-point limit bound the site's total this cycle.
        public var siteLimited: Bool
        public init(frequency: Hertz?, takenAt: MonotonicInstant, rocof: Double?, meteredW: Double?, unitsW: Double?,
                    siteLimited: Bool) {
            self.frequency = frequency
            self.takenAt = takenAt
            self.rocof = rocof
            self.meteredW = meteredW
            self.unitsW = unitsW
            self.siteLimited = siteLimited
        }
    }

    /// - Parameters:
    ///   - settings: entry and exit delays, tolerance.
    ///   - droop: the droop law the site follows (deadband, droops, reference, response time).
    ///   - units: the site's units; their ratings summed are the droop law's per-unit base.
    /// Judges by `droop` from the next observation on (the droop the units follow now); nothing when
    /// it is the one in use, never an allocation.
    public mutating func retune(_ droop: DroopSettings) {
        guard droop != curve.settings else { return }
        curve = DroopCurve(droop)
    }

    public init(settings: FrequencyEventSettings, droop: DroopSettings, units: [UnitSettings], capacity: Int = 16) {
        self.settings = settings
        curve = DroopCurve(droop)
        unitRatings = units.map { $0.rating.value.isFinite ? max(0, $0.rating.value) : 0 }
        rating = unitRatings.reduce(0, +)
        ring = FrequencyAssessmentRing(capacity: capacity)
        unitLast = [Double](repeating: .nan, count: units.count)
        unitLive = [UnitAccumulated](repeating: UnitAccumulated(), count: units.count)
        unitAtReturn = unitLive
        unitChosen = [Bool](repeating: false, count: units.count)
    }

    /// The shortfall that still counts as delivered, W.
    var tolerance: Double { max(0, settings.toleranceFraction.isFinite ? settings.toleranceFraction : 0) * rating }

    /// One cycle, after the site's allocation.
    /// - Parameters:
    ///   - observation: this cycle's frequency and powers.
    ///   - units: the units after this step (their decisions name what limits them).
    ///   - now: the cycle's monotonic instant; `wallClock` its Unix time; `elapsed` the seconds since
    ///     the last cycle.
    public mutating func observe(
        _ observation: Observation, units: [UnitController], now: MonotonicInstant, wallClock: Double, elapsed: Double
    ) {
        let dt = elapsed.isFinite ? min(max(0, elapsed), 1) : 0
        let wallAt = wallClock - now.seconds(since: observation.takenAt)
        let outside = observation.frequency.map { !curve.isInsideDeadband($0) }
        switch phase {
        case .idle:
            if outside == true, let f = observation.frequency {
                begin(f, observation, units: units, at: wallAt)
                phase = .pending(since: observation.takenAt)
                accumulate(observation, units: units, now: now, dt: dt)
                if settings.entryDelay <= .zero { phase = .active }
            } else {
                remember(observation, units: units)
            }
        case .pending(let since):
            guard outside == true else {
                // Back inside (or unknown) before the entry delay: no event.
                phase = .idle
                remember(observation, units: units)
                return
            }
            accumulate(observation, units: units, now: now, dt: dt)
            if observation.takenAt - since >= settings.entryDelay { phase = .active }
        case .active:
            if outside == false {
                live.end = wallAt
                atReturn = live
                for index in unitLive.indices { unitAtReturn[index] = unitLive[index] }
                phase = .returning(since: observation.takenAt)
            }
            accumulate(observation, units: units, now: now, dt: dt)
        case .returning(let since):
            if outside == true {
                phase = .active
                accumulate(observation, units: units, now: now, dt: dt)
            } else if outside == false, observation.takenAt - since >= settings.exitDelay {
                finish(atReturn)
                phase = .idle
                remember(observation, units: units)
            } else {
                accumulate(observation, units: units, now: now, dt: dt)
            }
        }
    }

    /// The site's power before any excursion.
    mutating func remember(_ observation: Observation, units: [UnitController]) {
        lastMetered = observation.meteredW
        if let units = observation.unitsW { lastUnits = units }
        for index in unitLast.indices where index < units.count {
            if let power = Self.measured(units[index]) { unitLast[index] = power }
        }
    }

    /// A unit's measured power, W (+ = discharge), when it has a finite one.
    static func measured(_ unit: UnitController) -> Double? {
        guard let power = unit.decision.measuredPower?.value, power.isFinite else { return nil }
        return power
    }

    /// Starts a candidate at the first sample outside the deadband.
    mutating func begin(_ frequency: Hertz, _ observation: Observation, units: [UnitController], at wallAt: Double) {
        var event = Accumulated()
        event.start = wallAt
        event.startInstant = observation.takenAt
        event.direction = frequency.value < curve.settings.nominal.value ? .under : .over
        // The connection point when its meter was fresh just before, else the units' sum.
        if let metered = lastMetered ?? observation.meteredW {
            event.metered = true
            event.pre = -metered
        } else {
            event.pre = lastUnits ?? observation.unitsW ?? 0
        }
        event.response = FirstOrderResponse(responseTime: curve.settings.responseTime)
        live = event
        for index in unitLive.indices {
            var part = UnitAccumulated()
            let now = index < units.count ? Self.measured(units[index]) : nil
            part.pre = unitLast[index].isFinite ? unitLast[index] : now ?? 0
            part.response = event.response
            unitLive[index] = part
        }
    }

    /// Adds one cycle to the event: extremes, required and delivered power, and the cause of a shortfall.
    mutating func accumulate(_ observation: Observation, units: [UnitController], now: MonotonicInstant, dt: Double) {
        if let f = observation.frequency {
            live.lastFrequency = f
            if live.direction == .under {
                live.extremeHz = live.extremeHz.isNaN ? f.value : min(live.extremeHz, f.value)
            } else {
                live.extremeHz = live.extremeHz.isNaN ? f.value : max(live.extremeHz, f.value)
            }
        }
        if let rocof = observation.rocof, rocof.isFinite {
            live.maxRocof = live.maxRocof.isNaN ? abs(rocof) : max(live.maxRocof, abs(rocof))
        }
        // Required: the droop law's change from the last known frequency, kept inside the rating, lagged.
        let change = live.lastFrequency.map { curve.perUnitChange(at: $0) * rating } ?? 0
        let target = ControlMath.clamp(live.pre + change, -rating, rating) - live.pre
        let required = live.pre + live.response.step(toward: target, elapsedSeconds: dt)
        let measured = live.metered ? observation.meteredW.map { -$0 } : observation.unitsW
        let delivered = measured ?? live.pre
        live.lastSeen = (required, delivered)
        let atResponse = live.atResponse == nil && now - live.startInstant >= curve.settings.responseTime
        if atResponse { live.atResponse = (required, delivered) }
        let weight = dt > 0 ? dt : 1e-3
        live.seconds += weight
        live.requiredSum += required * weight
        live.deliveredSum += delivered * weight
        // Each unit's part: the same law on its own rating and pre-event power, against its own measurement.
        let perUnitChange = live.lastFrequency.map { curve.perUnitChange(at: $0) } ?? 0
        for index in unitLive.indices {
            let unitRating = unitRatings[index]
            let pre = unitLive[index].pre
            let unitTarget = ControlMath.clamp(pre + perUnitChange * unitRating, -unitRating, unitRating) - pre
            let unitRequired = pre + unitLive[index].response.step(toward: unitTarget, elapsedSeconds: dt)
            let unitDelivered = (index < units.count ? Self.measured(units[index]) : nil) ?? pre
            unitLive[index].lastSeen = (unitRequired, unitDelivered)
            if atResponse { unitLive[index].atResponse = (unitRequired, unitDelivered) }
            unitLive[index].requiredSum += unitRequired * weight
            unitLive[index].deliveredSum += unitDelivered * weight
        }
        // The response's direction is the required change's sign; a cycle within the tolerance counts in full.
        let sign: Double = required >= live.pre ? 1 : -1
        let asked = sign * (required - live.pre)
        let given = ControlMath.clamp(sign * (delivered - live.pre), 0, asked)
        let shortfall = asked - given
        live.requiredResponse += asked * weight
        live.creditedResponse += (shortfall <= tolerance ? asked : given) * weight
        if shortfall > tolerance, shortfall > live.worstShortfall {
            live.worstShortfall = shortfall
            let found = Self.cause(units: units, discharge: sign > 0, observation: observation, measured: measured != nil)
            live.cause = found.cause
            live.causeCode = found.code
            live.causeUnit = found.unit
        }
    }

    /// Closes an event and queues its assessment.
    mutating func finish(_ event: Accumulated) {
        sequence &+= 1
        let (required, delivered) = event.atResponse ?? event.lastSeen
        let sign: Double = required >= event.pre ? 1 : -1
        var shortfall = max(0, sign * (required - delivered))
        if shortfall <= tolerance { shortfall = 0 }
        let seconds = max(event.seconds, 1e-9)
        let score = event.requiredResponse > 0 ? ControlMath.clamp(event.creditedResponse / event.requiredResponse, 0, 1) : 1
        ring.push(FrequencyEventAssessment(
            sequence: sequence, start: event.start, end: event.end, direction: event.direction,
            extremeHz: event.extremeHz, maxRocofHzPerSecond: event.maxRocof, preEventW: event.pre,
            requiredW: required, deliveredW: delivered, requiredMeanW: event.requiredSum / seconds,
            deliveredMeanW: event.deliveredSum / seconds, shortfallW: shortfall, cause: event.cause,
            causeCode: event.causeCode, causeUnit: event.causeUnit, score: score, metered: event.metered,
            maxShortfallW: event.worstShortfall, units: itemisedUnits(seconds: seconds)))
    }

    /// Each unit's part of the event that returned (`unitAtReturn`), in configuration order; past
    /// `FrequencyEventUnits.capacity` units, those with the largest shortfall (the rest counted).
    mutating func itemisedUnits(seconds: Double) -> FrequencyEventUnits {
        var list = FrequencyEventUnits()
        func part(_ index: Int) -> FrequencyEventUnitAssessment {
            let u = unitAtReturn[index]
            let (required, delivered) = u.atResponse ?? u.lastSeen
            let sign: Double = required >= u.pre ? 1 : -1
            var shortfall = max(0, sign * (required - delivered))
            let tolerance = max(0, settings.toleranceFraction.isFinite ? settings.toleranceFraction : 0) * unitRatings[index]
            if shortfall <= tolerance { shortfall = 0 }
            return FrequencyEventUnitAssessment(unit: index, requiredW: required, deliveredW: delivered,
                                                requiredMeanW: u.requiredSum / seconds, deliveredMeanW: u.deliveredSum / seconds,
                                                shortfallW: shortfall)
        }
        let count = unitAtReturn.count
        let chosen = min(count, FrequencyEventUnits.capacity)
        for index in unitChosen.indices { unitChosen[index] = count <= chosen }
        if count > chosen {
            // The largest shortfalls, the lower index first among equals (a few passes, once an event).
            for _ in 0..<chosen {
                var best = -1, worst = -Double.infinity
                for index in 0..<count where !unitChosen[index] {
                    let shortfall = part(index).shortfallW
                    if shortfall > worst { (best, worst) = (index, shortfall) }
                }
                if best >= 0 { unitChosen[best] = true }
            }
        }
        for index in 0..<count {
            if unitChosen[index] { list.append(part(index)) } else { list.omitted += 1 }
        }
        return list
    }

    /// Why the site could not deliver this cycle, as far as bessd knows: a limit the grid operator set
    /// first (a deliberate order), then the most telling unit (a trip, its SOC bound, an interlock, its
    /// stale data), then stale frequency or delivery data, else not enough capacity in service.
    static func cause(units: [UnitController], discharge: Bool, observation: Observation, measured: Bool)
        -> (cause: FrequencyEventCause, code: TripCode?, unit: Int)
    {
        if observation.siteLimited { return (.gridOperatorLimit, nil, -1) }
        var best: (cause: FrequencyEventCause, code: TripCode?, unit: Int, rank: Int) = (.none, nil, -1, 0)
        for index in units.indices {
            let found = unitCause(units[index].decision, discharge: discharge)
            let rank = Self.rank(found.cause)
            if rank > best.rank { best = (found.cause, found.code, index, rank) }
        }
        if best.rank > 0 { return (best.cause, best.code, best.unit) }
        if observation.frequency == nil || !measured { return (.communication, nil, -1) }
        return (.capacity, nil, -1)
    }

    /// How telling a unit's cause is: a trip over a SOC bound over an interlock over stale data.
    static func rank(_ cause: FrequencyEventCause) -> Int {
        switch cause {
        case .unitTripped: 4
        case .socLimit: 3
        case .interlock: 2
        case .communication: 1
        case .none, .gridOperatorLimit, .capacity: 0
        }
    }

    /// What keeps one unit from responding in the response's direction, if anything bessd knows.
    static func unitCause(_ decision: UnitDecision, discharge: Bool) -> (cause: FrequencyEventCause, code: TripCode?) {
        let reason = discharge ? decision.dischargeLimitedBy : decision.chargeLimitedBy
        let stopped = decision.state == .tripped || decision.state == .faulted
        switch reason {
        case .interlock(let code):
            switch code {
            case .socLow, .socHigh: return (.socLimit, code)
            case .bmsCommLost, .inverterCommLost, .frequencyLost: return (.communication, code)
            default: return (stopped ? .unitTripped : .interlock, code)
            }
        case .bmsAbsent, .inverterAbsent: return (.communication, nil)
        case .rating, .bms, .ramp, .notConfirmed, .standby, .voltWatt:
            if stopped { return (.unitTripped, decision.latchedCodes.first { _ in true } ?? decision.activeCodes.first { _ in true }) }
            return (.none, nil)
        }
    }
}

extension SiteController {
    /// The step's hook: hands this cycle's frequency and powers to the assessor.
    func assessFrequency(_ frequency: Timestamped<Hertz>?, now: MonotonicInstant, wallClock: Double, elapsed: Double) {
        var unitsW = 0.0
        var anyUnit = false
        for index in units.indices {
            if let power = units[index].decision.measuredPower?.value, power.isFinite {
                unitsW += power
                anyUnit = true
            }
        }
        let decision = siteDecision
        let observation = FrequencyEventAssessor.Observation(
            frequency: site.frequency, takenAt: frequency?.takenAt ?? now, rocof: site.rocof,
            meteredW: connection.stale ? nil : connection.gridPower, unitsW: anyUnit ? unitsW : nil,
            siteLimited: decision.operatorLimited || decision.binding != .none)
        frequencyEvents.observe(observation, units: units, now: now, wallClock: wallClock, elapsed: elapsed)
    }
}

extension FrequencyEventAssessor {
    /// Carries the running state over a configuration reload: the sequence, undrained assessments
    /// and an event under way (assessed on under the new settings from here on), each unit's part with its unit.
    mutating func adopt(_ other: FrequencyEventAssessor, mapping: [Int?]) {
        sequence = other.sequence
        ring = other.ring
        phase = other.phase
        live = other.live
        atReturn = other.atReturn
        lastMetered = other.lastMetered
        lastUnits = other.lastUnits
        // Each unit's part follows the unit: `mapping[i]` is unit i's index in `other`.
        for (index, old) in mapping.enumerated() where index < unitLive.count {
            guard let old, old < other.unitLive.count else { continue }
            unitLast[index] = other.unitLast[old]
            unitLive[index] = other.unitLive[old]
            unitAtReturn[index] = other.unitAtReturn[old]
        }
    }
}
