import BessBase

/// Which way reactive power flows. Reactive power + = injecting = over-excited (SunSpec 701's
/// quadrants 1 and 2; 2030.5 `excitation` false), as active power + = discharging.
public enum Excitation: String, Sendable, CaseIterable {
    /// Over-excited: the unit injects reactive power (+Q), raising the voltage.
    case injecting
    /// Under-excited: the unit absorbs reactive power (−Q), lowering the voltage.
    case absorbing

    /// +1 injecting, −1 absorbing.
    var sign: Double { self == .injecting ? 1 : -1 }
}

/// A power factor and its excitation (2030.5's PowerFactorWithExcitation).
public struct PowerFactorSetting: Sendable, Equatable {
    /// The displacement power factor, 0 < pf ≤ 1.
    public var powerFactor: Double
    /// Whether the unit injects or absorbs reactive power at it.
    public var excitation: Excitation

    public init(_ powerFactor: Double, _ excitation: Excitation) {
        self.powerFactor = powerFactor
        self.excitation = excitation
    }

    /// Unity: no reactive power.
    public static let unity = PowerFactorSetting(1, .injecting)

    /// |Q| / |P| at this power factor: √(1 − pf²) / pf.
    var reactiveRatio: Double { (1 - powerFactor * powerFactor).squareRoot() / powerFactor }

    func validate(_ name: String) throws(GridSupportError) {
        guard powerFactor.isFinite, powerFactor > 0, powerFactor <= 1 else {
            throw GridSupportError(.powerFactorRange, message: "\(name) \(powerFactor) is not in (0, 1]")
        }
    }
}

/// Constant power factor (IEEE 1547-2018 §5.3.2): Q = ±|P|·√(1 − pf²)/pf, the unit holding the power
/// factor as P changes. While discharging (P ≥ 0) `discharging` applies (`pf`, `excitation`;
/// 2030.5 `opModFixedPFInjectW`), while charging `charging` (`pf_absorb`, `excitation_absorb`;
/// `opModFixedPFAbsorbW`, SunSpec 704 `PFWAbs`).
public struct ConstantPowerFactorSettings: Sendable, Equatable {
    public var discharging: PowerFactorSetting
    public var charging: PowerFactorSetting
    /// Time to 90 % of a step; the standard's maximum is 10 s.
    public var responseTime: Duration

    public init(discharging: PowerFactorSetting, charging: PowerFactorSetting, responseTime: Duration) {
        self.discharging = discharging
        self.charging = charging
        self.responseTime = responseTime
    }
}

/// Constant reactive power (IEEE 1547-2018 §5.3.5).
public struct ConstantVarSettings: Sendable, Equatable {
    /// The reactive power, percent of the unit's apparent power rating (`VAMax`), + = injecting.
    public var percent: Double
    /// Time to 90 % of a step; the standard's maximum is 10 s.
    public var responseTime: Duration

    public init(percent: Double, responseTime: Duration) {
        self.percent = percent
        self.responseTime = responseTime
    }
}

/// Voltage-reactive power (IEEE 1547-2018 §5.3.3, Table 8).
///
/// The curve's four points are (voltage, p.u. of nominal; reactive power, % of `VAMax`) written for
/// VRef = 1.00 p.u., as IEEE 1547-2018 writes them relative to VRef (V2 = VRef − 0.02…) and OpenDER
/// applies them: the curve in use is moved by VRef − 1 (OpenDER Eq. 3.8.1-5), VRef being `vRef` or,
/// with autonomous adjustment, the measured voltage through a first-order lag of time constant
/// `vRefTimeConstant` clamped to `vRefLimits` (Eq. 3.8.1-4).
public struct VoltVarSettings: Sendable, Equatable {
    /// (V p.u., Q % of VAMax) × 4, V not decreasing; flat outside V1…V4.
    public var curve: GridCurve
    /// The reference voltage, p.u. (0.95…1.05).
    public var vRef: Double
    /// Autonomous VRef adjustment (off by default).
    public var autonomousVRef: Bool
    /// The adjustment's time constant (300…5000 s).
    public var vRefTimeConstant: Duration
    /// The limits of the adjusted VRef, p.u. (OpenDER: 0.95/1.05).
    public var vRefLimits: ClosedRange<Double>
    /// Open-loop response time, to 90 % of a step (1…90 s).
    public var responseTime: Duration

    public init(
        curve: GridCurve, vRef: Double = 1, autonomousVRef: Bool = false, vRefTimeConstant: Duration = .seconds(300),
        vRefLimits: ClosedRange<Double> = 0.95...1.05, responseTime: Duration
    ) {
        self.curve = curve
        self.vRef = vRef
        self.autonomousVRef = autonomousVRef
        self.vRefTimeConstant = vRefTimeConstant
        self.vRefLimits = vRefLimits
        self.responseTime = responseTime
    }
}

