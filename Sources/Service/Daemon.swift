public import BessSystem
public import Config
public import Cycle
import PMULink
import Scada
import Outstation
import Sep2Link
public import ControlCore
import Fieldbus
package import ControlProtocol
import Foundation
import Glibc
import Synchronization
public import Uplink
public import Logging

/// bessd as a service: the composition root. It builds the site and its services, each owning what
/// it starts and stops, and runs them in one explicit order. Its threads, each with one job:
/// - the cycle (CycleService): the control law on absolute deadlines; never waits on I/O;
/// - one thread per bus endpoint (inverter and BMS workers, BusWorkers);
/// - the watchdog (Watchdog): WATCHDOG=1 only while the cycle beats on time and every worker lives;
/// - the service server (OperatorServer): the control socket and /metrics, non-blocking
///   (ControlVerbs, StatusReport, MetricsExporter answer there);
/// - the main thread (`run`): each round persists latches and logs events and notices
///   (JournalFlush), watches the clock (ClockWatch), feeds the uplink (UplinkService) and reloads
///   (Reloader).
/// Start order (`services`): latches restored → uplink → workers → PMU → 2030.5 client → cycle → optimiser →
/// operator server → SCADA → IEC 104 → relay contacts → READY → watchdog. Stop order: the reverse
/// (`ServiceGroup`): the watchdog and servers stop → the cycle stops → the 2030.5 client and the PMU
/// reader stop → every inverter gets zero with its revert armed and the workers stop → latches and
/// events persisted and logged → the uplink flushes.
public final class Daemon {
    /// The configuration in force (reload replaces it; the server thread reads it).
    public var configuration: BessdConfiguration { loaded.current }
    let loaded: RunningConfiguration
    let runner: SiteRunner
    package let shared: SharedState
    /// Everything `run` starts, in start order; stopped in the reverse (`group`).
    let services: [any DaemonService]
    let group = ServiceGroup()
    let cycle: CycleService
    let busWorkers: BusWorkers
    /// Latches, events, notices and stalls, each round of the service loop.
    let journalFlush: JournalFlush
    let operatorServer: OperatorServer
    /// systemd's watchdog, started after READY; nil when systemd asks for none.
    let watchdog: Watchdog?
    let reloader: Reloader
    public let logger: Logger
    let say: (String) -> Void
    let started: MonotonicInstant
    /// The uplink's spool, recorder and sender, when an aggregator is configured.
    let uplink: UplinkService?
    /// Takes the aggregator's commands (on the sender's task).
    package let intake: DispatchIntake
    /// The system clock's synchronisation and steps.
    let clock: ClockWatch
    /// The state directory's lock: held from before anything there is opened until the process ends.
    let ownership: SiteOwnership
    /// The block schedule (`schedule:`), nil without one.
    let schedules: ScheduleService?
    /// The block schedule in force: the optimiser offers its plans here (`ScheduleStore.offer`).
    public var scheduleStore: ScheduleStore? { schedules?.store }
    /// The optimiser's worker (`optimiser.enabled`), nil otherwise.
    let optimiser: OptimiserService?

    /// The uplink's spool, when an aggregator is configured.
    public var spool: SpoolQueue? { uplink?.spool }
    /// Delivers the spool to the aggregator (HTTP or MQTT 5, `aggregator.transport`).
    public var uplinkTransport: (any UplinkTransport)? { uplink?.transport }
    /// The cycle's statistics (tests and status).
    public var statistics: CycleStatistics { shared.statistics }

