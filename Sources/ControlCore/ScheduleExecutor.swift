/// The block schedule in the cycle (docs/design/0011-block-schedule.md): where the site
/// application stands in the order of authority, below every request. Each period it asks the
/// pool for the power that brings the block's delivered energy, less droop's energy in the block,
/// to the block's target by the block's end, inside the pool's allowed power and reserves, at the
/// schedule ramp. When any request speaks (operator override, AGC, utility, SCADA, an aggregator
/// dispatch) it rests, as the application does; what held the block back is recorded per block.
///
/// A plain value (no reference, no heap storage): the cycle copies it without allocating. The site
/// runs it in two places: `ask` in the pool's stage 2, `account` in its stage 6.
public struct ScheduleExecutor: Sendable {
    /// nil: no schedule layer (the site as without one).
    public private(set) var settings: ScheduleSettings?
    /// The schedule ramp, % of the site's rating per second (`limits.schedule_ramp_percent_per_s`).
    public private(set) var rampPercentPerSecond = 10.0
    /// The blocks the store published (nil: none).
    public var window: ScheduleWindow?
    /// What the schedule asked of the pool in the last period, W (+ = discharge).
    public private(set) var askW = 0.0
    /// True while no block is in force and the fallback acts (`SCHEDULE_FALLBACK` said so).
    public private(set) var fallbackActive = false
    /// Closed blocks not yet drained (the oldest kept when full; the rest counted in `droppedReports`).
    var reports = InlineArray<8, ScheduleBlockReport>(repeating: Self.emptyReport)
    public private(set) var reportCount = 0
    public private(set) var droppedReports: UInt64 = 0
    /// The block being executed.
    var block = OpenBlock()
    /// This period's state, from `ask` to `account`.
    var period = Period()

    /// The block being executed: its energy since the executor joined it and what held it back.
    struct OpenBlock: Sendable {
        var active = false
        var start: Int64 = 0
        var length: Int64 = 900
        var target = 0.0
        var revision = 0
        /// Wall-clock second the executor joined it (its start, or later after a restart or a new window).
        var joined = 0.0
        var deliveredKWh = 0.0
        var droopKWh = 0.0
        var bound = InlineArray<15, Double>(repeating: 0)
        var end: Double { Double(start + length) }
    }

    /// What `ask` found, for `account`.
    struct Period: Sendable {
        var wall = 0.0, seconds = 0.0
        /// True when a block was in force and the schedule's layer acted (or rested) this period.
        var inForce = false
        var rested = false, overridden = false, meterStale = false
        var limited = ScheduleBinding.none
        var units = ScheduleBinding.unitLimit
    }

    public init() {}

    /// Takes the settings (and the ramp) at start and on reload; the running block carries on.
    public mutating func configure(_ settings: ScheduleSettings?, rampPercentPerSecond: Double) {
        self.settings = settings
        self.rampPercentPerSecond = rampPercentPerSecond
        if settings == nil {
            block.active = false
            fallbackActive = false
            askW = 0
        }
    }

    /// The open block so far (its report as it would close now), nil when no block is in force.
    public var open: ScheduleBlockReport? {
        guard block.active else { return nil }
        return report(block, closedAt: block.end, rating: lastRating)
    }

    /// Σ unit ratings, W, as the last `ask` was given it.
    var lastRating = 0.0

    /// Hands every closed block to `body`, oldest first, and forgets them (no allocation).
    public mutating func drainReports(_ body: (ScheduleBlockReport) -> Void) {
        for i in 0..<reportCount { body(reports[i]) }
        reportCount = 0
    }

    /// What the pooled units report this period, for `ask`.
    struct Pool {
        /// Σ the pooled units' requests (their droop shares while no request speaks), W.
        var requested = 0.0
        var held = 0.0
        /// Σ every unit's measured power, W (+ = discharge), and droop response, W.
        var battery = 0.0
        var droop = 0.0
        /// What the pooled units may give outside the reserves, and in all, W (magnitudes).
        var reserveDischarge = 0.0, reserveCharge = 0.0
        var allowedDischarge = 0.0, allowedCharge = 0.0
        /// A request speaks (a dispatch, AGC, the utility, SCADA) or an operator override holds a unit.
        var spoken = false, overridden = false
        /// What narrows the units' allowed power when the schedule's ask meets it.
        var units = ScheduleBinding.unitLimit
        /// Σ unit ratings, W.
        var rating = 0.0
    }

