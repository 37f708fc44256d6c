import GridSupport

/// The reactive stage of the cycle: the last stage of `SiteController.allocate`, after active power
/// is shared (docs/design/0010-reactive-power.md, "The per-unit path").
///
/// Each unit with a configured mode (`UnitSettings.gridSupport`) steps its IEEE 1547-2018 law
/// (`GridSupportController`) on its allocated setpoint and its measured voltage (p.u., nil when
/// stale or implausible). The law's P replaces the setpoint only to lower it: volt-watt lowers P,
/// `VAMax` shrinks |P|; it is never more discharge than the setpoint, and it is clamped back into the
/// unit's allowed power, so an interlock that forbids charging outranks a negative volt-watt limit.
/// Its Q is the unit's reactive setpoint. Q only while the unit runs (`running`, `limited`; a derate
/// never touches Q): starting, standby, tripped or faulted, the unit is asked 0 var and its law starts
/// over. A voltage mode without a voltage commands 0 var (`staleVoltage`); a unit with no mode is
/// left alone (`reactive` nil), and so is one whose inverter has no var points (`unavailable`, its P
/// untouched). The inverter's 702 ratings rebuild the law as they arrive (`observe`). Storage is fixed
/// at init: a step copies plain values only.
///
/// The stage is also the reactive axis of the site's request (docs/design/0010-reactive-power.md,
/// "The site path", Allocation): a party's request in force (`RequestArbiter.reactiveWinner`) or the
/// aggregator's var for one unit replaces the configured mode while it holds, each unit's law
/// retuned to it (`ReactiveStage+Request.swift`), and when it ends the configured mode returns
/// through `retune`, from where Q stands.
struct ReactiveStage: Sendable {
    /// What a unit's law follows: its configured mode, a party's request, or (a unit with no
    /// configured reactive mode, once a request ended) 0 var through `releaseTime`, after which the
    /// inverter's Q is left alone again.
    enum Tuning: Sendable, Equatable { case configured, request, release }

    /// Each unit's law as built, before any step: a stopped unit's law is reset to it (a plain copy).
    /// Its settings are the configured ones; a unit with none has a law of no mode (`reactive` nil),
    /// so that a party's request can act on it.
    var initial: [GridSupportController?]
    /// What a stopped unit's law is reset to: `initial`, with the utility's volt-watt while it is in
    /// force (`useVoltWatt`).
    var resting: [GridSupportController?]
    /// Each unit's law as it runs; nil: settings (or a rating) the law refuses.
    var laws: [GridSupportController?]
    /// True where the unit has a configured law (`UnitSettings.gridSupport`): without one, and with
    /// nobody asking, the inverter's Q is left alone (`reactive` nil) and P is the pool's.
    let configured: [Bool]
    /// What each unit's law follows now.
    var tuning: [Tuning]
    /// Each unit's cap on discharge for the next period, W (`dischargeCap`).
    private var caps: [Double]
    /// Each unit's `max_apparent_power_kva` (VA; nil: none, the inverter's 702 `VAMax` counts) and
    /// active rating, W: the parts of its rating the inverter does not change.
    private let configuredVA: [Double?]
    private let activeW: [Double]
    /// The last rating `observe` offered each unit's law, so that a rating the law refuses is tried
    /// once, not every period.
    private var offered: [UnitRating?]
    /// False while the unit's inverter reports no var points (SunSpec 704): no Q, P untouched.
    var available: [Bool]
    /// The aggregator's var for each unit this period (`PowerCommand.reactive` of its dispatch in
    /// force), set by the site before `apply`; nil: none.
    var unitVar: [Double?]
    /// Each unit's share of a site var request this period, var, and (scratch) its capability beyond
    /// its free apparent power: fixed storage, written in place (`share`).
    var shares: [Double]
    var room: [Double]
    /// The part of the site's var request no unit could take this period, var (+ = injecting).
    var shortfallVar = 0.0
    /// The utility's volt-watt in force (2030.5 `opModVoltWatt`), in place of each unit's configured
    /// one; nil: the configured one (`useVoltWatt`).
    var utilityVoltWatt: VoltWattSettings?
    /// True while the site's configured law (not a party) asks this period: a unit with the
    /// aggregator's var keeps it and takes no share (`keepsOwnVar`).
    private var sharingSiteLaw = false

