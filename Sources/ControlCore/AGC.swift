public import BessBase

/// The regulation band and signal expiry a site declares to the grid operator's AGC
/// (`iec104.agc`, docs/design/0008-agc.md).
public struct AGCLimits: Sendable, Equatable {
    /// The upper regulation limit, W (+ = discharge): the most the control centre may ask.
    public var upper: Double
    /// The lower regulation limit, W (+ = discharge; negative to charge): the least it may ask.
    public var lower: Double
    /// `iec104.agc.expiry_s`: how long a write holds the signal fresh.
    public var expiry: Duration

    public init(upper: Double, lower: Double, expiry: Duration) {
        self.upper = upper
        self.lower = lower
        self.expiry = expiry
    }

    /// True when `power` (W) lies inside the band.
    public func contains(_ power: Double) -> Bool { power.isFinite && power >= lower && power <= upper }
}

/// One order of the control centre: AGC in or out of service (a single command), or a new MW
/// target (a setpoint command). Only an accepted target refreshes the signal.
public enum AGCOrder: Sendable, Equatable {
    case inService(Bool)
    /// The target, W (+ = discharge).
    case target(Double)
}

/// Why the site refuses an AGC order: answered negatively on the wire, never clamped silently. The
/// message quotes numbers only, nothing a peer sent verbatim.
public typealias AGCRefusal = CodedError<AGCRefusalCode>

/// The stable code of an `AGCRefusal` (`AGCRefusal.Code`): a struct over a private enum, so the set is closed.
public struct AGCRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case notConfigured, notInService, notANumber, outsideRegulationBand, localControl
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `AGC_NOT_CONFIGURED`: the site declares no regulation band (no `iec104.agc`).
    public static let notConfigured = Self(.notConfigured)
    /// `AGC_NOT_IN_SERVICE`: a target while AGC is out of service.
    public static let notInService = Self(.notInService)
    /// `AGC_TARGET_INVALID`: a target that is not a finite number.
    public static let notANumber = Self(.notANumber)
    /// `AGC_OUTSIDE_BAND`: a target outside the declared regulation band.
    public static let outsideRegulationBand = Self(.outsideRegulationBand)
    /// `AGC_LOCAL_CONTROL`: every unit is held by the local operator (standby or override).
    public static let localControl = Self(.localControl)

    /// The stable name the journal and the wire's negative confirmation read.
    public var description: String {
        switch value {
        case .notConfigured: "AGC_NOT_CONFIGURED"
        case .notInService: "AGC_NOT_IN_SERVICE"
        case .notANumber: "AGC_TARGET_INVALID"
        case .outsideRegulationBand: "AGC_OUTSIDE_BAND"
        case .localControl: "AGC_LOCAL_CONTROL"
        }
    }
}

extension AGCRefusal {
    /// The site declares no regulation band.
    public static var notConfigured: Self { Self(.notConfigured, message: "the site declares no regulation band (iec104.agc)") }
    /// A target while AGC is out of service.
    public static var notInService: Self { Self(.notInService, message: "a target while AGC is out of service") }
    /// A target that is not a finite number.
    public static var notANumber: Self { Self(.notANumber, message: "the target is not a finite number") }
    /// Every unit is held by the local operator: the site is in local control.
    public static var localControl: Self { Self(.localControl, message: "every unit is held by the local operator") }

    /// A target (W) outside the declared band `lower … upper` (W).
    public static func outsideRegulationBand(target: Double, lower: Double, upper: Double) -> Self {
        Self(.outsideRegulationBand, message: "target \(target) W outside \(lower) … \(upper) W")
    }
}

/// The grid operator's AGC as the site holds it: the control centre's in-service command and MW
/// target, kept in the `ExpiringCommand` shape (`enabled` is in service, `value` the target, NaN
/// until one arrives; `expiresAt` the end of the signal's freshness), with the band the site declares.
///
/// Unlike a SCADA write it never reverts to a value of its own: once stale it simply stops
/// speaking and the schedule decides again, until the next write. It stays in service meanwhile,
/// so the signal's return resumes following without a new in-service command.
public struct AGCCommand: Sendable, Equatable {
    /// In service, target and freshness.
    public var signal = ExpiringCommand(value: .nan, revertValue: .nan)
    /// The declared band and expiry; nil when the site declares none (every order is refused).
    public var limits: AGCLimits?

    public init(limits: AGCLimits? = nil) { self.limits = limits }

    /// The control centre has AGC in service.
    public var inService: Bool { signal.enabled }
    /// The last target accepted, W, while in service; nil before the first.
    public var target: Double? { signal.enabled && signal.value.isFinite ? signal.value : nil }

