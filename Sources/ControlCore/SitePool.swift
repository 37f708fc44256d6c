/// The site's allocation stage, after the arbiter and the units' own control (docs/design/0005-site.md):
/// the units' interlocks bound each unit; the connection point's grid limits bound the site's total;
/// inside them the frequency response (each pooled unit's droop share), then the operator's overrides
/// and the request the arbiter resolved; the site application only where no dispatch speaks. The
/// pooled units' part is then shared by headroom and SOC, so a unit that cannot deliver hands its share
/// to the others in this same cycle; what none can take is the shortfall. The block schedule
/// (`schedule`) stands where the application does, above it. Storage is allocated at init.
struct SitePool {
    var allocator: SiteAllocator
    var inputs: [AllocationInput]
    var shares: [Double]
    var reasons: [ShareReason]
    /// The last cycle's allocation: what the pool was asked and what it was given.
    var allocation = AllocationResult()
    /// True while `SITE_SHORTFALL` stands (raised above the threshold, cleared below half of it).
    var shortfallActive = false
    /// The shortfall that raises `SITE_SHORTFALL`, W: 1 % of the site's rating, at least 1 kW.
    let shortfallThreshold: Double
    /// The limit reported as binding (released 5 s after it last bound).
    var bindingReported: GridLimitBinding = .none
    var lastBound: MonotonicInstant?
    /// What every unit was given last cycle in total, W (the connection point's command history).
    var lastCommanded: Double?
    /// Σ unit ratings, W.
    let rating: Double
    /// The block schedule (ScheduleExecutor.swift): stage 2 asks, stage 6 accounts.
    var schedule = ScheduleExecutor()

    init(units: Int, rating: Double) {
        self.rating = rating
        allocator = SiteAllocator(units: units)
        inputs = [AllocationInput](repeating: AllocationInput(request: 0, allowedCharge: 0, allowedDischarge: 0), count: units)
        shares = [Double](repeating: 0, count: units)
        reasons = [ShareReason](repeating: .idle, count: units)
        shortfallThreshold = max(1000, rating / 100)
    }

    /// What the units' decisions add up to this cycle, W.
    struct Totals {
        var rating = 0.0, charge = 0.0, discharge = 0.0
        /// Measured power of every unit.
        var battery = 0.0
        /// The held units' requests inside their limits, and the pooled units' requests.
        var held = 0.0, requested = 0.0
        /// Any dispatch in force (it rests the application).
        var dispatched = false
        /// What the pooled units may give the application outside their response reserve.
        var reserveDischarge = 0.0, reserveCharge = 0.0
        /// The pooled units' allowed power in all, Σ every unit's droop response, W; whether an
        /// operator override holds a unit; what narrows the units (standby, an interlock, else their limits).
        var allowedDischarge = 0.0, allowedCharge = 0.0, droop = 0.0
        var overridden = false
        var narrowedBy = ScheduleBinding.unitLimit
    }

    /// Stage 1: the units' decisions into allocation inputs and totals. A unit at its own response
    /// reserve (`kept`) takes its droop share and no one else's part.
    mutating func gather(_ units: [UnitController], kept: [(discharge: Bool, charge: Bool)], socReserve: Double) -> Totals {
        var t = Totals()
        for index in units.indices {
            let d = units[index].decision
            inputs[index] = AllocationInput(
                pooled: d.pooled, request: d.request.value, allowedCharge: d.allowedCharge.value,
                allowedDischarge: d.allowedDischarge.value, soc: d.soc?.value)
            if let power = d.measuredPower?.value, power.isFinite { t.battery += power }
            if d.droop.value.isFinite { t.droop += d.droop.value }
            if d.state == .standby { t.narrowedBy = .standby }
            if t.narrowedBy != .standby, Self.interlocked(d.chargeLimitedBy) || Self.interlocked(d.dischargeLimitedBy) { t.narrowedBy = .interlock }
            // Any dispatch in force rests the application, a dispatch for one unit (held) too: an
            // application that steered the other units against it would cancel at the connection point
            // what the aggregator bought (docs/design/0007-dispatch-rests-the-application.md).
            t.dispatched = t.dispatched || d.dispatched
            let request = SiteAllocator.finite(d.request.value)
            let allowedCharge = SiteAllocator.magnitude(d.allowedCharge.value)
            let allowedDischarge = SiteAllocator.magnitude(d.allowedDischarge.value)
            guard d.pooled else {
                t.held += ControlMath.clamp(request, -allowedCharge, allowedDischarge)
                t.overridden = t.overridden || !d.dispatched
                continue
            }
            t.allowedCharge += allowedCharge
            t.allowedDischarge += allowedDischarge
            let kept = kept[index]
            if kept.discharge { inputs[index].allowedDischarge = min(allowedDischarge, max(0, request)) }
            if kept.charge { inputs[index].allowedCharge = min(allowedCharge, max(0, -request)) }
            if !kept.charge { t.reserveCharge += allowedCharge }
            let capability = units[index].capability
            t.rating += capability.rating
            t.charge += capability.charge.isFinite ? max(0, capability.charge) : 0
            t.discharge += capability.discharge.isFinite ? max(0, capability.discharge) : 0
            t.requested += request
            if !kept.discharge, let soc = d.soc?.value, soc.isFinite, soc > socReserve { t.reserveDischarge += allowedDischarge }
        }
        return t
    }

