import BessBase
import BessSystem
import Config
import ControlProtocol
import Cycle
import Fieldbus
import ControlCore
import GridSupport
import Logging
import Scada
import IEC104
import Outstation
import TLSTransport
import Uplink

// The servers operators, plant SCADA and the grid operator's control centres talk to, each a
// service that owns its listeners: the control socket and /metrics on one thread (`ServiceServer`),
// the site as a SunSpec device on TCP and, when `scada.serial` names one, an RS-485 line
// (`ScadaServer`), and the IEC 104 outstation (`OutstationServer`). A listener that cannot open is
// logged and the daemon runs on: the site's control never depends on them.

/// The control socket and /metrics (`ServiceServer`), answered by the operator's surface
/// (`ControlVerbs`, `MetricsExporter`).
final class OperatorServer: DaemonService {
    let name = "operator server"
    private let controlSocket: String?
    private let metricsListen: String?
    private let shared: SharedState
    private let verbs: ControlVerbs
    private let metrics: MetricsExporter
    private let logger: Logger
    /// The running server: nil before the start, after the stop, or when neither listener opened.
    private(set) var server: ServiceServer?

    init(_ configuration: BessdConfiguration, shared: SharedState, verbs: ControlVerbs, metrics: MetricsExporter, logger: Logger) {
        controlSocket = configuration.controlSocket
        metricsListen = configuration.metricsListen
        self.shared = shared
        self.verbs = verbs
        self.metrics = metrics
        self.logger = logger
    }

    func start() {
        do {
            let server = try serve(control: controlSocket, metrics: metricsListen)
            server.start()
            self.server = server
        } catch {
            // One listener failing must not cost the other: try each alone.
            logger.warning("\(error)", metadata: ["BESS_CODE": "\(error.code)"])
            for (control, metrics) in [(controlSocket, nil), (nil, metricsListen)] as [(String?, String?)]
                where control != nil || metrics != nil
            {
                guard let server = try? serve(control: control, metrics: metrics) else { continue }
                server.start()
                self.server = server
                break
            }
        }
    }

    func stop() {
        server?.stop()
        server = nil
    }

    /// Answers one control request (`ControlVerbs.handle`), the server's answer costs in its metrics.
    func answer(_ request: ControlRequest, caller: ControlCaller) -> ControlResponse {
        verbs.handle(request, caller: caller, answerCosts: server?.answerCosts)
    }

    /// The text of `GET /metrics` (`MetricsExporter`), the server's answer costs last.
    func metricsText() -> String { metrics.text(answerCosts: server?.answerCosts) }

    private func serve(control: String?, metrics: String?) throws(RunError) -> ServiceServer {
        let shared = self.shared
        return try ServiceServer(
            controlPath: control, metricsAddress: metrics, appliedGeneration: { shared.appliedGeneration },
            handleControl: { [unowned self] request, caller in self.answer(request, caller: caller) },
            renderMetrics: { [unowned self] in self.metricsText() })
    }
}

/// The site as a SunSpec device for plant SCADA (`scada:`), on TCP and its RS-485 line, each on its
/// own thread. A port that cannot be bound is logged and the daemon runs on: the site's control never
/// depends on its SCADA view.
final class ScadaService: DaemonService {
    let name = "SCADA"
    private let settings: ScadaConfiguration
    private let configuration: BessdConfiguration
    private let shared: SharedState
    private let holds: HoldKeeper
    private let logger: Logger
    private(set) var tcp: ScadaServer?
    private(set) var serial: ScadaServer?

    /// The servers running (TCP and RTU), for /metrics.
    var servers: [ScadaServer] { [tcp, serial].compactMap { $0 } }

    init(_ settings: ScadaConfiguration, configuration: BessdConfiguration, shared: SharedState, holds: HoldKeeper, logger: Logger) {
        self.settings = settings
        self.configuration = configuration
        self.shared = shared
        self.holds = holds
        self.logger = logger
    }

