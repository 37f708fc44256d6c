public import GridSupport

/// Who asks for power, in the order of authority: a case outranks every case below it. This enum is
/// the one place the order is written (docs/control.md points here). Above all of them stand the
/// units' interlocks, and the grid operator's limit, the connection point's limits and the utility's
/// limits bound whatever wins; the droop response is added to it; the site application fills only
/// where no request speaks.
///
/// | Rank | Source | Speaks for | Held by |
/// |---|---|---|---|
/// | 0 | `operatorOverride` | one unit (bessctl) | the unit itself: it leaves the site's sharing |
/// | 1 | `agc` | the site (IEC 104 AGC, while in service and fresh) | `RequestArbiter` |
/// | 2 | `utility` | the site (IEEE 2030.5 `opModTargetW` …, `opModFixedVar`, `opModTargetVar`, `opModFixedPF…`, until `validUntil`) | `RequestArbiter` |
/// | 3 | `scada` | the site (SunSpec 704 `WSet`, `VarSet`, `PFW…`; IEC 104 3002–3004; each until its reversion) | `RequestArbiter` |
/// | 4 | `aggregator` | one unit (the aggregator's dispatch) | `RequestArbiter.command` |
public enum RequestSource: Int, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case operatorOverride = 0
    case agc = 1
    case utility = 2
    case scada = 3
    case aggregator = 4

    /// The authority rank: a lower rank outranks a higher one.
    public var rank: Int { rawValue }

    /// True for the sources that ask the whole site (shared by rating over the units no override holds).
    public var speaksForSite: Bool { self == .agc || self == .utility || self == .scada }

    /// Orders by authority: the higher authority compares first.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }

    public var description: String {
        switch self {
        case .operatorOverride: "operator_override"
        case .agc: "agc"
        case .utility: "utility"
        case .scada: "scada"
        case .aggregator: "aggregator"
        }
    }
}

/// What a party asks of the site's reactive power (docs/design/0010-reactive-power.md, "Each
/// party's mapping").
public enum ReactiveAsk: Sendable, Equatable {
    /// The site's reactive power, var (+ = injecting, over-excited), shared over the units by free
    /// apparent power; a unit's own (the aggregator's unit dispatch) holds that unit's Q.
    case vars(Double)
    /// A constant power factor on every unit, one setting for discharging and one for charging.
    case powerFactor(ConstantPowerFactorSettings)
    /// A curve mode every unit's law follows on its own voltage or P (the utility's `opModVoltVar`,
    /// `opModWattVar`): the same `GridSupportController` law as a configured mode, validated on arrival.
    case mode(ReactivePowerMode)
}

/// One party's reactive request, with its own expiry: SunSpec 704 times `VarSet` and `WSet` apart.
public struct ReactiveRequest: Sendable, Equatable {
    public var ask: ReactiveAsk
    /// The first instant the request no longer holds; nil: until replaced.
    public var expiresAt: MonotonicInstant?

    public init(_ ask: ReactiveAsk, expiresAt: MonotonicInstant?) {
        self.ask = ask
        self.expiresAt = expiresAt
    }

    /// True while the request holds at `now` (before its expiry).
    public func inForce(at now: MonotonicInstant) -> Bool { expiresAt.map { now < $0 } ?? true }
}

/// One party's request of the site for one cycle, on two axes resolved apart: active power (nil:
/// the party asks for Q only, as SCADA with `WSetEna` 0 and `VarSetEna` 1) and reactive power (nil:
/// none asked), and when the active request stops holding.
public struct SiteRequest: Sendable, Equatable {
    public var source: RequestSource
    /// Active power, W (+ = discharge); nil: the party asks nothing of P.
    public var activePower: Double?
    /// Reactive power, with its own expiry; nil: the party asks nothing of Q.
    public var reactive: ReactiveRequest?
    /// The first instant the active request no longer holds; nil: until replaced.
    public var expiresAt: MonotonicInstant?

    public init(source: RequestSource, activePower: Double?, reactive: ReactiveRequest? = nil, expiresAt: MonotonicInstant?) {
        self.source = source
        self.activePower = activePower
        self.reactive = reactive
        self.expiresAt = expiresAt
    }

    /// The authority rank of the request's source (lower outranks).
    public var rank: Int { source.rank }

    /// True while the active request holds at `now` (before its expiry).
    public func inForce(at now: MonotonicInstant) -> Bool { expiresAt.map { now < $0 } ?? true }

    /// The reactive request if it holds at `now`.
    public func reactive(at now: MonotonicInstant) -> ReactiveRequest? {
        guard let reactive, reactive.inForce(at: now) else { return nil }
        return reactive
    }
}