    /// True when an interlock rule sets the limit.
    static func interlocked(_ reason: LimitReason) -> Bool {
        if case .interlock = reason { return true }
        return false
    }

    /// Stage 2: the pool before the site's bounds: the pooled requests, the block schedule's ask
    /// where a block is in force (or its fallback `zero`), else the application where no dispatch
    /// speaks (only on fresh meter data, never into the SOC reserve), then the grid limits, which
    /// outrank everything below the interlocks.
    mutating func target(_ t: Totals, connection: ConnectionPoint, reserveReached: (discharge: Bool, charge: Bool),
                         clock: (wall: Double, elapsed: Double), decision: inout SiteDecision) -> Double {
        decision.requested = t.requested
        decision.held = t.held
        let scheduled = schedule.ask(ScheduleExecutor.Pool(
            requested: t.requested, held: t.held, battery: t.battery, droop: t.droop, reserveDischarge: t.reserveDischarge,
            reserveCharge: t.reserveCharge, allowedDischarge: t.allowedDischarge, allowedCharge: t.allowedCharge,
            spoken: t.dispatched || t.overridden, overridden: t.overridden, units: t.narrowedBy, rating: rating), connection: connection, wallClock: clock.wall,
            elapsed: clock.elapsed)
        if let scheduled {
            return Self.bounded(t.requested + scheduled, held: t.held, connection: connection, decision: &decision)
        }
        if connection.settings.application != .none, !t.dispatched, !connection.stale, connection.gridPower != nil {
            decision.application = ControlMath.clamp(connection.target - t.held, reserveReached.charge ? -t.reserveCharge : -.infinity,
                                                     reserveReached.discharge ? 0 : t.reserveDischarge)
            decision.applicationActive = true
        }
        return Self.bounded(t.requested + decision.application, held: t.held, connection: connection, decision: &decision)
    }

    /// The pool inside the connection point's floor and ceiling (the binding one noted).
    static func bounded(_ pool: Double, held: Double, connection: ConnectionPoint, decision: inout SiteDecision) -> Double {
        var pool = pool
        if let floor = connection.floor, pool < floor - held {
            pool = floor - held
            decision.binding = .importLimit
        }
        if let ceiling = connection.ceiling, pool > ceiling - held {
            pool = ceiling - held
            decision.binding = .exportLimit
        }
        UtilityStage.noteConnectionBinding(decision.binding, decision: &decision, connection: connection)
        return pool
    }

    /// Stage 3: the grid operator's limit and the utility's bound the units' sum, whatever the meter
    /// reads (the lower of the two each way). The pool never turns against a held unit to make room;
    /// the held units are narrowed in `share` instead. Disconnected: zero.
    static func bound(_ pool: Double, held: Double, bounds: (lower: Double, upper: Double), utility: UtilityStage,
                      connection: ConnectionPoint, decision: inout SiteDecision) -> Double {
        var pool = pool
        if bounds.upper.isFinite || bounds.lower.isFinite {
            let bounded = ControlMath.clamp(pool, min(0, bounds.lower - held), max(0, bounds.upper - held))
            if bounded != pool {
                utility.noteBound(discharging: bounded < pool, cap: decision.operatorCap, decision: &decision, connection: connection)
                pool = bounded
            }
        }
        return decision.utility.disconnected ? 0 : pool
    }

