public import BessBase

/// What the grid-support functions command for one control period.
public struct GridSupportOutput: Sendable, Equatable {
    /// Active power, W (+ = discharging): the P asked for under volt-watt's limit, bounded with Q to
    /// `VAMax`. Nil when the P asked for was not a finite number.
    public var activePowerW: Double?
    /// Reactive power, var (+ = injecting), bounded. Nil: no valid reactive command — the voltage
    /// the mode reads is stale or nonsense, or P was not finite; the caller holds Q at 0.
    public var reactivePowerVar: Double?
    /// Volt-watt's limit on active power, W, after its response; nil when volt-watt is off.
    public var voltWattLimitW: Double?
    /// The VRef volt-var used, p.u. (the autonomous one when adjusting); nil in other modes.
    public var vRef: Double?

    public init(activePowerW: Double?, reactivePowerVar: Double?, voltWattLimitW: Double? = nil, vRef: Double? = nil) {
        self.activePowerW = activePowerW
        self.reactivePowerVar = reactivePowerVar
        self.voltWattLimitW = voltWattLimitW
        self.vRef = vRef
    }
}

/// One unit's IEEE 1547-2018 grid-support control law: the reactive mode, volt-watt beside it, the
/// response-time filter and the apparent-power bound, stepped once per control period. Pure: no
/// clock, no I/O, no allocation per step.
///
/// Each step: volt-watt's limit (filtered by its OLRT) caps the P asked for; the reactive mode's
/// target from that P or the voltage passes the mode's response filter (the same filter for every
/// mode, starting from 0 var); (P, Q) are then bounded to `VAMax` as the mode requires
/// (`ApparentPower`). A voltage outside `plausibleVoltage` or NaN is stale: volt-var commands
/// nothing (its filter restarts from 0 var, where the caller holds Q) and volt-watt's limit holds
/// where it was (before any valid voltage: its first point's limit, normally none); the other modes
/// do not read the voltage.
public struct GridSupportController: Sendable {
    public private(set) var settings: GridSupportSettings
    public let rating: UnitRating
    /// The reactive command after its response, var; starts at 0.
    private var reactive: ResponseFilter
    /// Volt-watt's limit after its response, W; starts at the first valid voltage's limit.
    private var voltWattLimit: ResponseFilter
    /// The autonomous VRef, p.u.; starts at the first valid voltage.
    private var autonomousVRef: ResponseFilter

    /// A controller for `rating` running `settings`; throws the first setting out of range.
    public init(settings: GridSupportSettings, rating: UnitRating) throws(GridSupportError) {
        try rating.validate()
        try settings.validate()
        self.settings = settings
        self.rating = rating
        reactive = ResponseFilter(responseTime: .zero, initial: 0)
        voltWattLimit = ResponseFilter(responseTime: .zero)
        autonomousVRef = ResponseFilter(responseTime: .zero)
        tuneFilters()
    }

    /// Follows `settings` from the next step (a mode or curve commanded, then the configured one
    /// again): the filters keep their outputs, so Q and the limit move on from where they are through
    /// the new response time. Throws, changing nothing, when a setting is out of range.
    public mutating func retune(_ settings: GridSupportSettings) throws(GridSupportError) {
        guard settings != self.settings else { return }
        try settings.validate()
        self.settings = settings
        tuneFilters()
    }

    private mutating func tuneFilters() {
        reactive.responseTime = settings.reactive?.responseTime ?? .zero
        voltWattLimit.responseTime = settings.voltWatt?.responseTime ?? .zero
        if case .voltVar(let voltVar) = settings.reactive {
            // A lag of time constant τ reaches 90 % in τ·ln 10.
            autonomousVRef.responseTime = .seconds(voltVar.vRefTimeConstant.seconds * ResponseFilter.ln10)
        }
    }

