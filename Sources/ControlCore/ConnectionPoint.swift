public import GridSupport

/// A reading of the site's grid-connection meter.
public struct MeterReading: Sendable, Equatable {
    /// Active power through the connection point, + = import (taken from the grid).
    public var gridPower: Watts
    /// Grid frequency at the connection point, if the meter reports one.
    public var frequency: Hertz?
    /// The meter's import and export energy registers, if it has them.
    public var importedEnergy: WattHours?
    public var exportedEnergy: WattHours?
    /// Reactive power through the connection point, var, signed as `gridPower` is (+ = taken from
    /// the grid), if the meter reports it.
    public var reactivePower: Double?
    /// Voltage at the connection point, V (line to neutral, the phases' average; a meter that
    /// measures line to line only gives that), if the meter reports one.
    public var voltage: Double?

    public init(gridPower: Watts, frequency: Hertz? = nil, importedEnergy: WattHours? = nil, exportedEnergy: WattHours? = nil,
                reactivePower: Double? = nil, voltage: Double? = nil) {
        self.gridPower = gridPower
        self.frequency = frequency
        self.importedEnergy = importedEnergy
        self.exportedEnergy = exportedEnergy
        self.reactivePower = reactivePower
        self.voltage = voltage
    }
}

/// What the site does with its batteries when nobody above it asks for anything.
public enum SiteApplication: Sendable, Equatable {
    /// Nothing: the batteries serve dispatch and frequency response only.
    case none
    /// Keep grid import at or below `importMax`; recharge only while import is below `rechargeBelow`.
    case peakShaving(importMax: Watts, rechargeBelow: Watts?)
    /// Steer grid power to `targetGrid` (+ = import; usually zero).
    case selfConsumption(targetGrid: Watts)

    /// The name used in configuration, status and logs.
    public var name: String {
        switch self {
        case .none: "none"
        case .peakShaving: "peak_shaving"
        case .selfConsumption: "self_consumption"
        }
    }

    /// The battery power (+ = discharge) this application wants when the site's load (load − PV,
    /// + = consumption) is `load`. Never decreasing in `load`: that is what lets the connection point
    /// act only on what it is sure of (see `ConnectionPoint`).
    public func target(load: Double) -> Double {
        switch self {
        case .none:
            return 0
        case .peakShaving(let importMax, let rechargeBelow):
            if load > importMax.value { return load - importMax.value }
            if let recharge = rechargeBelow?.value, load < recharge { return load - recharge }
            return 0
        case .selfConsumption(let target):
            return load - target.value
        }
    }
}

/// Settings of the site's connection point: its meter, its limits and its application.
public struct SiteSettings: Sendable {
    /// True when a connection-point meter is configured.
    public var hasMeter: Bool
    /// Grid import and export limits at the connection point, W (magnitudes); nil = none.
    public var importMax: Watts?
    public var exportMax: Watts?
    public var application: SiteApplication
    /// Energy the application may not use, % SOC (kept for frequency response and limits).
    public var socReservePercent: Double
    /// Meter data older than this is stale (`METER_STALE`).
    public var meterStaleAfter: Duration
    /// The longest delay between the meter measuring and bessd reading it. After the batteries'
    /// power changes, the controller acts only on what every delay up to this one agrees on.
    public var meterMaxLag: Duration
    /// `site.reactive_power.nominal_voltage_v` (line to neutral, V): the base of the meter's per-unit
    /// voltage (`GRID_OVERVOLTAGE`, `GRID_UNDERVOLTAGE`); nil: none, and those rules are inert.
    public var nominalVoltageV: Double? = nil
    /// `site.reactive_power`'s mode and volt-watt: one law at the connection point, on the sum of the
    /// units' ratings (`SiteReactiveLaw`); nil: none.
    public var gridSupport: GridSupportSettings? = nil

    public init(hasMeter: Bool = false, importMax: Watts? = nil, exportMax: Watts? = nil,
                application: SiteApplication = .none, socReservePercent: Double = 0,
                meterStaleAfter: Duration = .seconds(3), meterMaxLag: Duration = .seconds(1)) {
        self.hasMeter = hasMeter
        self.importMax = importMax
        self.exportMax = exportMax
        self.application = application
        self.socReservePercent = socReservePercent
        self.meterStaleAfter = meterStaleAfter
        self.meterMaxLag = meterMaxLag
    }

    /// No meter, no limits, no application: the site as before this layer existed.
    public static let none = SiteSettings()
}

/// Which connection-point limit decides the batteries' power this cycle.
public enum GridLimitBinding: UInt8, Sendable, Equatable, CustomStringConvertible {
    case none
    /// `grid_limits.import_max_kw`: the batteries give at least what keeps import under it.
    case importLimit
    /// `grid_limits.export_max_kw`: the batteries give at most what keeps export under it.
    case exportLimit

    public var description: String {
        switch self {
        case .none: "none"
        case .importLimit: "import"
        case .exportLimit: "export"
        }
    }
}