    /// The target the site follows at `now`, W: in service, received and fresh, and (should the
    /// band have narrowed since it was accepted) kept inside the band. Nil: the schedule decides.
    public func following(at now: MonotonicInstant) -> Double? {
        guard let request, request.inForce(at: now) else { return nil }
        return request.activePower
    }

    /// The request AGC makes of the site (`RequestArbiter` judges its expiry): the last target while
    /// in service, kept inside the band; nil when out of service, before a target, or with no band.
    public var request: SiteRequest? {
        guard let limits, signal.enabled, signal.value.isFinite else { return nil }
        return SiteRequest(source: .agc, activePower: min(max(signal.value, limits.lower), limits.upper), expiresAt: signal.expiresAt)
    }

    /// In service but not refreshed within the expiry: the signal is lost (`AGC_SIGNAL_LOST`).
    public func lost(at now: MonotonicInstant) -> Bool {
        guard signal.enabled, let expiresAt = signal.expiresAt else { return false }
        return now >= expiresAt
    }

    /// How long the signal stays fresh without a refresh (zero when out of service or lost).
    public func remaining(at now: MonotonicInstant) -> Duration {
        guard signal.enabled, let expiresAt = signal.expiresAt, expiresAt > now else { return .zero }
        return .nanoseconds(expiresAt.nanoseconds &- now.nanoseconds)
    }

    /// The command once `order` is applied at `now`; throws why it is refused. Taking AGC out of
    /// service is always accepted and forgets the target; putting it in service, or a target, is
    /// refused when the site is in local control (`local`), and a target outside the band or while
    /// out of service is refused, never clamped.
    public func applying(_ order: AGCOrder, at now: MonotonicInstant, local: Bool) throws(AGCRefusal) -> AGCCommand {
        guard let limits else { throw AGCRefusal.notConfigured }
        var next = self
        switch order {
        case .inService(false):
            next.signal.enabled = false
            next.signal.value = .nan
            next.signal.expiresAt = nil
            return next
        case .inService(true):
            if local { throw AGCRefusal.localControl }
            // Only a target refreshes the signal: an in-service order keeps a fresh target with
            // its own expiry, and never revives a stale one (the site must not ramp to a target
            // that may be minutes old). Newly in service, the first target is awaited for one expiry.
            if signal.active(at: now) == nil {
                next.signal.value = .nan
                if !signal.enabled { next.signal.expiresAt = now + limits.expiry }
            }
            next.signal.enabled = true
            return next
        case .target(let power):
            guard signal.enabled else { throw AGCRefusal.notInService }
            guard power.isFinite else { throw AGCRefusal.notANumber }
            guard limits.contains(power) else {
                throw AGCRefusal.outsideRegulationBand(target: power, lower: limits.lower, upper: limits.upper)
            }
            if local { throw AGCRefusal.localControl }
            next.signal.value = power
        }
        next.signal.expiresAt = now + limits.expiry
        return next
    }
}

extension AGCCommand {
    /// The AGC target the site follows this cycle (W, inside the band), or nil; pushes
    /// `agcSignalLost` when an in-service signal goes stale and `agcSignalRestored` when it is
    /// followed again (`lost`: whether the loss stands). Taking AGC out of service ends a loss without an event.
    func follow(at now: MonotonicInstant, lost: inout Bool, events: inout EventRing) -> Double? {
        let target = following(at: now)
        if self.lost(at: now) {
            if !lost {
                lost = true
                events.push(ControlEvent(kind: .agcSignalLost, unit: -1, value: (self.target ?? .nan) / 1000,
                                         threshold: limits?.expiry.secondsDouble ?? .nan, at: now))
            }
        } else if lost, let target {
            lost = false
            events.push(ControlEvent(kind: .agcSignalRestored, unit: -1, value: target / 1000, at: now))
        } else if !inService {
            lost = false
        }
        return target
    }
}

extension SiteController {
    /// True while AGC is in service and its signal is stale (`AGC_SIGNAL_LOST` stands).
    public var agcSignalLost: Bool { running.agcLost }

    /// What the site follows while AGC speaks, W: the schedule of the units it stands in for as
    /// ramped at `limits.schedule_ramp_percent_per_s` (held at the latched pre-disturbance power
    /// during a frequency event), without their droop. Nil while AGC is not followed.
    public var agcFollowed: Double? {
        guard agcInForce != nil else { return nil }
        var sum = 0.0
        for index in units.indices where units[index].decision.pooled { sum += units[index].decision.base.value }
        return sum
    }
}
