/// What happened.
public enum ControlEventKind: UInt8, Sendable {
    /// A rule started acting (trip, derate or warning).
    case raised
    /// A rule stopped acting.
    case cleared
    /// A latching rule tripped; it stays until an operator reset.
    case latched
    /// An operator reset cleared a latch.
    case resetAccepted
    /// An operator reset left a latch in place (condition present or unknown).
    case resetRefused
    /// The unit's state changed (`state` holds the new one).
    case stateChanged
    /// A dispatch or override was ignored because it was not a finite number.
    case commandRejected
    /// The site cannot deliver what it is asked (`unit` is -1, `value` the kW missing, `threshold`
    /// the kW asked of the pool).
    case siteShortfall
    /// The site delivers what it is asked again (`unit` is -1).
    case siteShortfallCleared
    /// The connection-point meter's data is stale (`unit` -1, `value` its age in seconds): the site
    /// application contributes nothing and the grid limits hold their last values.
    case meterStale
    /// The meter answers again (`unit` -1).
    case meterFresh
    /// A grid limit decides the batteries' power (`unit` -1, `value` the grid power in kW, + =
    /// import, `threshold` the limit in kW, `metric` nil; `state` nil). `code` is nil; which limit is
    /// in `limit`.
    case gridLimitBinding
    /// No grid limit has bound for 5 s (`unit` -1).
    case gridLimitReleased
    /// The grid operator's limit written by SCADA reached its reversion time without a refresh
    /// (`unit` -1, `value` the percent now in force, NaN when none).
    case operatorLimitReverted
    /// The site setpoint written by SCADA reached its reversion time (or its reverted value its
    /// hold) without a refresh (`unit` -1, `value` the kW now in force, NaN when none).
    case siteSetpointReverted
    /// The site var setpoint (704 `VarSet`, IEC 104 3003) reached its reversion time (or its
    /// reverted value its hold) without a refresh (`unit` -1, `value` the kvar now in force, NaN when none).
    case siteReactiveReverted
    /// The power factor while discharging (704 `PFWInj`, IEC 104 3004) reverted so (`unit` -1,
    /// `value` the signed power factor now in force, NaN when none).
    case sitePowerFactorInjectingReverted
    /// The power factor while charging (704 `PFWAbs`, IEC 104 3004) reverted so, as `PFWInj`.
    case sitePowerFactorAbsorbingReverted
    /// AGC is in service but its signal was not refreshed within `iec104.agc.expiry_s`: the
    /// schedule decides again (`unit` -1, `value` the last target in kW, `threshold` the expiry in s).
    case agcSignalLost
    /// A fresh AGC target after a loss: the site follows AGC again (`unit` -1, `value` the target in kW).
    case agcSignalRestored
    /// The configured frequency source (the PMU) has no usable sample younger than its maximum age:
    /// the cycle follows the inverters' median instead (`unit` -1, `value` the newest sample's age in
    /// ms, NaN when there is none, `threshold` the maximum age in ms).
    case frequencySourceFallback
    /// The PMU's samples are usable again and the cycle follows it (`unit` -1, `value` the sample's age in ms).
    case frequencySourceRestored
    /// A unit's SOC reached its frequency-response reserve in `reserve`'s direction: dispatch, AGC, SCADA
    /// setpoints and the application stop on it that way (`value` the SOC %, `threshold` the reserve's
    /// SOC edge %). Once per unit and direction, judged on a known SOC.
    case responseReserveReached
    /// The unit's SOC is back inside its reserve band by the resume margin: dispatch may use that
    /// direction again (`value` the SOC %, `threshold` the reserve's SOC edge %).
    case responseReserveCleared
    /// No block of the block schedule is in force (no schedule, before its first block, between
    /// blocks or past its last): the configured fallback acts (`unit` -1, `value` 0 for
    /// `application`, 1 for `zero`, `threshold` the blocks in the window). Once on entering.
    case scheduleFallback
    /// A block of the schedule is in force again after a fallback (`unit` -1, `value` its target in
    /// kWh, `threshold` its start in Unix seconds).
    case scheduleResumed
}

