public import BessSystem
public import ControlCore
import Synchronization

/// The site as an operator sees it, published by the cycle after every step (plain values: copying
/// it never allocates).
public struct SiteStatus: Sendable, Equatable {
    /// Grid power at the connection point, W (+ = import); NaN without a fresh meter reading.
    public var gridPower: Double = .nan
    /// Reactive power at the connection point, var (+ as `gridPower`), and its voltage, V; NaN
    /// without a fresh meter reading or when the meter does not measure them.
    public var gridReactivePower: Double = .nan
    public var gridVoltage: Double = .nan
    /// `gridVoltage` in per unit of `site.reactive_power.nominal_voltage_v`; NaN as
    /// `UnitStatus.voltagePU` is.
    public var gridVoltagePU: Double = .nan
    public var meterStale = false
    public var binding = GridLimitBinding.none
    public var applicationActive = false
    /// The application's battery target, W (+ = discharge).
    public var applicationTarget: Double = 0
    /// The site's decision layer by layer, W.
    public var requested: Double = 0
    public var held: Double = 0
    public var application: Double = 0
    public var pool: Double = 0
    public var delivered: Double = 0
    public var shortfall: Double = 0
    public var shortfallActive = false
    /// The part of the site's var ask no unit could take, var (+ = injecting), and whether the site's
    /// volt-watt decided the units' discharge in the last cycle.
    public var reactiveShortfall: Double = 0
    public var voltWattLimited = false
    /// The site's var setpoint (NaN: none) and who set the site's Q (nil: nobody at the site).
    public var reactiveSetpoint: Double = .nan
    public var reactiveSource: ReactiveSource?
    /// Bounds of the load estimate (load − PV), W; NaN before the first fresh reading.
    public var loadLow: Double = .nan
    public var loadHigh: Double = .nan
    /// The grid operator's limit in force, percent of the site's rating (the lower of SCADA's
    /// `WMaxLimPct` and the relay contacts'); NaN when none stands.
    public var operatorLimitPercent: Double = .nan
    /// SCADA's `WMaxLimPct` in force and how long until it reverts (NaN, zero when none).
    public var scadaLimitPercent: Double = .nan
    public var scadaLimitRemaining: Duration = .zero
    /// True when SCADA's limit in force is its reversion value (it holds until written again).
    public var scadaLimitReverted = false
    /// The relay contacts' limit, percent (NaN when no contact asserts one).
    public var inputLimitPercent: Double = .nan
    /// The cap on the units' sum in force, W (ramped; infinite when none).
    public var operatorCap: Double = .infinity
    /// True when the grid operator's cap decided the units' power in the last cycle.
    public var operatorLimited = false
    /// SCADA's site setpoint in force, W (+ = discharge), and how long until it reverts (NaN, zero).
    public var scadaSetpoint: Double = .nan
    public var scadaSetpointRemaining: Duration = .zero
    /// The grid operator's AGC (docs/design/0008-agc.md), as the last cycle followed it.
    public var agc = AGCStatus()
    /// The utility's IEEE 2030.5 controls as the last cycle applied them (docs/design/0009-utility-limits.md).
    public var utility = UtilityDecision()
    /// The schedule's block in force, its report so far (nil: none), whether the schedule's fallback
    /// acts (`SCHEDULE_FALLBACK` stands) and what the schedule asked of the units, W (+ = discharge).
    public var scheduleBlock: ScheduleBlockReport?
    public var scheduleFallback = false
    public var scheduleAsk: Double = 0
    public init() {}
}

/// The grid operator's AGC as an operator and the control centre see it (`status`, `site`,
/// /metrics and, later, the IEC 104 monitor points).
public struct AGCStatus: Sendable, Equatable {
    /// The site declares a regulation band (`iec104.agc`).
    public var configured = false
    /// The control centre has AGC in service.
    public var inService = false
    /// The last target accepted, W (+ = discharge); NaN before the first or out of service.
    public var target: Double = .nan
    /// True while the target is followed (in service and fresh).
    public var following = false
    /// What the site follows now, W: the schedule ramped toward the target (NaN when not following).
    public var followed: Double = .nan
    /// True while `AGC_SIGNAL_LOST` stands.
    public var signalLost = false
    /// How long the signal stays fresh without a refresh.
    public var remaining: Duration = .zero
    /// The declared regulation band, W (NaN when not configured).
    public var upperLimit: Double = .nan
    public var lowerLimit: Double = .nan
    /// How fast the site moves toward a new target, W/s (`limits.schedule_ramp_percent_per_s` of Σ ratings).
    public var ramp: Double = .nan
    public init() {}
}

