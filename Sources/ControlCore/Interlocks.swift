/// The quantity an interlock rule watches. Each is computed once per cycle from the snapshot.
public enum InterlockMetric: UInt8, Sendable, CaseIterable {
    case cellVoltageMax, cellVoltageMin, cellVoltageSpread, packVoltage
    /// Charge current as a percentage of the BMS charge current limit (limit floored at 1 A).
    case chargeCurrentPercentOfLimit
    /// Discharge current as a percentage of the BMS discharge current limit (floored at 1 A).
    case dischargeCurrentPercentOfLimit
    case temperatureMax, temperatureMin
    /// Rise rate of the hottest temperature, °C/s, over the configured window.
    case temperatureRiseRate
    case soc
    /// 1 when the BMS reports any protection, else 0.
    case bmsProtection
    /// 1 when the BMS reports any alarm, else 0.
    case bmsAlarm
    /// 1 when the BMS reports a system error, else 0.
    case bmsCritical
    /// 1 when the BMS's charge-enable flag is clear, else 0.
    case bmsChargeDisabled
    /// 1 when the BMS's discharge-enable flag is clear, else 0.
    case bmsDischargeDisabled
    /// 1 when the inverter reports a fault, else 0.
    case inverterFault
    /// Grid frequency minus nominal, Hz.
    case frequencyDeviation
    /// Magnitude of the rate of change of grid frequency, Hz/s.
    case rocof
    /// Age of the stalest required BMS data group, seconds.
    case bmsDataAge
    /// Age of the inverter data, seconds.
    case inverterDataAge
    /// Age of the grid frequency, seconds.
    case frequencyDataAge
    /// Optional BMS groups missing or stale while the required ones are fresh, as a `BMSGroups`
    /// bit mask (0 = none missing), counting only the groups the BMS is expected to send
    /// (`BMSSnapshot.expectedGroups`); unknown while the BMS is not communicating.
    case bmsGroupsMissing
    /// The unit's AC voltage (701 `LNV`), per unit of `grid_integration.reactive_power.nominal_voltage_v`;
    /// absent without that nominal, while the inverter's reading is stale, or outside 0.5–1.5 p.u.
    case acVoltage
    /// The connection point's voltage from a fresh site meter, per unit of
    /// `site.reactive_power.nominal_voltage_v`; absent as `acVoltage` is.
    case gridVoltage

    /// The unit the metric is expressed in, for messages.
    public var unitSymbol: StaticString {
        switch self {
        case .cellVoltageMax, .cellVoltageMin, .cellVoltageSpread, .packVoltage: "V"
        case .chargeCurrentPercentOfLimit, .dischargeCurrentPercentOfLimit, .soc: "%"
        case .temperatureMax, .temperatureMin: "°C"
        case .temperatureRiseRate: "°C/s"
        case .bmsProtection, .bmsAlarm, .bmsCritical, .bmsChargeDisabled, .bmsDischargeDisabled,
            .inverterFault:
            "(flag)"
        case .frequencyDeviation: "Hz"
        case .rocof: "Hz/s"
        case .bmsDataAge, .inverterDataAge, .frequencyDataAge: "s"
        case .bmsGroupsMissing: "(groups)"
        case .acVoltage, .gridVoltage: "p.u."
        }
    }
}

/// This cycle's value of every metric; `nil` where the input is absent or not a number.
public struct MetricFrame: Sendable {
    @usableFromInline var values: [Double]

    /// A frame with every metric absent. Allocates once; reuse it with `clear()`.
    public init() { values = [Double](repeating: .nan, count: InterlockMetric.allCases.count) }

    /// Marks every metric absent (no allocation).
    public mutating func clear() {
        for i in values.indices { values[i] = .nan }
    }

    /// The metric's value, `nil` when absent. Setting NaN or infinity marks it absent.
    public subscript(metric: InterlockMetric) -> Double? {
        get {
            let v = values[Int(metric.rawValue)]
            return v.isFinite ? v : nil
        }
        set { values[Int(metric.rawValue)] = newValue.flatMap { $0.isFinite ? $0 : nil } ?? .nan }
    }
}

/// Which way of power flow a rule restricts.
public enum PowerDirection: String, Sendable, CaseIterable {
    case charge, discharge, both
    @inlinable var affectsCharge: Bool { self != .discharge }
    @inlinable var affectsDischarge: Bool { self != .charge }
}

