public import BessBase
public import BessSystem
public import ControlCore
import Synchronization

/// The cycle: takes its inputs (`CycleInbox`), samples the devices into the process image, runs
/// the control law (`SiteController`), commands the devices and publishes (`CycleOutbox`) —
/// devices → cycle → control law → cycle → devices, one way. The phases are in `CyclePhases.swift`;
/// the two that touch the devices go through the site's own type (`SiteCycle<IO>`, the only kind of
/// runner there is), never an existential. The service holds it as a `SiteRunner`: its settings, its
/// controller, and the devices' service half (`SiteDevices`). It holds no device and no simulator
/// of its own.
public class SiteRunner {
    /// What the cycle runs on (a reload replaces it).
    public private(set) var settings: CycleSettings
    public private(set) var controller: SiteController
    /// The devices' service half: start, stop, probes, faults, slots (never called by the cycle).
    public let io: any SiteDevices
    var inputs: [UnitInputs]
    /// Every order and reading of the cycle under way, taken by `takeInputs`.
    var inbox: CycleInbox
    /// Storage for the site frequency's median (one slot per unit, allocated once).
    var frequencyScratch: [Timestamped<Hertz>]
    let startedAt: MonotonicInstant
    /// The cycle's schedule, shared with the endpoint workers (CycleThread publishes it).
    public let phase: CyclePhase
    /// Unit-cycles that ran on an inverter reading taken before the previous cycle began: the
    /// worker's read for this cycle landed after it woke (a lost period). A reading more than two
    /// periods old is not counted: that unit is not answering, which its staleness rule handles.
    public internal(set) var lateReadings: UInt64 = 0
    var previousStep: MonotonicInstant?
    /// The site meter's reading of the last step, + = import.
    public internal(set) var meter: Timestamped<MeterReading>?
    /// The grid frequency the devices simulate, as the last `sample` returned it (nil when not simulated).
    var simulatedFrequency: Timestamped<Hertz>?
    /// The PMU's newest usable sample (`PMUReader.latest`), handed over before the cycle starts when
    /// `frequency_source` is `pmu`; without it the cycle follows the inverters' median.
    public var pmuSamples: FrequencySampleSlot?
    /// The utility's controls in force (IEEE 2030.5), published by the 2030.5 worker; read before each
    /// step and handed to the controller. Absent (never published) is no utility control.
    public var utilityLimits: UtilityLimitSlot?
    /// Where the last step's frequency came from: the configured source, or `.inverter` while a PMU
    /// falls back.
    public internal(set) var frequencySourceInUse: FrequencySource
    /// When the frequency the last step used was measured (nil when it had none).
    public internal(set) var frequencyTakenAt: MonotonicInstant?
    /// True while `FREQUENCY_SOURCE_FALLBACK` stands: announced, and the PMU not back.
    public internal(set) var frequencyFallback = false
    /// True once a PMU sample was followed (before that, the start's grace applies).
    var pmuFollowed = false
    /// Where the cycle takes its orders and publishes (`attach`); nil for a runner run alone (tests).
    var shared: SharedState?
    /// The cycle's timing, as `publish` hands it to the statistics.
    public internal(set) var counters = CycleCounters()
    /// Each unit's last reset outcome (the operator's reset; published with the mailbox's generation).
    var outcomes: [ResetOutcome]

    /// Only `SiteCycle` makes one.
    init(settings: CycleSettings, devices: any SiteDevices, phase: CyclePhase, startedAt: MonotonicInstant) {
        self.settings = settings
        io = devices
        self.phase = phase
        self.startedAt = startedAt
        controller = SiteController(control: settings.control, units: settings.units, startedAt: startedAt, site: settings.site)
        controller.schedule.configure(settings.schedule, rampPercentPerSecond: settings.control.scheduleRampPercentPerSecond)
        let units = settings.devices.count
        inputs = [UnitInputs](repeating: UnitInputs(), count: units)
        inbox = CycleInbox(units: units)
        outcomes = [ResetOutcome](repeating: ResetOutcome(), count: units)
        frequencySourceInUse = settings.frequencySource == .pmu ? .inverter : settings.frequencySource
        frequencyScratch = []
        frequencyScratch.reserveCapacity(units)
    }

    /// A site of real devices only (mode hardware, or hil with nothing simulated).
    public static func hardware(settings: CycleSettings, startedAt: MonotonicInstant,
                                output: @escaping (DeviceNotice) -> Void) throws(RunError) -> SiteRunner
    {
        let phase = CyclePhase(period: settings.period)
        let io = try HardwareSite(settings: settings, phase: phase, output: output)
        return SiteCycle(settings: settings, site: io, phase: phase, startedAt: startedAt)
    }

    /// Starts the bus workers.
    public func startWorkers() { io.start() }

    /// Stops the bus workers; each writes zero power with its revert timer armed first.
    public func stopWorkers() { io.stop() }

