public import BessSystem
public import Config
public import Cycle
import Scada
public import ControlCore
import Fieldbus
import ControlProtocol
import Foundation
import Glibc
import Synchronization
public import Uplink
public import Logging

/// bessd as a service. Its threads, each with one job:
/// - the cycle (CycleThread): the control law on absolute deadlines; never waits on I/O;
/// - one thread per bus endpoint (inverter and BMS workers);
/// - the watchdog (Watchdog): WATCHDOG=1 only while the cycle beats on time and every worker lives;
/// - the service server (ServiceServer): the control socket and /metrics, non-blocking;
/// - the main thread (`run`): latch persistence, event logging, the uplink spool, reload, status.
/// Start order: latches restored → workers → cycle → server → watchdog → READY. Stop order: the
/// watchdog and server stop → the cycle stops → every inverter gets zero with its revert armed and
/// the workers stop → the uplink flushes.
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
    /// The grid operator's relay contacts (`grid_operator.inputs`), on their own thread.
    var gridInputs: GridLimitInputReader?
    var watchdog: Watchdog?
    /// What `run` started, stopped in reverse order.
    let services = ServiceGroup()
    public let logger: Logger
    let say: (String) -> Void
    let started: MonotonicInstant
    /// The `realtime:` block the threads were started with: a reload cannot move them.
    let startedRealtime: RealtimeSettings?
    var suppressed: [String: (last: MonotonicInstant, count: Int)] = [:]
    /// The uplink's spool and recorder, when an aggregator is configured.
    public private(set) var spool: SpoolQueue?
    var recorder: UplinkRecorder?
    var uplinkProblem: String?
    /// The code of the spool's last failure to save its state (`SpoolQueue.stateFailure`), as logged.
    var spoolStateProblem: SpoolError.Code?
    /// State the main thread writes and the server thread reads.
    struct Guarded {
        var configuration: BessdConfiguration
        /// Interlock actions logged since start, per code.
        var tripCounts: [String: Int] = [:]
        /// The system clock's synchronisation as last read (every 5 s, on the service loop).
        var clockSync = ClockSync.unknown
        /// The configuration's text as it was loaded (bessctl diag), not as the file is now.
        var configText: String?
        /// Refusals for the caller's groups: logged at most 5 a second (the socket is open to every
        /// local user, and a flood must not push trips out of journald's rate limit), the rest counted.
        var refusalWindow = MonotonicInstant.zero
        var refusalsInWindow = 0
        var refusalsUnlogged = 0
        /// The spool's refusal while it lasts (SPOOL_FULL, SPOOL_IO…), for /metrics.
        var spoolProblem: String?
    }
    let guarded: PILock<Guarded>
    /// Delivers the spool to the aggregator.
    public private(set) var sender: UplinkSender?
    /// The same over MQTT 5 (`aggregator.transport: mqtt`).
    public private(set) var mqttSender: MQTTUplinkSender?
    /// Takes the aggregator's commands (on the sender's task).
    package let intake: DispatchIntake
    /// Latched trips on disk.
    let latchStore: LatchStore
    /// What the latch file holds now, per unit (code → Unix time it latched).
    var persistedLatches: [TripCodeSet]
    var latchSince: [[TripCode: Double]]
    var latchWriteFailing = false
    /// The units whose inverter did not acknowledge the zero written at stop (the stop line names them).
    var unconfirmedStops: [String] = []
    /// The state directory's lock: held from before anything there is opened until the process ends.
    let ownership: SiteOwnership

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
        started = MonotonicClock.now()
        startedRealtime = configuration.realtime
        let log = logger
        runner = try site(started) { notice in Self.journal(notice, log) }
        shared = SharedState(units: configuration.units.count)
        // Latches from earlier runs are restored before any worker or cycle starts, so the first
        // setpoint ever written already honours them.
        latchStore = LatchStore(stateDirectory: configuration.stateDirectory)
        persistedLatches = [TripCodeSet](repeating: TripCodeSet(), count: configuration.units.count)
        latchSince = [[TripCode: Double]](repeating: [:], count: configuration.units.count)
        cycle = CycleThread(runner: runner, shared: shared)
        intake = DispatchIntake(shared: shared, logger: logger,
                                units: configuration.units.map { ($0.id, $0.maxPowerKW) })
        if let aggregator = configuration.aggregator {
            do throws(SpoolError) {
                let store = try Spool(directory: configuration.stateDirectory + "/spool",
                                      maxBytes: aggregator.spoolMaxMB << 20)
                if store.recovery.tornBytes > 0 || store.recovery.damagedSegments > 0 {
                    logger.warning("uplink spool: cut \(store.recovery.tornBytes) torn bytes, \(store.recovery.damagedSegments) damaged segments",
                                   metadata: ["BESS_CODE": "SPOOL_RECOVERED"])
                }
                let queue = SpoolQueue(store)
                spool = queue
                recorder = UplinkRecorder(queue: queue, configuration: configuration)
                let log = logger
                let report: @Sendable (String, String?) -> Void = { text, code in
                    // An HTTP client's error may quote the URL it was given, credentials and all.
                    let message = Redaction.urlCredentials(in: text)
                    if let code { log.warning("\(message)", metadata: ["BESS_CODE": "\(code)"]) } else { log.notice("\(message)") }
                }
                switch aggregator.transport {
                case .http:
                    sender = UplinkSender(
                        settings: .init(url: aggregator.url, site: aggregator.siteID, tokenFile: aggregator.tokenFile,
                                        caFile: aggregator.caFile, clientCertFile: aggregator.clientCertFile,
                                        clientKeyFile: aggregator.clientKeyFile,
                                        interval: .seconds(fromDouble: aggregator.intervalSeconds)),
                        queue: queue, log: report,
                        handleCommands: { [intake] commands in intake.apply(commands) })
                case .mqtt:
                    guard let url = MQTTURL(aggregator.url) else {
                        let error = UplinkError(.configInvalid, message: "aggregator.url \(aggregator.shownURL) is not an MQTT URL")
                        logger.error("uplink disabled: \(error)", metadata: ["BESS_CODE": "\(error.code)"])
                        break
                    }
                    var settings = MQTTUplinkSender.Settings(
                        url: url, site: aggregator.siteID, interval: .seconds(fromDouble: aggregator.intervalSeconds),
                        version: BessdVersion.string, mode: configuration.mode.rawValue, units: configuration.units.map(\.id))
                    settings.caFile = aggregator.caFile
                    settings.clientCertFile = aggregator.clientCertFile
                    settings.clientKeyFile = aggregator.clientKeyFile
                    settings.username = aggregator.username
                    settings.passwordFile = aggregator.passwordFile
                    settings.keepaliveSeconds = Int32(aggregator.keepaliveSeconds)
                    settings.sessionExpirySeconds = UInt32(aggregator.sessionExpirySeconds)
                    settings.ledgerFile = configuration.stateDirectory + "/mqtt-commands.json"
                    mqttSender = MQTTUplinkSender(settings: settings, queue: queue, log: report,
                                                  handleCommands: { [intake] commands in intake.apply(commands) })
                }
            } catch {
                logger.error("uplink disabled: \(error)", metadata: ["BESS_CODE": "\(error.code)"])
            }
        }
        restoreLatches(configuration)
    }

    /// A bus worker's notice as a journal entry: its code in `BESS_CODE`, the units it concerns in
    /// `BESS_UNIT` (one field per unit), `MESSAGE_ID` of device events, a failure at warning.
    static func journal(_ notice: DeviceNotice, _ log: Logger) {
        var metadata: Logger.Metadata = ["MESSAGE_ID": "\(MessageID.device)"]
        if let code = notice.code { metadata["BESS_CODE"] = "\(code)" }
        let units = notice.units.filter { !$0.isEmpty }
        if units.count == 1 { metadata["BESS_UNIT"] = "\(units[0])" }
        if units.count > 1 { metadata["BESS_UNIT"] = .array(units.map { "\($0)" }) }
        switch notice.severity {
        case .notice: log.notice("\(notice.text)", metadata: metadata)
        case .warning: log.warning("\(notice.text)", metadata: metadata)
        }
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
        for notice in configuration.notices { logger.notice("\(notice)") }

        // Started in this order, stopped in the reverse: the uplink flushes last, after the workers
        // wrote zero and the latches and events of the stop are persisted and logged (ServiceGroup).
        if let sender {
            do throws(UplinkError) {
                try services.add("uplink", start: { () throws(UplinkError) in try sender.start() }, stop: { [spool] in
                    spool?.sync()
                    sender.stop()
                })
            } catch {
                logger.error("uplink sender not started: \(error)", metadata: ["BESS_CODE": "\(error.code)"])
            }
        }
        if let mqttSender {
            do throws(UplinkError) {
                try services.add("uplink", start: { () throws(UplinkError) in try mqttSender.start() }, stop: { [spool] in
                    spool?.sync()
                    mqttSender.stop()
                })
            } catch {
                logger.error("uplink (MQTT) not started: \(error)", metadata: ["BESS_CODE": "\(error.code)"])
            }
        }
        services.add("journal", stop: { [unowned self] in
            persistLatches()
            logEvents(now: MonotonicClock.now())
        })
        services.add("bus workers", start: {
            runner.startWorkers()
            // Ready once every device has answered or failed at least once (at most 5 s).
            let probeEnd = MonotonicClock.now() + .seconds(5)
            while !runner.devicesProbed, MonotonicClock.now() < probeEnd, !stopRequested.load(ordering: .relaxed) {
                usleep(20_000)
            }
        }, stop: { [unowned self] in unconfirmedStops = runner.commandSafeSetpoints() })
        // A reload replaces the cycle thread: stop whichever runs then.
        // The clock's state before the first cycle, so the first energy block already knows it.
        var reportedSteps = 0
        checkClock(steps: &reportedSteps)
        services.add("cycle", start: { cycle.start() }, stop: { [unowned self] in cycle.stop() })
        services.add("operator server", start: { startServer(configuration) }, stop: { [unowned self] in
            server?.stop()
            server = nil
        })
        if configuration.scada != nil {
            services.add("SCADA", start: { startScada(configuration) }, stop: { [unowned self] in
                scada?.stop()
                scada = nil
                scadaSerial?.stop()
                scadaSerial = nil
            })
        }
        if let inputs = configuration.gridLimitInputs {
            let logger = self.logger
            let reader = GridLimitInputReader(settings: inputs, shared: shared) { code, message, error in
                let metadata: Logger.Metadata = ["BESS_CODE": "\(code)", "MESSAGE_ID": "\(MessageID.scadaWrite)", "BESS_UNIT": "site"]
                if error { logger.error("\(message)", metadata: metadata) } else { logger.notice("\(message)", metadata: metadata) }
            }
            services.add("relay contacts", start: { reader.start() }, stop: { reader.stop() })
            gridInputs = reader
            let line = "grid operator relay contacts read from \(inputs.modbus.endpoint) unit \(inputs.modbus.unitID) every \(inputs.pollMs) ms; "
                + "until they are read the lowest limit applies (\(GridLimitInputReader.describe(reader.initialContacts)))"
            logger.notice("\(line)",
                          metadata: ["BESS_CODE": "GRID_LIMIT_INPUT", "MESSAGE_ID": "\(MessageID.scadaWrite)"])
        }
        // The first cycles publish before READY, so status and the watchdog see a running cycle.
        cycle.awaitCycles(2, within: .seconds(2))
        for notice in cycle.realtimeNotices { logger.warning("\(notice)", metadata: ["BESS_CODE": "REALTIME_DEGRADED"]) }
        if let placement = cycle.realtimePlacement {
            logger.notice("real-time: \(placement)\(cycle.realtimeNotices.isEmpty ? "" : ", except as REALTIME_DEGRADED says")")
        }
        let startLine = "bessd \(BessdVersion.string) started: mode \(configuration.mode.rawValue), "
            + "\(configuration.units.count) unit(s), period \(configuration.periodMs) ms"
            + (configuration.mode == .hardware ? "" : " — \(Self.simulationWarning(configuration.mode))")
        logger.notice("\(startLine)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)", "BESS_MODE": "\(configuration.mode.rawValue)"])
        SystemdNotify.send("READY=1\nSTATUS=" + StatusText.notify(configuration: configuration, units: shared.units,
                                                                  stats: shared.statistics))
        if let interval = SystemdNotify.watchdogInterval() {
            let shared = self.shared
            let workersAlive = runner.workersAliveCheck
            // The heartbeat is what the cycle publishes (a reload's new cycle thread publishes there too).
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
                workersAlive: workersAlive))
            services.add("watchdog", start: { dog.start() }, stop: { dog.stop() })
            watchdog = dog
        }
        var nextStatus = MonotonicClock.now()
        var nextNotify = MonotonicClock.now()
        let end = duration.map { started + .seconds(fromDouble: $0) }

        var nextClockCheck = MonotonicClock.now() + .seconds(5)
        // The service loop sleeps until the cycle publishes an event or a closed block, a signal
        // arrives, or the next thing it keeps time for (status, notify, clock check, a record) is due:
        // about two wake-ups a second on a quiet site instead of fifty.
        wakeOnSignals(shared.serviceWakeup)
        while !stopRequested.load(ordering: .relaxed) {
            var due = MonotonicClock.now() + .seconds(1)
            due = min(due, nextNotify, nextClockCheck)
            if statusEvery > 0 { due = min(due, nextStatus) }
            if let recorder { due = min(due, recorder.nextDue) }
            if let end { due = min(due, end) }
            shared.serviceWakeup.wait(until: due.nanoseconds)
            if stopRequested.load(ordering: .relaxed) { break }
            let now = MonotonicClock.now()
            // This round's records (its events, telemetry, availability) become visible to the
            // uplink together, so they go in one batch.
            let round = recorder?.queue
            round?.beginRound()
            persistLatches()
            logEvents(now: now)
            if now >= nextClockCheck {
                checkClock(steps: &reportedSteps)
                nextClockCheck = now + .seconds(5)
            }
            if let recorder {
                let problem = recorder.tick(now: now, units: shared.units, stats: shared.statistics, blocks: shared.takeBlocks(), site: shared.site)
                if problem != uplinkProblem {
                    if let problem {
                        logger.error("uplink spool refused a record: \(problem); records are being lost until it recovers",
                                     metadata: ["BESS_CODE": "\(problem)"])
                    } else {
                        logger.notice("uplink spool writing again", metadata: ["BESS_CODE": "SPOOL_RECOVERED"])
                    }
                    uplinkProblem = problem
                    guarded.withLock { $0.spoolProblem = problem }
                }
                // The bound dropped old segments but the state file could not be saved: the record
                // is stored, so this is not a refusal; it is a disk the operator must look at.
                let stateFailure = recorder.queue.stateFailure
                if stateFailure?.code != spoolStateProblem {
                    if let stateFailure {
                        logger.error("uplink spool cannot save its state: \(stateFailure); records are kept and sent, but a restart before it saves again forgets the records the bound dropped and may send delivered ones again",
                                     metadata: ["BESS_CODE": "\(stateFailure.code)"])
                    } else {
                        logger.notice("uplink spool state saved again", metadata: ["BESS_CODE": "SPOOL_STATE_SAVED"])
                    }
                    spoolStateProblem = stateFailure?.code
                }
            }
            round?.endRound()
            if reloadRequested.exchange(false, ordering: .relaxed) { reload() }
            if statusEvery > 0, now >= nextStatus {
                say(StatusText.line(configuration: self.configuration, units: shared.units, frequency: shared.statistics.frequency,
                                    elapsed: now.seconds(since: started), busFaults: runner.busFaults(), site: shared.site))
                nextStatus = now + .seconds(fromDouble: statusEvery)
            }
            if now >= nextNotify {
                SystemdNotify.send("STATUS=" + StatusText.notify(configuration: self.configuration, units: shared.units,
                                                                 stats: shared.statistics))
                nextNotify = now + .seconds(1)
            }
            if let end, now >= end { break }
        }

        // Stop, in the reverse of the start: watchdog → relay contacts, SCADA, operator server → the
        // cycle stops → zero with the revert armed reaches every inverter and the workers stop →
        // latches and events persisted and logged → the uplink flushes what it has.
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
        return 0
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

    /// Reads the clock's synchronisation, hands it to the cycle and the recorder, and says in the
    /// journal when it changes and when the cycle saw the wall clock step.
    func checkClock(steps reported: inout Int) {
        let sync = ClockSync.read()
        let previous = guarded.withLock { state in
            defer { state.clockSync = sync }
            return state.clockSync
        }
        let synchronized = sync.isSynchronized ?? true
        shared.setClockSynchronized(synchronized)
        recorder?.clockSynchronized = synchronized
        if sync != previous {
            switch sync {
            case .unsynchronized(let source):
                logger.warning("CLOCK_UNSYNCED: the system clock is not synchronised (\(source)); records and energy blocks are flagged until it is",
                               metadata: ["BESS_CODE": "CLOCK_UNSYNCED", "MESSAGE_ID": "\(MessageID.clock)"])
            case .synchronized(let source):
                logger.notice("the system clock is synchronised (\(source))", metadata: ["BESS_CODE": "CLOCK_SYNCED", "MESSAGE_ID": "\(MessageID.clock)"])
            case .unknown:
                logger.notice("the system clock's synchronisation cannot be read (no adjtimex, no systemd-timesyncd); records are not flagged",
                              metadata: ["BESS_CODE": "CLOCK_SYNC_UNKNOWN", "MESSAGE_ID": "\(MessageID.clock)"])
            }
        }
        let stats = shared.statistics
        if stats.clockSteps > reported {
            let size = String(format: "%+.1f", stats.lastClockStepSeconds)
            logger.warning("CLOCK_STEPPED: the wall clock stepped by \(size) s (\(stats.clockSteps) steps since start); open energy blocks are flagged and none is reopened",
                           metadata: ["BESS_CODE": "CLOCK_STEPPED", "MESSAGE_ID": "\(MessageID.clock)"])
            reported = stats.clockSteps
        }
    }

    /// What the start line says of a mode that is not all real hardware.
    static func simulationWarning(_ mode: RunMode) -> String {
        switch mode {
        case .simulation: "SIMULATION: every device simulated; no energy here is real"
        case .hil: "HIL: real and simulated devices mixed; records are marked mode hil and must not be settled as real"
        case .hardware: ""
        }
    }

    /// Starts the SCADA server when `scada:` asks for it. A port that cannot be bound is logged and
    /// the daemon runs on: the site's control never depends on its SCADA view.
    func startScada(_ configuration: BessdConfiguration) {
        guard let settings = configuration.scada else { return }
        // Every write holds for at most max_hold_s; nothing written yet.
        var generation: UInt64 = 0
        _ = shared.commands(generation: &generation)
        _ = shared.commit(SiteCommands(maxHoldSeconds: settings.maxHoldSeconds), ifGeneration: generation)
        let description = ScadaSiteDescription(
            siteID: configuration.aggregator?.siteID ?? configuration.units.first?.campusID ?? "site",
            version: BessdVersion.string, mode: configuration.mode.rawValue, unitID: settings.unitID,
            ratingsW: configuration.units.map { $0.maxPowerKW * 1000 },
            capacitiesWh: configuration.units.map { $0.capacityKWh * 1000 }, hasMeter: configuration.site.meter != nil)
        let logger = self.logger
        let shared = self.shared
        // One server per line: TCP always, RTU when scada.serial names a line of its own.
        func serve(serialLine: Bool, on place: String, unit: Int) -> ScadaServer? {
            do {
                let server = try ScadaServer(configuration: settings, serialLine: serialLine, site: description, shared: shared) {
                    code, message, fields in
                    var metadata: Logger.Metadata = ["BESS_CODE": "\(code)"]
                    for (key, value) in fields { metadata[key] = "\(value)" }
                    if code == "SCADA_WRITE" {
                        metadata["MESSAGE_ID"] = "\(MessageID.scadaWrite)"
                        logger.notice("\(message)", metadata: metadata)
                    } else {
                        metadata["MESSAGE_ID"] = "\(code == "SCADA_WRITE_REFUSED" ? MessageID.scadaWrite : MessageID.scada)"
                        logger.warning("\(message)", metadata: metadata)
                    }
                }
                try server.start()
                logger.notice("SCADA: the site served as SunSpec on \(serialLine ? place : "\(settings.host):\(server.port)") unit \(unit), \(settings.writes ? "writes to the operator limit and setpoint of model 704 accepted" : "read-only")",
                              metadata: ["BESS_CODE": "SCADA_LISTENING", "MESSAGE_ID": "\(MessageID.scada)"])
                return server
            } catch {
                logger.error("SCADA not served on \(place): \(error)", metadata: ["BESS_CODE": "\(error.code)"])
                return nil
            }
        }
        scada = serve(serialLine: false, on: "\(settings.host):\(settings.port)", unit: settings.unitID)
        if let line = settings.serial {
            scadaSerial = serve(serialLine: true, on: "\(line.device) (Modbus RTU \(line.baud) baud)", unit: settings.serialUnitID)
        }
    }

    func startServer(_ configuration: BessdConfiguration) {
        let shared = self.shared
        do {
            let server = try ServiceServer(
                controlPath: configuration.controlSocket, metricsAddress: configuration.metricsListen,
                appliedGeneration: { shared.appliedGeneration },
                handleControl: { [unowned self] request, caller in self.handle(request, caller: caller) },
                renderMetrics: { [unowned self] in self.metricsText() })
            server.start()
            self.server = server
        } catch {
            // One listener failing must not cost the other: try each alone.
            logger.warning("\(error)", metadata: ["BESS_CODE": "\(error.code)"])
            for (control, metrics) in [(configuration.controlSocket, nil), (nil, configuration.metricsListen)] as [(String?, String?)]
                where control != nil || metrics != nil
            {
                guard let server = try? ServiceServer(
                    controlPath: control, metricsAddress: metrics, appliedGeneration: { shared.appliedGeneration },
                    handleControl: { [unowned self] request, caller in self.handle(request, caller: caller) },
                    renderMetrics: { [unowned self] in self.metricsText() })
                else { continue }
                server.start()
                self.server = server
                break
            }
        }
    }

    // MARK: latches across restarts

    /// Reads the latch file and restores every latch into the controller (before the first cycle).
    func restoreLatches(_ configuration: BessdConfiguration) {
        let ids = configuration.units.map(\.id)
        switch latchStore.load() {
        case .firstStart:
            return
        case .corrupt(let reason):
            logger.critical("latch state unreadable (\(reason)); every unit starts latched with LATCH_STATE_CORRUPT until an operator checks it and runs bessctl reset",
                            metadata: ["BESS_CODE": "LATCH_STATE_CORRUPT", "MESSAGE_ID": "\(MessageID.latch)"])
            for i in ids.indices { restore([.latchStateCorrupt: MonotonicClock.wallClock()], unit: i) }
        case .latches(let latches, let damaged):
            for (i, id) in ids.enumerated() {
                var codes = latches[id] ?? [:]
                if damaged.contains(id) {
                    codes[.latchStateCorrupt] = MonotonicClock.wallClock()
                    logger.critical("latch state of \(id) unreadable; it starts latched with LATCH_STATE_CORRUPT",
                                    metadata: ["BESS_CODE": "LATCH_STATE_CORRUPT", "BESS_UNIT": "\(id)", "MESSAGE_ID": "\(MessageID.latch)"])
                }
                guard !codes.isEmpty else { continue }
                restore(codes, unit: i)
                for (code, since) in codes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where code != .latchStateCorrupt {
                    logger.warning("\(id) \(code.name) still latched from an earlier run (since \(Self.utc(since))); bessctl reset \(id) once the cause is cleared",
                                   metadata: ["BESS_CODE": "\(code.name)", "BESS_UNIT": "\(id)", "BESS_EVENT": "restored",
                                              "MESSAGE_ID": "\(MessageID.latch)"])
                }
            }
            for id in latches.keys where !ids.contains(id) && !(latches[id] ?? [:]).isEmpty {
                logger.warning("latch file names unit \(id), which this configuration lacks; its latches are kept in the file",
                               metadata: ["BESS_CODE": "LATCH_STATE_ORPHANED", "BESS_UNIT": "\(id)"])
            }
        }
    }

    private func restore(_ codes: [TripCode: Double], unit i: Int) {
        var set = TripCodeSet()
        for code in codes.keys { set.insert(code) }
        runner.controller.restoreLatches(set, unit: i, since: started)
        persistedLatches[i] = set
        latchSince[i] = codes
    }

    /// Writes the latch file when any unit's latched codes changed since the last write. Runs on the
    /// main thread after every cycle has published (never before the first one, which would read
    /// the empty start-up status as "nothing latched").
    func persistLatches() {
        guard shared.statistics.cycles > 0 else { return }
        let units = shared.units
        var changed = false
        for i in units.indices where i < persistedLatches.count && units[i].latched != persistedLatches[i] {
            changed = true
        }
        guard changed || latchWriteFailing else { return }
        let ids = configuration.units.map(\.id)
        let now = MonotonicClock.wallClock()
        var next = latchSince
        for i in units.indices where i < next.count {
            var codes: [TripCode: Double] = [:]
            for code in units[i].latched { codes[code] = latchSince[i][code] ?? now }
            next[i] = codes
        }
        var file: [String: LatchStore.UnitLatches] = [:]
        for (i, id) in ids.enumerated() where i < next.count { file[id] = next[i] }
        do {
            try latchStore.save(file)
            latchSince = next
            for i in units.indices where i < persistedLatches.count { persistedLatches[i] = units[i].latched }
            if latchWriteFailing {
                logger.notice("latch state written again to \(latchStore.path)", metadata: ["BESS_CODE": "LATCH_STATE_WRITTEN"])
            }
            latchWriteFailing = false
        } catch {
            if !latchWriteFailing {
                logger.critical("\(error); latches hold while bessd runs but would not survive a restart",
                                metadata: ["BESS_CODE": "\(error.code)"])
            }
            latchWriteFailing = true
        }
    }

    static func utc(_ unix: Double) -> String {
        var t = time_t(unix)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// The Prometheus text for `GET /metrics`.
    func metricsText() -> String {
        let stats = shared.statistics
        let units = shared.units
        let (configuration, tripCounts) = guarded.withLock { ($0.configuration, $0.tripCounts) }
        var m = MetricsText()
        m.metric("bessd_info", "gauge", "1, labelled with the version and the run mode (simulation, hil, hardware).",
                 [("version=\"\(MetricsText.label(BessdVersion.string))\",mode=\"\(configuration.mode.rawValue)\"", 1)])
        m.metric("bessd_cycles_total", "counter", "Control cycles completed (scheduled and alarm-woken; see bessd_cycle_alarm_cycles_total).", [("", Double(stats.cycles))])
        m.metric("bessd_cycle_overruns_total", "counter", "Cycles that woke more than a period late.", [("", Double(stats.overruns))])
        m.metric("bessd_cycle_alarm_cycles_total", "counter", "Extra cycles a BMS frame calling for less power woke.",
                 [("", Double(stats.alarmCycles))])
        m.metric("bessd_cycle_late_readings_total", "counter",
                 "Unit-cycles that ran on an inverter reading taken for an earlier cycle.", [("", Double(stats.lateReadings))])
        m.metric("bessd_cycle_started_on_readings_total", "counter",
                 "Cycles started before their deadline because the bus poller had every reading for them.",
                 [("", Double(stats.startedOnReadings))])
        m.metric("bessd_cycle_period_seconds", "gauge", "Configured control period.", [("", Double(stats.periodMs) / 1000)])
        let sync = guarded.withLock { $0.clockSync }
        m.metric("bessd_clock_synchronized", "gauge",
                 "1 while the system clock is synchronised, 0 while it is not (CLOCK_UNSYNCED: records and energy blocks are flagged), -1 unknown.",
                 [("source=\"\(sync.source)\"", sync.isSynchronized.map { $0 ? 1 : 0 } ?? -1)])
        m.metric("bessd_clock_steps_total", "counter", "Steps of the wall clock against the monotonic clock (CLOCK_STEPPED).",
                 [("", Double(stats.clockSteps))])
        m.metric("bessd_cycle_lateness_seconds", "summary", "Wake-up lateness of the cycle.",
                 [0.5, 0.9, 0.99, 1.0].map { q in ("quantile=\"\(q)\"", Double(stats.histogram.percentile(q)) / 1e6) })
        let ids = configuration.units.map { MetricsText.label($0.id) }
        m.metric("bessd_unit_setpoint_watts", "gauge", "Setpoint written, + = discharge.",
                 zip(ids, units).map { ("unit=\"\($0)\"", $1.setpoint) })
        m.metric("bessd_unit_power_watts", "gauge", "Measured power, + = discharge.", zip(ids, units).map { ("unit=\"\($0)\"", $1.power) })
        m.metric("bessd_unit_allocation_watts", "gauge",
                 "The unit's share of the site's decision, + = discharge, labelled with why (headroom, full, held, idle).",
                 zip(ids, units).map { ("unit=\"\($0)\",share=\"\($1.share)\"", $1.setpoint) })
        let site = shared.site
        m.metric("bessd_site_shortfall_watts", "gauge", "What the units cannot deliver of the site's request (SITE_SHORTFALL while above its threshold).",
                 [("", site.shortfall)])
        if configuration.site.meter != nil {
            m.metric("bessd_site_grid_power_watts", "gauge", "Power at the grid connection point, + = import (absent while METER_STALE).",
                     [("", site.gridPower)])
            m.metric("bessd_site_meter_stale", "gauge", "1 while the connection-point meter is stale (METER_STALE).",
                     [("", site.meterStale ? 1 : 0)])
            m.metric("bessd_site_grid_limit_binding", "gauge", "1 for the grid limit that decides the batteries' power now.",
                     [("limit=\"import\"", site.binding == .importLimit ? 1 : 0), ("limit=\"export\"", site.binding == .exportLimit ? 1 : 0)])
        }
        m.metric("bessd_site_operator_limit_percent", "gauge",
                 "The grid operator's limit in force, percent of the site's rating (SCADA WMaxLimPct or relay contacts; absent when none).",
                 site.operatorLimitPercent.isFinite ? [("", site.operatorLimitPercent)] : [])
        m.metric("bessd_site_operator_cap_watts", "gauge", "The cap on the units' summed power as ramped (absent when none).",
                 site.operatorCap.isFinite ? [("", site.operatorCap)] : [])
        m.metric("bessd_site_scada_setpoint_watts", "gauge", "SCADA's site setpoint in force, + = discharge (absent when none).",
                 site.scadaSetpoint.isFinite ? [("", site.scadaSetpoint)] : [])
        if let reader = gridInputs {
            m.metric("bessd_grid_limit_inputs_lost", "gauge", "1 while GRID_LIMIT_INPUT_LOST stands (the relay contacts' module does not answer).",
                     [("", reader.lost.load(ordering: .relaxed) ? 1 : 0)])
            m.metric("bessd_grid_limit_input_reads_total", "counter", "Readings of the relay contacts' module, by result.",
                     [("result=\"ok\"", Double(reader.reads.load(ordering: .relaxed))),
                      ("result=\"failed\"", Double(reader.failures.load(ordering: .relaxed)))])
        }
        let servers = [scada, scadaSerial].compactMap { $0 }
        if !servers.isEmpty {
            func sum(_ counter: (ScadaServer) -> UInt64) -> Double { Double(servers.reduce(0) { $0 + counter($1) }) }
            m.metric("bessd_scada_requests_total", "counter", "Modbus requests SCADA clients sent.",
                     [("", sum { $0.answered.load(ordering: .relaxed) })])
            m.metric("bessd_scada_writes_total", "counter", "SCADA writes, by result (refused: by Modbus exception).",
                     [("result=\"accepted\"", sum { $0.writesAccepted.load(ordering: .relaxed) }),
                      ("result=\"refused\",exception=\"01\"", sum { $0.refusedIllegalFunction.load(ordering: .relaxed) }),
                      ("result=\"refused\",exception=\"02\"", sum { $0.refusedIllegalAddress.load(ordering: .relaxed) }),
                      ("result=\"refused\",exception=\"03\"", sum { $0.refusedIllegalValue.load(ordering: .relaxed) })])
            m.metric("bessd_scada_connections_refused_total", "counter", "SCADA connections closed at accept (allow_from, max_clients).",
                     [("", sum { $0.connectionsRefused.load(ordering: .relaxed) })])
            m.metric("bessd_scada_clients", "gauge", "SCADA connections open now.",
                     [("", Double(servers.reduce(0) { $0 + $1.connected.load(ordering: .relaxed) }))])
        }
        m.metric("bessd_unit_soc_percent", "gauge", "State of charge.", zip(ids, units).map { ("unit=\"\($0)\"", $1.soc) })
        m.metric("bessd_unit_active_trips", "gauge", "Interlock rules acting now.",
                 zip(ids, units).map { ("unit=\"\($0)\"", Double($1.active.count)) })
        m.metric("bessd_unit_state", "gauge", "1 for the unit's state.",
                 zip(ids, units).map { ("unit=\"\($0)\",state=\"\($1.state)\"", 1) })
        m.metric("bessd_interlock_actions_total", "counter", "Interlock actions logged since start, by code.",
                 tripCounts.sorted { $0.key < $1.key }.map { ("code=\"\($0.key)\"", Double($0.value)) })
        let slots = runner.slots
        m.metric("bessd_inverter_round_trip_seconds", "gauge", "Last Modbus round trip.",
                 zip(ids, slots).compactMap { id, slot in slot.map { ("unit=\"\(id)\"", $0.roundTrip.secondsDouble) } })
        m.metric("bessd_inverter_errors_total", "counter", "Failed Modbus exchanges.",
                 zip(ids, slots).compactMap { id, slot in slot.map { ("unit=\"\(id)\"", Double($0.errors)) } })
        var frames: [(String, Double)] = []
        for (id, slot) in zip(ids, runner.bmsSlots) {
            guard let c = slot?.counters else { continue }
            frames += [("unit=\"\(id)\",result=\"accepted\"", Double(c.accepted)), ("unit=\"\(id)\",result=\"short\"", Double(c.shortFrames)),
                       ("unit=\"\(id)\",result=\"invalid\"", Double(c.invalidValues)),
                       ("unit=\"\(id)\",result=\"wrong_kind\"", Double(c.wrongKind)),
                       ("unit=\"\(id)\",result=\"unknown_id\"", Double(c.unknownIDs))]
        }
        m.metric("bessd_bms_frames_total", "counter", "CAN frames from the BMS, by what the decoder did.", frames)
        if let spool {
            let s = spool.state
            m.metric("bessd_spool_pending_records", "gauge", "Records waiting for the aggregator.",
                     [("", Double(s.next - 1 - min(s.acknowledged, s.next - 1)))])
            m.metric("bessd_spool_dropped_total", "counter", "Records dropped at the spool's bound.", [("", Double(s.dropped))])
            m.metric("bessd_spool_bytes", "gauge", "Spool size on disk.", [("", Double(s.bytes))])
            let problem = guarded.withLock { $0.spoolProblem }
            m.metric("bessd_spool_refusing", "gauge",
                     "1 while the spool refuses records (labelled with the code, e.g. SPOOL_FULL), else 0.",
                     [(problem.map { "code=\"\(MetricsText.label($0))\"" } ?? "", problem == nil ? 0 : 1)])
        }
        if let sender {
            let u = sender.stats
            m.metric("bessd_uplink_batches_total", "counter", "Batches the aggregator acknowledged.", [("", Double(u.batchesDelivered))])
            m.metric("bessd_uplink_failures_total", "counter", "Failed deliveries.", [("", Double(u.failures))])
        }
        if let mqttSender {
            let u = mqttSender.stats
            m.metric("bessd_uplink_connected", "gauge", "1 while the MQTT connection to the broker is up.", [("transport=\"mqtt\"", u.connected ? 1 : 0)])
            m.metric("bessd_uplink_connects_total", "counter", "Connections the broker accepted.", [("", Double(u.connects))])
            m.metric("bessd_uplink_publishes_total", "counter", "Record batches published.", [("", Double(u.batchesPublished))])
            m.metric("bessd_uplink_batches_total", "counter", "Record batches the broker acknowledged (PUBACK).", [("", Double(u.batchesAcknowledged))])
            m.metric("bessd_uplink_failures_total", "counter", "Failed connections and refused publishes.", [("", Double(u.failures))])
            m.metric("bessd_uplink_commands_total", "counter", "Commands received on the command topic, by outcome.",
                     [("result=\"accepted\"", Double(u.commands - u.commandsRefused)), ("result=\"refused\"", Double(u.commandsRefused)),
                      ("result=\"redelivered\"", Double(u.redeliveries)), ("result=\"malformed\"", Double(u.malformedCommands))])
            if let latency = u.lastCommandLatency {
                m.metric("bessd_uplink_command_latency_seconds", "gauge", "Last command: received → acted on and answered.", [("", latency)])
            }
            if let last = u.lastPubackUnix {
                m.metric("bessd_uplink_last_puback_unixtime", "gauge", "When the broker last acknowledged a batch.", [("", last)])
            }
        }
        return m.text
    }

    /// The cycle's statistics (tests and status).
    public var statistics: CycleStatistics { shared.statistics }

    // MARK: events

    func logEvents(now: MonotonicInstant) {
        let configuration = self.configuration
        for event in shared.takeEvents() {
            let id = event.unit < 0 ? "site"
                : event.unit < configuration.units.count ? configuration.units[event.unit].id : "unit\(event.unit)"
            // The same event of the same unit within 10 s is counted, not repeated.
            let key = "\(id)|\(event.kind)|\(event.code.map { "\($0.name)" } ?? "")|\(event.state.map { "\($0)" } ?? "")"
            // Latches and resets are never held back.
            let mayRepeat = event.kind == .latched || event.kind == .resetAccepted || event.kind == .resetRefused
            if !mayRepeat, let previous = suppressed[key], now.seconds(since: previous.last) < 10 {
                suppressed[key] = (previous.last, previous.count + 1)
                continue
            }
            let repeats = suppressed[key]?.count ?? 0
            suppressed[key] = (now, 0)
            var metadata: Logger.Metadata = ["BESS_UNIT": "\(id)", "BESS_EVENT": "\(event.kind)"]
            if let code = event.code { metadata["BESS_CODE"] = "\(code.name)" }
            switch event.kind {
            case .siteShortfall, .siteShortfallCleared: metadata["BESS_CODE"] = "SITE_SHORTFALL"
            case .meterStale, .meterFresh: metadata["BESS_CODE"] = "METER_STALE"
            case .gridLimitBinding, .gridLimitReleased:
                metadata["BESS_CODE"] = "GRID_LIMIT_BINDING"
                metadata["BESS_LIMIT"] = "\(event.limit)"
            case .operatorLimitReverted:
                metadata["BESS_CODE"] = "SCADA_LIMIT_REVERTED"
                metadata["BESS_POINT"] = "WMaxLimPct"
            case .siteSetpointReverted:
                metadata["BESS_CODE"] = "SCADA_SETPOINT_REVERTED"
                metadata["BESS_POINT"] = "WSet"
            default: break
            }
            if let severity = event.severity { metadata["BESS_SEVERITY"] = "\(severity.name)" }
            if event.value.isFinite { metadata["BESS_VALUE"] = "\(event.value)" }
            if event.threshold.isFinite { metadata["BESS_THRESHOLD"] = "\(event.threshold)" }
            if let state = event.state { metadata["BESS_STATE"] = "\(state)" }
            if repeats > 0 { metadata["BESS_SUPPRESSED"] = "\(repeats)" }
            if event.kind == .raised || event.kind == .latched, let code = event.code {
                guarded.withLock { $0.tripCounts["\(code.name)", default: 0] += 1 }
            }
            switch event.kind {
            case .raised: metadata["MESSAGE_ID"] = "\(MessageID.trip)"
            case .latched: metadata["MESSAGE_ID"] = "\(MessageID.latch)"
            case .cleared: metadata["MESSAGE_ID"] = "\(MessageID.clear)"
            case .resetAccepted, .resetRefused: metadata["MESSAGE_ID"] = "\(MessageID.reset)"
            case .stateChanged: metadata["MESSAGE_ID"] = "\(MessageID.state)"
            case .siteShortfall, .siteShortfallCleared, .meterStale, .meterFresh, .gridLimitBinding, .gridLimitReleased:
                metadata["MESSAGE_ID"] = "\(MessageID.site)"
            case .commandRejected: metadata["MESSAGE_ID"] = "\(MessageID.commandRejected)"
            case .operatorLimitReverted, .siteSetpointReverted: metadata["MESSAGE_ID"] = "\(MessageID.scadaWrite)"
            }
            let text = EventText.line(event, unitID: id) + (repeats > 0 ? " (\(repeats) repeats suppressed)" : "")
            recorder?.record(.event(unit: id, kind: "\(event.kind)", code: event.code.map { "\($0.name)" }, message: text))
            switch EventText.priority(event) {
            case 2: logger.critical("\(text)", metadata: metadata)
            case 3: logger.error("\(text)", metadata: metadata)
            case 4: logger.warning("\(text)", metadata: metadata)
            case 5: logger.notice("\(text)", metadata: metadata)
            default: logger.info("\(text)", metadata: metadata)
            }
        }
    }

    // MARK: reload

    func reload() {
        SystemdNotify.send("RELOADING=1")
        defer { SystemdNotify.send("READY=1") }
        guard let configPath else {
            logger.notice("reload: running the embedded configuration; nothing to reload",
                          metadata: ["MESSAGE_ID": "\(MessageID.reload)"])
            return
        }
        let new: BessdConfiguration
        let text = try? String(contentsOfFile: configPath, encoding: .utf8)
        do {
            new = try ConfigLoader.load(path: configPath)
        } catch {
            for diagnostic in error.diagnostics {
                logger.error("reload refused: \(diagnostic)", metadata: ["BESS_CODE": "\(diagnostic.code)",
                                                                         "MESSAGE_ID": "\(MessageID.reload)"])
            }
            logger.error("reload refused: \(error.diagnostics.count) error(s) in \(configPath); the running configuration stays",
                         metadata: ["BESS_CODE": "RELOAD_REFUSED", "MESSAGE_ID": "\(MessageID.reload)"])
            return
        }
        cycle.stop()
        do {
            try runner.reconfigure(new, now: MonotonicClock.now())
            if new.gridLimitInputs != configuration.gridLimitInputs {
                logger.notice("reload: grid_operator.inputs changed; the relay contacts' reader keeps its settings until bessd restarts",
                              metadata: ["BESS_CODE": "GRID_LIMIT_INPUT_RESTART_NEEDED", "MESSAGE_ID": "\(MessageID.reload)"])
            }
            if new.realtime != startedRealtime {
                logger.notice("reload: the realtime: block changed; the cycle and its bus and CAN workers keep their priority and CPU until bessd restarts",
                              metadata: ["BESS_CODE": "REALTIME_RESTART_NEEDED", "MESSAGE_ID": "\(MessageID.reload)"])
            }
            if new.stateDirectory != configuration.stateDirectory || new.controlSocket != configuration.controlSocket {
                logger.notice("reload: state_directory or control_socket changed; bessd keeps its lock, latches, spool and socket where they are until it restarts",
                              metadata: ["BESS_CODE": "STATE_DIRECTORY_RESTART_NEEDED", "MESSAGE_ID": "\(MessageID.reload)"])
            }
            if new.scada != configuration.scada {
                logger.notice("reload: the scada: block changed; the SCADA server keeps its settings until bessd restarts",
                              metadata: ["BESS_CODE": "SCADA_RESTART_NEEDED", "MESSAGE_ID": "\(MessageID.reload)"])
            }
            guarded.withLock {
                $0.configuration = new
                $0.configText = text
            }
            intake.update(units: new.units.map { ($0.id, $0.maxPowerKW) })
            logger.notice("reload applied: \(configPath)", metadata: ["MESSAGE_ID": "\(MessageID.reload)"])
        } catch {
            logger.error("reload refused: \(error)", metadata: ["BESS_CODE": "\(error.code)", "MESSAGE_ID": "\(MessageID.reload)"])
        }
        cycle = CycleThread(runner: runner, shared: shared, replacing: cycle)
        cycle.start()
        // The new cycle thread takes its priority and CPU as it starts; a part refused now (a
        // tightened LimitRTPRIO, a CPU taken away) reaches the journal as it does at start.
        cycle.awaitCycles(1, within: .seconds(2))
        for notice in cycle.realtimeNotices {
            logger.warning("reload: \(notice)", metadata: ["BESS_CODE": "REALTIME_DEGRADED", "MESSAGE_ID": "\(MessageID.reload)"])
        }
    }

    // MARK: control socket

    /// The unit a request names: `.site` when it names none, `.unit(i)` for a configured id. Any
    /// other value (a number, an unknown id, an empty string) is refused as UNKNOWN_UNIT: a request
    /// for a unit that does not exist never acts on every unit.
    enum Target { case site, unit(Int) }

    func target(_ request: [String: Any], _ configuration: BessdConfiguration) -> Target? {
        guard let value = request["unit"], !(value is NSNull) else { return .site }
        guard let name = value as? String, let index = configuration.units.firstIndex(where: { $0.id == name }) else { return nil }
        return .unit(index)
    }

    static func unknownUnit(_ request: [String: Any]) -> ControlReply {
        .now(failure("UNKNOWN_UNIT", "no unit \(request["unit"].map { "\($0)" } ?? "") in this configuration; bessctl status lists the units"))
    }

    static func failure(_ code: String, _ message: String) -> [String: Any] { ["ok": false, "code": code, "message": message] }

    /// A configuration's text fit for a support ticket (`Redaction.configurationText`).
    static func redacted(_ text: String) -> String { Redaction.configurationText(text) }

    func audit(_ what: String, uid: UInt32, _ metadata: Logger.Metadata) {
        var fields = metadata
        fields["BESS_CALLER_UID"] = "\(uid)"
        logger.notice("bessctl (uid \(uid)): \(what)", metadata: fields)
    }

    /// Answers one control request (on the server thread). Requests that change something go
    /// through the cycle's mailbox and are answered once the cycle has taken them.
    package func handle(_ request: [String: Any], caller: ControlCaller) -> ControlReply {
        let configuration = self.configuration
        let verb = request["verb"] as? String ?? ""
        let uid = caller.uid
        let needed = ControlCaller.needed(verb: verb)
        guard caller.role >= needed else {
            let what = needed == .reader ? "reading needs membership of \(ControlCaller.readerGroup) or \(ControlCaller.operatorGroup)"
                : "acting needs membership of \(ControlCaller.operatorGroup)"
            let name = verb.isEmpty ? "(no verb)" : String(verb.prefix(32))
            let now = MonotonicClock.now()
            let (log, skipped) = guarded.withLock { state -> (Bool, Int) in
                if now.seconds(since: state.refusalWindow) >= 1 {
                    state.refusalWindow = now
                    state.refusalsInWindow = 0
                }
                state.refusalsInWindow += 1
                guard state.refusalsInWindow <= 5 else {
                    state.refusalsUnlogged += 1
                    return (false, 0)
                }
                defer { state.refusalsUnlogged = 0 }
                return (true, state.refusalsUnlogged)
            }
            if log {
                let more = skipped > 0 ? "; \(skipped) more refused and not logged before this one" : ""
                logger.warning("bessctl (uid \(uid), pid \(caller.pid)): \(name) refused: PERMISSION_DENIED (\(what))\(more)",
                               metadata: ["MESSAGE_ID": "\(MessageID.permission)", "BESS_CODE": "PERMISSION_DENIED",
                                          "BESS_CALLER_UID": "\(uid)", "BESS_VERB": "\(name)"])
            }
            return .now(Self.failure("PERMISSION_DENIED", "uid \(uid) may not \(name): \(what)"))
        }
        switch verb {
        case "status": return .now(statusObject(configuration))
        case "metrics": return .now(["ok": true, "text": metricsText()])
        case "config":
            // The file as loaded (for `bessctl diag`), with secrets redacted.
            let text = guarded.withLock { $0.configText } ?? "(not readable)"
            return .now(["ok": true, "path": configPath ?? "(embedded default)", "text": Self.redacted(text)])
        case "faults": return .now(faultsObject(configuration))
        case "site": return .now(siteObject(configuration))
        case "reset":
            guard let target = target(request, configuration) else { return Self.unknownUnit(request) }
            let indices: [Int]
            let name: String
            switch target {
            case .site: (indices, name) = (Array(configuration.units.indices), "all units")
            case .unit(let i): (indices, name) = ([i], configuration.units[i].id)
            }
            let generation = shared.post { mailbox in for i in indices { mailbox.reset[i] = true } }
            return .afterCycle(generation: generation) { [self] in
                var cleared: [String] = []
                var refused: [String] = []
                for i in indices {
                    let outcome = shared.resetOutcome(i)
                    cleared += outcome.cleared.map { "\(configuration.units[i].id):\($0.name)" }
                    refused += outcome.refused.map { "\(configuration.units[i].id):\($0.name)" }
                }
                audit("reset \(name): cleared \(cleared), refused \(refused)", uid: uid,
                      ["MESSAGE_ID": "\(MessageID.reset)",
                       "BESS_UNIT": indices.count == 1 ? "\(name)" : .array(indices.map { "\(configuration.units[$0].id)" })])
                return ["ok": true, "cleared": cleared, "refused": refused]
            }
        case "mode":
            guard let text = request["mode"] as? String, let mode = OperatingMode(rawValue: text) else {
                return .now(Self.failure("BAD_REQUEST", "mode must be auto or standby"))
            }
            guard let target = target(request, configuration) else { return Self.unknownUnit(request) }
            let generation: UInt64
            let name: String
            switch target {
            case .site:
                generation = shared.post { $0.siteMode = mode }
                name = "the site"
            case .unit(let i):
                generation = shared.post { $0.mode[i] = mode }
                name = configuration.units[i].id
            }
            let indices: [Int] = if case .unit(let i) = target { [i] } else { Array(configuration.units.indices) }
            return .afterCycle(generation: generation) { [self] in
                // What the cycle made of it: `auto` lifts only the hold it names, so a unit another
                // hold keeps in standby (its own operator standby, the site's, the aggregator's) is named.
                let units = shared.units
                let held: [[String: Any]] = mode == .standby ? [] : indices.compactMap { i in
                    guard i < units.count, units[i].mode == .standby, let by = Self.heldBy(units[i]) else { return nil }
                    return ["unit": configuration.units[i].id, "held_by": by.who]
                }
                let ids = indices.map { configuration.units[$0].id }
                audit("mode \(mode.rawValue) for \(name) (operator)"
                        + (held.isEmpty ? "" : "; still in standby: " + held.map { "\($0["unit"]!) (\($0["held_by"]!))" }.joined(separator: ", ")),
                      uid: uid, ["MESSAGE_ID": "\(MessageID.mode)", "BESS_MODE": "\(mode.rawValue)",
                                 "BESS_UNIT": ids.count == 1 ? "\(ids[0])" : .array(ids.map { "\($0)" })])
                return ["ok": true, "mode": mode.rawValue, "units": ids, "still_standby": held]
            }
        case "override":
            guard case .unit(let index)? = target(request, configuration), request["unit"] != nil else {
                return request["unit"] == nil
                    ? .now(Self.failure("UNKNOWN_UNIT", "override needs --unit with a configured unit id")) : Self.unknownUnit(request)
            }
            let unitName = configuration.units[index].id
            if request["clear"] as? Bool == true {
                return .afterCycle(generation: shared.post { $0.clearOverride[index] = true }) { [self] in
                    audit("override cleared on \(unitName)", uid: uid, ["MESSAGE_ID": "\(MessageID.override)", "BESS_UNIT": "\(unitName)"])
                    return ["ok": true]
                }
            }
            guard let kw = (request["power_kw"] as? NSNumber)?.doubleValue, kw.isFinite else {
                return .now(Self.failure("BAD_REQUEST", "power_kw must be a number"))
            }
            let rating = configuration.units[index].maxPowerKW
            guard abs(kw) <= rating else {
                return .now(Self.failure("BAD_REQUEST", "power_kw \(kw) is beyond the unit's rating ±\(rating) kW"))
            }
            guard let seconds = (request["for_s"] as? NSNumber)?.doubleValue, seconds >= 1, seconds <= 86_400 else {
                return .now(Self.failure("BAD_REQUEST", "an override needs an expiry: for_s from 1 to 86400 seconds"))
            }
            return .afterCycle(generation: shared.post { $0.override[index] = (Watts.kilowatts(kw), seconds) }) { [self] in
                audit("override \(unitName) to \(kw) kW for \(Int(seconds)) s (still inside every interlock)", uid: uid,
                      ["MESSAGE_ID": "\(MessageID.override)", "BESS_UNIT": "\(unitName)", "BESS_SETPOINT_W": "\(kw * 1000)"])
                return ["ok": true, "unit": unitName, "power_kw": kw, "for_s": seconds]
            }
        default:
            return .now(Self.failure("BAD_REQUEST", "unknown verb '\(verb)'; verbs: status, faults, site, config, metrics, reset, mode, override"))
        }
    }

    /// Who holds a unit where it is, for `bessctl status`: `operator`, `operator_site`,
    /// `aggregator`, `aggregator_emergency_stop`, `override`, `dispatch`, or nil (auto, base schedule).
    static func heldBy(_ u: UnitStatus) -> (who: String, remaining: Double?)? {
        if u.holds.operatorUnit { return ("operator", nil) }
        if u.holds.operatorSite { return ("operator_site", nil) }
        if u.remoteRemaining > 0 { return (u.holds.remoteEmergency ? "aggregator_emergency_stop" : "aggregator", u.remoteRemaining) }
        if u.overrideW != nil { return ("override", u.overrideRemaining) }
        if u.dispatchW != nil { return ("dispatch", nil) }
        return nil
    }

    func statusObject(_ configuration: BessdConfiguration) -> [String: Any] {
        let units = shared.units
        let stats = shared.statistics
        let now = MonotonicClock.wallClock()
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() {
            let u = units[i]
            var entry: [String: Any] = [
                "id": unit.id, "state": "\(u.state)", "mode": u.mode.rawValue, "setpoint_w": u.setpoint, "droop_w": u.droop,
                "allowed_charge_w": u.allowedCharge, "allowed_discharge_w": u.allowedDischarge,
                "trips": u.active.map { "\($0.name)" }, "latched": u.latched.map { "\($0.name)" },
            ]
            entry["soc_percent"] = u.soc.isFinite ? u.soc : NSNull()
            entry["power_w"] = u.power.isFinite ? u.power : NSNull()
            if let o = u.overrideW { entry["override"] = ["power_w": o, "remaining_s": u.overrideRemaining] }
            if let d = u.dispatchW { entry["dispatch"] = ["power_w": d] }
            if let held = Self.heldBy(u) {
                entry["held_by"] = held.who
                if let remaining = held.remaining { entry["held_until_unix"] = (now + remaining).rounded() }
            } else {
                entry["held_by"] = NSNull()
            }
            list.append(entry)
        }
        return [
            "ok": true, "version": BessdVersion.string, "mode": configuration.mode.rawValue, "units": list,
            "grid_operator": gridOperatorObject(shared.site),
            "frequency_hz": stats.frequency.isFinite ? stats.frequency : NSNull(),
            "cycle": [
                "period_ms": stats.periodMs, "cycles": stats.cycles, "overruns": stats.overruns,
                "late_readings": stats.lateReadings, "started_on_readings": stats.startedOnReadings, "alarm_cycles": stats.alarmCycles,
                "jitter_p50_us": stats.histogram.percentile(0.5), "jitter_p99_us": stats.histogram.percentile(0.99),
                "jitter_max_us": stats.histogram.maxMicroseconds, "realtime": stats.realtime,
            ] as [String: Any],
            "uplink": uplinkObject(configuration),
            "clock": clockObject(stats),
        ]
    }

    /// The system clock as settlement sees it (bessctl status, `CLOCK_UNSYNCED`).
    func clockObject(_ stats: CycleStatistics) -> [String: Any] {
        let sync = guarded.withLock { $0.clockSync }
        return ["synchronized": sync.isSynchronized.map { $0 as Any } ?? NSNull(), "source": sync.source,
                "code": sync.isSynchronized == false ? "CLOCK_UNSYNCED" : NSNull(),
                "steps": stats.clockSteps, "last_step_s": stats.clockSteps > 0 ? stats.lastClockStepSeconds : NSNull()]
    }

    /// The uplink's transport, connection, last acknowledgement and backlog (bessctl status).
    func uplinkObject(_ configuration: BessdConfiguration) -> Any {
        guard let aggregator = configuration.aggregator else { return NSNull() }
        var o: [String: Any] = ["transport": aggregator.transport.rawValue, "url": aggregator.shownURL, "site": aggregator.siteID]
        if let spool {
            let s = spool.state
            o["backlog_records"] = s.next - 1 - min(s.acknowledged, s.next - 1)
            o["acknowledged_seq"] = s.acknowledged
        }
        if let mqttSender {
            let u = mqttSender.stats
            o["connected"] = u.connected
            o["last_ack_unix"] = u.lastPubackUnix ?? NSNull()
            o["last_error"] = u.lastError ?? NSNull()
        } else if let sender {
            let u = sender.stats
            o["connected"] = u.lastError == nil && u.batchesDelivered > 0
            o["last_error"] = u.lastError ?? NSNull()
        }
        return o
    }

    /// The grid operator's limit and SCADA's setpoint in force, with when they revert (status and site).
    func gridOperatorObject(_ site: SiteStatus) -> [String: Any] {
        func value(_ x: Double) -> Any { x.isFinite ? x : NSNull() }
        return [
            "inputs": gridInputs.map { ["configured": true, "lost": $0.lost.load(ordering: .relaxed)] as [String: Any] }
                ?? ["configured": false],
            "limit_percent": value(site.operatorLimitPercent),
            "cap_w": value(site.operatorCap), "limiting": site.operatorLimited,
            "scada_limit": site.scadaLimitPercent.isFinite
                ? ["percent": site.scadaLimitPercent, "remaining_s": site.scadaLimitRemaining, "reverted": site.scadaLimitReverted]
                    as [String: Any] : NSNull(),
            "input_limit_percent": value(site.inputLimitPercent),
            "scada_setpoint": site.scadaSetpoint.isFinite
                ? ["power_w": site.scadaSetpoint, "remaining_s": site.scadaSetpointRemaining] as [String: Any] : NSNull(),
        ]
    }

    func faultsObject(_ configuration: BessdConfiguration) -> [String: Any] {
        let units = shared.units
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() {
            for code in units[i].active {
                list.append(["unit": unit.id, "code": "\(code.name)", "latched": units[i].latched.contains(code),
                             "explanation": "\(code.explanation)"])
            }
        }
        let site = shared.site
        if site.meterStale {
            list.append(["unit": "site", "code": "METER_STALE", "latched": false,
                         "explanation": "the connection-point meter has sent no fresh reading: the site application rests and the grid limits hold their last values"])
        }
        if let reader = gridInputs, reader.lost.load(ordering: .relaxed) {
            list.append(["unit": "site", "code": "GRID_LIMIT_INPUT_LOST", "latched": false,
                         "explanation": "the I/O module of the grid operator's relay contacts does not answer: the last limit holds"])
        }
        if site.shortfallActive {
            list.append(["unit": "site", "code": "SITE_SHORTFALL", "latched": false,
                         "explanation": "the units cannot deliver \(Int((site.shortfall / 1000).rounded())) kW of what the site is asked"])
        }
        return ["ok": true, "faults": list]
    }

    /// `bessctl site`: the connection point, its limits and which binds, the application, the
    /// decision layer by layer, each unit's share and why.
    func siteObject(_ configuration: BessdConfiguration) -> [String: Any] {
        let site = shared.site
        let units = shared.units
        let c = configuration.site
        func value(_ x: Double) -> Any { x.isFinite ? x : NSNull() }
        var application: [String: Any] = [
            "name": c.application.name, "active": site.applicationActive, "target_w": site.applicationTarget,
            "soc_reserve_percent": c.socReservePercent,
        ]
        switch c.application {
        case .peakShaving(let importMax, let recharge):
            application["import_max_w"] = importMax.value
            application["recharge_below_w"] = recharge.map { $0.value as Any } ?? NSNull()
        case .selfConsumption(let target): application["target_grid_w"] = target.value
        case .none: break
        }
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() where i < units.count {
            let u = units[i]
            list.append([
                "id": unit.id, "share": "\(u.share)", "pooled": u.pooled, "setpoint_w": u.setpoint,
                "power_w": value(u.power), "soc_percent": value(u.soc),
                "allowed_charge_w": u.allowedCharge, "allowed_discharge_w": u.allowedDischarge,
            ])
        }
        return [
            "ok": true, "mode": configuration.mode.rawValue,
            "grid_power_w": value(site.gridPower),
            "meter": c.meter.map { m -> Any in
                ["configured": true, "stale": site.meterStale, "protocol": m.protocolName.rawValue,
                 "simulated": configuration.meterSimulated, "stale_after_s": m.staleAfterSeconds, "max_lag_s": m.maxLagSeconds]
            } ?? ["configured": false],
            "limits": [
                "import_max_w": c.importMaxKW.map { $0 * 1000 as Any } ?? NSNull(),
                "export_max_w": c.exportMaxKW.map { $0 * 1000 as Any } ?? NSNull(),
                "binding": site.binding == .none ? NSNull() : "\(site.binding)" as Any,
            ] as [String: Any],
            "application": application,
            "grid_operator": gridOperatorObject(site),
            "decision": [
                "requested_w": site.requested, "held_w": site.held, "application_w": site.application,
                "pool_w": site.pool, "delivered_w": site.delivered,
            ],
            "load_estimate_w": ["low": value(site.loadLow), "high": value(site.loadHigh)],
            "shortfall": ["active": site.shortfallActive, "missing_w": site.shortfall] as [String: Any],
            "units": list,
        ]
    }
}
