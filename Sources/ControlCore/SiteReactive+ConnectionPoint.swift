import GridSupport

/// The reactive law at the connection point (`site.reactive_power`; docs/design/0010-reactive-power.md,
/// "The site path"): one `GridSupportController` for the site, rated at the sum of the ratings of the
/// units with var points, stepped every period before `ReactiveStage` shares Q over the units.
///
/// - **With a fresh meter** (`ConnectionPoint` took a reading this period, and it carries var): V is
///   the meter's per-unit voltage (`ConnectionPoint.voltagePU`; a meter that measures none: the
///   units' mean, `SiteController.meteredVar`), the law's Q is the target *at the
///   connection point*, and the units are asked the target plus the reactive load. The reactive load
///   is meter Q (+ = taken from the grid) plus Σ units' measured Q (+ = injecting) at the instant the
///   meter measured. That instant is unknown within `max_lag_s`, so the load lies between meter Q plus
///   the least and plus the most Σ units' Q over that window (`LagHistory`, as the battery ceiling's
///   load). The ask moves only when it lies outside `[target + low, target + high]` by more than
///   `deadband`, and then to the nearer end: it cannot hunt, as `ConnectionPoint` cannot. A var
///   setpoint from any party is held at the connection point the same way.
/// - **Without a meter, or while it is stale**: V is the mean of the fresh units' per-unit voltages
///   and the target is Σ units' Q, with no load term.
/// - A voltage mode without a plausible voltage asks 0 var (`staleVoltage`), never full var.
/// - Constant power factor and a party's PF setpoint are never closed on the meter: each unit holds
///   the power factor (the meter's P includes the load).
/// - Volt-watt caps Σ units' discharge in the next period's bounds (`voltWattCap`). The utility's
///   volt-watt in force (2030.5 `opModVoltWatt`) replaces a volt-watt configured here, as it replaces
///   each unit's (`useVoltWatt`), and the configured one returns when it ends.
/// - A party's request replaces the site's mode while it holds, the law retuned to it (`tune`), so
///   when it ends the mode goes on from where Q stands, with no step. A party's curve (the utility's
///   volt-var or watt-var, `.mode`) runs here, on the site's voltage and P, its Q shared over the
///   units as the site's own mode's is; without a site law it runs at each unit.
///
/// Storage is fixed at init; `step` copies plain values (a law is rebuilt only when the site's
/// rating changes, which validation makes allocate).
struct SiteReactiveLaw: Sendable {
    /// The site's settings; nil: no law at the connection point.
    let settings: GridSupportSettings?
    /// The law as it runs, on `rating`; nil without settings or without a unit with var points.
    private(set) var law: GridSupportController?
    /// The law as built on `rating`, before any step: `law` is reset to it (a plain copy) while no
    /// unit carries Q, as each unit's law is.
    private var initial: GridSupportController?
    /// Σ the ratings of the units with var points the law was built on.
    private(set) var rating: UnitRating?
    /// Σ units' measured Q, var, over the last moments, with the ask recorded when it changed.
    private var history: LagHistory
    /// What the units were asked together last period, var (+ = injecting); nil: none yet.
    private(set) var ask: Double?
    /// The law's Q at the connection point this period, var; nil when it gave none (stale voltage,
    /// no reactive mode, a party's request in force).
    private(set) var target: Double?
    /// The law's Q last period after its filter, var (0 without a law or a Q): what `rerate` carries.
    private var lawQ = 0.0
    /// The site's var setpoint this period, var (+ = injecting): the law's Q or a party's var, at the
    /// connection point while `metered`, else for the units' sum; nil: none (a power factor, no law).
    private(set) var setpoint: Double?
    /// Who set the site's Q this period (the mode, a party, `staleVoltage`); nil: nobody at the site.
    private(set) var source: ReactiveSource?
    /// The voltage the law read this period, p.u.; nil when none was plausible.
    private(set) var voltagePU: Double?
    /// Whether the last period closed Q on the meter, and the reactive load's bounds then, var.
    private(set) var metered = false
    private(set) var loadLow: Double?
    private(set) var loadHigh: Double?
    /// Volt-watt's cap on Σ units' discharge for the next period, W (infinite: none).
    private(set) var voltWattCap = Double.infinity
    /// Moves of the ask smaller than this are not made (meter noise), var: 0.1 % of the site's
    /// apparent rating, at least 100 var.
    private(set) var deadband = 100.0
    /// The ask last recorded into `history`.
    private var recorded: Double?
    /// True while the law follows a party's request (`tune`) rather than the configured mode.
    private(set) var tuned = false
    /// The utility's volt-watt in place of the configured one (`useVoltWatt`); nil: the configured one.
    private(set) var utilityVoltWatt: VoltWattSettings?