    init(units: [UnitSettings]) {
        initial = units.map { settings in
            try? GridSupportController(settings: settings.gridSupport ?? GridSupportSettings(reactive: nil), rating: Self.rating(settings))
        }
        laws = initial
        resting = initial
        configured = zip(units, initial).map { $0.gridSupport != nil && $1 != nil }
        tuning = Array(repeating: .configured, count: units.count)
        caps = Array(repeating: .infinity, count: units.count)
        configuredVA = units.map(\.apparentPowerRating)
        activeW = units.map(\.rating.value)
        offered = Array(repeating: nil, count: units.count)
        available = Array(repeating: true, count: units.count)
        unitVar = Array(repeating: nil, count: units.count)
        shares = Array(repeating: 0, count: units.count)
        room = Array(repeating: 0, count: units.count)
    }

    /// What the unit's inverter says of reactive power, each period before `apply` (plain values; a
    /// law is rebuilt only when its rating changes): whether it has var points, and its 702 ratings.
    /// `VAMax` is `max_apparent_power_kva`, else the inverter's `VAMax`, else the active rating;
    /// `VarMaxInj`/`VarMaxAbs` the inverter's, else `VAMax` (docs/design/0010-reactive-power.md,
    /// "ratings"). No reading (stale, none yet) changes nothing. Its fields are read in place (no
    /// copy of the reading per unit and period).
    mutating func observe(unit: Int, inverter stamped: Timestamped<InverterReading>?) {
        guard stamped != nil, laws.indices.contains(unit) else { return }
        if let reactive = stamped?.value.reactiveAvailable { available[unit] = reactive }
        guard laws[unit] != nil else { return }
        let rating = UnitRating(
            apparentPowerVA: configuredVA[unit] ?? stamped?.value.apparentPowerRating ?? activeW[unit], activePowerW: activeW[unit],
            chargePowerW: activeW[unit], maxInjectVar: stamped?.value.varMaxInjecting, maxAbsorbVar: stamped?.value.varMaxAbsorbing)
        guard rating != offered[unit] else { return }
        offered[unit] = rating
        rerate(unit: unit, rating: rating)
    }

    /// The unit's reactive capability each way, var: `VarMaxInj` / `VarMaxAbs` (else `VAMax`), at
    /// most `VAMax`; 0 while its inverter reports no var points (or it has no law).
    func capability(_ unit: Int) -> (injecting: Double, absorbing: Double) {
        guard laws.indices.contains(unit), available[unit], let rating = laws[unit]?.rating else { return (0, 0) }
        return (Self.capability(rating, injecting: true), Self.capability(rating, injecting: false))
    }

    /// The unit's apparent-power rating, VA (`VAMax` as its law runs it); 0 while its inverter reports
    /// no var points (or it has no law), as `capability`.
    func apparentRating(_ unit: Int) -> Double {
        guard laws.indices.contains(unit), available[unit], let rating = laws[unit]?.rating else { return 0 }
        return rating.apparentPowerVA
    }

    /// `rating`'s reactive capability one way, var (a magnitude).
    static func capability(_ rating: UnitRating, injecting: Bool) -> Double {
        min(injecting ? rating.maxInjectVar : rating.maxAbsorbVar, rating.apparentPowerVA)
    }

    /// The unit's discharge cap for the next period, W (infinite: none): volt-watt's limit after its
    /// response, and under reactive priority, in the modes it rules (constant var, volt-var), the room
    /// √(VAMax² − Q²) that Q leaves. `UnitController` takes it as its allowed discharge
    /// (`LimitReason.voltWatt`), so the pool gives the rest to the other units one period after the
    /// law first cut the unit's P.
    func dischargeCap(_ unit: Int) -> Double { caps.indices.contains(unit) ? caps[unit] : .infinity }