/// Active power-reactive power (IEEE 1547-2018 §5.3.4, Table 9).
///
/// The curve's points are (active power, % of the active rating, + = discharging, a negative value
/// % of the charge rating; reactive power, % of `VAMax`), spanning charging (P′3, P′2, P′1) and
/// discharging (P1, P2, P3); flat outside.
public struct WattVarSettings: Sendable, Equatable {
    public var curve: GridCurve
    /// Time to 90 % of a step; the standard's maximum is 10 s.
    public var responseTime: Duration

    public init(curve: GridCurve, responseTime: Duration) {
        self.curve = curve
        self.responseTime = responseTime
    }
}

/// Voltage-active power (IEEE 1547-2018 §5.4.2, Table 10): an upper limit on active power above a
/// voltage, beside any reactive mode.
///
/// The curve's points are (voltage, p.u.; active power limit, % of the active rating, a negative
/// value % of the charge rating): flat at its first point's limit below V1 (100 %: no limit), linear
/// to the last point. A storage unit's last limit may be negative: it then charges at high voltage.
public struct VoltWattSettings: Sendable, Equatable {
    public var curve: GridCurve
    /// Open-loop response time, to 90 % of a step (0.5…60 s).
    public var responseTime: Duration

    public init(curve: GridCurve, responseTime: Duration) {
        self.curve = curve
        self.responseTime = responseTime
    }
}

/// The reactive power modes of IEEE 1547-2018 §5.3; they exclude each other.
public enum ReactivePowerMode: Sendable, Equatable {
    case constantPowerFactor(ConstantPowerFactorSettings)
    case constantVar(ConstantVarSettings)
    case voltVar(VoltVarSettings)
    case wattVar(WattVarSettings)

    /// The mode's open-loop response time: every mode passes the same filter.
    public var responseTime: Duration {
        switch self {
        case .constantPowerFactor(let s): s.responseTime
        case .constantVar(let s): s.responseTime
        case .voltVar(let s): s.responseTime
        case .wattVar(let s): s.responseTime
        }
    }

    /// True for the modes that read the voltage (volt-var).
    public var readsVoltage: Bool {
        if case .voltVar = self { return true }
        return false
    }
}

/// A unit's grid-support functions: at most one reactive mode, volt-watt beside it, and which of P
/// and Q yields when they meet the apparent power rating.
public struct GridSupportSettings: Sendable, Equatable {
    /// The reactive mode; nil: none (the command is 0 var).
    public var reactive: ReactivePowerMode?
    /// Volt-watt; nil: off.
    public var voltWatt: VoltWattSettings?
    /// `reactive_priority`: when P² + Q² exceeds `VAMax²`, true keeps Q and reduces P; false keeps P
    /// and reduces Q, but never below `minimumReactivePercent` (IEEE 1547-2018 Table 7's capability,
    /// which has priority over active power either way: OpenDER Eq. 3.9.1 reads it so).
    public var reactivePriority: Bool
    /// Table 7's minimum reactive capability at rated active power, % of VAMax: injecting and
    /// absorbing (Category B 44 / 44, Category A 44 / 25).
    public var minimumReactivePercent: (injecting: Double, absorbing: Double)
    /// The voltages (p.u.) the functions act on; outside them, and NaN, the voltage is nonsense and
    /// stale for them (`GridSupportSettings.plausibleVoltage`).
    public var plausibleVoltage: ClosedRange<Double>

    /// The voltages believed: 0.5…1.5 p.u. Below 0.5 p.u. a 1547 Category III unit has ceased to
    /// energise (momentary cessation) and a reading there is more likely a scale-factor error by ten
    /// (0.1 p.u.); above 1.5 p.u. no unit may still run (1547 trips at 1.20 p.u. in 0.16 s), and a
    /// line-to-line voltage taken for line-to-neutral (√3 = 1.73 p.u.) or a ×10 scale factor lands
    /// there. So a nonsense reading never commands full vars.
    public static let plausibleVoltage: ClosedRange<Double> = 0.5...1.5

    public init(
        reactive: ReactivePowerMode?, voltWatt: VoltWattSettings? = nil, reactivePriority: Bool = true,
        minimumReactivePercent: (injecting: Double, absorbing: Double) = (44, 44),
        plausibleVoltage: ClosedRange<Double> = Self.plausibleVoltage
    ) {
        self.reactive = reactive
        self.voltWatt = voltWatt
        self.reactivePriority = reactivePriority
        self.minimumReactivePercent = minimumReactivePercent
        self.plausibleVoltage = plausibleVoltage
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.reactive == b.reactive && a.voltWatt == b.voltWatt && a.reactivePriority == b.reactivePriority
            && a.minimumReactivePercent == b.minimumReactivePercent && a.plausibleVoltage == b.plausibleVoltage
    }
}