/// An event the cycle hands to the logging thread. Plain values only, so recording one never
/// allocates.
public struct ControlEvent: Sendable, Equatable {
    public var kind: ControlEventKind
    /// Index of the unit in the configuration.
    public var unit: Int
    public var code: TripCode?
    public var severity: InterlockSeverity?
    /// What the rule watches (its unit is `metric.unitSymbol`).
    public var metric: InterlockMetric?
    /// The metric's value when the event happened (NaN when unknown).
    public var value: Double
    /// The rule's threshold.
    public var threshold: Double
    /// The unit's new state, for `stateChanged`.
    public var state: UnitState?
    /// Which grid limit, for `gridLimitBinding` and `gridLimitReleased`.
    public var limit: GridLimitBinding = .none
    /// Which direction's response reserve, for `responseReserveReached` and `responseReserveCleared`.
    public var reserve: ReserveDirection?
    public var at: MonotonicInstant

    public init(
        kind: ControlEventKind, unit: Int, code: TripCode? = nil, severity: InterlockSeverity? = nil,
        metric: InterlockMetric? = nil, value: Double = .nan, threshold: Double = .nan, state: UnitState? = nil,
        limit: GridLimitBinding = .none, reserve: ReserveDirection? = nil, at: MonotonicInstant
    ) {
        self.limit = limit
        self.reserve = reserve
        self.kind = kind
        self.unit = unit
        self.code = code
        self.severity = severity
        self.metric = metric
        self.value = value
        self.threshold = threshold
        self.state = state
        self.at = at
    }
}

/// A bounded first-in first-out buffer with storage allocated once: the cycle's events on their
/// way to the service thread (`EventRing`), and the bus workers' notices on their way to the journal.
///
/// When full, new elements are counted in `dropped` and discarded: the older ones (often the first
/// trip of a cascade) are the ones an operator needs.
public struct BoundedRing<Element> {
    @usableFromInline var storage: [Element]
    @usableFromInline var head = 0
    @usableFromInline var held = 0
    @usableFromInline var droppedCount: UInt64 = 0
    /// Elements held now.
    public var count: Int { held }
    /// Elements discarded because the ring was full (never reset).
    public var dropped: UInt64 { droppedCount }

    /// Creates a ring holding at most `capacity` elements; `filler` only fills the storage.
    public init(capacity: Int, filler: Element) {
        storage = [Element](repeating: filler, count: max(1, capacity))
    }

    public var capacity: Int { storage.count }

    /// Appends an element, or counts it as dropped when full.
    @inlinable
    public mutating func push(_ element: Element) {
        guard held < storage.count else {
            droppedCount &+= 1
            return
        }
        storage[(head + held) % storage.count] = element
        held += 1
    }

    /// Removes and returns the oldest element.
    @inlinable
    public mutating func pop() -> Element? {
        guard held > 0 else { return nil }
        let element = storage[head]
        head = (head + 1) % storage.count
        held -= 1
        return element
    }

    /// Removes every element, oldest first, handing each to `body`.
    @inlinable
    public mutating func drain(_ body: (Element) throws -> Void) rethrows {
        while let element = pop() { try body(element) }
    }
}

extension BoundedRing: Sendable where Element: Sendable {}

/// The cycle's events, bounded.
public typealias EventRing = BoundedRing<ControlEvent>

extension BoundedRing where Element == ControlEvent {
    /// Creates a ring holding at most `capacity` events.
    public init(capacity: Int = 256) {
        self.init(capacity: capacity, filler: ControlEvent(kind: .cleared, unit: 0, at: .zero))
    }
}

/// The slope of a signal over a time window, from a fixed ring of samples (no allocation after init).
///
/// Used for the temperature rise rate (thermal runaway) and the rate of change of grid frequency.
public struct SlopeEstimator: Sendable {
    private var times: [Int64]
    private var values: [Double]
    private var head = 0
    private var count = 0
    /// The least-squares fit of the samples as they stand, refreshed whenever a sample is added or
    /// dropped. It depends on the samples only (the window ends at the newest one); `now` decides
    /// no more than whether the fit is still current, so the cycle asks for it without redoing
    /// the sums (at a 10 ms cycle a sample is added once every window/32, not once a cycle).
    private var fitted: Double?
    /// The window the slope is taken over.
    public let window: Duration

