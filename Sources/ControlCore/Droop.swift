/// Where the droop characteristic is measured from once frequency leaves the deadband.
public enum DroopReference: String, Sendable, CaseIterable {
    /// From the deadband edge (IEEE 1547-2018): continuous, no step at the edge. The default.
    case edge
    /// From nominal frequency, gated by the deadband: steps by `deadband/(f_n·R)` at the edge.
    case nominal
}

/// A named set of response settings whose numbers come from a verified source
/// (`grid_integration.droop_settings.profile`; docs/frequency-response.md).
public enum DroopProfile: String, Sendable, CaseIterable {
    /// The seed design's settings (`DroopSettings.seedDefault`).
    case seed
    /// IEEE 1547-2018's default frequency-droop (Table 24 defaults, equal for categories I, II and
    /// III; IEEE 1547.1-2020 characteristic 1): deadband ±0.036 Hz, 5 % both ways, from the edge,
    /// 5 s open-loop response time (`DroopSettings.ieee1547_2018(nominal:)`).
    case ieee1547_2018

    /// The profile's settings at `nominal` frequency.
    public func settings(nominal: Hertz) -> DroopSettings {
        switch self {
        case .seed:
            var settings = DroopSettings.seedDefault
            settings.nominal = nominal
            return settings
        case .ieee1547_2018: return .ieee1547_2018(nominal: nominal)
        }
    }
}

/// Frequency-watt (droop) settings. See docs/design/0001-droop.md.
public struct DroopSettings: Sendable, Equatable {
    /// When false the unit gives no frequency response.
    public var enabled: Bool
    /// Nominal grid frequency: 50 or 60 Hz.
    public var nominal: Hertz
    /// Lower deadband edge; below it the unit discharges more (under-frequency response).
    public var deadbandLow: Hertz
    /// Upper deadband edge; above it the unit charges more (over-frequency response).
    public var deadbandHigh: Hertz
    /// Droop for under-frequency, in percent (5 % = full power at a 5 % frequency change).
    public var droopUnderPercent: Double
    /// Droop for over-frequency, in percent.
    public var droopOverPercent: Double
    /// Edge or nominal reference.
    public var reference: DroopReference
    /// Open-loop response time: time to 90 % of a step's final change; zero responds at once.
    public var responseTime: Duration
    /// How long full response must be deliverable (`sustain_s`): the site keeps that much energy in
    /// each direction that dispatch, AGC, SCADA setpoints and the application may not use
    /// (`ResponseReserve`). Zero keeps none.
    public var sustain: Duration = .zero
    /// The response power the reserve is sized for, percent of rating (`response_power_percent`);
    /// nil: the droop's full power at the largest deviation it can be asked for (up to the grid
    /// frequency trips).
    public var responsePowerPercent: Double?

    /// The seed design's defaults: 50 Hz, deadband [49.90, 50.05] Hz, 5 % both ways, edge
    /// reference, 5 s response time.
    public static let seedDefault = DroopSettings(
        enabled: true, nominal: Hertz(50), deadbandLow: Hertz(49.90), deadbandHigh: Hertz(50.05),
        droopUnderPercent: 5, droopOverPercent: 5, reference: .edge, responseTime: .seconds(5))

    /// IEEE 1547-2018's default frequency-droop at `nominal`: dbOF = dbUF = 0.036 Hz,
    /// kOF = kUF = 0.05, measured from the deadband edge, OLRT 5 s (../shared/REFERENCE.md §1.2,
    /// verified against EPRI OpenDER's parameter checks and UL 1741 SB characteristic 1).
    public static func ieee1547_2018(nominal: Hertz = Hertz(60)) -> DroopSettings {
        DroopSettings(
            enabled: true, nominal: nominal, deadbandLow: Hertz(nominal.value - 0.036),
            deadbandHigh: Hertz(nominal.value + 0.036), droopUnderPercent: 5, droopOverPercent: 5, reference: .edge,
            responseTime: .seconds(5))
    }

    public init(
        enabled: Bool, nominal: Hertz, deadbandLow: Hertz, deadbandHigh: Hertz,
        droopUnderPercent: Double, droopOverPercent: Double, reference: DroopReference,
        responseTime: Duration
    ) {
        self.enabled = enabled
        self.nominal = nominal
        self.deadbandLow = deadbandLow
        self.deadbandHigh = deadbandHigh
        self.droopUnderPercent = droopUnderPercent
        self.droopOverPercent = droopOverPercent
        self.reference = reference
        self.responseTime = responseTime
    }
}

/// The steady-state droop characteristic, computed in whole millihertz so that a frequency exactly
/// on a deadband edge gives no response on every machine.
public struct DroopCurve: Sendable {
    public let settings: DroopSettings
    @usableFromInline let nominalMilliHz: Int64
    @usableFromInline let lowEdgeMilliHz: Int64
    @usableFromInline let highEdgeMilliHz: Int64
    @usableFromInline let underGain: Double  // per-unit power per millihertz
    @usableFromInline let overGain: Double

    public init(_ settings: DroopSettings) {
        self.settings = settings
        nominalMilliHz = settings.nominal.millihertz ?? 50_000
        lowEdgeMilliHz = settings.deadbandLow.millihertz ?? nominalMilliHz
        highEdgeMilliHz = settings.deadbandHigh.millihertz ?? nominalMilliHz
        let fn = Double(nominalMilliHz)
        underGain = settings.droopUnderPercent > 0 ? 1 / (fn * settings.droopUnderPercent / 100) : 0
        overGain = settings.droopOverPercent > 0 ? 1 / (fn * settings.droopOverPercent / 100) : 0
    }