/// What one unit looks like to an operator, published by the cycle after every step.
public struct UnitStatus: Sendable, Equatable {
    public var state: UnitState = .starting
    public var soc: Double = .nan
    public var power: Double = .nan
    public var setpoint: Double = 0
    public var droop: Double = 0
    public var allowedCharge: Double = 0
    public var allowedDischarge: Double = 0
    public var active = TripCodeSet()
    public var latched = TripCodeSet()
    /// The effective mode (standby while anyone asks for it).
    public var mode: OperatingMode = .auto
    /// Who asks for standby.
    public var holds = ModeHolds()
    /// How long until the aggregator's standby ends (zero when it holds none).
    public var remoteRemaining: Duration = .zero
    /// The local operator's override in force, W, and how long it lasts (zero when none).
    public var overrideW: Double?
    public var overrideRemaining: Duration = .zero
    public var soh: Double = .nan
    public var voltage: Double = .nan
    public var current: Double = .nan
    public var temperatureMin: Double = .nan
    public var temperatureMax: Double = .nan
    /// The BMS's charge and discharge current limits, A (NaN while stale).
    public var chargeCurrentLimit: Double = .nan
    public var dischargeCurrentLimit: Double = .nan
    public var bmsOnline = false
    public var inverterOnline = false
    /// The unit's contactor: as bessd drives it (SunSpec 123 `Conn`), `open` whenever the inverter
    /// reports itself disconnected.
    public var contactor = ContactorState.closed
    /// The inverter's reactive power, var (+ as `power`: supplied), and AC voltage, V; NaN while
    /// its reading is stale or when it does not measure them.
    public var reactivePower: Double = .nan
    public var acVoltage: Double = .nan
    /// `acVoltage` in per unit of `grid_integration.reactive_power.nominal_voltage_v`; NaN without
    /// that nominal, while the reading is stale, or outside 0.5–1.5 p.u. (a scale-factor error or a
    /// line-to-line value taken for line to neutral is absent, never an excursion).
    public var voltagePU: Double = .nan
    /// The reactive setpoint written, var (+ = injecting); NaN while bessd leaves the inverter's
    /// reactive power alone. What sets it: `reactiveSource`.
    public var reactiveSetpoint: Double = .nan
    public var reactiveSource = ReactiveSource.off
    /// The unit's reactive capability, var, each way: its inverter's 702 `VarMaxInj` / `VarMaxAbs`
    /// (else `VAMax`), at most `VAMax`; 0 while the inverter reports no var points. The site's sums
    /// are `SiteView.varMaxInjecting` / `varMaxAbsorbing`.
    public var varMaxInjecting: Double = 0
    public var varMaxAbsorbing: Double = 0
    /// The unit's apparent-power rating, VA (`VAMax` as its law runs it); 0 while the inverter reports
    /// no var points. The site's sum is `SiteView.apparentPowerVA`.
    public var apparentPowerVA: Double = 0
    /// Why the site's allocation gave the unit its setpoint, and whether it shares the site's request.
    public var share: ShareReason = .idle
    public var pooled = true
    /// Aggregator dispatch in force, W.
    public var dispatchW: Double?
    public init() {}
}

/// Cycle timing as published.
public struct CycleStatistics: Sendable, Equatable {
    public var periodMs: Int = 0
    public var cycles: UInt64 = 0
    public var overruns: UInt64 = 0
    /// Unit-cycles that ran on a reading taken for an earlier cycle (the worker's read landed late).
    public var lateReadings: UInt64 = 0
    /// Cycles the poller's readings started before their deadline.
    public var startedOnReadings: UInt64 = 0
    /// Extra cycles a BMS alarm woke.
    public var alarmCycles: UInt64 = 0
    public var lastLatenessMicroseconds: Int64 = 0
    /// When the last cycle ran, and the longest interval between the starts of two cycles since
    /// start, reloads included (a reload's pause shows here).
    public var lastRunAt: MonotonicInstant?
    public var longestGap = Duration.zero
    public var histogram = LatencyHistogram()
    public var frequency: Double = .nan
    /// Where the last cycle's frequency came from (with a PMU configured: `.pmu`, or `.inverter`
    /// while it falls back), and how old it was then, seconds (NaN when it had none).
    public var frequencySource: FrequencySource?
    public var frequencyAge: Double = .nan
    public var realtime = false
    /// Wall-clock steps the cycle has seen, and the last one's size (negative: the clock went back).
    public var clockSteps = 0
    public var lastClockStep = Duration.zero
    public init() {}
}