    /// - Parameters:
    ///   - window: the slope is taken between the newest sample and the oldest one inside this window.
    ///   - capacity: samples kept; if the window holds more, the slope uses the oldest kept.
    private let spacing: Int64

    public init(window: Duration, capacity: Int = 64) {
        self.window = window
        spacing = window.nanosecondsClamped / Int64(max(1, capacity / 2))
        times = [Int64](repeating: 0, count: max(2, capacity))
        values = [Double](repeating: 0, count: max(2, capacity))
    }

    /// Adds a sample taken at `at`. Samples not newer than the newest one are ignored (the same
    /// measurement seen again by a later cycle). Non-finite values reset the estimator.
    public mutating func add(_ value: Double, at: MonotonicInstant) {
        guard value.isFinite else {
            reset()
            return
        }
        if count > 0 {
            let newest = times[(head + count - 1) % times.count]
            guard at.nanoseconds > newest else { return }
            // Keep samples at least window/(capacity/2) apart, so the ring always spans the window
            // however fast samples come (at a 10 ms cycle 64 raw samples would cover 0.64 s only).
            guard at.nanoseconds - newest >= spacing else { return }
        }
        if count == times.count {
            head = (head + 1) % times.count
            count -= 1
        }
        let slot = (head + count) % times.count
        times[slot] = at.nanoseconds
        values[slot] = value
        count += 1
        fitted = fit()
    }

    /// Forgets every sample.
    public mutating func reset() {
        count = 0
        fitted = nil
    }

    /// The slope in units per second at `now`, or `nil` when the samples inside the window span less
    /// than half of it (not enough history yet, or the signal went stale).
    public func slope(at now: MonotonicInstant) -> Double? {
        guard count >= 2 else { return nil }
        let windowNs = window.nanosecondsClamped
        let newestSlot = (head + count - 1) % times.count
        let newestTime = times[newestSlot]
        guard now.nanoseconds - newestTime <= windowNs else { return nil }
        var oldestSlot = newestSlot
        var i = 0
        while i < count {
            let slot = (head + i) % times.count
            if newestTime - times[slot] <= windowNs {
                oldestSlot = slot
                break
            }
            i += 1
        }
        let span = newestTime - times[oldestSlot]
        guard span > 0, span * 2 >= windowNs else { return nil }
        return (values[newestSlot] - values[oldestSlot]) / (Double(span) * 1e-9)
    }

    /// The least-squares slope in units per second of every sample inside the window ending at the
    /// newest one, at `now`; `nil` under the same conditions as `slope(at:)`.
    ///
    /// Unlike newest-minus-oldest, one outlier or one quantisation step at either end of the window
    /// moves it by a fraction only: a step of height h inside a window of length T moves it by at
    /// most 1.5·h/T (at the window's middle), and by less the nearer the step is to an end.
    public func leastSquaresSlope(at now: MonotonicInstant) -> Double? {
        guard count >= 2 else { return nil }
        let newestTime = times[(head + count - 1) % times.count]
        guard now.nanoseconds - newestTime <= window.nanosecondsClamped else { return nil }
        return fitted
    }

    /// The least-squares slope of the samples inside the window ending at the newest one, or `nil`
    /// when they are fewer than two or span less than half the window.
    private func fit() -> Double? {
        guard count >= 2 else { return nil }
        let windowNs = window.nanosecondsClamped
        let newestTime = times[(head + count - 1) % times.count]
        var first = 0
        while first < count, newestTime - times[(head + first) % times.count] > windowNs { first += 1 }
        let n = count - first
        guard n >= 2, (newestTime - times[(head + first) % times.count]) * 2 >= windowNs else { return nil }
        // Times relative to the newest sample, in seconds, keep the sums well conditioned.
        var meanT = 0.0, meanV = 0.0
        for i in first..<count {
            let slot = (head + i) % times.count
            meanT += Double(times[slot] - newestTime) * 1e-9
            meanV += values[slot]
        }
        meanT /= Double(n)
        meanV /= Double(n)
        var covariance = 0.0, variance = 0.0
        for i in first..<count {
            let slot = (head + i) % times.count
            let dt = Double(times[slot] - newestTime) * 1e-9 - meanT
            covariance += dt * (values[slot] - meanV)
            variance += dt * dt
        }
        guard variance > 0 else { return nil }
        return covariance / variance
    }
}