    /// True when `frequency` lies inside the deadband, edges included.
    @inlinable public func isInsideDeadband(_ frequency: Hertz) -> Bool {
        guard let f = frequency.millihertz else { return true }
        return f >= lowEdgeMilliHz && f <= highEdgeMilliHz
    }

    /// Power change in per-unit of rated power (+ = more discharge) for `frequency`, before any
    /// clamping. Zero inside the deadband and for an invalid frequency.
    @inlinable public func perUnitChange(at frequency: Hertz) -> Double {
        guard settings.enabled, let f = frequency.millihertz else { return 0 }
        if f < lowEdgeMilliHz {
            let reference = settings.reference == .edge ? lowEdgeMilliHz : nominalMilliHz
            return Double(reference - f) * underGain
        }
        if f > highEdgeMilliHz {
            let reference = settings.reference == .edge ? highEdgeMilliHz : nominalMilliHz
            return -Double(f - reference) * overGain
        }
        return 0
    }
}

/// A first-order lag whose time to 90 % of a step equals `responseTime` (τ = OLRT / ln 10),
/// discretised exactly for the elapsed time of each step: `y += (1 − e^(−Δt/τ)) (u − y)`.
public struct FirstOrderResponse: Sendable {
    public private(set) var output: Double = 0
    @usableFromInline var tau: Double

    public init(responseTime: Duration) {
        tau = responseTime.secondsDouble / ControlMath.ln10
    }

    /// Advances by `elapsedSeconds` towards `target` and returns the new output.
    public mutating func step(toward target: Double, elapsedSeconds: Double) -> Double {
        guard target.isFinite else { return output }
        if tau <= 0 {
            output = target
            return output
        }
        let dt = elapsedSeconds.isFinite ? max(0, elapsedSeconds) : 0
        let alpha = 1 - ControlMath.exp(-dt / tau)
        output += alpha * (target - output)
        return output
    }

    /// Sets the output directly (used on reset).
    public mutating func reset(to value: Double = 0) { output = value }
}

/// Droop with state: the latched pre-disturbance power and the response lag.
///
/// When frequency leaves the deadband the schedule power at that instant is latched as `p_pre` and
/// held while frequency stays outside (IEEE 1547-2018); schedule changes during the event wait until
/// frequency is back inside. The droop part passes the first-order response only, never the ramp
/// limits used for schedule changes.
public struct DroopController: Sendable {
    public internal(set) var curve: DroopCurve
    public internal(set) var latchedBase: Watts?
    var response: FirstOrderResponse

    public init(settings: DroopSettings) {
        curve = DroopCurve(settings)
        response = FirstOrderResponse(responseTime: settings.responseTime)
    }

    /// Follows `settings` from the next step (the utility's `opModFreqDroop` while it is in force, the
    /// configured droop otherwise): the curve and the lag's time constant change, the latched base and
    /// the lag's output stay, so the response moves on from where it is. Nothing when they are the
    /// same; never allocates (the cycle calls it every step).
    public mutating func retune(_ settings: DroopSettings) {
        guard settings != curve.settings else { return }
        curve = DroopCurve(settings)
        response.tau = settings.responseTime.secondsDouble / ControlMath.ln10
    }

    /// The droop contribution after the lag, in watts.
    public var droopPower: Watts { Watts(response.output) }

    /// One control step.
    /// - Parameters:
    ///   - frequency: the fresh grid frequency, or `nil` when absent or stale (no response).
    ///   - schedule: the normal (ramped dispatch or base) setpoint.
    ///   - rating: the unit's rated power, the per-unit base.
    ///   - allowedCharge: the charge power allowed this cycle (a magnitude; defaults to `rating`).
    ///   - allowedDischarge: the discharge power allowed this cycle (defaults to `rating`).
    ///   - elapsedSeconds: time since the previous step.
    ///   - followSchedule: true when the schedule must act even during an event (an operator override);
    ///     the latched base then follows it.
    /// - Returns: the base (latched `p_pre` during an event, else `schedule`) and the droop part. The
    ///   caller holds its schedule at the returned base, so an event's end ramps instead of jumping.
    public mutating func step(
        frequency: Hertz?, schedule: Watts, rating: Watts, allowedCharge: Watts? = nil,
        allowedDischarge: Watts? = nil, elapsedSeconds: Double, followSchedule: Bool = false
    ) -> (base: Watts, droop: Watts) {
        var target = 0.0
        if let frequency, curve.settings.enabled, !curve.isInsideDeadband(frequency) {
            if latchedBase == nil || followSchedule { latchedBase = schedule }
            target = curve.perUnitChange(at: frequency) * rating.value
        } else {
            latchedBase = nil
        }
        let base = latchedBase ?? schedule
        // Anti-windup: the response asks no further than the power allowed now (BMS limits,
        // derates, trips), so the lag never winds past a limit and then sits on it after the limit
        // or the event has gone. It is never pushed against its own sign: a base already beyond
        // a limit is the setpoint clamp's job, not the response's.
        let dischargeRoom = Self.magnitude(allowedDischarge ?? rating) - base.value
        let chargeRoom = -Self.magnitude(allowedCharge ?? rating) - base.value
        target = ControlMath.clamp(target, min(0, chargeRoom), max(0, dischargeRoom))
        let droop = response.step(toward: target, elapsedSeconds: elapsedSeconds)
        return (base, Watts(droop))
    }

    static func magnitude(_ power: Watts) -> Double { power.value.isFinite ? max(0, power.value) : 0 }
}