    /// One control period.
    /// - Parameters:
    ///   - voltage: the measured voltage, p.u. of nominal; NaN when absent or stale.
    ///   - desiredPowerW: the active power asked for, W (+ = discharging), after every other limit.
    ///   - elapsedSeconds: the time since the previous step.
    public mutating func step(voltage: Double, desiredPowerW: Double, elapsedSeconds: Double) -> GridSupportOutput {
        let voltageValid = voltage.isFinite && settings.plausibleVoltage.contains(voltage)
        let limitW = stepVoltWatt(voltage: voltageValid ? voltage : nil, elapsedSeconds: elapsedSeconds)
        guard desiredPowerW.isFinite else {
            reactive.reset(to: 0)
            return GridSupportOutput(activePowerW: nil, reactivePowerVar: nil, voltWattLimitW: limitW)
        }
        let p = min(desiredPowerW, limitW ?? .infinity)
        let noReactive = ApparentPower.bound(p: p, q: 0, rating: rating, reactivePriority: true, minimumVar: (0, 0))
        guard let mode = settings.reactive else {
            return GridSupportOutput(activePowerW: noReactive.p, reactivePowerVar: 0, voltWattLimitW: limitW)
        }
        let va = rating.apparentPowerVA
        var vRef: Double?
        let target: Double
        switch mode {
        case .constantPowerFactor(let s):
            let setting = p >= 0 ? s.discharging : s.charging
            target = setting.excitation.sign * abs(p) * setting.reactiveRatio
        case .constantVar(let s):
            target = s.percent / 100 * va
        case .voltVar(let s):
            guard voltageValid else {
                reactive.reset(to: 0)
                return GridSupportOutput(activePowerW: noReactive.p, reactivePowerVar: nil, voltWattLimitW: limitW)
            }
            let reference = s.autonomousVRef ? adjustedVRef(s, voltage: voltage, elapsedSeconds: elapsedSeconds) : s.vRef
            vRef = reference
            // The curve is written for VRef 1.00 and moves with VRef: evaluate it at V − (VRef − 1).
            target = s.curve.value(at: voltage - (reference - 1)) / 100 * va
        case .wattVar(let s):
            target = s.curve.value(at: rating.activePercent(p)) / 100 * va
        }
        // The capability limits Q after the response, as each bound applies it (OpenDER Eq. 3.9.1).
        let q = reactive.step(toward: target, elapsedSeconds: elapsedSeconds)
        let bounded: (p: Double, q: Double)
        switch mode {
        case .constantPowerFactor:
            bounded = ApparentPower.boundHoldingRatio(p: p, q: q, rating: rating)
        case .wattVar(let s):
            let rating = rating
            bounded = ApparentPower.boundAlongCurve(p: p, q: q, rating: rating) { power in
                rating.reactiveCapable(s.curve.value(at: rating.activePercent(power)) / 100 * va)
            }
        case .constantVar, .voltVar:
            let minimum = settings.minimumReactivePercent
            bounded = ApparentPower.bound(
                p: p, q: q, rating: rating, reactivePriority: settings.reactivePriority,
                minimumVar: (minimum.injecting / 100 * va, minimum.absorbing / 100 * va))
        }
        return GridSupportOutput(activePowerW: bounded.p, reactivePowerVar: bounded.q, voltWattLimitW: limitW, vRef: vRef)
    }

    /// Volt-watt's limit after its response, W, or nil when volt-watt is off. A nil voltage (stale)
    /// holds the limit.
    private mutating func stepVoltWatt(voltage: Double?, elapsedSeconds: Double) -> Double? {
        guard let voltWatt = settings.voltWatt else {
            voltWattLimit.reset(to: nil)
            return nil
        }
        guard let voltage else { return voltWattLimit.output ?? rating.activeW(percent: voltWatt.curve[0].y) }
        let target = rating.activeW(percent: voltWatt.curve.value(at: voltage))
        return voltWattLimit.step(toward: target, elapsedSeconds: elapsedSeconds)
    }

    /// The autonomous VRef: the voltage through its lag, within the limits.
    private mutating func adjustedVRef(_ s: VoltVarSettings, voltage: Double, elapsedSeconds: Double) -> Double {
        let followed = autonomousVRef.step(toward: voltage, elapsedSeconds: elapsedSeconds)
        return min(s.vRefLimits.upperBound, max(s.vRefLimits.lowerBound, followed))
    }
}