/// The state the cycle thread shares with the service thread, behind one short lock. The cycle
/// only copies values in and out of storage allocated at start-up.
public final class SharedState: Sendable {
    /// Orders in and publications out, behind one lock: `applyAGC` judges an order by the holds
    /// the last cycle published, in the same critical section. The cycle takes the lock twice a
    /// period: once to take the orders (`SiteRunner.takeInputs`), once to publish (`publish`).
    struct Contents: Sendable {
        var orders: PostedOrders
        var outbox: CycleOutbox
    }

    let contents: PILock<Contents>

    /// Signalled by the cycle when it publishes events or closed energy blocks (one eventfd write,
    /// no allocation): the service loop sleeps on it instead of polling, and logs, persists latches
    /// and records the moment there is something to do.
    public let serviceWakeup = Wakeup()

    /// Signalled by the cycle after every publication once a reader has asked for it
    /// (`watchPublications()`): the IEC 104 outstation samples the cycle's state the moment it is
    /// new instead of on a timer, so a change reaches the control centre within the period.
    public let publicationWakeup = Wakeup()
    private let publicationsWatched = Atomic<Bool>(false)

    /// From now on the cycle signals `publicationWakeup` after each publication (one eventfd write a
    /// cycle, no allocation). Until a reader calls this the cycle makes no such write.
    public func watchPublications() { publicationsWatched.store(true, ordering: .releasing) }

    /// True once a reader watches publications.
    public var publicationsAreWatched: Bool { publicationsWatched.load(ordering: .acquiring) }

    /// The shared state of `units` units, each of the usable energy `capacitiesWh[i]`, Wh (what the
    /// published `SiteView` weighs SOC by; units beyond it count for power only). For tests only
    /// (`@testable`): its view has no ratings (`ratedPowerW` 0), which would bound SCADA, IEC 104
    /// and 2030.5 at 0 W; the daemon gives the whole settings (`init(units:view:)`).
    convenience init(units: Int, capacitiesWh: [Double] = []) {
        self.init(units: units, view: SiteView.Settings(capacitiesWh: capacitiesWh))
    }

    /// The shared state of `units` units, whose published `SiteView` is computed with `settings`.
    public init(units: Int, view settings: SiteView.Settings) {
        contents = PILock(Contents(orders: PostedOrders(units: units),
                                   outbox: CycleOutbox(units: units, settings: settings)))
        unitCount = units
    }

    // Readers copy element by element into storage of their own, allocated outside the lock: the
    // cycle's storage is never shared with a reader, so the cycle never triggers a copy-on-write
    // and never waits for a reader's allocation.

    /// A copy of every unit's status (allocated outside the lock).
    public var units: [UnitStatus] {
        var copy = [UnitStatus](repeating: UnitStatus(), count: unitCount)
        read(units: &copy)
        return copy
    }

    /// A copy of the site's status.
    public var site: SiteStatus { contents.withLock { $0.outbox.site } }

    /// Copies every unit's status, the site's status, the site's view of them and the site
    /// frequency as one cycle published them (one lock): what a reader that must never mix two
    /// cycles takes, and what SCADA, IEC 104 and IEEE 2030.5 report from. Returns the cycle count.
    @discardableResult
    public func read(units out: inout [UnitStatus], site: inout SiteStatus, view: inout SiteView, frequency: inout Double) -> UInt64 {
        contents.withLock { c in
            for i in c.outbox.units.indices where i < out.count { out[i] = c.outbox.units[i] }
            site = c.outbox.site
            view = c.outbox.view()
            frequency = c.outbox.stats.frequency
            return c.outbox.stats.cycles
        }
    }

    /// A copy of the cycle statistics (its histogram allocated outside the lock).
    public var statistics: CycleStatistics {
        var copy = CycleStatistics()
        read(statistics: &copy)
        return copy
    }

    /// The number of units (fixed at start).
    public let unitCount: Int

    /// Copies every unit's status into `out` (which must hold `unitCount` entries).
    public func read(units out: inout [UnitStatus]) {
        contents.withLock { c in
            for i in c.outbox.units.indices where i < out.count { out[i] = c.outbox.units[i] }
        }
    }

    /// Copies the cycle statistics into `out`, bucket by bucket into its own histogram.
    public func read(statistics out: inout CycleStatistics) {
        contents.withLock { c in
            let histogram = c.outbox.stats.histogram
            out.periodMs = c.outbox.stats.periodMs
            out.cycles = c.outbox.stats.cycles
            out.overruns = c.outbox.stats.overruns
            out.lateReadings = c.outbox.stats.lateReadings
            out.startedOnReadings = c.outbox.stats.startedOnReadings
            out.alarmCycles = c.outbox.stats.alarmCycles
            out.lastRunAt = c.outbox.stats.lastRunAt
            out.longestGap = c.outbox.stats.longestGap
            out.lastLatenessMicroseconds = c.outbox.stats.lastLatenessMicroseconds
            out.frequency = c.outbox.stats.frequency
            out.frequencySource = c.outbox.stats.frequencySource
            out.frequencyAge = c.outbox.stats.frequencyAge
            out.realtime = c.outbox.stats.realtime
            out.histogram.copy(from: histogram)
        }
    }