    /// - Parameters:
    ///   - configPath: the file a SIGHUP reloads (nil for the embedded default).
    ///   - say: where the live status line goes (stdout).
    ///   - site: builds the site the cycle runs against, given its start instant and where device
    ///     messages go. The composition root (bessd's main) decides whether it is simulated; this
    ///     module never sees the simulator.
    public init(configuration: BessdConfiguration, configPath: String?, logger: Logger, say: @escaping (String) -> Void,
                site: (MonotonicInstant, @escaping (DeviceNotice) -> Void) throws(RunError) -> SiteRunner)
        throws(RunError)
    {
        // One bessd per site: the lock comes before the latches, the spool or any device is touched,
        // and a control socket another bessd answers on is not taken over.
        ownership = try SiteOwnership(stateDirectory: configuration.stateDirectory)
        try SiteOwnership.claimControlSocket(configuration.controlSocket)
        let text = configPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? EmbeddedConfiguration.simulationYAML
        loaded = RunningConfiguration(configuration, text: text)
        self.logger = logger
        self.say = say
        started = SystemClock.shared.now()
        let shared = SharedState(units: configuration.units.count, view: SiteView.Settings(configuration))
        self.shared = shared
        // The workers hand their notices to a bounded queue that the service loop journals: a
        // stalled journald never stalls a bus (`NoticeQueue`).
        let queue = NoticeQueue(wakeup: shared.serviceWakeup)
        let runner = try site(started) { queue.post($0) }
        self.runner = runner
        let pmu = PMUReader.following(configuration, logger: logger)
        runner.pmuSamples = pmu?.latest
        let utilitySlot = configuration.ieee2030_5 == nil ? nil : UtilityLimitSlot()
        runner.utilityLimits = utilitySlot
        let sep2 = utilitySlot.flatMap { Sep2Setup.worker(configuration, view: shared.view, slot: $0, logger: logger) }
        sep2?.reportSite(configuration, shared: shared)
        let journal = EventJournal(logger: logger)
        let frequencyEvents = FrequencyEventReports(logger: logger)
        clock = ClockWatch(logger: logger)
        // Latches from earlier runs are restored before any worker or cycle starts, so the first
        // setpoint ever written already honours them.
        var latches = LatchKeeper(stateDirectory: configuration.stateDirectory, units: configuration.units.count, logger: logger)
        let holds = HoldKeeper(stateDirectory: configuration.stateDirectory, logger: logger)
        let schedules = ScheduleService(configuration: configuration, shared: shared, logger: logger)
        self.schedules = schedules
        let optimiser = OptimiserService.following(configuration, store: schedules?.store, shared: shared, logger: logger)
        self.optimiser = optimiser
        if let optimiser { schedules?.useForecast { optimiser.forecastKW(at: $0) } }
        intake = DispatchIntake(shared: shared, logger: logger, configured: configuration.units, holds: holds, schedules: schedules?.store,
                                optimiser: optimiser)
        let uplink = UplinkService.make(configuration: configuration, intake: intake, logger: logger)
        self.uplink = uplink
        schedules?.recorder = uplink?.recorder
        Sep2Setup.recordUtilityControls(sep2, inbox: uplink?.recorder.inbox, wakeup: shared.serviceWakeup)
        shared.declareAGC(configuration.iec104?.agc?.limits)
        latches.restore(unitIDs: configuration.units.map(\.id)) { [runner, started] set, unit in
            runner.controller.restoreLatches(set, unit: unit, since: started)
        }
        holds.restore(configuration, into: runner.controller, shared: shared)
        // The schedule kept from before, in the cycle's inbox before the first cycle.
        schedules?.restore()

        let progress = ServiceProgress()
        journalFlush = JournalFlush(latches: latches, journal: journal, frequencyEvents: frequencyEvents, deviceNotices: queue,
                                    progress: progress, runner: runner, shared: shared, configuration: loaded,
                                    recorder: uplink?.recorder, logger: logger)
        busWorkers = BusWorkers(runner)
        // The clock's state before the first cycle, so the first energy block already knows it.
        cycle = CycleService(runner: runner, shared: shared) { [clock, recorder = uplink?.recorder] in clock.check(shared, recorder: recorder) }
        let scada = configuration.scada.map { ScadaService($0, configuration: configuration, shared: shared, holds: holds, logger: logger) }
        let iec104 = configuration.iec104.map {
            IEC104Service($0.server, configuration: configuration, shared: shared, inbox: uplink?.recorder.inbox, logger: logger)
        }
        let relayContacts = configuration.gridLimitInputs.map { RelayContactsService(settings: $0, shared: shared, logger: logger) }
        let view = OperatorView(configuration: loaded, shared: shared, runner: runner, clock: clock, holds: holds, journal: journalFlush,
                                uplink: uplink, pmu: pmu, sep2: sep2, relayContacts: relayContacts, scada: scada, iec104: iec104)
        let metrics = MetricsExporter(view: view)
        let verbs = ControlVerbs(configuration: loaded, configPath: configPath, shared: shared, holds: holds,
                                 orphanedLatches: latches.orphans, frequencyEvents: frequencyEvents, status: StatusReport(view: view),
                                 metrics: metrics, logger: logger, schedules: schedules?.store, optimiser: optimiser)
        operatorServer = OperatorServer(configuration, shared: shared, verbs: verbs, metrics: metrics, logger: logger)
        watchdog = Watchdog.forCycle(shared: shared, runner: runner, progress: progress)
        reloader = Reloader(configPath: configPath, configuration: loaded, runner: runner, shared: shared, cycle: cycle,
                            iec104: iec104, intake: intake, sep2: sep2, optimiser: optimiser, logger: logger)
        // Started in this order, stopped in the reverse: the uplink flushes last, after the workers
        // wrote zero and the latches and events of the stop are persisted and logged.
        let beforeCycle: [(any DaemonService)?] = [uplink, journalFlush, busWorkers, pmu, sep2]
        let fromCycle: [(any DaemonService)?] = [cycle, optimiser, operatorServer, scada, iec104, relayContacts, watchdog]
        services = (beforeCycle + fromCycle).compactMap { $0 }
    }