/// The one stage that resolves the site-wide requests before allocation: each source has a fixed
/// slot (no storage grows on the cycle), the request of the highest authority in force wins, an
/// expired one is ignored, and the winner is shared by rating over the units no operator override
/// holds. A unit's own aggregator dispatch, the lowest rank, stands where no site request speaks.
public struct RequestArbiter: Sendable {
    /// One slot per source, indexed by rank; refilled each cycle.
    private var slots = InlineArray<5, SiteRequest?>(repeating: nil)
    /// The request that won active power in the last `resolve`, nil when none held.
    public private(set) var winner: SiteRequest?
    /// The request that won reactive power in the last `resolve` (its `reactive` in force), nil when
    /// none held: the axes are resolved apart, so AGC (P only) never silences a var setpoint.
    public private(set) var reactiveWinner: SiteRequest?
    /// Σ ratings of the units sharing the winner, W (zero when none does).
    public private(set) var sharingRating = 0.0

    public init() {}

    /// Empties every slot (at the start of each cycle).
    public mutating func clear() {
        for rank in 0..<slots.count { slots[rank] = nil }
        winner = nil
        reactiveWinner = nil
        sharingRating = 0
    }

    /// Puts `request` in its source's slot, replacing what stood there.
    public mutating func offer(_ request: SiteRequest) { slots[request.rank] = request }

    /// The active request of `source` offered this cycle if it holds at `now`.
    public func inForce(_ source: RequestSource, at now: MonotonicInstant) -> SiteRequest? {
        guard let request = slots[source.rank], request.activePower != nil, request.inForce(at: now) else { return nil }
        return request
    }

    /// Picks, on each axis, the site-wide request of the highest authority in force at `now`
    /// (expired ones and those silent on the axis are skipped): `winner` for P, `reactiveWinner`
    /// for Q. Returns the active winner.
    @discardableResult
    public mutating func resolve(at now: MonotonicInstant) -> SiteRequest? {
        winner = nil
        reactiveWinner = nil
        // The slots are in rank order (no `allCases`: it builds an array each call).
        for rank in 0..<slots.count {
            guard let request = slots[rank], request.source.speaksForSite else { continue }
            if winner == nil, request.activePower != nil, request.inForce(at: now) { winner = request }
            if reactiveWinner == nil, request.reactive(at: now) != nil { reactiveWinner = request }
        }
        return winner
    }

    /// Sums the ratings of the units that share the winner: those `held` says no override holds.
    mutating func share(ratings: (Int) -> Double, count: Int, held: (Int) -> Bool) {
        sharingRating = 0
        guard winner != nil else { return }
        for index in 0..<count where !held(index) { sharingRating += ratings(index) }
    }

    /// What unit `index` (of rating `rating`) is asked this cycle: its part of the winner by rating
    /// when it shares it, else its own aggregator dispatch (`dispatch`), or nil.
    func command(rating: Double, held: Bool, dispatch: PowerCommand?) -> PowerCommand? {
        guard let winner, let power = winner.activePower, sharingRating > 0, !held else { return dispatch }
        return PowerCommand(power: Watts(power * rating / sharingRating),
                            expiresAt: winner.expiresAt ?? MonotonicInstant(nanoseconds: .max))
    }
}

extension RequestArbiter {
    /// Refills the site-wide slots from what each party last sent: AGC's target (P only), the
    /// utility's request on both axes (`utilityReactive`; each held until its `validUntil`,
    /// inclusive) and SCADA's commands as the cycle settled them (`scadaRequest`). Expiry is judged
    /// once, in `resolve` and `inForce`.
    /// `sitePower`: the units' summed setpoint of the previous period, W, where SCADA's two reactive
    /// kinds are compared when both are enabled.
    public mutating func offer(agc: AGCCommand, utility: UtilityLimits?, scada commands: SiteCommands, sitePower: Double = 0) {
        clear()
        if let request = agc.request { offer(request) }
        if let utility {
            let expiry = utility.validUntil.map { $0 + .nanoseconds(1) }
            let power = utility.request, reactive = Self.utilityReactive(utility, sitePower: sitePower, expiresAt: expiry)
            if power != nil || reactive != nil {
                offer(SiteRequest(source: .utility, activePower: power, reactive: reactive, expiresAt: expiry))
            }
        }
        if let request = Self.scadaRequest(commands, sitePower: sitePower) { offer(request) }
    }

    /// SCADA's request (rank 3) from its settled commands, nil when it asks nothing: P is `WSet`
    /// while enabled (else nil: Q only), Q is the var setpoint (`VarSet`, 3003) or the power factor
    /// (`PFWInj` for discharging, `PFWAbs` for charging, 3004 writing both; while `sitePower`'s
    /// sign falls on a direction not enabled, no power factor is asked), each with its own expiry. Both enabled: the one with the least |Q|
    /// at `sitePower` (the units' summed setpoint of the previous period: this period's P is
    /// shared after the arbiter, so the choice lags one period), the power factor on a tie.
    public static func scadaRequest(_ commands: SiteCommands, sitePower: Double) -> SiteRequest? {
        let setpoint = commands.setpoint
        let active = setpoint.enabled && setpoint.value.isFinite ? setpoint.value : nil
        let reactive = scadaReactive(commands, sitePower: sitePower)
        guard active != nil || reactive != nil else { return nil }
        return SiteRequest(source: .scada, activePower: active, reactive: reactive, expiresAt: active == nil ? nil : setpoint.expiresAt)
    }