/// The connection-point layer of the site's decision: from the meter and the batteries' measured
/// power it keeps a floor (what the batteries must give so import stays under its limit), a ceiling
/// (what they may give so export stays under its limit) and the application's target.
///
/// **Why it cannot hunt.** The site's load (load − PV) is grid power plus battery power *at the
/// instant the meter measured*. The meter's delay is unknown but at most `meterMaxLag`, so the load
/// lies between grid power plus the least and plus the most battery power seen over that window.
/// Every target is a non-decreasing function of the load, so it lies between its values at the two
/// ends. A target is moved only when it lies outside that interval, and only to its nearer end:
/// every move is one the true load calls for, and none goes past it. While the batteries hold still
/// the interval is a point and the controller acts at once (one cycle after the meter shows a step);
/// right after a move it waits until the meter can have seen the move. So a load step is followed
/// without overshoot as long as the meter's delay is within `meterMaxLag`.
///
/// Storage is allocated at init; `update` allocates nothing.
public struct ConnectionPoint: Sendable {
    public let settings: SiteSettings
    /// Battery power the import limit calls for (the batteries give at least this), W.
    public private(set) var floor: Double?
    /// Battery power the export limit allows (the batteries give at most this), W.
    public private(set) var ceiling: Double?
    /// The application's battery target, W (+ = discharge); zero while the meter is stale.
    public private(set) var target: Double = 0
    /// The latest fresh grid power, W (+ = import); nil while stale.
    public private(set) var gridPower: Double?
    /// Bounds of the site's load estimate at the last fresh reading, W.
    public private(set) var loadLow: Double?
    public private(set) var loadHigh: Double?
    /// The import and export limits the last update applied, W: the lower of the configured one and
    /// the utility's (`opModImpLimW` / `opModExpLimW`); nil when neither stands.
    public private(set) var importLimit: Double?
    public private(set) var exportLimit: Double?
    /// True while the meter's data is stale (or never arrived after `meterStaleAfter`).
    public private(set) var stale = false
    /// Moves of a target smaller than this are not made (meter noise), W.
    public let deadband: Double

    /// The batteries' measured (and newly commanded) power over the last moments (`LagHistory`).
    private var history: LagHistory
    /// The last command recorded (see `update`).
    private var lastCommanded: Double?
    private let startedAt: MonotonicInstant

    /// - Parameter rating: the site's total rating, W (sizes the deadband: 0.1 %, at least 100 W).
    public init(settings: SiteSettings, rating: Double, startedAt: MonotonicInstant, history: Int = 2048) {
        self.settings = settings
        self.startedAt = startedAt
        deadband = max(100, (rating.isFinite ? rating : 0) / 1000)
        self.history = LagHistory(capacity: history)
    }

    /// What changed in one update.
    public struct Change: Sendable, Equatable {
        public var becameStale = false
        public var becameFresh = false
    }

    /// One cycle: records the batteries' measured power (+ = discharge, all units) and takes the
    /// meter's reading. `commanded`: the power the units were given last cycle. When it changes it
    /// is recorded beside the measurements: until the inverters' readings catch up, the batteries
    /// may already run anywhere between their last reading and the new command, and a meter reading
    /// can show that before the inverters' readings do (the HIL rig found a limit backing off from
    /// −70 to −52.5 kW that way). Recorded only at the change, it leaves the window after
    /// `max_lag_s`, so a unit that never follows its command cannot freeze the loop.
    /// `importMax` and `exportMax` are the utility's limits (W, infinite for none): the lower of each
    /// and the configured one applies; a limit neither sets leaves no floor or ceiling.
    public mutating func update(meter: Timestamped<MeterReading>?, battery: Double, commanded: Double? = nil,
                                now: MonotonicInstant, importMax utilityImport: Double = .infinity,
                                exportMax utilityExport: Double = .infinity) -> Change {
        let importBefore = importLimit, exportBefore = exportLimit
        importLimit = Self.lower(settings.importMax?.value, utilityImport)
        exportLimit = Self.lower(settings.exportMax?.value, utilityExport)
        if importLimit == nil { floor = nil }
        if exportLimit == nil { ceiling = nil }
        // A limit that fell moves its bound at once by at least the fall, whatever the meter says:
        // the batteries' power moves the connection point's one for one.
        let importFell = Self.fell(from: importBefore, to: importLimit)
        let exportFell = Self.fell(from: exportBefore, to: exportLimit)
        if let fall = importFell, let current = floor { floor = current + fall }
        if let fall = exportFell, let current = ceiling { ceiling = current - fall }
        if let commanded, commanded.isFinite, commanded != lastCommanded {
            lastCommanded = commanded
            record(commanded, at: now)
        }
        record(battery.isFinite ? battery : 0, at: now)
        var change = Change()
        guard settings.hasMeter else { return change }
        let fresh = meter.fresh(at: now, maxAge: settings.meterStaleAfter).flatMap { $0.gridPower.value.isFinite ? $0 : nil }
        guard let reading = fresh, let stamped = meter else {
            // Stale: the application contributes nothing; the limits keep their last values
            // (dropping a floor that holds import under the breaker's limit could trip it).
            gridPower = nil
            target = 0
            let waited = now.seconds(since: meter?.takenAt ?? startedAt)
            if !stale, waited >= settings.meterStaleAfter.secondsDouble {
                stale = true
                change.becameStale = true
            }
            return change
        }
        if stale {
            stale = false
            change.becameFresh = true
        }
        let grid = reading.gridPower.value
        gridPower = grid
        let (low, high) = batteryRange(from: stamped.takenAt - settings.meterMaxLag - .milliseconds(200), to: now)
        let loadLow = grid + low, loadHigh = grid + high
        self.loadLow = loadLow
        self.loadHigh = loadHigh
        if let importMax = importLimit {
            Self.follow(&floor, low: loadLow - importMax, high: loadHigh - importMax, raiseBy: 0, lowerBy: deadband)
            // A limit that fell (or came) takes the safe end of the load's bounds, not the nearer:
            // while the batteries still follow an earlier move the bounds are wide, and the nearer
            // end let the export run 1.0–1.5 kW past a fallen 2030.5 limit for 2–3.5 s. The bounds
            // then narrow and the bound comes back to the load, from the safe side only.
            if importFell != nil || importBefore == nil, let current = floor { floor = max(current, loadHigh - importMax) }
        }
        if let exportMax = exportLimit {
            Self.follow(&ceiling, low: loadLow + exportMax, high: loadHigh + exportMax, raiseBy: deadband, lowerBy: 0)
            if exportFell != nil || exportBefore == nil, let current = ceiling { ceiling = min(current, loadLow + exportMax) }
        }
        var app: Double? = target
        Self.follow(&app, low: settings.application.target(load: loadLow),
                    high: settings.application.target(load: loadHigh), raiseBy: deadband, lowerBy: deadband)
        target = app ?? 0
        return change
    }