    /// A running unit whose inverter or BMS data is stale (a limit at zero for it, `inverterAbsent`
    /// or `bmsAbsent`): stale data means zero power, so 0 var too. With the default interlock table
    /// this never acts: `INVERTER_COMM_LOST` and `BMS_COMM_LOST` trip at the same age as the data
    /// turns stale (their threshold is `inverterStaleAfter` / `bmsStaleAfter`), in the same period,
    /// so the unit is `tripped` and takes the stopped branch first. It is kept as a guard for a
    /// configuration that lowers those rules' severity (`interlocks:`), where the unit keeps running.
    static func deprived(_ d: UnitDecision) -> Bool {
        d.chargeLimitedBy == .inverterAbsent || d.dischargeLimitedBy == .inverterAbsent
            || d.chargeLimitedBy == .bmsAbsent || d.dischargeLimitedBy == .bmsAbsent
    }

    /// The unit's ratings as configured: `VAMax` is `max_apparent_power_kva`, else the active rating;
    /// the reactive capability is `VAMax` each way.
    static func rating(_ settings: UnitSettings) -> UnitRating {
        let active = settings.rating.value
        return UnitRating(apparentPowerVA: settings.apparentPowerRating ?? active, activePowerW: active, chargePowerW: active)
    }

    /// The hook for ratings that arrive after start-up (the inverter's 702 `VAMaxRtg`,
    /// `VarMaxInjRtg`/`VarMaxAbsRtg`, read at discovery): rebuilds the unit's law on `rating` with its
    /// configured settings, its Q starting again from 0 through the response (a request in force is
    /// taken up again in the next period). Building a law validates it, which allocates: call it when
    /// a rating changes, never every period. A rating the law refuses changes nothing.
    mutating func rerate(unit: Int, rating: UnitRating) {
        guard laws.indices.contains(unit), let base = initial[unit], base.rating != rating,
              let rebuilt = try? GridSupportController(settings: base.settings, rating: rating)
        else { return }
        initial[unit] = rebuilt
        resting[unit] = utilityVoltWatt.map { Self.retuned(rebuilt, voltWatt: $0) } ?? rebuilt
        laws[unit] = resting[unit]
        tuning[unit] = .configured
    }

