import BessSystem
import Config
import ControlProtocol
import Cycle
import Fieldbus
import ControlCore
import Logging
import Scada
import Outstation
import TLSTransport

/// The servers operators and plant SCADA talk to: the control socket and /metrics on one thread
/// (`ServiceServer`), and the site as a SunSpec device on TCP and, when `scada.serial` names one, an
/// RS-485 line (`ScadaServer`). A listener that cannot open is logged and the daemon runs on: the
/// site's control never depends on them.
extension Daemon {
    /// Starts the SCADA server when `scada:` asks for it. A port that cannot be bound is logged and
    /// the daemon runs on: the site's control never depends on its SCADA view.
    func startScada(_ configuration: BessdConfiguration) {
        guard let settings = configuration.scada else { return }
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
            capacitiesWh: configuration.units.map { $0.capacityKWh * 1000 }, hasMeter: configuration.site.meter != nil)
        let logger = self.logger
        let shared = self.shared
        let holds = self.holds
        // One server per line: TCP always, RTU when scada.serial names a line of its own.
        func serve(serialLine: Bool, on place: String, unit: Int) -> ScadaServer? {
            do {
                let server = try ScadaServer(configuration: settings, serialLine: serialLine, site: description, shared: shared,
                                             keepLimit: { _ = holds.scadaLimit { shared.commands } }) {
                    code, message, fields in
                    var metadata: Logger.Metadata = ["BESS_CODE": "\(code)"]
                    for (key, value) in fields { metadata[key] = "\(value)" }
                    metadata["MESSAGE_ID"] = "\(code.isWrite ? MessageID.scadaWrite : MessageID.scada)"
                    if code.isNotice {
                        logger.notice("\(message)", metadata: metadata)
                    } else {
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

    /// Starts the IEC 104 outstation when `iec104:` asks for it. A port that cannot be bound is
    /// logged and the daemon runs on: the site's control never depends on its control centre link.
    func startIEC104(_ configuration: BessdConfiguration) {
        guard let settings = configuration.iec104?.server else { return }
        let logger = self.logger
        // Every command outcome also to /metrics by code and to the uplink as an event (issue 46 §3).
        let audit = OutstationAudit(inbox: uplink?.recorder.inbox, wakeup: shared.serviceWakeup)
        outstationAudit = audit
        let description = StationDescription(
            ratingsW: configuration.units.map { $0.maxPowerKW * 1000 }, capacitiesWh: configuration.units.map { $0.capacityKWh * 1000 },
            hasMeter: configuration.site.meter != nil, frequencyResponseEnabled: configuration.grid.droop.enabled)
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
                                      audit: { audit.record($0) }) { code, message, fields in
            var metadata: Logger.Metadata = ["BESS_CODE": "\(code.rawValue)",
                                             "MESSAGE_ID": "\(code.isCommand ? MessageID.iec104Command : MessageID.iec104)"]
            for (key, value) in fields { metadata[key] = "\(value)" }
            switch code {
            case .protocolError, .backlog, .commandRefused, .peerRefused, .tlsRefused, .connectionsFull, .internalError: logger.warning("\(message)", metadata: metadata)
            default: logger.notice("\(message)", metadata: metadata)
            }
        }
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
}
