import ControlCore
import Fieldbus
import Foundation
import Glibc
import Synchronization
public import Uplink
public import Logging

/// bessd as a service: starts the bus workers and the cycle thread, tells systemd when it is ready,
/// keeps the watchdog fed only while cycles complete on time, serves the control socket, logs
/// events (never from the cycle), reloads on SIGHUP and stops safely on SIGTERM.
public final class Daemon {
    public private(set) var configuration: BessdConfiguration
    let configPath: String?
    let runner: SiteRunner
    let shared: SharedState
    var cycle: CycleThread
    var control: ControlServer?
    public let logger: Logger
    let say: (String) -> Void
    let started: MonotonicInstant
    var suppressed: [String: (last: MonotonicInstant, count: Int)] = [:]
    /// The uplink's spool and recorder, when an aggregator is configured.
    public private(set) var spool: SpoolQueue?
    var recorder: UplinkRecorder?
    var uplinkProblem: String?
    var metrics: MetricsServer?
    /// Interlock actions logged since start, per code.
    var tripCounts: [String: Int] = [:]
    /// Delivers the spool to the aggregator.
    public private(set) var sender: UplinkSender?
    /// Takes the aggregator's commands (on the sender's task).
    let intake: DispatchIntake

    /// - Parameters:
    ///   - configPath: the file a SIGHUP reloads (nil for the embedded default).
    ///   - say: where the live status line goes (stdout).
    public init(configuration: BessdConfiguration, configPath: String?, logger: Logger, say: @escaping (String) -> Void)
        throws(RunError)
    {
        self.configuration = configuration
        self.configPath = configPath
        self.logger = logger
        self.say = say
        started = MonotonicClock.now()
        let log = logger
        runner = try SiteRunner(configuration: configuration, startedAt: started) { line in
            log.notice("\(line)")
        }
        shared = SharedState(units: configuration.units.count)
        cycle = CycleThread(runner: runner, shared: shared)
        intake = DispatchIntake(shared: shared, logger: logger,
                                units: configuration.units.map { ($0.id, $0.maxPowerKW) })
        if let aggregator = configuration.aggregator {
            do {
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
                sender = UplinkSender(
                    settings: .init(url: aggregator.url, site: aggregator.siteID, tokenFile: aggregator.tokenFile,
                                    caFile: aggregator.caFile, clientCertFile: aggregator.clientCertFile,
                                    clientKeyFile: aggregator.clientKeyFile,
                                    interval: .seconds(fromDouble: aggregator.intervalSeconds)),
                    queue: queue,
                    log: { message, code in
                        if let code { log.warning("\(message)", metadata: ["BESS_CODE": "\(code)"]) } else { log.notice("\(message)") }
                    },
                    handleCommands: { [intake] commands in intake.apply(commands) })
            } catch {
                logger.error("uplink disabled: \(error)", metadata: ["BESS_CODE": "\(error.code)"])
            }
        }
    }

    /// Runs until SIGTERM/SIGINT or `duration`; returns the exit status.
    public func run(duration: Double?, statusEvery: Double) -> Int32 {
        installStopHandlers()
        var realtimeFD: Int32 = -1
        if let rt = configuration.realtime {
            let (notices, fd) = Realtime.applyProcessWide(rt)
            realtimeFD = fd
            for notice in notices { logger.warning("\(notice)", metadata: ["BESS_CODE": "REALTIME_DEGRADED"]) }
        }
        defer { if realtimeFD >= 0 { close(realtimeFD) } }
        for notice in configuration.notices { logger.notice("\(notice)") }

        runner.startWorkers()
        // Ready once every device has answered or failed at least once (at most 5 s).
        let probeEnd = MonotonicClock.now() + .seconds(5)
        while !runner.devicesProbed, MonotonicClock.now() < probeEnd, !stopRequested.load(ordering: .relaxed) {
            usleep(20_000)
        }
        cycle.start()
        do {
            control = try ControlServer(path: configuration.controlSocket) { [unowned self] request, uid in
                self.handle(request, uid: uid)
            }
        } catch {
            logger.warning("\(error); bessctl cannot reach this bessd", metadata: ["BESS_CODE": "\(error.code)"])
        }
        if let address = configuration.metricsListen {
            do {
                metrics = try MetricsServer(address: address) { [unowned self] in self.metricsText() }
            } catch {
                logger.warning("\(error)", metadata: ["BESS_CODE": "\(error.code)"])
            }
        }
        if let sender {
            do { try sender.start() } catch {
                logger.error("uplink sender not started: \(error)", metadata: ["BESS_CODE": "\(error.code)"])
            }
        }
        usleep(UInt32(max(20_000, configuration.periodMs * 2000)))
        if let notice = cycle.realtimeNotice { logger.warning("\(notice)", metadata: ["BESS_CODE": "REALTIME_DEGRADED"]) }
        let startLine = "bessd \(BessdVersion.string) started: \(configuration.mode.rawValue), "
            + "\(configuration.units.count) unit(s), period \(configuration.periodMs) ms"
        logger.notice("\(startLine)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)"])
        SystemdNotify.send("READY=1\nSTATUS=" + StatusText.notify(configuration: configuration, units: shared.units,
                                                                  stats: shared.statistics))
        let watchdog = SystemdNotify.watchdogInterval()
        var nextWatchdog = MonotonicClock.now()
        var lastBeat = cycle.cyclesCompleted
        var nextStatus = MonotonicClock.now()
        var nextNotify = MonotonicClock.now()
        let end = duration.map { started + .seconds(fromDouble: $0) }