    /// Answers one control request as the control socket does (on the server thread; the fuzz harness).
    package func handle(_ request: ControlRequest, caller: ControlCaller) -> ControlResponse {
        operatorServer.answer(request, caller: caller)
    }

    /// Runs until SIGTERM/SIGINT or `duration`; returns the exit status.
    public func run(duration: Double?, statusEvery: Double) -> Int32 {
        installStopHandlers()
        let configuration = self.configuration
        var realtimeFD: Int32 = -1
        if let rt = configuration.realtime {
            let (notices, fd) = Realtime.applyProcessWide(rt)
            realtimeFD = fd
            for notice in notices { Journal(logger).write(Notice(DeviceCode.realtimeDegraded, notice)) }
        }
        defer { if realtimeFD >= 0 { close(realtimeFD) } }
        for notice in configuration.notices { logger.notice("\(notice)", metadata: ["BESS_CODE": "\(notice.code)"]) }
        start(configuration)

        var nextStatus = SystemClock.shared.now()
        var nextNotify = SystemClock.shared.now()
        var nextClockCheck = SystemClock.shared.now() + .seconds(5)
        let end = duration.map { started + .seconds(fromDouble: $0) }
        // The service loop sleeps until the cycle publishes an event or a closed block, a signal
        // arrives, or the next thing it keeps time for (status, notify, clock check, a record) is due:
        // about two wake-ups a second on a quiet site instead of fifty.
        wakeOnSignals(shared.serviceWakeup)
        while !stopRequested.load(ordering: .relaxed) {
            var due = SystemClock.shared.now() + .seconds(1)
            due = min(due, nextNotify, nextClockCheck)
            if statusEvery > 0 { due = min(due, nextStatus) }
            if let recorder = uplink?.recorder { due = min(due, recorder.nextDue) }
            if let end { due = min(due, end) }
            shared.serviceWakeup.wait(until: due)
            if stopRequested.load(ordering: .relaxed) { break }
            let now = SystemClock.shared.now()
            journalFlush.serviceTurn(now: now)
            // This round's records (its events, telemetry, availability) become visible to the
            // uplink together, so they go in one batch.
            uplink?.spool.beginRound()
            journalFlush.persistLatches()
            journalFlush.logEvents(now: now)
            journalFlush.logNotices()
            if now >= nextClockCheck {
                clock.check(shared, recorder: uplink?.recorder)
                nextClockCheck = now + .seconds(5)
            }
            uplink?.record(now: now, shared: shared)
            schedules?.tick()
            uplink?.spool.endRound()
            if reloadRequested.exchange(false, ordering: .relaxed) { reloader.reload() }
            if statusEvery > 0, now >= nextStatus {
                say(StatusText.line(settings: runner.settings, units: shared.units, frequency: shared.statistics.frequency,
                                    elapsed: now.seconds(since: started), busFaults: runner.busFaults(), site: shared.site))
                nextStatus = now + .seconds(fromDouble: statusEvery)
            }
            if now >= nextNotify {
                SystemdNotify.send("STATUS=" + StatusText.notify(settings: runner.settings, units: shared.units,
                                                                 stats: shared.statistics))
                nextNotify = now + .seconds(1)
            }
            if let end, now >= end { break }
        }
        stop(configuration)
        return 0
    }