    /// Removes and returns pending events (the service thread's side); storage reserved outside the lock.
    public func takeEvents() -> [ControlEvent] {
        var events: [ControlEvent] = []
        events.reserveCapacity(1024)
        contents.withLock { c in c.outbox.events.drain { events.append($0) } }
        return events
    }

    /// Removes and returns closed energy blocks (the service thread's side).
    public func takeBlocks() -> [EnergyBlock] { take(\.blocks) }

    /// Queues operator requests; returns the generation to wait for.
    @discardableResult
    package func post(_ body: (inout Mailbox) -> Void) -> UInt64 {
        contents.withLock { c in
            body(&c.orders.mailbox)
            c.orders.mailbox.generation &+= 1
            return c.orders.mailbox.generation
        }
    }

    package var appliedGeneration: UInt64 { contents.withLock { $0.outbox.appliedGeneration } }

    /// The mailbox as posted so far, not yet taken by the cycle (the fuzz harnesses check what a
    /// request would have handed the control law).
    package func peekMailbox() -> Mailbox { contents.withLock { $0.orders.mailbox } }

    /// SCADA's commands as last written, with the count of writes so far (for `commit`).
    public func commands(generation: inout UInt64) -> SiteCommands {
        contents.withLock { c in
            generation = c.orders.commandsGeneration
            return c.orders.commands
        }
    }

    /// SCADA's commands as last written.
    public var commands: SiteCommands { contents.withLock { $0.orders.commands } }

    /// Stores `commands` if nothing was written since `generation` was read (two servers, TCP and
    /// RTU, never lose each other's writes: the loser decodes again). The cycle takes them next period.
    public func commit(_ commands: SiteCommands, ifGeneration generation: UInt64) -> Bool {
        contents.withLock { c in
            guard c.orders.commandsGeneration == generation else { return false }
            c.orders.commands = commands
            c.orders.commandsGeneration &+= 1
            return true
        }
    }

    /// The grid operator's AGC as the control centre last wrote it.
    public var agc: AGCCommand { contents.withLock { $0.orders.agc } }

    /// Declares the site's AGC regulation band and expiry (`iec104.agc`), at start and on reload:
    /// AGC keeps its service and target (the cycle keeps a target inside a narrowed band); nil
    /// withdraws them and takes AGC out of service (every order then refused).
    public func declareAGC(_ limits: AGCLimits?) {
        contents.withLock { c in
            if limits == nil { c.orders.agc = AGCCommand() } else { c.orders.agc.limits = limits }
        }
    }

    /// Applies one order of the grid operator's control centre (the IEC 104 server's thread calls
    /// it for AGC in service and for each AGC target) at `now` on the monotonic clock: checked and
    /// stored under one lock, so two connections never lose each other's orders; the cycle follows
    /// it from the next period. The site is in local control, and an order to follow refused, when
    /// every unit is held by the local operator (standby or override) as the last cycle published.
    /// Returns the command as accepted, or throws why it is refused (answered negatively; never clamped).
    public func applyAGC(_ order: AGCOrder, at now: MonotonicInstant) throws(AGCRefusal) -> AGCCommand {
        let result: Result<AGCCommand, AGCRefusal> = contents.withLock { c in
            let units = c.outbox.units
            let local = !units.isEmpty && units.allSatisfy { $0.holds.operatorUnit || $0.holds.operatorSite || $0.overrideW != nil }
            let agc = c.orders.agc
            let result = Result { () throws(AGCRefusal) -> AGCCommand in try agc.applying(order, at: now, local: local) }
            if case .success(let next) = result { c.orders.agc = next }
            return result
        }
        return try result.get()
    }

    /// The relay contacts' limit (`grid_operator.inputs`), percent, or nil when none is asserted;
    /// the cycle takes it next period.
    public func setInputLimit(_ percent: Double?) { contents.withLock { $0.orders.inputLimitPercent = percent } }

    /// The service's reading of the clock's synchronisation, for the cycle's energy blocks.
    public func setClockSynchronized(_ synchronized: Bool) { contents.withLock { $0.orders.clockSynchronized = synchronized } }
    package func resetOutcome(_ unit: Int) -> ResetOutcome { contents.withLock { $0.outbox.resetOutcomes[unit] } }
}