/// What happens while a rule is active.
public enum InterlockSeverity: Sendable, Equatable {
    /// Reported only; power unaffected.
    case warn
    /// Allowed power falls linearly from full at `start` to zero at the rule's threshold.
    case derate(start: Double)
    /// Zero power in the rule's direction; clears by itself once the condition has been gone for the
    /// rule's hold time.
    case trip
    /// Emergency shutdown: zero power both ways plus a disconnect request; clears only through an
    /// operator reset, and only once the condition is gone.
    case latch

    /// The severity's name in configuration and logs.
    public var name: StaticString {
        switch self {
        case .warn: "warn"
        case .derate: "derate"
        case .trip: "trip"
        case .latch: "latch"
        }
    }
}

/// One row of the interlock table.
public struct InterlockRule: Sendable, Equatable {
    public enum Comparison: String, Sendable { case above, below }

    public var code: TripCode
    public var metric: InterlockMetric
    public var comparison: Comparison
    /// The limit. For a derate, the level at which allowed power reaches zero.
    public var threshold: Double
    /// How far back past the trigger level the metric must go before the condition counts as gone.
    public var hysteresis: Double
    /// How long the condition must persist before the rule acts.
    public var delay: Duration
    /// How long the condition must stay gone before a trip clears (not used by latches).
    public var hold: Duration
    public var severity: InterlockSeverity
    public var direction: PowerDirection

    public init(
        code: TripCode, metric: InterlockMetric, comparison: Comparison, threshold: Double,
        hysteresis: Double = 0, delay: Duration = .zero, hold: Duration = .zero,
        severity: InterlockSeverity, direction: PowerDirection
    ) {
        self.code = code
        self.metric = metric
        self.comparison = comparison
        self.threshold = threshold
        self.hysteresis = hysteresis
        self.delay = delay
        self.hold = hold
        self.severity = severity
        self.direction = direction
    }

    /// The level at which the rule starts acting: the derate start for a derate, else the threshold.
    @inlinable public var triggerLevel: Double {
        if case .derate(let start) = severity { return start }
        return threshold
    }

    /// True when `value` is past the trigger level.
    @inlinable public func triggers(_ value: Double) -> Bool {
        comparison == .above ? value > triggerLevel : value < triggerLevel
    }

    /// True when `value` has not come back past the trigger level by the hysteresis.
    @inlinable public func persists(_ value: Double) -> Bool {
        comparison == .above ? value > triggerLevel - hysteresis : value < triggerLevel + hysteresis
    }

    /// For a derate: the fraction of power still allowed at `value` (1 = none taken away).
    @inlinable public func derateFactor(_ value: Double) -> Double {
        guard case .derate(let start) = severity else { return 1 }
        let span = comparison == .above ? threshold - start : start - threshold
        guard span > 0 else { return triggers(value) ? 0 : 1 }
        let room = comparison == .above ? threshold - value : value - threshold
        return ControlMath.clamp(room / span, 0, 1)
    }
}

/// Inputs that size the default interlock table.
public struct InterlockDefaults: Sendable {
    /// Cells in series in the pack (16 for a 48 V LFP module).
    public var cellsInSeries: Int
    /// BMS data older than this is stale (`BMS_COMM_LOST`).
    public var bmsStaleAfter: Duration
    /// Inverter data older than this is stale (`INVERTER_COMM_LOST`).
    public var inverterStaleAfter: Duration
    /// Grid frequency older than this is stale (`FREQUENCY_LOST`).
    public var frequencyStaleAfter: Duration

    public init(
        cellsInSeries: Int = 16, bmsStaleAfter: Duration = .seconds(3),
        inverterStaleAfter: Duration = .seconds(3), frequencyStaleAfter: Duration = .seconds(2)
    ) {
        self.cellsInSeries = cellsInSeries
        self.bmsStaleAfter = bmsStaleAfter
        self.inverterStaleAfter = inverterStaleAfter
        self.frequencyStaleAfter = frequencyStaleAfter
    }
}

