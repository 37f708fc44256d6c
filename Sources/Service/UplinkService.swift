import BessBase
import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import Logging
import Synchronization
import Uplink

/// The uplink to the aggregator (`aggregator:`): the spool on disk, the recorder that fills it each
/// round of the service loop, and the transport (HTTP or MQTT 5) that delivers it and takes the
/// aggregator's commands. Started first and stopped last, so it flushes what the stop logged.
final class UplinkService: DaemonService {
    let name = "uplink"
    let spool: SpoolQueue
    let recorder: UplinkRecorder
    /// Delivers the spool (`aggregator.transport`); nil when it could not be built.
    let transport: (any UplinkTransport)?
    private let logger: Logger
    /// The spool's refusal while it lasts (SPOOL_FULL, SPOOL_IO…), as logged (service thread).
    private var problem: String?
    /// The same for /metrics, read on the server thread.
    private let refusal = PILock<String?>(nil)
    /// The code of the spool's last failure to save its state (`SpoolQueue.stateFailure`), as logged.
    private var stateProblem: SpoolError.Code?

    init(spool: SpoolQueue, recorder: UplinkRecorder, transport: (any UplinkTransport)?, logger: Logger) {
        self.spool = spool
        self.recorder = recorder
        self.transport = transport
        self.logger = logger
    }

    /// Opens the spool and builds the sender `aggregator:` names; nil without `aggregator:` or when
    /// the spool cannot open (logged as `uplink disabled` with its code). A transport that cannot be
    /// built is logged the same way and leaves the spool recording with no sender.
    static func make(configuration: BessdConfiguration, intake: DispatchIntake, logger: Logger) -> UplinkService? {
        guard let aggregator = configuration.aggregator else { return nil }
        let queue: SpoolQueue
        let recorder: UplinkRecorder
        do throws(SpoolError) {
            let store = try Spool(directory: configuration.stateDirectory + "/spool", maxBytes: aggregator.spoolMaxMB << 20)
            if store.recovery.tornBytes > 0 || store.recovery.damagedSegments > 0 {
                logger.warning("uplink spool: cut \(store.recovery.tornBytes) torn bytes, \(store.recovery.damagedSegments) damaged segments",
                               metadata: ["BESS_CODE": "SPOOL_RECOVERED"])
            }
            queue = SpoolQueue(store)
            recorder = UplinkRecorder(queue: queue, configuration: configuration)
        } catch {
            Journal(logger).write(Notice("uplink disabled: \(error)", failure: error, topic: .uplink, severity: .error))
            return nil
        }
        let report: @Sendable (Notice) -> Void = { notice in
            // An HTTP client's error may quote the URL it was given, credentials and all.
            var notice = notice
            notice.message = Redaction.urlCredentials(in: notice.message)
            Journal(logger).write(notice)
        }
        let commands: @Sendable ([DispatchCommand]) -> [CommandAck] = { [intake] commands in intake.apply(commands) }
        switch aggregator.transport {
        case .http:
            var settings = UplinkSender.Settings(url: aggregator.url, site: aggregator.siteID, tokenFile: aggregator.tokenFile,
                                                 caFile: aggregator.caFile, clientCertFile: aggregator.clientCertFile,
                                                 clientKeyFile: aggregator.clientKeyFile, interval: aggregator.interval)
            // One ledger for both transports: an id acted on over MQTT is not acted on again over HTTP.
            settings.ledgerFile = configuration.stateDirectory + "/mqtt-commands.json"
            let sender = UplinkSender(settings: settings, queue: queue, log: report, handleCommands: commands)
            return UplinkService(spool: queue, recorder: recorder, transport: sender, logger: logger)
        case .mqtt:
            guard let url = MQTTURL(aggregator.url) else {
                let error = UplinkError(.configInvalid, message: "aggregator.url \(aggregator.shownURL) is not an MQTT URL")
                Journal(logger).write(Notice("uplink disabled: \(error)", failure: error, topic: .uplink, severity: .error))
                return UplinkService(spool: queue, recorder: recorder, transport: nil, logger: logger)
            }
            var settings = MQTTUplinkSender.Settings(
                url: url, site: aggregator.siteID, interval: aggregator.interval,
                version: BessdVersion.string, mode: configuration.mode.rawValue, units: configuration.units.map(\.id))
            settings.caFile = aggregator.caFile
            settings.clientCertFile = aggregator.clientCertFile
            settings.clientKeyFile = aggregator.clientKeyFile
            settings.username = aggregator.username
            settings.passwordFile = aggregator.passwordFile
            settings.keepaliveSeconds = Int32(aggregator.keepalive.components.seconds)
            settings.sessionExpirySeconds = UInt32(aggregator.sessionExpiry.components.seconds)
            settings.ledgerFile = configuration.stateDirectory + "/mqtt-commands.json"
            let sender = MQTTUplinkSender(settings: settings, queue: queue, log: report, handleCommands: commands)
            return UplinkService(spool: queue, recorder: recorder, transport: sender, logger: logger)
        }
    }