    /// Stage 4: shares the pool, then narrows the held units where a limit the pool cannot meet
    /// still binds (an operator's override stays inside the connection point's limits and the grid
    /// operator's). opModConnect / opModEnergize false: every unit at zero, droop and overrides included.
    mutating func share(_ pool: Double, held: Double, bounds: (lower: Double, upper: Double), utility: UtilityStage,
                        connection: ConnectionPoint, decision: inout SiteDecision) {
        decision.pool = pool
        allocation = allocator.allocate(inputs, pool: pool, shares: &shares, reasons: &reasons)
        var total = allocation.delivered + held
        if let floor = connection.floor, total < floor - 1 {
            narrowHeld(by: floor - total, charging: true)
        } else if let ceiling = connection.ceiling, total > ceiling + 1 {
            narrowHeld(by: total - ceiling, charging: false)
        }
        if bounds.upper.isFinite || bounds.lower.isFinite {
            total = 0
            for index in shares.indices { total += shares[index] }
            if total > bounds.upper + 1 {
                narrowHeld(by: total - bounds.upper, charging: false)
                utility.noteBound(discharging: true, cap: decision.operatorCap, decision: &decision, connection: connection)
            } else if total < bounds.lower - 1 {
                narrowHeld(by: bounds.lower - total, charging: true)
                utility.noteBound(discharging: false, cap: decision.operatorCap, decision: &decision, connection: connection)
            }
        }
        if decision.utility.disconnected {
            for index in shares.indices { shares[index] = 0 }
            decision.utility.binding = .disconnected
        }
    }

    /// Stage 5: each unit's share and the pool's room as a fraction of the pooled rating.
    mutating func apply(to units: inout [UnitController], totals t: Totals, decision: inout SiteDecision) {
        let fraction = t.rating > 0 ? (charge: min(1, t.charge / t.rating), discharge: min(1, t.discharge / t.rating)) : nil
        decision.delivered = 0
        for index in units.indices {
            units[index].allocate(shares[index], reason: reasons[index])
            units[index].poolFraction = fraction
            decision.delivered += shares[index]
        }
        lastCommanded = decision.delivered
    }

    /// Moves held units' shares toward zero by `amount` W in total, each in proportion to its
    /// share: those charging when the import limit needs more discharge (`charging`), those
    /// discharging when a limit needs less.
    mutating func narrowHeld(by amount: Double, charging: Bool) {
        var eligible = 0.0
        for index in shares.indices where reasons[index] == .held {
            let share = shares[index]
            if charging, share < 0 { eligible -= share } else if !charging, share > 0 { eligible += share }
        }
        guard eligible > 0, amount > 0 else { return }
        let keep = max(0, 1 - amount / eligible)
        for index in shares.indices where reasons[index] == .held && (charging ? shares[index] < 0 : shares[index] > 0) {
            shares[index] *= keep
        }
    }

    /// Stage 6: the binding limit (reported when it starts to bind, released once it has not bound
    /// for 5 s, so a limit at the edge of binding is not reported every cycle), the shortfall, and
    /// what held the schedule's block back (`winner`: the site request that spoke, if any).
    mutating func report(_ decision: SiteDecision, winner: RequestSource?, connection: ConnectionPoint, events: inout EventRing,
                         now: MonotonicInstant) {
        let binding = decision.binding
        if binding != .none {
            lastBound = now
            if binding != bindingReported {
                bindingReported = binding
                let limit = binding == .importLimit ? connection.importLimit : connection.exportLimit
                events.push(ControlEvent(kind: .gridLimitBinding, unit: -1, value: (connection.gridPower ?? .nan) / 1000,
                                         threshold: (limit ?? .nan) / 1000, limit: binding, at: now))
            }
        } else if bindingReported != .none, let lastBound, now.seconds(since: lastBound) >= 5 {
            events.push(ControlEvent(kind: .gridLimitReleased, unit: -1, limit: bindingReported, at: now))
            bindingReported = .none
        }
        let missing = allocation.shortfall
        if !shortfallActive, missing > shortfallThreshold {
            shortfallActive = true
            events.push(ControlEvent(kind: .siteShortfall, unit: -1, value: missing / 1000, threshold: allocation.request / 1000, at: now))
        } else if shortfallActive, missing < shortfallThreshold / 2 {
            shortfallActive = false
            events.push(ControlEvent(kind: .siteShortfallCleared, unit: -1, at: now))
        }
        let spoke: ScheduleBinding = switch winner {
        case .agc?: .agc
        case .utility?: .utility
        case .scada?: .scada
        default: .aggregatorDispatch
        }
        schedule.account(decision, spoke: spoke, shortfall: missing > shortfallThreshold, events: &events, now: now)
    }
}