    /// How far a limit fell from one update to the next (a limit that was none and now stands has
    /// no fall to move by: nil); nil when it held or rose.
    static func fell(from before: Double?, to now: Double?) -> Double? {
        guard let before, let now, now < before else { return nil }
        return before - now
    }

    /// The lower of a configured limit and the utility's, nil when neither is a finite number.
    static func lower(_ configured: Double?, _ utility: Double) -> Double? {
        let a = configured.flatMap { $0.isFinite ? $0 : nil }
        let b = utility.isFinite ? utility : nil
        guard let a else { return b }
        return b.map { Swift.min(a, $0) } ?? a
    }

    /// Moves `value` into `[low, high]` when it lies outside by more than the allowance on that side
    /// (to the nearer end); sets it to the middle when it has none yet.
    static func follow(_ value: inout Double?, low: Double, high: Double, raiseBy: Double, lowerBy: Double) {
        guard low.isFinite, high.isFinite else { return }
        guard let current = value else {
            value = (low + high) / 2
            return
        }
        if current < low - raiseBy {
            value = low
        } else if current > high + lowerBy {
            value = high
        }
    }

    private mutating func record(_ power: Double, at now: MonotonicInstant) { history.record(power, at: now) }

    /// The least and most battery power in force at any instant from `from` to `to`: every sample
    /// taken in the window and the one in force when it began.
    func batteryRange(from: MonotonicInstant, to: MonotonicInstant) -> (Double, Double) { history.range(from: from, to: to) }
}

/// The site's decision in one cycle, layer by layer (W, + = discharge).
public struct SiteDecision: Sendable, Equatable {
    /// What the pooled units asked for together: their dispatch shares and frequency response.
    public var requested = 0.0
    /// What the held units (operator override, a dispatch for one unit) give together.
    public var held = 0.0
    /// The site application's part of the pool (zero while a dispatch speaks or the meter is stale).
    public var application = 0.0
    /// True when the application acted this cycle.
    public var applicationActive = false
    /// What the pooled units were asked for after the grid limits.
    public var pool = 0.0
    /// The grid limit that decided the pool, if any.
    public var binding = GridLimitBinding.none
    /// What every unit was given in total.
    public var delivered = 0.0
    /// The grid operator's cap on the units' sum in force, W (ramped; infinite when none).
    public var operatorCap = Double.infinity
    /// True when the grid operator's cap decided the units' power this cycle.
    public var operatorLimited = false
    /// The SCADA setpoint in force, W (+ = discharge).
    public var scadaSetpoint: Double?
    /// The utility's controls (IEEE 2030.5) as applied this cycle.
    public var utility = UtilityDecision()
    /// The site's volt-watt cap on the units' discharge in force, W (infinite when none), and whether
    /// it decided the units' power this cycle (the lowest of it, the grid operator's cap and the
    /// utility's).
    public var voltWattCap = Double.infinity
    public var voltWattLimited = false
    public init() {}
}
