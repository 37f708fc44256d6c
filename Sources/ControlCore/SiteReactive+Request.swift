import GridSupport

/// The reactive axis of the site's request in `ReactiveStage` (docs/design/0010-reactive-power.md,
/// the authority table and "The site path", Allocation).
///
/// Who sets a unit's Q, in the order of authority: its state (stopped, no var points, stale data:
/// the stage's own branches), then the site's reactive request in force, the highest party whose Q
/// holds (`RequestArbiter.reactiveWinner`: utility, then SCADA's var or power-factor setpoint), then
/// the aggregator's var for that unit (`PowerCommand.reactive` of its dispatch), then the configured
/// mode. AGC and an operator override carry no Q, so neither silences a var setpoint: a unit an
/// override holds still carries its part of the site's vars.
///
/// - `.vars(Q)`: Q is shared over the units that carry Q (`carries`: var points, running, fresh) in
///   proportion to their free apparent power `min(VarMax by sign, √(VAMax² − P²))`, P the unit's
///   setpoint this period as the pool shared it; a stopped unit takes no share, so its part goes to
///   the others in the same period. Beyond Σ free, the units under reactive priority take the rest
///   in proportion to their capability beyond their free part (their law then cuts their P); what
///   none can take is `shortfallVar`. Each unit's law is retuned to constant var at its share with
///   response 0 (the party's setpoint is a step, as `WSet` is).
/// - `.powerFactor`: every unit's law is retuned to that constant power factor (response 0), so the
///   units' sum holds it while their P share a sign.
/// - `.mode`: every unit's law is retuned to that curve (the utility's volt-var or watt-var) once, and
///   runs it on its own voltage or P with the curve's response time, as a configured mode runs.
/// - The aggregator's var holds its unit's Q, clamped to the unit's capability.
/// When the request ends, `retune` hands back to the configured mode from where Q stands (its
/// response time then moves Q on): no step. A unit with no configured reactive mode goes to 0 var
/// through `releaseTime` and is then left alone again.
///
/// Retuning validates the settings (no allocation, but not free): a var share is retuned only when
/// it moved more than `retuneVar` of the unit's `VAMax` since the last retune.
extension ReactiveStage {
    /// What a party asks of one unit this period, and who asks.
    struct Want: Sendable, Equatable {
        var ask: ReactiveAsk
        var source: ReactiveSource

        /// True when the ask is a curve that reads the voltage (the utility's volt-var).
        var readsVoltage: Bool {
            if case .mode(let mode) = ask { return mode.readsVoltage }
            return false
        }
    }

    /// The response time of the return to 0 var of a unit with no configured reactive mode once a
    /// request ends: 10 s, the constant-var mode's default (IEEE 1547-2018's maximum).
    static let releaseTime: Duration = .seconds(10)
    /// Below this |Q|, var, a released unit is left alone again.
    static let releasedVar = 1.0

    /// The least change of a var share, var, that retunes the unit's law: 0.1 % of `VAMax`, at least
    /// 1 var (the 704 write's own threshold).
    static func retuneVar(_ va: Double) -> Double { max(1, 0.001 * va) }

    /// What unit `index` is asked this period: its part of the site's request, else the aggregator's
    /// var for it, else nil (its configured mode).
    func wanted(_ index: Int, request: (ask: ReactiveAsk, source: ReactiveSource)?) -> Want? {
        if let request {
            switch request.ask {
            case .vars: return Want(ask: .vars(shares[index]), source: request.source)
            case .powerFactor, .mode: return Want(ask: request.ask, source: request.source)
            }
        }
        guard index < unitVar.count, let q = unitVar[index], q.isFinite, let rating = laws[index]?.rating else { return nil }
        let capability = Self.capability(rating, injecting: q >= 0)
        return Want(ask: .vars(min(capability, max(-capability, q))), source: .aggregator)
    }