    /// The settings the law runs when no party asks: the configured ones, with the utility's volt-watt
    /// in place of the configured one while it is in force.
    private var inForce: GridSupportSettings? {
        guard var out = settings else { return nil }
        if let utilityVoltWatt { out.voltWatt = utilityVoltWatt }
        return out
    }

    /// `metered`: the site has a meter, so a party's var setpoint is held at it even without a law.
    init(settings: GridSupportSettings?, metered: Bool, history: Int = 2048) {
        self.settings = settings
        self.history = LagHistory(capacity: settings == nil && !metered ? 2 : history)
    }

    /// True when the site runs a law (a reactive mode or volt-watt at the connection point).
    var configured: Bool { settings != nil }

    /// Rebuilds the law when Σ the ratings of the units with var points changed (`stage`'s), with Q
    /// carried over from where the old law stood (`carry`), so a rating that arrives or a unit whose
    /// var points come or go makes no step; none left: no law.
    ///
    /// Why a rebuild: `GridSupportController`'s rating is fixed at its init (`retune` changes only
    /// its settings), and building validates, which allocates. That happens only in the period a
    /// rating changes (an inverter's 702 ratings read at discovery, var points appearing or lost),
    /// never in a steady cycle: `rating` is compared first, from plain values.
    mutating func rerate(_ stage: ReactiveStage) {
        guard let settings else { return }
        var va = 0.0, active = 0.0, inject = 0.0, absorb = 0.0
        for index in stage.laws.indices where stage.available[index] {
            guard let r = stage.laws[index]?.rating else { continue }
            va += r.apparentPowerVA
            active += r.activePowerW
            inject += ReactiveStage.capability(r, injecting: true)
            absorb += ReactiveStage.capability(r, injecting: false)
        }
        let sum = va > 0 ? UnitRating(apparentPowerVA: va, activePowerW: active, chargePowerW: active, maxInjectVar: inject,
                                      maxAbsorbVar: absorb) : nil
        guard sum != rating else { return }
        rating = sum
        deadband = max(100, va / 1000)
        law = sum.flatMap { try? GridSupportController(settings: inForce ?? settings, rating: $0) }
        initial = law
        // A request in force is taken up again by the next `tune`, on the new rating.
        tuned = false
        carry(lawQ)
    }

    /// One period, after active power is shared and before `ReactiveStage.apply`: steps the site's
    /// law and returns what the units are asked together (the stage shares a `.vars` by free apparent
    /// power), or nil where the site's law asks nothing (then each unit's own configuration holds).
    /// `request`: a party's reactive request in force; `measuredVar`: Σ the fresh units' measured Q;
    /// `meter`: the meter's reading while fresh (nil: none, or stale): its voltage reads for the
    /// site's, and its var (when it measures one) closes Q on it. `carrying`: some unit may carry Q
    /// this period (`ReactiveStage.anyCarries`); while none does (stopped, the utility's cease, an
    /// interlock) the law is reset after its step, so that Q rises again from 0 through the response
    /// when they come back, not at once to where it stood.
    mutating func step(units: [UnitController], request: (ask: ReactiveAsk, source: ReactiveSource)?, measuredVar: Double,
                       meter: (takenAt: MonotonicInstant, reactive: Double?, voltagePU: Double?)?, maxLag: Duration,
                       carrying: Bool = true, now: MonotonicInstant, elapsedSeconds: Double) -> (ask: ReactiveAsk, source: ReactiveSource)? {
        setpoint = nil
        let asked = decide(units: units, request: request, measuredVar: measuredVar, meter: meter, maxLag: maxLag, now: now,
                           elapsedSeconds: elapsedSeconds)
        source = asked?.source
        if !carrying, law != nil {
            law = initial
            tuned = false
            ask = nil
            lawQ = 0
        }
        return asked
    }