    /// One cycle of the site at `now` — `takeInputs → sample → decide → command → publish` — the
    /// one way to run a cycle, for the cycle thread and the tests alike. `lateness` is how long
    /// after its deadline it runs; nil for an extra cycle an alarm woke (off the schedule: no
    /// lateness recorded, its readings not counted late, and the next regular cycle's counted
    /// against the previous regular one). Once `attach`ed it takes its orders from and publishes
    /// into the shared state; alone (tests), the slots' readings in, the devices sampled and
    /// commanded, nothing published.
    /// - Parameter wallClock: the wall clock, seconds since 1970, for the cycle's reading; the
    ///   system's when nil (a test hands its own).
    public func run(now: MonotonicInstant, lateness: Duration?, wallClock: Double? = nil) {
        counters.record(now: now, lateness: lateness)
        runPhases(now: now, wallClock: wallClock ?? SystemClock.wallClockSeconds(), extra: lateness == nil)
    }

    /// The phases, in order, with the devices as their own type: `SiteCycle` runs them, `run` alone
    /// calls them.
    func runPhases(now: MonotonicInstant, wallClock: Double, extra: Bool) {
        preconditionFailure("a SiteRunner is made as a SiteCycle")
    }

    /// Unit `unit`'s contactor as bessd drives it (the status's `contactor`).
    func contactor(unit: Int) -> ContactorState { io.contactor(unit: unit) }

    /// Writes zero power to every inverter (what a clean stop does) and stops the workers.
    /// Stops the devices after writing zero with the revert armed to every inverter; returns the
    /// units whose inverter did not acknowledge it (they rest on their own revert timer).
    @discardableResult
    public func commandSafeSetpoints() -> [String] {
        io.stop()
        return io.unconfirmedStops
    }

    /// Applies reloaded settings while the cycle is paused: the live keys of
    /// `CycleSettings.reloadRules` (control settings, interlocks, droop, limits) apply, with the
    /// running state (latches included) carried over; a changed restart key (the units and their
    /// devices, mode, frequency source, meter, or a field no rule declares) refuses it all,
    /// `RELOAD_REFUSED: <keys> changed; restart bessd to apply`.
    public func reconfigure(_ new: CycleSettings, now: MonotonicInstant) throws(RunError) {
        // The cycle's restart keys (`CycleSettings.reloadRules`): any of them changed refuses it all.
        if let restart = CycleSettings.reloadRules.restartNeeded(from: settings, to: new) {
            throw RunError(.reloadRefused, message: "\(restart)")
        }
        let fresh = SiteController(control: new.control, units: new.units, startedAt: startedAt, expectsFrequency: true,
                                   site: new.site)
        fresh.adopt(from: controller, mapping: new.devices.indices.map { $0 })
        // The block under way carries on, with its energy so far, its window and its fallback state.
        fresh.schedule = controller.schedule
        fresh.schedule.configure(new.schedule, rampPercentPerSecond: new.control.scheduleRampPercentPerSecond)
        controller.events.drain { fresh.events.push($0) }
        controller = fresh
        settings = new
        io.reconfigure(new)
    }

    /// Sets (or clears) a unit's operator override.
    public func setOverride(_ command: PowerCommand?, unit: Int) { inputs[unit].override = command }

    /// Sets (or clears) a unit's aggregator dispatch.
    public func setDispatch(_ command: PowerCommand?, unit: Int) { inputs[unit].dispatch = command }

    /// True once every real device has answered or failed at least once.
    public var devicesProbed: Bool { io.devicesProbed }
    /// True while every bus worker's thread runs (any thread may call the closure).
    public var workersAliveCheck: @Sendable () -> Bool { io.workersAliveCheck }
    /// Bus faults per unit, for the status line (any thread).
    public func busFaults() -> [[String]] { io.busFaults() }
    /// The worker slot of each unit whose inverter is real.
    public var slots: [DeviceSlot?] { io.inverterSlots }
    /// The CAN slot of each unit whose BMS is real.
    public var bmsSlots: [BMSSlot?] { io.bmsSlots }
}

/// The one kind of `SiteRunner`: the cycle over a site of type `IO` (`HardwareSite`,
/// `SimulatedSite`, a test's scripted site), whose phases call the devices through `IO` itself.
public final class SiteCycle<IO: SiteIO>: SiteRunner {
    /// The devices, as the cycle calls them.
    public let site: IO

    public init(settings: CycleSettings, site: IO, phase: CyclePhase, startedAt: MonotonicInstant) {
        self.site = site
        super.init(settings: settings, devices: site, phase: phase, startedAt: startedAt)
    }

    override func runPhases(now: MonotonicInstant, wallClock: Double, extra: Bool) {
        takeInputs(from: shared, wallClock: wallClock)
        sample(site, now: now, extra: extra)
        decide(now: now)
        command(site)
        if let shared { publish(to: shared, now: now) }
    }

    override func contactor(unit: Int) -> ContactorState { site.contactor(unit: unit) }
}