    /// Retunes unit `index`'s law to what is asked of it (`want`), or back to its configured mode when
    /// nothing is. The filters keep their outputs, so Q moves on from where it stands.
    mutating func follow(_ index: Int, _ want: Want?) {
        guard var law = laws[index], let base = initial[index] else { return }
        var settings = base.settings
        settings.voltWatt = utilityVoltWatt ?? base.settings.voltWatt
        let next: Tuning
        switch want?.ask {
        case .vars(let q)?:
            let va = law.rating.apparentPowerVA
            if tuning[index] == .request, case .constantVar(let tuned) = law.settings.reactive,
               abs(tuned.percent / 100 * va - q) <= Self.retuneVar(va)
            {
                return
            }
            let percent = min(100, max(-100, q / va * 100))
            settings.reactive = .constantVar(ConstantVarSettings(percent: percent.isFinite ? percent : 0, responseTime: .zero))
            next = .request
        case .powerFactor(let pf)?:
            settings.reactive = .constantPowerFactor(pf)
            next = .request
        case .mode(let mode)?:
            // Retuned once: the mode's own filter (and volt-var's VRef) runs on from there.
            if tuning[index] == .request, law.settings.reactive == mode { return }
            settings.reactive = mode
            next = .request
        case nil:
            switch tuning[index] {
            case .configured: return
            case .release where base.settings.reactive == nil: return
            case .request, .release:
                if base.settings.reactive == nil {
                    settings.reactive = .constantVar(ConstantVarSettings(percent: 0, responseTime: Self.releaseTime))
                    next = .release
                } else {
                    next = .configured
                }
            }
        }
        // Settings the law refuses (none reach here: shares are clamped, power factors checked on
        // arrival) leave the law as it was.
        guard (try? law.retune(settings)) != nil else { return }
        laws[index] = law
        tuning[index] = next
    }

    /// Puts the utility's volt-watt (`curve`, 2030.5 `opModVoltWatt` in force) in place of each unit's
    /// configured one, or (nil) the configured one back: each law retuned once when it changes (or after
    /// a stop reset it), its filter going on from where its limit stands. It is not a request: it
    /// applies whoever sets Q, and to a unit with no configured mode (which then lowers P only).
    ///
    /// Nothing to compare while no utility curve is in force nor was last period: every law then runs
    /// its configured volt-watt (each retune, reset and rebuild takes the configured one), so the
    /// loop is skipped. A stopped unit is reset to `resting`, which carries the utility's curve
    /// while it is in force, so a stop costs no retune every period.
    mutating func useVoltWatt(_ curve: VoltWattSettings?) {
        if curve == nil, utilityVoltWatt == nil { return }
        let changed = curve != utilityVoltWatt
        utilityVoltWatt = curve
        for index in laws.indices {
            guard laws[index] != nil, let base = initial[index] else { continue }
            let wanted = curve ?? base.settings.voltWatt
            if changed { resting[index] = Self.retuned(base, voltWatt: wanted) }
            if laws[index]?.settings.voltWatt != wanted { retuneVoltWatt(index, wanted) }
        }
    }

    /// `law` with `voltWatt` in place of its own; settings the law refuses leave it as it was.
    static func retuned(_ law: GridSupportController, voltWatt: VoltWattSettings?) -> GridSupportController {
        var out = law
        var settings = out.settings
        settings.voltWatt = voltWatt
        return (try? out.retune(settings)) != nil ? out : law
    }

    /// Retunes unit `index`'s law with `voltWatt`; settings the law refuses leave it as it was.
    private mutating func retuneVoltWatt(_ index: Int, _ voltWatt: VoltWattSettings?) {
        guard let law = laws[index] else { return }
        laws[index] = Self.retuned(law, voltWatt: voltWatt)
    }

    /// Shares the site's var request `q` (+ = injecting) over the units that carry Q, into `shares`,
    /// by free apparent power and then, beyond it, by the capability left to the units under reactive
    /// priority; the rest is `shortfallVar`. Written in place: no allocation.
    mutating func share(_ q: Double, units: [UnitController], ceased: Bool) {
        let injecting = q >= 0
        let magnitude = q.isFinite ? abs(q) : 0
        var free = 0.0, beyond = 0.0
        for index in shares.indices {
            shares[index] = 0
            room[index] = 0
            guard index < units.count, let law = laws[index], carries(index, units[index].decision, ceased: ceased),
                  !keepsOwnVar(index) else { continue }
            let capability = Self.capability(law.rating, injecting: injecting)
            let va = law.rating.apparentPowerVA
            let p = units[index].decision.setpoint.value
            let circle = p.isFinite ? max(0, va * va - p * p).squareRoot() : 0
            shares[index] = min(capability, circle)
            free += shares[index]
            if initial[index]?.settings.reactivePriority ?? true {
                room[index] = max(0, capability - shares[index])
                beyond += room[index]
            }
        }
        let sign = injecting ? 1.0 : -1.0
        if magnitude <= free {
            let scale = free > 0 ? magnitude / free : 0
            for index in shares.indices { shares[index] *= scale * sign }
            shortfallVar = 0
        } else {
            let extra = min(magnitude - free, beyond)
            for index in shares.indices {
                shares[index] = sign * (shares[index] + (beyond > 0 ? extra * room[index] / beyond : 0))
            }
            shortfallVar = sign * (magnitude - free - extra)
        }
    }
}