    private mutating func decide(units: [UnitController], request: (ask: ReactiveAsk, source: ReactiveSource)?, measuredVar: Double,
                                 meter: (takenAt: MonotonicInstant, reactive: Double?, voltagePU: Double?)?, maxLag: Duration,
                                 now: MonotonicInstant, elapsedSeconds: Double) -> (ask: ReactiveAsk, source: ReactiveSource)? {
        if let last = ask, last != recorded {
            recorded = last
            history.record(last, at: now)
        }
        history.record(measuredVar.isFinite ? measuredVar : 0, at: now)
        target = nil
        metered = false
        loadLow = nil
        loadHigh = nil
        var siteP = 0.0
        for index in units.indices { siteP += units[index].decision.setpoint.value }
        if let meter {
            voltagePU = meter.voltagePU
            if let q = meter.reactive {
                let (low, high) = history.range(from: meter.takenAt - maxLag - .milliseconds(200), to: now)
                loadLow = q + low
                loadHigh = q + high
            }
        } else {
            voltagePU = Self.meanVoltage(units)
        }
        guard law != nil else {
            lawQ = 0
            voltWattCap = .infinity
            return held(request)
        }
        tune(request?.ask)
        // Stepped in place: a copy would copy the law's curves on write.
        let output = law!.step(voltage: voltagePU ?? .nan, desiredPowerW: siteP, elapsedSeconds: elapsedSeconds)
        voltWattCap = max(0, output.voltWattLimitW ?? .infinity)
        lawQ = output.reactivePowerVar.flatMap { $0.isFinite ? $0 : nil } ?? 0
        if let request {
            // A party's curve (the utility's volt-var or watt-var) runs here, at the connection
            // point, as the site's own mode would: on the meter's voltage, not on units that may
            // measure none.
            guard case .mode = request.ask, tuned else { return held(request) }
            return curve(output, source: request.source)
        }
        guard let mode = law!.settings.reactive else {
            ask = nil
            return nil
        }
        if case .constantPowerFactor(let pf) = mode {
            // Never closed on the meter: each unit holds the power factor.
            ask = nil
            return (.powerFactor(pf), ReactiveSource(mode))
        }
        return curve(output, source: ReactiveSource(mode))
    }

    /// The units' ask for the law's Q this period (a curve's, the site's mode or a party's), held at
    /// the connection point; no plausible voltage for a voltage mode: 0 var, never full var.
    private mutating func curve(_ output: GridSupportOutput, source: ReactiveSource) -> (ask: ReactiveAsk, source: ReactiveSource) {
        guard let q = output.reactivePowerVar, q.isFinite else {
            ask = 0
            setpoint = 0
            return (.vars(0), .staleVoltage)
        }
        target = q
        setpoint = q
        return (.vars(follow(q)), source)
    }

    /// While a party's request holds, the site's law runs it (constant var at the request's var, or
    /// its power factor, with no response lag), so that when it ends the configured mode takes over
    /// from where Q stands through its own response (`retune` keeps the filter's output): no step,
    /// as at each unit. Volt-watt and the priority stay the configured ones. Retuned only when the
    /// request moved more than `ReactiveStage.retuneVar`. Without a configured reactive mode only a
    /// party's curve is run here; its end retunes the law back to the configured settings.
    private mutating func tune(_ ask: ReactiveAsk?) {
        guard let base = inForce, law != nil else { return }
        var curve = false
        if case .mode? = ask { curve = true }
        if base.reactive == nil, !curve {
            // A site law of volt-watt alone runs a party's curve (`.mode`) and nothing else: a var or
            // power factor goes to the units as it is.
            if tuned, (try? law!.retune(base)) != nil { tuned = false }
            return
        }
        var next = base
        switch ask {
        case .vars(let q)?:
            let va = law!.rating.apparentPowerVA
            if tuned, case .constantVar(let now)? = law!.settings.reactive, abs(now.percent / 100 * va - q) <= ReactiveStage.retuneVar(va) {
                return
            }
            let percent = q.isFinite ? min(100, max(-100, q / va * 100)) : 0
            next.reactive = .constantVar(ConstantVarSettings(percent: percent, responseTime: .zero))
        case .powerFactor(let pf)?:
            if tuned, law!.settings.reactive == .constantPowerFactor(pf) { return }
            next.reactive = .constantPowerFactor(pf)
        case .mode(let mode)?:
            if tuned, law!.settings.reactive == mode { return }
            next.reactive = mode
        case nil:
            guard tuned else { return }
        }
        if (try? law!.retune(next)) != nil { tuned = ask != nil }
    }