extension InterlockRule {
    /// The shipped rule table for LFP cells; docs/interlocks.md lists it with reasons. Every row can
    /// be overridden from `interlocks:` in the configuration.
    public static func defaultTable(_ d: InterlockDefaults = InterlockDefaults()) -> [InterlockRule] {
        let n = Double(max(1, d.cellsInSeries))
        return [
            .init(code: .cellVoltageHighDerate, metric: .cellVoltageMax, comparison: .above,
                  threshold: 3.60, hysteresis: 0.01, severity: .derate(start: 3.45), direction: .charge),
            .init(code: .cellOvervoltage, metric: .cellVoltageMax, comparison: .above, threshold: 3.65,
                  hysteresis: 0.10, delay: .seconds(1), hold: .seconds(30), severity: .trip, direction: .charge),
            .init(code: .cellOvervoltageCritical, metric: .cellVoltageMax, comparison: .above,
                  threshold: 3.80, hysteresis: 0.10, delay: .milliseconds(500), severity: .latch,
                  direction: .both),
            .init(code: .cellVoltageLowDerate, metric: .cellVoltageMin, comparison: .below,
                  threshold: 2.90, hysteresis: 0.01, severity: .derate(start: 3.05), direction: .discharge),
            .init(code: .cellUndervoltage, metric: .cellVoltageMin, comparison: .below, threshold: 2.80,
                  hysteresis: 0.20, delay: .seconds(1), hold: .seconds(30), severity: .trip,
                  direction: .discharge),
            .init(code: .cellUndervoltageCritical, metric: .cellVoltageMin, comparison: .below,
                  threshold: 2.50, hysteresis: 0.20, delay: .milliseconds(500), severity: .latch,
                  direction: .both),
            .init(code: .cellImbalance, metric: .cellVoltageSpread, comparison: .above, threshold: 0.40,
                  hysteresis: 0.02, delay: .seconds(5), severity: .derate(start: 0.15), direction: .both),
            .init(code: .packOvervoltage, metric: .packVoltage, comparison: .above, threshold: 3.65 * n,
                  hysteresis: 0.10 * n, delay: .seconds(1), hold: .seconds(30), severity: .trip,
                  direction: .charge),
            .init(code: .packUndervoltage, metric: .packVoltage, comparison: .below, threshold: 2.80 * n,
                  hysteresis: 0.20 * n, delay: .seconds(1), hold: .seconds(30), severity: .trip,
                  direction: .discharge),
            .init(code: .chargeOvercurrent, metric: .chargeCurrentPercentOfLimit, comparison: .above,
                  threshold: 110, hysteresis: 10, delay: .seconds(2), hold: .seconds(10), severity: .trip,
                  direction: .charge),
            .init(code: .dischargeOvercurrent, metric: .dischargeCurrentPercentOfLimit, comparison: .above,
                  threshold: 110, hysteresis: 10, delay: .seconds(2), hold: .seconds(10), severity: .trip,
                  direction: .discharge),
            .init(code: .temperatureHighDerate, metric: .temperatureMax, comparison: .above, threshold: 55,
                  hysteresis: 1, severity: .derate(start: 45), direction: .both),
            .init(code: .overtemperature, metric: .temperatureMax, comparison: .above, threshold: 55,
                  hysteresis: 5, delay: .seconds(2), hold: .seconds(60), severity: .trip, direction: .both),
            .init(code: .overtemperatureCritical, metric: .temperatureMax, comparison: .above,
                  threshold: 65, hysteresis: 10, delay: .seconds(1), severity: .latch, direction: .both),
            .init(code: .undertemperatureCharge, metric: .temperatureMin, comparison: .below, threshold: 0,
                  hysteresis: 2, delay: .seconds(5), hold: .seconds(60), severity: .trip, direction: .charge),
            .init(code: .undertemperatureDischarge, metric: .temperatureMin, comparison: .below,
                  threshold: -20, hysteresis: 2, delay: .seconds(5), hold: .seconds(60), severity: .trip,
                  direction: .discharge),
            .init(code: .thermalRunaway, metric: .temperatureRiseRate, comparison: .above, threshold: 0.1,
                  hysteresis: 0.05, delay: .seconds(3), severity: .latch, direction: .both),
            .init(code: .socHigh, metric: .soc, comparison: .above, threshold: 95, hysteresis: 2,
                  severity: .trip, direction: .charge),
            .init(code: .socLow, metric: .soc, comparison: .below, threshold: 5, hysteresis: 2,
                  severity: .trip, direction: .discharge),
            .init(code: .bmsProtection, metric: .bmsProtection, comparison: .above, threshold: 0.5,
                  hold: .seconds(10), severity: .trip, direction: .both),
            .init(code: .bmsAlarm, metric: .bmsAlarm, comparison: .above, threshold: 0.5, severity: .warn,
                  direction: .both),
            .init(code: .bmsCritical, metric: .bmsCritical, comparison: .above, threshold: 0.5,
                  severity: .latch, direction: .both),
            .init(code: .bmsChargeDisabled, metric: .bmsChargeDisabled, comparison: .above, threshold: 0.5,
                  severity: .trip, direction: .charge),
            .init(code: .bmsDischargeDisabled, metric: .bmsDischargeDisabled, comparison: .above,
                  threshold: 0.5, severity: .trip, direction: .discharge),
            .init(code: .inverterFault, metric: .inverterFault, comparison: .above, threshold: 0.5,
                  hold: .seconds(10), severity: .trip, direction: .both),
            .init(code: .gridOverfrequency, metric: .frequencyDeviation, comparison: .above, threshold: 2.5,
                  hysteresis: 0.1, delay: .seconds(1), hold: .seconds(60), severity: .trip, direction: .both),
            .init(code: .gridUnderfrequency, metric: .frequencyDeviation, comparison: .below,
                  threshold: -3.0, hysteresis: 0.1, delay: .seconds(1), hold: .seconds(60), severity: .trip,
                  direction: .both),
            .init(code: .gridRocof, metric: .rocof, comparison: .above, threshold: 2.0, hysteresis: 0.5,
                  delay: .milliseconds(500), hold: .seconds(60), severity: .trip, direction: .both),
            // IEEE 1547 Category III's OV1/UV1: bessd acts only where the inverter's own protection
            // should already have, so it never cuts in on ride-through (design 0010).
            .init(code: .acOvervoltage, metric: .acVoltage, comparison: .above, threshold: 1.10, hysteresis: 0.02,
                  delay: .seconds(13), hold: .seconds(60), severity: .trip, direction: .both),
            .init(code: .acUndervoltage, metric: .acVoltage, comparison: .below, threshold: 0.88, hysteresis: 0.02,
                  delay: .seconds(21), hold: .seconds(60), severity: .trip, direction: .both),
            .init(code: .gridOvervoltage, metric: .gridVoltage, comparison: .above, threshold: 1.10, hysteresis: 0.02,
                  delay: .seconds(13), hold: .seconds(60), severity: .trip, direction: .both),
            .init(code: .gridUndervoltage, metric: .gridVoltage, comparison: .below, threshold: 0.88, hysteresis: 0.02,
                  delay: .seconds(21), hold: .seconds(60), severity: .trip, direction: .both),
            .init(code: .bmsCommLost, metric: .bmsDataAge, comparison: .above,
                  threshold: d.bmsStaleAfter.secondsDouble, hold: .seconds(5), severity: .trip, direction: .both),
            .init(code: .inverterCommLost, metric: .inverterDataAge, comparison: .above,
                  threshold: d.inverterStaleAfter.secondsDouble, hold: .seconds(5), severity: .trip,
                  direction: .both),
            .init(code: .frequencyLost, metric: .frequencyDataAge, comparison: .above,
                  threshold: d.frequencyStaleAfter.secondsDouble, severity: .warn, direction: .both),
            // Warn only: the rules that watch a missing group are inert, but nothing here is unsafe by
            // itself. The delay lets every group arrive once after start-up or a reconnection.
            .init(code: .bmsGroupMissing, metric: .bmsGroupsMissing, comparison: .above, threshold: 0.5,
                  delay: .seconds(5), severity: .warn, direction: .both),
        ]
    }
}