    func start() {
        let settings = self.settings
        let configuration = self.configuration
        // Every write holds for at most max_hold_s; nothing written yet but the limit an earlier
        // run left standing (HoldKeeper.restore), which the cycle has applied since its first period.
        var generation: UInt64 = 0
        let restored = shared.commands(generation: &generation).limit
        var commands = SiteCommands(maxHold: settings.maxHold)
        commands.limit = restored
        _ = shared.commit(commands, ifGeneration: generation)
        let description = ScadaSiteDescription(
            siteID: configuration.aggregator?.siteID ?? configuration.units.first?.campusID ?? "site",
            version: BessdVersion.string, mode: configuration.mode.rawValue, unitID: settings.unitID,
            ratingsW: configuration.units.map { $0.maxPowerKW * 1000 },
            capacitiesWh: configuration.units.map { $0.capacityKWh * 1000 }, hasMeter: configuration.site.meter != nil,
            nominalVoltageV: configuration.site.reactivePower.nominalVoltageV ?? configuration.grid.reactivePower.nominalVoltageV,
            reactivePriority: (configuration.site.reactivePower.settings ?? configuration.grid.reactivePower.settings)?.reactivePriority ?? true,
            view: self.shared.view)
        let logger = self.logger
        let shared = self.shared
        let holds = self.holds
        // One server per line: TCP always, RTU when scada.serial names a line of its own.
        func serve(serialLine: Bool, on place: String, unit: Int) -> ScadaServer? {
            do {
                let server = try ScadaServer(configuration: settings, serialLine: serialLine, site: description, shared: shared,
                                             keepLimit: { _ = holds.scadaLimit { shared.commands } }) { Journal(logger).write($0) }
                try server.start()
                Journal(logger).write(Notice(ScadaCode.listening, "SCADA: the site served as SunSpec on \(serialLine ? place : "\(settings.host):\(server.port)") unit \(unit), \(settings.writes ? "writes to the operator limit, setpoints and power factors of model 704 accepted" : "read-only")"))
                return server
            } catch {
                logger.error("SCADA not served on \(place): \(error)", metadata: ["BESS_CODE": "\(error.code)"])
                return nil
            }
        }
        tcp = serve(serialLine: false, on: "\(settings.host):\(settings.port)", unit: settings.unitID)
        if let line = settings.serial {
            serial = serve(serialLine: true, on: "\(line.device) (Modbus RTU \(line.baud) baud)", unit: settings.serialUnitID)
        }
    }

    func stop() {
        tcp?.stop()
        tcp = nil
        serial?.stop()
        serial = nil
    }
}

/// The IEC 60870-5-104 outstation for the grid operator's control centres (`iec104:`), on its own
/// thread. A port that cannot be bound is logged and the daemon runs on: the site's control never
/// depends on its control centre link.
final class IEC104Service: DaemonService {
    let name = "IEC 104"
    private let settings: OutstationSettings
    private let configuration: BessdConfiguration
    private let shared: SharedState
    private let inbox: RecordInbox?
    private let logger: Logger
    /// The outstation while it runs (the reloader hands it TLS files and groups).
    private(set) var outstation: OutstationServer?
    /// Its command outcomes by code for /metrics and as uplink events (`OutstationAudit`).
    private(set) var audit: OutstationAudit?

    init(_ settings: OutstationSettings, configuration: BessdConfiguration, shared: SharedState, inbox: RecordInbox?,
         logger: Logger) {
        self.settings = settings
        self.configuration = configuration
        self.shared = shared
        self.inbox = inbox
        self.logger = logger
    }

    func start() {
        let settings = self.settings
        let configuration = self.configuration
        let logger = self.logger
        // Every command outcome also to /metrics by code and to the uplink as an event (issue 46 §3).
        let audit = OutstationAudit(inbox: inbox, wakeup: shared.serviceWakeup)
        self.audit = audit
        let description = StationDescription(
            ratingsW: configuration.units.map { $0.maxPowerKW * 1000 }, capacitiesWh: configuration.units.map { $0.capacityKWh * 1000 },
            hasMeter: configuration.site.meter != nil, frequencyResponseEnabled: configuration.grid.droop.enabled, view: shared.view)
        // With iec104.tls every connection is TLS: files that no longer load mean no outstation, never a plain one.
        var tlsContext: TLSServerContext?
        if let tls = settings.tls {
            do { tlsContext = try tls.serverContext() } catch {
                logger.error("IEC 104 not served on \(settings.host):\(settings.port): iec104.tls: \(error)",
                             metadata: ["BESS_CODE": "IEC104_LISTEN_FAILED", "BESS_TLS_ERROR": "\(error.code)", "MESSAGE_ID": "\(MessageID.iec104)"])
                return
            }
        }
        let server = OutstationServer(settings: settings, description: description, shared: shared,
                                      samplePeriod: .milliseconds(Int64(max(50, configuration.periodMs))), tlsContext: tlsContext,
                                      audit: { audit.record($0) }) { [logger] in Journal(logger).write($0) }
        do {
            try server.start()
            outstation = server
            logger.notice("IEC 104: the outstation listens on \(settings.host):\(server.port)\(tlsContext == nil ? "" : " (TLS, mutual authentication)"), common address \(settings.commonAddress), groups \(settings.groups.map(\.name).joined(separator: ", "))",
                          metadata: ["BESS_CODE": "IEC104_LISTENING", "MESSAGE_ID": "\(MessageID.iec104)"])
        } catch {
            logger.error("IEC 104 not served on \(settings.host):\(settings.port): \(error)",
                         metadata: ["BESS_CODE": "IEC104_LISTEN_FAILED", "MESSAGE_ID": "\(MessageID.iec104)"])
        }
    }

    func stop() {
        outstation?.stop()
        outstation = nil
    }
}