    /// One period: steps each unit's law after the pool has shared active power. Returns the change of
    /// the units' summed setpoint, W.
    /// `request`: the site's reactive request in force (the highest authority whose Q holds) and who
    /// made it; nil: none, and each unit's aggregator var (`unitVar`), else its configured mode, holds.
    /// `ceased`: the utility's opModConnect / opModEnergize false is in force, so no unit energises:
    /// 0 var as well as 0 W, the law reset, before the contactors open.
    /// `siteLaw`: `request` is the site's configured law (`SiteReactiveLaw`), not a party's: the
    /// aggregator's var for a unit outranks it there, as it outranks a configured mode.
    /// `floor`: the least Σ of every unit's setpoint the site's limits allow, W (the grid operator's
    /// and the utility's charge caps, the connection point's import floor): a volt-watt curve whose
    /// last point is negative charges a unit past what the pool shared it only into that headroom
    /// (`bounded`), so its law never imports past a limit that bounds the site.
    mutating func apply(to units: inout [UnitController], request: (ask: ReactiveAsk, source: ReactiveSource)? = nil,
                        elapsedSeconds: Double, ceased: Bool = false, siteLaw: Bool = false, floor: Double = -.infinity) -> Double {
        let dt = elapsedSeconds.isFinite ? min(max(0, elapsedSeconds), 10) : 0
        shortfallVar = 0
        sharingSiteLaw = siteLaw
        var total = 0.0
        for index in units.indices { total += units[index].decision.setpoint.value }
        if case .vars(let q)? = request?.ask {
            // Stale voltage: every unit the site law drives is asked 0 var, and a unit with the
            // aggregator's var keeps it; nobody is asked to cancel it (stale data means zero power).
            let kept = request?.source == .staleVoltage ? 0 : keptVar(units, ceased: ceased)
            share(q - kept, units: units, ceased: ceased)
        }
        var change = 0.0
        for index in units.indices where index < laws.count && laws[index] != nil {
            let aggregator = siteLaw && index < unitVar.count && unitVar[index] != nil
            let want = wanted(index, request: aggregator ? nil : request)
            guard configured[index] || want != nil || tuning[index] != .configured || utilityVoltWatt != nil else {
                // No mode and nobody asking: the inverter's Q is left alone, P is the pool's.
                caps[index] = .infinity
                continue
            }
            var d = units[index].decision
            let mode = initial[index]!.settings.reactive
            // Whether bessd speaks for this unit's Q this period.
            let speaks = mode != nil || want != nil || tuning[index] != .configured
            if !available[index] {
                // No var points: no reactive command and no volt-watt; its P is the pool's.
                reset(index)
                if speaks {
                    d.reactive = nil
                    d.reactiveSource = .unavailable
                }
            } else if carries(index, d, ceased: ceased) {
                follow(index, want)
                let asked = d.setpoint.value
                let output = laws[index]!.step(voltage: d.voltagePU ?? .nan, desiredPowerW: asked, elapsedSeconds: dt)
                let setpoint = Self.bounded(Self.lowered(output.activePowerW, asked: asked, decision: d), asked: asked,
                                            others: total - asked, floor: floor)
                total += setpoint - asked
                d.setpoint = Watts(setpoint)
                change += setpoint - asked
                caps[index] = Self.cap(output, law: laws[index]!)
                let q = output.reactivePowerVar
                if let want {
                    // A party's volt-var without a plausible voltage at this unit: 0 var, said so.
                    d.reactive = q ?? 0
                    d.reactiveSource = q == nil && want.readsVoltage ? .staleVoltage : want.source
                } else if tuning[index] == .release {
                    // Back to no mode: 0 var through `releaseTime`, then the inverter is left alone.
                    d.reactive = q ?? 0
                    d.reactiveSource = .off
                    if abs(q ?? 0) < Self.releasedVar, let settings = initial[index]?.settings,
                       (try? laws[index]!.retune(settings)) != nil
                    {
                        // Volt-watt's filter, if configured, goes on where it stands.
                        tuning[index] = .configured
                        d.reactive = nil
                    }
                } else if let mode {
                    // No command from a voltage mode: its voltage is stale or nonsense, and 0 var is written.
                    d.reactive = q ?? 0
                    d.reactiveSource = q == nil && mode.readsVoltage ? .staleVoltage : ReactiveSource(mode)
                }
            } else {
                reset(index)
                if speaks {
                    d.reactive = 0
                    d.reactiveSource = .stopped
                }
            }
            units[index].decision = d
        }
        return change
    }

    /// True when unit `index` holds the aggregator's var under the site's configured law: it keeps
    /// its own Q and takes no share of the site's (the aggregator outranks a configured mode).
    func keepsOwnVar(_ index: Int) -> Bool {
        sharingSiteLaw && index < unitVar.count && unitVar[index] != nil
    }

    /// Σ the var the units that keep their own (`keepsOwnVar`) carry this period, var: the part of
    /// the site's ask they already give, so the others share the rest.
    func keptVar(_ units: [UnitController], ceased: Bool) -> Double {
        var kept = 0.0
        for index in units.indices where index < laws.count && keepsOwnVar(index) && carries(index, units[index].decision, ceased: ceased) {
            if case .vars(let q)? = wanted(index, request: nil)?.ask { kept += q }
        }
        return kept
    }

    /// True when the unit may carry Q this period: its inverter has var points, it runs, the utility
    /// has not ceased energising, and its data is fresh.
    func carries(_ index: Int, _ d: UnitDecision, ceased: Bool) -> Bool {
        available[index] && d.state.mayOperate && !ceased && !Self.deprived(d)
    }

    /// True when some unit with a law may carry Q this period (`carries`): else the site's law starts
    /// over (`SiteReactiveLaw.step`). No allocation.
    func anyCarries(_ units: [UnitController], ceased: Bool) -> Bool {
        units.indices.contains { $0 < laws.count && laws[$0] != nil && carries($0, units[$0].decision, ceased: ceased) }
    }

    /// The unit's law back at rest (`resting`: Q from 0, no cap), following its configured mode.
    private mutating func reset(_ index: Int) {
        laws[index] = resting[index]
        tuning[index] = .configured
        caps[index] = .infinity
    }