        while !stopRequested.load(ordering: .relaxed) {
            if let control { control.poll(timeout: .milliseconds(50)) } else { usleep(50_000) }
            let now = MonotonicClock.now()
            logEvents(now: now)
            metrics?.poll()
            if let recorder {
                let problem = recorder.tick(now: now, units: shared.units, stats: shared.statistics, blocks: shared.takeBlocks())
                if problem != uplinkProblem {
                    if let problem {
                        logger.error("uplink spool refused a record: \(problem); records are being lost until it recovers",
                                     metadata: ["BESS_CODE": "\(problem)"])
                    } else {
                        logger.notice("uplink spool writing again", metadata: ["BESS_CODE": "SPOOL_RECOVERED"])
                    }
                    uplinkProblem = problem
                }
            }
            if reloadRequested.exchange(false, ordering: .relaxed) { reload() }
            expireModes()
            if let watchdog, now >= nextWatchdog {
                // Fed only while cycles complete, and the last one woke within its period.
                let beat = cycle.cyclesCompleted
                let stats = shared.statistics
                if beat != lastBeat, stats.lastLatenessMicroseconds <= Int64(stats.periodMs) * 1000 {
                    SystemdNotify.send("WATCHDOG=1")
                }
                lastBeat = beat
                nextWatchdog = now + .nanoseconds(watchdog.nanosecondsClamped / 2)
            }
            if statusEvery > 0, now >= nextStatus {
                say(StatusText.line(configuration: configuration, units: shared.units, frequency: shared.statistics.frequency,
                                    elapsed: now.seconds(since: started), busFaults: runner.busFaults()))
                nextStatus = now + .seconds(fromDouble: statusEvery)
            }
            if now >= nextNotify {
                SystemdNotify.send("STATUS=" + StatusText.notify(configuration: configuration, units: shared.units,
                                                                 stats: shared.statistics))
                nextNotify = now + .seconds(1)
            }
            if let end, now >= end { break }
        }