    /// A party's request: a var setpoint is held at the connection point while the meter is fresh;
    /// a power factor (and anything without a meter) goes to the units as it is.
    private mutating func held(_ request: (ask: ReactiveAsk, source: ReactiveSource)?) -> (ask: ReactiveAsk, source: ReactiveSource)? {
        guard let request else {
            ask = nil
            return nil
        }
        guard case .vars(let q) = request.ask, q.isFinite else {
            ask = nil
            return request
        }
        setpoint = q
        return (.vars(follow(q)), request.source)
    }

    /// Sets the new law's reactive filter to `q`, var, so its Q goes on from there: one step at
    /// constant var `q` with no response (no voltage read: volt-watt's limit and VRef do not move),
    /// then back to the configured settings, whose `retune` keeps the filter's output.
    private mutating func carry(_ q: Double) {
        guard q != 0, q.isFinite, law != nil, let settings = law?.settings else { return }
        let va = law!.rating.apparentPowerVA
        var priming = settings
        priming.reactive = .constantVar(ConstantVarSettings(percent: min(100, max(-100, q / va * 100)), responseTime: .zero))
        guard (try? law!.retune(priming)) != nil else { return }
        _ = law!.step(voltage: .nan, desiredPowerW: 0, elapsedSeconds: 0)
        try? law!.retune(settings)
    }

    /// The units' ask for `target` at the connection point: with the meter, target plus the reactive
    /// load, moved only outside its band (`ConnectionPoint.follow`); without, the target itself.
    private mutating func follow(_ target: Double) -> Double {
        guard let low = loadLow, let high = loadHigh else {
            ask = target
            return target
        }
        metered = true
        var next = ask
        ConnectionPoint.follow(&next, low: target + low, high: target + high, raiseBy: deadband, lowerBy: deadband)
        ask = next ?? target
        return ask!
    }

    /// Puts the utility's volt-watt (`curve`, 2030.5 `opModVoltWatt` in force) in place of a volt-watt
    /// configured at the connection point, or (nil) the configured one back, each period before `step`:
    /// the law (and the law at rest, `initial`) retuned only when it changes, its filter going on from
    /// where the limit stands. A site law without a configured volt-watt is left alone: the utility's
    /// then applies at each unit only (`ReactiveStage.useVoltWatt`), as it does without a site law.
    mutating func useVoltWatt(_ curve: VoltWattSettings?) {
        guard let configured = settings?.voltWatt else { return }
        utilityVoltWatt = curve
        let wanted = curve ?? configured
        if law != nil, law!.settings.voltWatt != wanted {
            var next = law!.settings
            next.voltWatt = wanted
            try? law!.retune(next)
        }
        if initial != nil, initial!.settings.voltWatt != wanted {
            var next = initial!.settings
            next.voltWatt = wanted
            try? initial!.retune(next)
        }
    }

    /// The mean of the per-unit voltages the units read this period (each nil when stale or
    /// implausible); nil when none has one.
    static func meanVoltage(_ units: [UnitController]) -> Double? {
        var sum = 0.0, count = 0.0
        for index in units.indices {
            guard let v = units[index].decision.voltagePU, v.isFinite else { continue }
            sum += v
            count += 1
        }
        return count > 0 ? sum / count : nil
    }

    /// Carries the law over a reload that keeps the site's settings' shape: the new settings from
    /// where Q and volt-watt's limit stand (`retune`), the ask and its history kept.
    mutating func adopt(_ old: SiteReactiveLaw) {
        guard let settings, var carried = old.law else { return }
        guard (try? carried.retune(settings)) != nil else { return }
        law = carried
        initial = old.initial
        if initial != nil, (try? initial!.retune(settings)) == nil { initial = nil }
        rating = old.rating
        deadband = old.deadband
        history = old.history
        ask = old.ask
        recorded = old.recorded
        voltWattCap = old.voltWattCap
        lawQ = old.lawQ
        // A request in force is taken up again in the next period (`tune`).
    }
}