    /// Stage 2: the energy of the interval that ends now into the open block, the block boundary
    /// crossed, and what the schedule asks of the pool (W, + = discharge, on top of the pooled
    /// requests). nil: the schedule leaves the site to its application (no layer, or no block in
    /// force with fallback `application`).
    mutating func ask(_ pool: Pool, connection: ConnectionPoint, wallClock: Double, elapsed: Double) -> Double? {
        guard let settings else { return nil }
        lastRating = pool.rating
        let metered = connection.settings.hasMeter
        let fresh = !metered || (!connection.stale && connection.gridPower != nil)
        // + = export at the target's point: the meter's (fresh only) with one, the units' without.
        let power: Double? = metered ? (fresh ? connection.gridPower.map { -$0 } : nil) : pool.battery
        let wall = wallClock.isFinite && wallClock > 0 ? wallClock : 0
        let seconds = elapsed.isFinite ? min(max(0, elapsed), Double(max(1, block.length))) : 0
        period = Period(wall: wall, seconds: seconds)
        advance(to: wall, seconds: seconds, power: power, droop: pool.droop)
        let step = max(0, rampPercentPerSecond) / 100 * pool.rating * seconds
        guard block.active else {
            if settings.fallback == .application {
                askW = 0
                return nil
            }
            // `zero`: down to 0 at the ramp (at once when a request speaks).
            askW = pool.spoken ? 0 : askW + ControlMath.clamp(-askW, -step, step)
            return bounded(askW, pool)
        }
        period.inForce = true
        guard !pool.spoken else {
            period.rested = true
            period.overridden = pool.overridden
            askW = 0
            return 0
        }
        guard fresh, let load = metered ? connection.loadLow.flatMap({ low in connection.loadHigh.map { (low + $0) / 2 } }) : 0 else {
            period.meterStale = true
            askW = 0
            return 0
        }
        // The block's energy at its even pace from when the executor joined it, plus what it is
        // behind that pace spread over the time left: (goal − net delivered) / time left, except
        // that the lag is spread over no less than `horizonFloor`.
        let span = max(1, block.end - block.joined)
        let goal = block.target * span / Double(block.length)
        let pace = goal * 3_600_000 / span
        let behind = goal * min(1, max(0, wall - block.joined) / span) - (block.deliveredKWh - block.droopKWh)
        let needed = pace + behind * 3_600_000 / max(block.end - wall, Self.horizonFloor(block.length))
        let wanted = needed + load - pool.held
        askW += ControlMath.clamp(wanted - askW, -step, step)
        let limited = bounded(askW, pool)
        if limited != askW || bounded(wanted, pool) != wanted {
            let discharging = wanted > limited
            let reserved = discharging ? pool.reserveDischarge < pool.allowedDischarge - 1 : pool.reserveCharge < pool.allowedCharge - 1
            period.limited = reserved ? .socReserve : pool.units
        }
        period.units = pool.units
        askW = limited
        return limited
    }

    /// The least time a correction is spread over: 2 % of the block, at least 2 s (so a small
    /// error in the last moments does not ask the units' full power).
    static func horizonFloor(_ length: Int64) -> Double { max(2, Double(length) * 0.02) }

    /// `ask` inside what the pooled units may give outside the reserves, leaving the pooled
    /// requests (droop) their room: never turned against them.
    static func limits(_ pool: Pool) -> (lower: Double, upper: Double) {
        (min(0, -pool.reserveCharge - pool.requested), max(0, pool.reserveDischarge - pool.requested))
    }

    func bounded(_ value: Double, _ pool: Pool) -> Double {
        let (lower, upper) = Self.limits(pool)
        return ControlMath.clamp(value.isFinite ? value : 0, lower, upper)
    }