    /// The discharge cap this period's output sets for the next (`dischargeCap`), W, never negative:
    /// a negative volt-watt limit asks the unit to charge, which its setpoint already says.
    static func cap(_ output: GridSupportOutput, law: GridSupportController) -> Double {
        var cap = output.voltWattLimitW ?? .infinity
        switch law.settings.reactive {
        case .constantVar, .voltVar:
            if law.settings.reactivePriority, let q = output.reactivePowerVar {
                let va = law.rating.apparentPowerVA
                cap = min(cap, max(0, va * va - q * q).squareRoot())
            }
        case .constantPowerFactor, .wattVar, nil: break
        }
        return max(0, cap)
    }

    /// The law's P as the unit's setpoint: no more discharge than `asked` (while charging, the law
    /// may deepen the charge by volt-watt or shrink it by `VAMax`), inside the unit's allowed power.
    static func lowered(_ law: Double?, asked: Double, decision d: UnitDecision) -> Double {
        guard let law, law.isFinite else { return asked }
        let p = asked >= 0 ? min(law, asked) : min(law, 0)
        return ControlMath.clamp(p, -d.allowedCharge.value, d.allowedDischarge.value)
    }

    /// A unit's setpoint after its law (`setpoint`) held to the site's import headroom: charge deeper
    /// than the pool shared it (`min(asked, 0)`) goes only as far as keeps Σ every unit's setpoint
    /// (`others` + this one) at or above `floor`, W. Lowering discharge is never held back: volt-watt
    /// must cut export whatever the import.
    static func bounded(_ setpoint: Double, asked: Double, others: Double, floor: Double) -> Double {
        let pooled = min(asked, 0)
        guard setpoint < pooled, floor.isFinite else { return setpoint }
        return max(setpoint, min(pooled, floor - others))
    }

    /// Carries each unit's law over a configuration reload (`mapping[i]` is unit i's index in `old`)
    /// where the unit keeps its ratings: the law follows the new settings from where Q and the
    /// volt-watt limit stand (`retune`), so a reload makes no step. A request in force (or a release)
    /// goes on from where it stood under the new settings, its reactive mode kept; the next period
    /// follows it or hands back to the new settings.
    mutating func adopt(_ old: ReactiveStage, mapping: [Int?]) {
        for (i, j) in mapping.enumerated() where i < laws.count {
            guard let j, j < old.laws.count else { continue }
            available[i] = old.available[j]
            // The inverter's ratings stay with the unit while its own do.
            if configuredVA[i] == old.configuredVA[j], activeW[i] == old.activeW[j], let rating = old.offered[j] {
                offered[i] = rating
                rerate(unit: i, rating: rating)
            }
            guard let settings = initial[i]?.settings, var carried = old.laws[j],
                  carried.rating == laws[i]?.rating
            else { continue }
            if old.tuning[j] != .configured {
                // The new settings (volt-watt, reactive priority…) with the request's mode kept in
                // force: `follow` retunes only when the share moves, so the carried law takes them now.
                var kept = settings
                kept.reactive = carried.settings.reactive
                _ = try? carried.retune(kept)
                laws[i] = carried
                tuning[i] = old.tuning[j]
            } else if (try? carried.retune(settings)) != nil {
                laws[i] = carried
            }
        }
    }
}

extension ReactiveSource {
    /// The configured mode, as `status --json` names it.
    init(_ mode: ReactivePowerMode) {
        switch mode {
        case .constantPowerFactor: self = .constantPowerFactor
        case .constantVar: self = .constantVar
        case .voltVar: self = .voltVar
        case .wattVar: self = .wattVar
        }
    }
}

extension ReactiveSource {
    /// The party whose request sets Q, as `status --json` names it; nil for one that carries no Q
    /// (AGC, an operator override).
    init?(party: RequestSource) {
        switch party {
        case .utility: self = .utility
        case .scada: self = .scada
        case .aggregator: self = .aggregator
        case .agc, .operatorOverride: return nil
        }
    }
}

extension SiteController {
    /// Unit `unit`'s apparent-power rating, VA (`VAMax` as its law runs it); 0 while its inverter
    /// reports no var points, as `reactiveCapability(unit:)`.
    public func apparentRating(unit: Int) -> Double { reactiveStage.apparentRating(unit) }
}