/// The life of one rule: an enum plus one handler per state.
public enum RuleState: Sendable, Equatable {
    /// Condition absent.
    case normal
    /// Condition present, waiting out the rule's delay.
    case pending(since: MonotonicInstant)
    /// Acting.
    case active(since: MonotonicInstant)
    /// Condition gone, still acting until the hold time has passed.
    case clearing(since: MonotonicInstant)
    /// Acting until an operator reset (latch severity only).
    case latched(since: MonotonicInstant)

    /// True while the rule restricts power.
    @inlinable public var isActing: Bool {
        switch self {
        case .active, .clearing, .latched: true
        case .normal, .pending: false
        }
    }

    /// The next state for a metric `value` (`nil` = unknown this cycle: nothing moves).
    public func next(rule: InterlockRule, value: Double?, now: MonotonicInstant) -> RuleState {
        guard let value else { return self }
        switch self {
        case .normal: return Self.onNormal(rule, value, now)
        case .pending(let since): return Self.onPending(rule, value, now, since)
        case .active(let since): return Self.onActive(rule, value, now, since)
        case .clearing(let since): return Self.onClearing(rule, value, now, since)
        case .latched: return self
        }
    }

    static func activate(_ rule: InterlockRule, _ now: MonotonicInstant) -> RuleState {
        rule.severity == .latch ? .latched(since: now) : .active(since: now)
    }