        SystemdNotify.send("STOPPING=1")
        sender?.stop()
        cycle.stop()
        runner.commandSafeSetpoints()
        logEvents(now: MonotonicClock.now())
        spool?.sync()
        control = nil
        let stats = shared.statistics
        let summary = "bessd stopped: \(stats.cycles) cycles, \(stats.overruns) overruns, jitter p99 "
            + "\(stats.histogram.percentile(0.99)) µs, max \(stats.histogram.maxMicroseconds) µs; "
            + "zero setpoints written with revert armed"
        logger.notice("\(summary)", metadata: ["MESSAGE_ID": "\(MessageID.lifecycle)"])
        return 0
    }

    /// The Prometheus text for `GET /metrics`.
    func metricsText() -> String {
        let stats = shared.statistics
        let units = shared.units
        var m = MetricsText()
        m.metric("bessd_cycles_total", "counter", "Control cycles completed.", [("", Double(stats.cycles))])
        m.metric("bessd_cycle_overruns_total", "counter", "Cycles that woke more than a period late.", [("", Double(stats.overruns))])
        m.metric("bessd_cycle_period_seconds", "gauge", "Configured control period.", [("", Double(stats.periodMs) / 1000)])
        m.metric("bessd_cycle_lateness_seconds", "summary", "Wake-up lateness of the cycle.",
                 [0.5, 0.9, 0.99, 1.0].map { q in ("quantile=\"\(q)\"", Double(stats.histogram.percentile(q)) / 1e6) })
        let ids = configuration.units.map { MetricsText.label($0.id) }
        m.metric("bessd_unit_setpoint_watts", "gauge", "Setpoint written, + = discharge.",
                 zip(ids, units).map { ("unit=\"\($0)\"", $1.setpoint) })
        m.metric("bessd_unit_power_watts", "gauge", "Measured power, + = discharge.", zip(ids, units).map { ("unit=\"\($0)\"", $1.power) })
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
        }
        if let sender {
            let u = sender.stats
            m.metric("bessd_uplink_batches_total", "counter", "Batches the aggregator acknowledged.", [("", Double(u.batchesDelivered))])
            m.metric("bessd_uplink_failures_total", "counter", "Failed deliveries.", [("", Double(u.failures))])
        }
        return m.text
    }

    /// The cycle's statistics (tests and status).
    public var statistics: CycleStatistics { shared.statistics }

    // MARK: events

    func logEvents(now: MonotonicInstant) {
        for event in shared.takeEvents() {
            let id = event.unit < configuration.units.count ? configuration.units[event.unit].id : "unit\(event.unit)"
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
            if let severity = event.severity { metadata["BESS_SEVERITY"] = "\(severity.name)" }
            if event.value.isFinite { metadata["BESS_VALUE"] = "\(event.value)" }
            if event.threshold.isFinite { metadata["BESS_THRESHOLD"] = "\(event.threshold)" }
            if let state = event.state { metadata["BESS_STATE"] = "\(state)" }
            if repeats > 0 { metadata["BESS_SUPPRESSED"] = "\(repeats)" }
            if event.kind == .raised || event.kind == .latched, let code = event.code {
                tripCounts["\(code.name)", default: 0] += 1
            }
            switch event.kind {
            case .raised: metadata["MESSAGE_ID"] = "\(MessageID.trip)"
            case .latched: metadata["MESSAGE_ID"] = "\(MessageID.latch)"
            case .cleared: metadata["MESSAGE_ID"] = "\(MessageID.clear)"
            case .resetAccepted, .resetRefused: metadata["MESSAGE_ID"] = "\(MessageID.reset)"
            case .stateChanged: metadata["MESSAGE_ID"] = "\(MessageID.state)"
            case .commandRejected: break
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

    /// Returns units to auto when an aggregator's mode command ends.
    func expireModes() { intake.expireModes() }

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
            configuration = new
            intake.update(units: new.units.map { ($0.id, $0.maxPowerKW) })
            logger.notice("reload applied: \(configPath)", metadata: ["MESSAGE_ID": "\(MessageID.reload)"])
        } catch {
            logger.error("reload refused: \(error)", metadata: ["BESS_CODE": "\(error.code)", "MESSAGE_ID": "\(MessageID.reload)"])
        }
        cycle = CycleThread(runner: runner, shared: shared)
        cycle.start()
    }

    // MARK: control socket

    func unitIndex(_ request: [String: Any]) -> Int?? {
        guard let name = request["unit"] as? String else { return .some(nil) }
        guard let index = configuration.units.firstIndex(where: { $0.id == name }) else { return nil }
        return .some(index)
    }

    static func failure(_ code: String, _ message: String) -> [String: Any] { ["ok": false, "code": code, "message": message] }

    func audit(_ what: String, uid: UInt32, _ metadata: Logger.Metadata) {
        var fields = metadata
        fields["BESS_CALLER_UID"] = "\(uid)"
        logger.notice("bessctl (uid \(uid)): \(what)", metadata: fields)
    }

    func handle(_ request: [String: Any], uid: UInt32) -> [String: Any] {
        let verb = request["verb"] as? String ?? ""
        switch verb {
        case "status": return statusObject()
        case "faults": return faultsObject()
        case "reset":
            guard let target = unitIndex(request) else { return Self.failure("UNKNOWN_UNIT", "no unit \(request["unit"] ?? "")") }
            let indices = target.map { [$0] } ?? Array(configuration.units.indices)
            let generation = shared.post { mailbox in for i in indices { mailbox.reset[i] = true } }
            waitApplied(generation)
            var cleared: [String] = []
            var refused: [String] = []
            for i in indices {
                let outcome = shared.resetOutcome(i)
                cleared += outcome.cleared.map { "\(configuration.units[i].id):\($0.name)" }
                refused += outcome.refused.map { "\(configuration.units[i].id):\($0.name)" }
            }
            audit("reset \(target.map { configuration.units[$0].id } ?? "all units"): cleared \(cleared), refused \(refused)",
                  uid: uid, ["MESSAGE_ID": "\(MessageID.reset)", "BESS_UNIT": "\(target.map { configuration.units[$0].id } ?? "*")"])
            return ["ok": true, "cleared": cleared, "refused": refused]
        case "mode":
            guard let name = request["mode"] as? String, let mode = OperatingMode(rawValue: name) else {
                return Self.failure("BAD_REQUEST", "mode must be auto or standby")
            }
            guard let target = unitIndex(request) else { return Self.failure("UNKNOWN_UNIT", "no unit \(request["unit"] ?? "")") }
            let indices = target.map { [$0] } ?? Array(configuration.units.indices)
            waitApplied(shared.post { mailbox in for i in indices { mailbox.mode[i] = mode } })
            audit("mode \(mode.rawValue) for \(target.map { configuration.units[$0].id } ?? "all units")", uid: uid,
                  ["MESSAGE_ID": "\(MessageID.mode)", "BESS_MODE": "\(mode.rawValue)"])
            return ["ok": true, "mode": mode.rawValue]
        case "override":
            guard let unitName = request["unit"] as? String,
                  let index = configuration.units.firstIndex(where: { $0.id == unitName })
            else { return Self.failure("UNKNOWN_UNIT", "override needs --unit with a configured unit id") }
            if request["clear"] as? Bool == true {
                waitApplied(shared.post { $0.clearOverride[index] = true })
                audit("override cleared on \(unitName)", uid: uid, ["MESSAGE_ID": "\(MessageID.override)", "BESS_UNIT": "\(unitName)"])
                return ["ok": true]
            }
            guard let kw = (request["power_kw"] as? NSNumber)?.doubleValue, kw.isFinite else {
                return Self.failure("BAD_REQUEST", "power_kw must be a number")
            }
            let rating = configuration.units[index].maxPowerKW
            guard abs(kw) <= rating else {
                return Self.failure("BAD_REQUEST", "power_kw \(kw) is beyond the unit's rating ±\(rating) kW")
            }
            guard let seconds = (request["for_s"] as? NSNumber)?.doubleValue, seconds >= 1, seconds <= 86_400 else {
                return Self.failure("BAD_REQUEST", "an override needs an expiry: for_s from 1 to 86400 seconds")
            }
            waitApplied(shared.post { $0.override[index] = (Watts.kilowatts(kw), seconds) })
            audit("override \(unitName) to \(kw) kW for \(Int(seconds)) s (still inside every interlock)", uid: uid,
                  ["MESSAGE_ID": "\(MessageID.override)", "BESS_UNIT": "\(unitName)", "BESS_SETPOINT_W": "\(kw * 1000)"])
            return ["ok": true, "unit": unitName, "power_kw": kw, "for_s": seconds]
        default:
            return Self.failure("BAD_REQUEST", "unknown verb '\(verb)'; verbs: status, faults, reset, mode, override")
        }
    }

    /// Waits until the cycle has taken requests up to `generation` (at most two seconds).
    func waitApplied(_ generation: UInt64) {
        let end = MonotonicClock.now() + .seconds(2)
        while shared.appliedGeneration < generation, MonotonicClock.now() < end { usleep(2_000) }
    }

    func statusObject() -> [String: Any] {
        let units = shared.units
        let stats = shared.statistics
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
            list.append(entry)
        }
        return [
            "ok": true, "version": BessdVersion.string, "mode": configuration.mode.rawValue, "units": list,
            "frequency_hz": stats.frequency.isFinite ? stats.frequency : NSNull(),
            "cycle": [
                "period_ms": stats.periodMs, "cycles": stats.cycles, "overruns": stats.overruns,
                "jitter_p50_us": stats.histogram.percentile(0.5), "jitter_p99_us": stats.histogram.percentile(0.99),
                "jitter_max_us": stats.histogram.maxMicroseconds, "realtime": stats.realtime,
            ] as [String: Any],
        ]
    }

    func faultsObject() -> [String: Any] {
        let units = shared.units
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() {
            for code in units[i].active {
                list.append(["unit": unit.id, "code": "\(code.name)", "latched": units[i].latched.contains(code),
                             "explanation": "\(code.explanation)"])
            }
        }
        return ["ok": true, "faults": list]
    }
}