    /// SCADA's reactive request: the var setpoint, the power factor, or (both enabled) the least |Q|.
    static func scadaReactive(_ commands: SiteCommands, sitePower: Double) -> ReactiveRequest? {
        let setpoint = commands.reactive
        let vars = setpoint.enabled && setpoint.value.isFinite
            ? ReactiveRequest(.vars(setpoint.value), expiresAt: setpoint.expiresAt) : nil
        let injecting = powerFactor(commands.powerFactorInjecting), absorbing = powerFactor(commands.powerFactorAbsorbing)
        let p = sitePower.isFinite ? sitePower : 0
        // P's sign picks the direction; one not enabled asks nothing this period (VarSet, else the
        // configured mode, holds), so its unity never wins the least |Q|.
        guard let setting = p >= 0 ? injecting : absorbing else { return vars }
        let settings = ConstantPowerFactorSettings(discharging: injecting ?? .unity, charging: absorbing ?? .unity, responseTime: .zero)
        // The request holds until the first of its enabled commands reverts; the cycle then rebuilds it.
        let expiry = earliest(injecting == nil ? nil : commands.powerFactorInjecting.expiresAt,
                              absorbing == nil ? nil : commands.powerFactorAbsorbing.expiresAt)
        let pf = ReactiveRequest(.powerFactor(settings), expiresAt: expiry)
        guard let vars, case .vars(let q) = vars.ask else { return pf }
        let pfVar = abs(p) * (1 - setting.powerFactor * setting.powerFactor).squareRoot() / setting.powerFactor
        return pfVar <= abs(q) ? pf : vars
    }

    /// The utility's reactive request (rank 2; docs/design/0010-reactive-power.md, 2030.5): its power
    /// factors (`opModFixedPFInjectW` while discharging, `…AbsorbW` while charging, a direction not
    /// set at unity), `opModFixedVar` and `opModTargetVar` as site var. Several set: the least |Q| at
    /// `sitePower` (2030.5's "least var magnitude SHOULD take precedence"; the power factor on a tie,
    /// then the fixed var); where none of them is, the curve of `opModVoltVar`, else `opModWattVar`, as
    /// a mode each unit runs; nil when none is. It holds until the value's `validUntil`: a stale
    /// utility value holds P at zero, but its reactive controls end, and the next party or the
    /// configured mode takes Q (0009's "hold the last value" is rejected for Q too).
    public static func utilityReactive(_ utility: UtilityLimits, sitePower: Double, expiresAt: MonotonicInstant?) -> ReactiveRequest? {
        let p = sitePower.isFinite ? sitePower : 0
        var ask: ReactiveAsk?
        var least = Double.infinity
        let injecting = powerFactor(signed: utility.powerFactorInjecting), absorbing = powerFactor(signed: utility.powerFactorAbsorbing)
        if injecting != nil || absorbing != nil {
            let setting = (p >= 0 ? injecting : absorbing) ?? .unity
            ask = .powerFactor(ConstantPowerFactorSettings(discharging: injecting ?? .unity, charging: absorbing ?? .unity, responseTime: .zero))
            least = abs(p) * (1 - setting.powerFactor * setting.powerFactor).squareRoot() / setting.powerFactor
        }
        if let q = utility.fixedVar, q.isFinite, abs(q) < least { ask = .vars(q); least = abs(q) }
        if let q = utility.targetVar, q.isFinite, abs(q) < least { ask = .vars(q) }
        // A curve's Q is known only where each unit's law reads its voltage or P, after the arbiter:
        // it speaks where no fixed control does (volt-var before watt-var).
        if ask == nil, let curve = utility.voltVar { ask = .mode(.voltVar(curve)) }
        if ask == nil, let curve = utility.wattVar { ask = .mode(.wattVar(curve)) }
        return ask.map { ReactiveRequest($0, expiresAt: expiresAt) }
    }

    /// The power factor an enabled 704 `PFW…` (or 3004) command holds, its sign the excitation
    /// (+ over-excited, injecting); nil while disabled or outside (0, 1] (refused when written).
    static func powerFactor(_ command: ExpiringCommand) -> PowerFactorSetting? {
        command.enabled ? powerFactor(signed: command.value) : nil
    }

    /// The power factor `value` names, its sign the excitation (+ over-excited, injecting); nil when
    /// absent or outside (0, 1].
    static func powerFactor(signed value: Double?) -> PowerFactorSetting? {
        guard let v = value, v.isFinite, v != 0, abs(v) <= 1 else { return nil }
        return PowerFactorSetting(abs(v), v > 0 ? .injecting : .absorbing)
    }

    /// The earlier of two expiries, nil (never) counting as the latest.
    static func earliest(_ a: MonotonicInstant?, _ b: MonotonicInstant?) -> MonotonicInstant? {
        switch (a, b) {
        case let (a?, b?): min(a, b)
        case let (a?, nil): a
        case let (nil, b): b
        }
    }
}