    static func onNormal(_ rule: InterlockRule, _ value: Double, _ now: MonotonicInstant) -> RuleState {
        guard rule.triggers(value) else { return .normal }
        return rule.delay <= .zero ? activate(rule, now) : .pending(since: now)
    }

    static func onPending(
        _ rule: InterlockRule, _ value: Double, _ now: MonotonicInstant, _ since: MonotonicInstant
    ) -> RuleState {
        guard rule.triggers(value) else { return .normal }
        return now >= since + rule.delay ? activate(rule, now) : .pending(since: since)
    }

    static func onActive(
        _ rule: InterlockRule, _ value: Double, _ now: MonotonicInstant, _ since: MonotonicInstant
    ) -> RuleState {
        if rule.persists(value) { return .active(since: since) }
        return rule.hold <= .zero ? .normal : .clearing(since: now)
    }

    static func onClearing(
        _ rule: InterlockRule, _ value: Double, _ now: MonotonicInstant, _ since: MonotonicInstant
    ) -> RuleState {
        if rule.persists(value) { return .active(since: now) }
        return now >= since + rule.hold ? .normal : .clearing(since: since)
    }
}

/// What the interlocks allow this cycle.
public struct InterlockVerdict: Sendable, Equatable {
    /// Fraction of charge power still allowed (0 when blocked).
    public var chargeFactor: Double = 1
    /// Fraction of discharge power still allowed (0 when blocked).
    public var dischargeFactor: Double = 1
    /// The rule that restricts charging most, if any.
    public var chargeLimitedBy: TripCode?
    /// The rule that restricts discharging most, if any.
    public var dischargeLimitedBy: TripCode?
    /// A latched rule asks for the unit to be disconnected.
    public var disconnectRequested = false
    /// Rules acting now (trips, latches, derates, warnings).
    public var active = TripCodeSet()
    /// Latched rules (a subset of `active`).
    public var latched = TripCodeSet()
    /// Trip or latch rules acting now (a subset of `active`).
    public var tripped = TripCodeSet()

    public init() {}
}

/// The result of an operator reset.
public struct ResetOutcome: Sendable, Equatable {
    /// Latches cleared by the reset.
    public var cleared = TripCodeSet()
    /// Latches kept because their condition is still present or cannot be confirmed gone.
    public var refused = TripCodeSet()
    public init() {}
}

/// The interlock table of one unit with each rule's state.
public struct InterlockEngine: Sendable {
    public let rules: [InterlockRule]
    public internal(set) var states: [RuleState]
    /// The value each rule saw last (NaN when unknown), used to decide a reset.
    var lastValues: [Double]
    /// Latches held without a latching rule to hold them: `LATCH_STATE_CORRUPT` after an unreadable
    /// latch file, or a latch whose rule a reload removed or no longer latches. They act as a latch
    /// (zero power both ways, disconnect requested) until an operator reset clears them.
    public internal(set) var carried = TripCodeSet()

    public init(rules: [InterlockRule]) {
        self.rules = rules
        states = [RuleState](repeating: .normal, count: rules.count)
        lastValues = [Double](repeating: .nan, count: rules.count)
    }

    /// Every latched code: rules in the latched state and carried latches.
    public var latchedCodes: TripCodeSet {
        var set = carried
        for index in rules.indices { if case .latched = states[index] { set.insert(rules[index].code) } }
        return set
    }

    /// Restores a latch persisted by an earlier run (before the first cycle). A code whose rule
    /// latches becomes that rule's latched state, so a reset still needs the condition seen gone;
    /// any other code is carried until an operator reset.
    public mutating func restoreLatch(_ code: TripCode, since: MonotonicInstant) {
        if let index = rules.firstIndex(where: { $0.code == code }), rules[index].severity == .latch {
            states[index] = .latched(since: since)
        } else {
            carried.insert(code)
        }
    }