    /// Starts every service in order, waits for the first cycles and says READY.
    func start(_ configuration: BessdConfiguration) {
        // Every service but the watchdog, in order (`services`); the watchdog after READY.
        group.start(services.filter { $0 !== watchdog })
        // The first cycles publish before READY, so status and the watchdog see a running cycle.
        cycle.thread.awaitCycles(2, within: .seconds(2))
        journalFlush.logNotices()
        for notice in cycle.thread.realtimeNotices { Journal(logger).write(Notice(DeviceCode.realtimeDegraded, notice)) }
        if let placement = cycle.thread.realtimePlacement {
            logger.notice("real-time: \(placement)\(cycle.thread.realtimeNotices.isEmpty ? "" : ", except as REALTIME_DEGRADED says")")
        }
        let startLine = "bessd \(BessdVersion.string) started: mode \(configuration.mode.rawValue), "
            + "\(configuration.units.count) unit(s), period \(configuration.periodMs) ms"
            + (configuration.mode == .hardware ? "" : " — \(Self.simulationWarning(configuration.mode))")
        logger.notice("\(startLine)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)", "BESS_MODE": "\(configuration.mode.rawValue)"])
        SystemdNotify.send("READY=1\nSTATUS=" + StatusText.notify(settings: runner.settings, units: shared.units,
                                                                  stats: shared.statistics))
        if let watchdog { group.start([watchdog]) }
    }

    /// Stops every service in the reverse of the start: watchdog → relay contacts, SCADA, operator
    /// server → the cycle stops → zero with the revert armed reaches every inverter and the workers
    /// stop → latches and events persisted and logged → the uplink flushes what it has. Then the
    /// stop line.
    func stop(_ configuration: BessdConfiguration) {
        SystemdNotify.send("STOPPING=1")
        group.stopAll()
        let unconfirmedStops = busWorkers.unconfirmedStops
        let stats = shared.statistics
        let summary = "bessd stopped: \(stats.cycles) cycles, \(stats.overruns) overruns, jitter p99 "
            + "\(stats.histogram.percentile(0.99)) µs, max \(stats.histogram.maxMicroseconds) µs; "
            + Self.stopOutcome(unconfirmed: unconfirmedStops, units: configuration.units.count)
            + "; stopped in order: \(group.stoppedNames.joined(separator: " → "))"
        if unconfirmedStops.isEmpty {
            logger.notice("\(summary)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)"])
        } else {
            logger.warning("\(summary)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)", "BESS_CODE": "STOP_ZERO_UNCONFIRMED",
                                                   "BESS_UNIT": .array(unconfirmedStops.map { "\($0)" })])
        }
    }

    /// What the stop line says of the safe zero: written to every inverter, or which did not take it.
    static func stopOutcome(unconfirmed: [String], units: Int) -> String {
        guard !unconfirmed.isEmpty else { return "zero setpoints written with revert armed" }
        let list = unconfirmed.joined(separator: ", ")
        let reached = units - unconfirmed.count
        return "STOP_ZERO_UNCONFIRMED: the zero setpoint was not acknowledged by \(list) (unreachable or refused); "
            + "any setpoint bessd wrote to \(unconfirmed.count == 1 ? "it" : "them") before ends with the inverter's revert timer"
            + (reached > 0 ? "; zero written with revert armed to the other \(reached)" : "")
    }

    /// What the start line says of a mode that is not all real hardware.
    static func simulationWarning(_ mode: RunMode) -> String {
        switch mode {
        case .simulation: "SIMULATION: every device simulated; no energy here is real"
        case .hil: "HIL: real and simulated devices mixed; records are marked mode hil and must not be settled as real"
        case .hardware: ""
        }
    }
}
