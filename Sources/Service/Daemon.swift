public import BessSystem
public import Config
public import Cycle
import Scada
import Outstation
import Sep2Link
public import ControlCore
import Fieldbus
import ControlProtocol
import Foundation
import Glibc
import Synchronization
public import Uplink
public import Logging

/// bessd as a service: the composition root. It builds the site and its services and runs them in
/// one explicit order. Its threads, each with one job:
/// - the cycle (CycleThread): the control law on absolute deadlines; never waits on I/O;
/// - one thread per bus endpoint (inverter and BMS workers);
/// - the watchdog (Watchdog): WATCHDOG=1 only while the cycle beats on time and every worker lives;
/// - the service server (ServiceServer): the control socket and /metrics, non-blocking
///   (ControlVerbs, StatusReport, MetricsExporter answer there);
/// - the main thread (`run`): each round persists latches (LatchKeeper), logs events
///   (EventJournal), watches the clock (ClockWatch), feeds the uplink (UplinkService) and reloads
///   (Reloader).
/// Start order: latches restored → uplink → workers → PMU → 2030.5 client → cycle → server → SCADA →
/// relay contacts → READY → watchdog. Stop order: the reverse (`ServiceGroup`): the watchdog and
/// servers stop → the cycle stops → the 2030.5 client and the PMU reader stop → every inverter gets zero with its revert armed and the workers stop → latches and
/// events persisted and logged → the uplink flushes.
public final class Daemon {
    /// The configuration in force (reload replaces it; the server thread reads it).
    public var configuration: BessdConfiguration { guarded.withLock { $0.configuration } }
    let configPath: String?
    let runner: SiteRunner
    package let shared: SharedState
    var cycle: CycleThread
    var server: ServiceServer?
    /// The site as a SunSpec device for plant SCADA (`scada:`), on its own thread.
    var scada: ScadaServer?
    var scadaSerial: ScadaServer?
    /// The IEC 104 outstation for the grid operator's control centres (`iec104:`), on its own thread.
    var outstation: OutstationServer?
    /// Its command outcomes by code for /metrics and as uplink events (`OutstationAudit`).
    var outstationAudit: OutstationAudit?
    /// The grid operator's relay contacts (`grid_operator.inputs`), on their own thread.
    var gridInputs: GridLimitInputReader?
    /// The PMU the cycle takes grid frequency from (`frequency_source: pmu`), on its own thread.
    let pmu: PMUReader?
    /// The utility's IEEE 2030.5 server's client (`ieee2030_5:`), on its own thread: it fills the
    /// cycle's utility-limit slot.
    let sep2: Sep2Worker?
    var watchdog: Watchdog?
    /// What `run` started, stopped in reverse order.
    let services = ServiceGroup()
    public let logger: Logger
    let say: (String) -> Void
    let started: MonotonicInstant
    /// The `realtime:` block the threads were started with: a reload cannot move them.
    let startedRealtime: RealtimeSettings?
    /// State the main thread writes and the server thread reads.
    struct Guarded {
        var configuration: BessdConfiguration
        /// The configuration's text as it was loaded (bessctl diag), not as the file is now.
        var configText: String?
        /// Refusals for the caller's groups, logged at most 5 a second.
        var refusals = RefusalBudget()
    }
    let guarded: PILock<Guarded>
    /// The uplink's spool, recorder and sender, when an aggregator is configured.
    let uplink: UplinkService?
    /// Takes the aggregator's commands (on the sender's task).
    package let intake: DispatchIntake
    /// Latched trips on disk.
    var latches: LatchKeeper
    /// The holds only their owner may lift (operator standby, SCADA's limit, the aggregator's stop), on disk.
    let holds: HoldKeeper
    /// Latches of unit ids this configuration lacks (`bessctl reset --orphaned` clears them).
    let orphanedLatches: OrphanedLatches
    /// The cycle's events to the journal and the uplink.
    let journal: EventJournal
    /// The cycle's frequency-event assessments to the journal, the uplink, `bessctl events` and /metrics.
    let frequencyEvents: FrequencyEventReports
    /// The system clock's synchronisation and steps.
    let clock: ClockWatch
    /// The bus and CAN workers' notices on their way to the journal (`logNotices`).
    let deviceNotices: NoticeQueue
    /// The service loop's last turn, and what it said of stalls (`ServiceProgress`).
    let progress = ServiceProgress()
    /// The units whose inverter did not acknowledge the zero written at stop (the stop line names them).
    var unconfirmedStops: [String] = []
    /// The state directory's lock: held from before anything there is opened until the process ends.
    let ownership: SiteOwnership

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
        var state = Guarded(configuration: configuration)
        state.configText = configPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? EmbeddedConfiguration.simulationYAML
        guarded = PILock(state)
        self.configPath = configPath
        self.logger = logger
        self.say = say
        started = SystemClock.shared.now()
        startedRealtime = configuration.realtime
        shared = SharedState(units: configuration.units.count)
        // The workers hand their notices to a bounded queue that the service loop journals: a
        // stalled journald never stalls a bus (`NoticeQueue`).
        let queue = NoticeQueue(wakeup: shared.serviceWakeup)
        deviceNotices = queue
        runner = try site(started) { queue.post($0) }
        let pmuReader = Self.makePMU(configuration, logger: logger)
        pmu = pmuReader
        runner.pmuSamples = pmuReader?.latest
        let utilitySlot = configuration.ieee2030_5 == nil ? nil : UtilityLimitSlot()
        runner.utilityLimits = utilitySlot
        sep2 = utilitySlot.flatMap { Self.makeSep2(configuration, slot: $0, logger: logger) }
        sep2?.reportSite(configuration, shared: shared)
        journal = EventJournal(logger: logger)
        frequencyEvents = FrequencyEventReports(logger: logger)
        clock = ClockWatch(logger: logger)
        // Latches from earlier runs are restored before any worker or cycle starts, so the first
        // setpoint ever written already honours them.
        latches = LatchKeeper(stateDirectory: configuration.stateDirectory, units: configuration.units.count, logger: logger)
        orphanedLatches = latches.orphans
        cycle = CycleThread(runner: runner, shared: shared)
        holds = HoldKeeper(stateDirectory: configuration.stateDirectory, logger: logger)
        intake = DispatchIntake(shared: shared, logger: logger,
                                units: configuration.units.map { ($0.id, $0.maxPowerKW) }, holds: holds)
        uplink = UplinkService.make(configuration: configuration, intake: intake, logger: logger)
        Self.recordUtilityControls(sep2, inbox: uplink?.recorder.inbox, wakeup: shared.serviceWakeup)
        shared.declareAGC(configuration.iec104?.agc?.limits)
        latches.restore(unitIDs: configuration.units.map(\.id)) { [runner, started] set, unit in
            runner.controller.restoreLatches(set, unit: unit, since: started)
        }
        holds.restore(configuration, into: runner.controller, shared: shared)
    }

    /// Runs until SIGTERM/SIGINT or `duration`; returns the exit status.
    public func run(duration: Double?, statusEvery: Double) -> Int32 {
        installStopHandlers()
        let configuration = self.configuration
        var realtimeFD: Int32 = -1
        if let rt = configuration.realtime {
            let (notices, fd) = Realtime.applyProcessWide(rt)
            realtimeFD = fd
            for notice in notices { logger.warning("\(notice)", metadata: ["BESS_CODE": "REALTIME_DEGRADED"]) }
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
            serviceTurn(now: now)
            // This round's records (its events, telemetry, availability) become visible to the
            // uplink together, so they go in one batch.
            uplink?.spool.beginRound()
            persistLatches()
            logEvents(now: now)
            logNotices()
            if now >= nextClockCheck {
                clock.check(shared, recorder: uplink?.recorder)
                nextClockCheck = now + .seconds(5)
            }
            uplink?.record(now: now, shared: shared)
            uplink?.spool.endRound()
            if reloadRequested.exchange(false, ordering: .relaxed) { reload() }
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
        // Started in this order, stopped in the reverse: the uplink flushes last, after the workers
        // wrote zero and the latches and events of the stop are persisted and logged (ServiceGroup).
        let uplinkFirst: [any DaemonService] = uplink.map { [$0] } ?? []
        services.start(uplinkFirst + [JournalFlush(self), BusWorkers(self)] + (pmu.map { [$0] } ?? []) + (sep2.map { [$0] } ?? []))
        // The clock's state before the first cycle, so the first energy block already knows it.
        clock.check(shared, recorder: uplink?.recorder)
        let scadaLast: [any DaemonService] = (configuration.scada == nil ? [] : [ScadaService(self)])
            + (configuration.iec104 == nil ? [] : [IEC104Service(self)])
        services.start([CycleService(self), OperatorServer(self)] + scadaLast)
        if let inputs = configuration.gridLimitInputs { startGridInputs(inputs) }
        // The first cycles publish before READY, so status and the watchdog see a running cycle.
        cycle.awaitCycles(2, within: .seconds(2))
        logNotices()
        for notice in cycle.realtimeNotices { logger.warning("\(notice)", metadata: ["BESS_CODE": "REALTIME_DEGRADED"]) }
        if let placement = cycle.realtimePlacement {
            logger.notice("real-time: \(placement)\(cycle.realtimeNotices.isEmpty ? "" : ", except as REALTIME_DEGRADED says")")
        }
        let startLine = "bessd \(BessdVersion.string) started: mode \(configuration.mode.rawValue), "
            + "\(configuration.units.count) unit(s), period \(configuration.periodMs) ms"
            + (configuration.mode == .hardware ? "" : " — \(Self.simulationWarning(configuration.mode))")
        logger.notice("\(startLine)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)", "BESS_MODE": "\(configuration.mode.rawValue)"])
        SystemdNotify.send("READY=1\nSTATUS=" + StatusText.notify(settings: runner.settings, units: shared.units,
                                                                  stats: shared.statistics))
        if let interval = SystemdNotify.watchdogInterval() { startWatchdog(interval) }
    }

    /// The grid operator's relay contacts, read on their own thread.
    func startGridInputs(_ inputs: GridLimitInputsConfiguration) {
        let logger = self.logger
        let reader = GridLimitInputReader(settings: inputs, shared: shared) { code, message, error in
            let metadata: Logger.Metadata = ["BESS_CODE": "\(code)", "MESSAGE_ID": "\(MessageID.scadaWrite)", "BESS_UNIT": "site"]
            if error { logger.error("\(message)", metadata: metadata) } else { logger.notice("\(message)", metadata: metadata) }
        }
        services.start([reader])
        gridInputs = reader
        let line = "grid operator relay contacts read from \(inputs.modbus.endpoint) unit \(inputs.modbus.unitID) every \(inputs.poll.nanosecondsClamped / 1_000_000) ms; "
            + "until they are read the lowest limit applies (\(GridLimitInputReader.describe(reader.initialContacts)))"
        logger.notice("\(line)",
                      metadata: ["BESS_CODE": "GRID_LIMIT_INPUT", "MESSAGE_ID": "\(MessageID.scadaWrite)"])
    }

    /// systemd's watchdog, fed only while the cycle beats on time and every worker lives. The
    /// heartbeat is what the cycle publishes (a reload's new cycle thread publishes there too).
    func startWatchdog(_ interval: Duration) {
        let shared = self.shared
        let dog = Watchdog(interval: interval, health: .init(
            beat: {
                var stats = CycleStatistics()
                shared.read(statistics: &stats)
                return stats.cycles
            },
            onTime: {
                var stats = CycleStatistics()
                shared.read(statistics: &stats)
                return stats.lastLatenessMicroseconds <= Int64(stats.periodMs) * 1000
            },
            workersAlive: runner.workersAliveCheck,
            progressHeld: { [turns = runner.workerTurns, progress] in
                let workers = turns()
                let stalls = ServiceProgress.stalls(workers: workers, service: progress.lastServiceTurn, now: SystemClock.shared.now())
                return ServiceProgress.withholdsBeat(stalls, workers: workers.count)
            }))
        services.start([dog])
        watchdog = dog
    }

    /// Stops every service in the reverse of the start: watchdog → relay contacts, SCADA, operator
    /// server → the cycle stops → zero with the revert armed reaches every inverter and the workers
    /// stop → latches and events persisted and logged → the uplink flushes what it has. Then the
    /// stop line.
    func stop(_ configuration: BessdConfiguration) {
        SystemdNotify.send("STOPPING=1")
        services.stopAll()
        watchdog = nil
        gridInputs = nil
        let stats = shared.statistics
        let summary = "bessd stopped: \(stats.cycles) cycles, \(stats.overruns) overruns, jitter p99 "
            + "\(stats.histogram.percentile(0.99)) µs, max \(stats.histogram.maxMicroseconds) µs; "
            + Self.stopOutcome(unconfirmed: unconfirmedStops, units: configuration.units.count)
            + "; stopped in order: \(services.stoppedNames.joined(separator: " → "))"
        if unconfirmedStops.isEmpty {
            logger.notice("\(summary)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)"])
        } else {
            logger.warning("\(summary)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)", "BESS_CODE": "STOP_ZERO_UNCONFIRMED",
                                                   "BESS_UNIT": .array(unconfirmedStops.map { "\($0)" })])
        }
    }

    /// Writes the latch file when a unit's latched codes changed (`LatchKeeper.persist`).
    func persistLatches() {
        latches.persist(shared) { configuration.units.map(\.id) }
    }

    /// Logs and records the events the cycle published since the last round (`EventJournal`), and
    /// its frequency-event assessments (`FrequencyEventReports`).
    func logEvents(now: MonotonicInstant) {
        journal.log(shared.takeEvents(), now: now, configuration: configuration, recorder: uplink?.recorder)
        frequencyEvents.record(shared.takeFrequencyEvents(), unitIDs: configuration.units.map(\.id), recorder: uplink?.recorder)
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