    /// The state of the rule with `code`, if the table has one.
    public func state(of code: TripCode) -> RuleState? {
        rules.firstIndex { $0.code == code }.map { states[$0] }
    }

    /// Evaluates every rule against this cycle's metrics; records transitions into `events`.
    public mutating func evaluate(
        _ metrics: MetricFrame, now: MonotonicInstant, unit: Int, events: inout EventRing
    ) -> InterlockVerdict {
        var verdict = InterlockVerdict()
        for index in rules.indices {
            let value = metrics[rules[index].metric]
            lastValues[index] = value ?? .nan
            let before = states[index]
            // A rule at rest whose condition is absent or unknown stays at rest and acts on nothing
            // (what `next` says): most rules, most cycles, so that answer is not built for them,
            // and only the fields the test reads are taken from the table.
            if case .normal = before {
                guard let value, rules[index].triggers(value) else { continue }
            }
            let rule = rules[index]
            let after = before.next(rule: rule, value: value, now: now)
            states[index] = after
            if before.isActing != after.isActing {
                let kind: ControlEventKind =
                    after.isActing ? (isLatched(after) ? .latched : .raised) : .cleared
                events.push(
                    ControlEvent(
                        kind: kind, unit: unit, code: rule.code, severity: rule.severity, metric: rule.metric,
                        value: value ?? .nan, threshold: rule.threshold, at: now))
            }
            guard after.isActing else { continue }
            apply(rule, value: value, to: &verdict)
        }
        for code in carried {
            verdict.active.insert(code)
            verdict.tripped.insert(code)
            verdict.latched.insert(code)
            verdict.disconnectRequested = true
            if verdict.chargeFactor > 0 || verdict.chargeLimitedBy == nil {
                verdict.chargeFactor = 0
                verdict.chargeLimitedBy = code
            }
            if verdict.dischargeFactor > 0 || verdict.dischargeLimitedBy == nil {
                verdict.dischargeFactor = 0
                verdict.dischargeLimitedBy = code
            }
        }
        return verdict
    }

    private func isLatched(_ state: RuleState) -> Bool {
        if case .latched = state { return true }
        return false
    }

    private func apply(_ rule: InterlockRule, value: Double?, to verdict: inout InterlockVerdict) {
        verdict.active.insert(rule.code)
        let factor: Double
        switch rule.severity {
        case .warn:
            return
        case .derate:
            // A derate acts on this cycle's value; with the value unknown it holds at zero.
            factor = value.map(rule.derateFactor) ?? 0
        case .trip:
            factor = 0
            verdict.tripped.insert(rule.code)
        case .latch:
            factor = 0
            verdict.tripped.insert(rule.code)
            verdict.latched.insert(rule.code)
            verdict.disconnectRequested = true
        }
        if rule.direction.affectsCharge, factor < verdict.chargeFactor {
            verdict.chargeFactor = factor
            verdict.chargeLimitedBy = rule.code
        }
        if rule.direction.affectsDischarge, factor < verdict.dischargeFactor {
            verdict.dischargeFactor = factor
            verdict.dischargeLimitedBy = rule.code
        }
    }

    /// An operator reset: clears every latched rule whose condition is known to be gone.
    public mutating func reset(now: MonotonicInstant, unit: Int, events: inout EventRing) -> ResetOutcome {
        var outcome = ResetOutcome()
        // A carried latch has no condition left to watch: the operator's reset is the check.
        for code in carried {
            outcome.cleared.insert(code)
            events.push(ControlEvent(kind: .resetAccepted, unit: unit, code: code, severity: .latch, at: now))
        }
        carried = TripCodeSet()
        for index in rules.indices {
            guard case .latched = states[index] else { continue }
            let rule = rules[index]
            let value = lastValues[index]
            if value.isFinite && !rule.persists(value) {
                states[index] = .normal
                outcome.cleared.insert(rule.code)
                events.push(ControlEvent(kind: .resetAccepted, unit: unit, code: rule.code,
                                         severity: rule.severity, metric: rule.metric, value: value, threshold: rule.threshold, at: now))
            } else {
                outcome.refused.insert(rule.code)
                events.push(ControlEvent(kind: .resetRefused, unit: unit, code: rule.code,
                                         severity: rule.severity, metric: rule.metric, value: value, threshold: rule.threshold, at: now))
            }
        }
        return outcome
    }
}