    /// Starts the transport as the first service: its stop (the last) saves the spool and flushes.
    /// A transport that cannot start is logged and the daemon runs on with the spool recording;
    /// without a transport (its URL was refused, and logged, at `make`) there is nothing to start.
    func start() throws(UplinkError) {
        guard let transport else { throw UplinkError(.configInvalid, message: "no transport") }
        do throws(UplinkError) {
            try transport.start()
        } catch {
            let what = transport is MQTTUplinkSender ? "uplink (MQTT) not started" : "uplink sender not started"
            logger.error("\(what): \(error)", metadata: ["BESS_CODE": "\(error.code)"])
            throw error
        }
    }

    /// Takes what the inbox still holds (a 2030.5 control's record posted after the last round) into
    /// the spool, then saves it and stops the transport: nothing posted is lost at a stop.
    func stop() {
        recorder.takeInbox()
        noteInboxDrops()
        spool.sync()
        transport?.stop()
    }

    /// The refusal /metrics shows (`bessd_spool_refusing`).
    var refusing: String? { refusal.withLock { $0 } }

    /// This round's telemetry, availability and closed blocks into the spool; a refusal or a state
    /// file that cannot be saved is logged when it starts and when it ends.
    func record(now: MonotonicInstant, shared: SharedState) {
        let problem = recorder.tick(now: now, shared: shared)
        noteInboxDrops()
        if problem != self.problem {
            if let problem {
                logger.error("uplink spool refused a record: \(problem); records are being lost until it recovers",
                             metadata: ["BESS_CODE": "\(problem)"])
            } else {
                logger.notice("uplink spool writing again", metadata: ["BESS_CODE": "SPOOL_RECOVERED"])
            }
            self.problem = problem
            refusal.withLock { $0 = problem }
        }
        // The bound dropped old segments but the state file could not be saved: the record
        // is stored, so this is not a refusal; it is a disk the operator must look at.
        let stateFailure = recorder.queue.stateFailure
        if stateFailure?.code != stateProblem {
            if let stateFailure {
                logger.error("uplink spool cannot save its state: \(stateFailure); records are kept and sent, but a restart before it saves again forgets the records the bound dropped and may send delivered ones again",
                             metadata: ["BESS_CODE": "\(stateFailure.code)"])
            } else {
                logger.notice("uplink spool state saved again", metadata: ["BESS_CODE": "SPOOL_STATE_SAVED"])
            }
            stateProblem = stateFailure?.code
        }
    }

    /// Journals the start of an episode of inbox drops (records posted by other threads faster than
    /// the service loop took them), once, with this round's count; /metrics counts them all.
    private func noteInboxDrops() {
        guard let dropped = recorder.inboxDropsStarting else { return }
        recorder.inboxDropsStarting = nil
        Journal(logger).write(Notice(ServiceCode.uplinkInboxDropped, titled: "\(dropped) records posted for the uplink were dropped at the inbox's bound of \(recorder.inbox.capacity) before the service took them (it stalled); they are counted (spool_drop, bessd_uplink_inbox_dropped_total) but not sent; logged once until a round finds none dropped",
                                     [.count: "\(dropped)"]))
    }

    /// The spool's and the sender's lines of /metrics.
    func metrics(into m: inout MetricsText) {
        let s = spool.state
        m.metric("bessd_spool_pending_records", "gauge", "Records waiting for the aggregator.",
                 [("", Double(s.next - 1 - min(s.acknowledged, s.next - 1)))])
        m.metric("bessd_spool_dropped_total", "counter", "Records dropped at the spool's bound.", [("", Double(s.dropped))])
        m.metric("bessd_spool_bytes", "gauge", "Spool size on disk.", [("", Double(s.bytes))])
        m.metric("bessd_uplink_inbox_dropped_total", "counter", "Records posted by other threads (2030.5 controls, IEC 104 outcomes) dropped at the inbox's bound.",
                 [("", Double(recorder.inboxDroppedTotal.load(ordering: .relaxed)))])
        let problem = refusing
        m.metric("bessd_spool_refusing", "gauge",
                 "1 while the spool refuses records (labelled with the code, e.g. SPOOL_FULL), else 0.",
                 [(problem.map { "code=\"\(MetricsText.label($0))\"" } ?? "", problem == nil ? 0 : 1)])
        if let sender = transport as? UplinkSender {
            let u = sender.stats
            m.metric("bessd_uplink_batches_total", "counter", "Batches the aggregator acknowledged.", [("", Double(u.batchesDelivered))])
            m.metric("bessd_uplink_failures_total", "counter", "Failed deliveries.", [("", Double(u.failures))])
        }
        if let mqttSender = transport as? MQTTUplinkSender {
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
    }
}
