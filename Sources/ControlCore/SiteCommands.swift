/// A command written into SunSpec model 704 by plant SCADA, the site EMS or the grid operator: a
/// value, its enable, and what it reverts to when nobody refreshes it. The same value type is the
/// SCADA server's record of what was written and the cycle's input. The cycle alone applies a
/// reversion (`settled(at:)` in `SiteController.settleCommands`) and writes the settled commands
/// back for SCADA to read (`SiteRunner.publish`): a write is decoded against them and never judges
/// their expiry. The hold file (Service's `HoldKeeper`, `HoldStore`) uses the same rule to store
/// the limit as it will stand, never to act on the units.
public struct ExpiringCommand: Sendable, Equatable {
    /// `…Ena`: the command is in force.
    public var enabled = false
    /// `WMaxLimPct` (percent of the site's rating) or `WSet` (W, + = discharge).
    public var value: Double
    /// `…EnaRvrt`: whether the reverted command is in force.
    public var revertEnabled = false
    /// `…Rvrt`: the value the command takes when it reverts.
    public var revertValue: Double
    /// `…RvrtTms` as written, seconds; 0 means the configured `max_hold_s`.
    public var timeoutSeconds: UInt32 = 0
    /// When the written command reverts unless refreshed; nil when nothing is pending (never
    /// written, or already reverted for good).
    public var expiresAt: MonotonicInstant?
    /// True once the command has reverted (a reverted setpoint holds only for `max_hold_s`).
    public var reverted = false

    public init(value: Double, revertValue: Double) {
        self.value = value
        self.revertValue = revertValue
    }

    /// The value in force at `now`, or nil (disabled, or past its expiry).
    public func active(at now: MonotonicInstant) -> Double? {
        guard enabled, value.isFinite else { return nil }
        if let expiresAt, now >= expiresAt { return nil }
        return value
    }

    /// How long until the command reverts (zero when nothing is pending).
    public func remaining(at now: MonotonicInstant) -> Duration {
        guard let expiresAt else { return .zero }
        return max(.zero, expiresAt - now)
    }

    /// The command as it stands at `now`: once its time is up it takes its reversion (`…Rvrt`
    /// and `…EnaRvrt`). `holdAfterRevert` bounds an enabled reversion: nil lets it stand until the
    /// next write (the grid operator's fallback limit), a duration ends it after that long (a site
    /// setpoint nobody refreshes is stale, and stale commands mean zero).
    public func settled(at now: MonotonicInstant, holdAfterRevert: Duration?) -> ExpiringCommand {
        guard let expiresAt, now >= expiresAt else { return self }
        var next = self
        if !reverted, revertEnabled {
            next.enabled = true
            next.value = revertValue
            next.reverted = true
            next.expiresAt = holdAfterRevert.map { expiresAt + $0 }
        } else {
            next.enabled = false
            if !reverted { next.value = revertValue }
            next.reverted = true
            next.expiresAt = nil
        }
        return next
    }
}

/// What plant SCADA and the grid operator's control centre have commanded the site: the percent
/// limit (704 `WMaxLimPct…`), a site active-power setpoint (704 `WSet…`, IEC 104 3002), and on the
/// reactive axis a site var setpoint (704 `VarSet…`, IEC 104 3003) and a power factor for each
/// direction (704 `PFWInj…` / `PFWAbs…`, IEC 104 3004 writing both). The two reactive kinds are one
/// party's (rank 3, `RequestSource.scada`); with both enabled the least |Q| holds
/// (docs/design/0010-reactive-power.md).
public struct SiteCommands: Sendable, Equatable {
    /// Percent of the site's rating (Σ unit ratings); until written 100 % with reversion to 100 %.
    public var limit = ExpiringCommand(value: 100, revertValue: 100)
    /// Site active power, W (+ = discharge); until written disabled.
    public var setpoint = ExpiringCommand(value: 0, revertValue: 0)
    /// Site reactive power, var (+ = injecting, over-excited); until written disabled.
    public var reactive = ExpiringCommand(value: 0, revertValue: 0)
    /// Power factor while the site discharges (`PFWInj`): signed by excitation, + over-excited
    /// (injecting vars), − under-excited; |value| in (0, 1], 1 is unity. Until written disabled.
    public var powerFactorInjecting = ExpiringCommand(value: 1, revertValue: 1)
    /// Power factor while the site charges (`PFWAbs`), signed as `powerFactorInjecting`.
    public var powerFactorAbsorbing = ExpiringCommand(value: 1, revertValue: 1)
    /// `scada.max_hold_s`: the longest a write holds without a refresh.
    public var maxHold: Duration = .seconds(60)

    public init(maxHold: Duration = .seconds(60)) { self.maxHold = maxHold }

    /// Every command with any due reversion applied. A limit's enabled reversion stands until
    /// written again; a setpoint's (active, var, power factor) for `max_hold_s`, then it disables.
    public func settled(at now: MonotonicInstant) -> SiteCommands {
        var next = self
        next.limit = limit.settled(at: now, holdAfterRevert: nil)
        next.setpoint = setpoint.settled(at: now, holdAfterRevert: maxHold)
        next.reactive = reactive.settled(at: now, holdAfterRevert: maxHold)
        next.powerFactorInjecting = powerFactorInjecting.settled(at: now, holdAfterRevert: maxHold)
        next.powerFactorAbsorbing = powerFactorAbsorbing.settled(at: now, holdAfterRevert: maxHold)
        return next
    }

    /// The hold a write with reversion time `seconds` gets: the written time, or `max_hold_s` for 0.
    public func hold(forTimeout seconds: UInt32) -> Duration {
        seconds == 0 ? maxHold : .seconds(Int64(seconds))
    }
}