    /// Adds the interval [wall − seconds, wall] to the open block, closes it at its end (the part of
    /// the interval before the end is its), and opens the block in force at `wall`, if any. A
    /// block no longer in the window closes at once; a clock stepped back keeps the open block
    /// until its end.
    mutating func advance(to wall: Double, seconds: Double, power: Double?, droop: Double) {
        var rest = seconds
        if block.active {
            let running = window?.block(at: Double(block.start))
            let inside = running?.startUnixSeconds == block.start && window?.lengthSeconds == block.length
            let end = inside ? block.end : min(block.end, wall)
            let before = min(max(0, end - (wall - seconds)), seconds)
            add(power: power, droop: droop, seconds: before)
            if let running, inside { block.target = running.targetKWh }
            if wall >= end {
                close(upTo: end)
                rest = seconds - before
            } else {
                return
            }
        }
        guard let settings, settings.lengthSeconds > 0, let window, let running = window.block(at: wall) else { return }
        block = OpenBlock(active: true, start: running.startUnixSeconds, length: window.lengthSeconds, target: running.targetKWh,
                          revision: window.revision, joined: max(Double(running.startUnixSeconds), wall - rest))
        add(power: power, droop: droop, seconds: min(rest, wall - block.joined))
    }

    mutating func add(power: Double?, droop: Double, seconds: Double) {
        guard seconds > 0 else { return }
        if let power, power.isFinite { block.deliveredKWh += power * seconds / 3_600_000 }
        if droop.isFinite { block.droopKWh += droop * seconds / 3_600_000 }
    }

    mutating func close(upTo end: Double) {
        let closed = report(block, closedAt: end, rating: lastRating)
        block.active = false
        guard reportCount < reports.count else {
            droppedReports &+= 1
            return
        }
        reports[reportCount] = closed
        reportCount += 1
    }

    /// The report of `b` closed at `end`: its target in proportion to the part from when the
    /// executor joined it to `end` (the whole target for a block run from start to end).
    func report(_ b: OpenBlock, closedAt end: Double, rating: Double) -> ScheduleBlockReport {
        var longest = ScheduleBinding.none, seconds = 0.0
        // By raw value, not `allCases` (an array built on each call).
        for raw in 1..<b.bound.count where b.bound[raw] > seconds {
            longest = ScheduleBinding(rawValue: UInt8(raw)) ?? .none
            seconds = b.bound[raw]
        }
        let fraction = min(1, max(0, min(b.end, end) - b.joined) / Double(max(1, b.length)))
        return ScheduleBlockReport(startUnixSeconds: b.start, lengthSeconds: b.length, targetKWh: b.target * fraction,
                                   deliveredKWh: b.deliveredKWh, droopKWh: b.droopKWh, ratedKWh: rating * Double(b.length) / 3_600_000,
                                   boundBy: longest, revision: b.revision)
    }

    /// Stage 6: what held the schedule back this period (the request that spoke, else the limit
    /// that bound, in the order of authority), counted in the open block; `SCHEDULE_FALLBACK` on
    /// entering the fallback, `SCHEDULE_RESUMED` when a block is in force again.
    mutating func account(_ decision: SiteDecision, spoke: ScheduleBinding, shortfall: Bool, events: inout EventRing, now: MonotonicInstant) {
        guard let settings else { return }
        if period.inForce, block.active {
            var binding = ScheduleBinding.none
            if period.rested {
                // The operator outranks every remote party.
                binding = period.overridden ? .operatorOverride : spoke
            } else if period.meterStale {
                binding = .meterStale
            } else if decision.operatorLimited {
                binding = .gridOperatorLimit
            } else if decision.utility.binding != .none {
                binding = .utilityLimit
            } else if decision.binding != .none {
                binding = decision.binding == .importLimit ? .importLimit : .exportLimit
            } else if period.limited != .none {
                binding = period.limited
            } else if shortfall {
                binding = period.units
            }
            if binding != .none { block.bound[Int(binding.rawValue)] += period.seconds }
        }
        if !block.active, !fallbackActive {
            fallbackActive = true
            events.push(ControlEvent(kind: .scheduleFallback, unit: -1, value: settings.fallback == .zero ? 1 : 0,
                                     threshold: window.map { Double($0.count) } ?? 0, at: now))
        } else if block.active, fallbackActive {
            fallbackActive = false
            events.push(ControlEvent(kind: .scheduleResumed, unit: -1, value: block.target, threshold: Double(block.start), at: now))
        }
    }

    static let emptyReport = ScheduleBlockReport(startUnixSeconds: 0, lengthSeconds: 0, targetKWh: 0, deliveredKWh: 0, droopKWh: 0,
                                                 ratedKWh: 0, boundBy: .none, revision: 0)
}
