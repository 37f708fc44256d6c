import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Foundation
import Logging
import IEC104
import Outstation
import Sep2Link
import TLSTransport

/// SIGHUP: the configuration file read again and applied between two cycles. A file with errors
/// is refused with each error logged and the running configuration stays; what a reload cannot
/// move (relay contacts, realtime, state directory, control socket, SCADA) is said to need a restart.
final class Reloader {
    private let configPath: String?
    private let configuration: RunningConfiguration
    private let runner: SiteRunner
    private let shared: SharedState
    private let cycle: CycleService
    /// The `realtime:` block the threads were started with: a reload cannot move them.
    private let startedRealtime: RealtimeSettings?
    private let iec104: IEC104Service?
    private let intake: DispatchIntake
    private let sep2: Sep2Worker?
    private let optimiser: OptimiserService?
    private let logger: Logger

    init(configPath: String?, configuration: RunningConfiguration, runner: SiteRunner, shared: SharedState, cycle: CycleService,
         iec104: IEC104Service?, intake: DispatchIntake, sep2: Sep2Worker?, optimiser: OptimiserService? = nil, logger: Logger) {
        self.optimiser = optimiser
        self.configPath = configPath
        self.configuration = configuration
        self.runner = runner
        self.shared = shared
        self.cycle = cycle
        startedRealtime = configuration.current.realtime
        self.iec104 = iec104
        self.intake = intake
        self.sep2 = sep2
        self.logger = logger
    }

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
        // What reads a file or builds a TLS context is done before the cycle pauses, and every
        // journal line after it runs again: the pause holds the controller's swap only.
        let configuration = self.configuration.current
        let iec104TLS = Self.prepareIEC104TLS(new.iec104?.server.tls, was: configuration.iec104?.server.tls)
        var refused: RunError?
        cycle.restart {
            do throws(RunError) {
                try runner.reconfigure(new, now: SystemClock.shared.now())
            } catch {
                refused = error
            }
        }
        do throws(RunError) {
            if let refused { throw refused }
            // What runs: the file last applied, but the threads' priority and CPU as they started.
            var running = configuration
            running.realtime = startedRealtime
            for section in Self.reloadSections {
                guard case let .keep(code, keeps) = section.outcome, let restart = section.restartNeeded(from: running, to: new) else { continue }
                logger.notice("reload: \(restart); until then \(keeps)",
                              metadata: ["BESS_CODE": "\(code)", "BESS_RELOAD_KEYS": "\(restart.keys.joined(separator: ","))",
                                         "MESSAGE_ID": "\(MessageID.reload)"])
            }
            if new.iec104 != nil, iec104?.outstation == nil {
                logger.notice("reload: the IEC 104 outstation is not running (IEC104_LISTEN_FAILED at start); a reload does not start it, a restart does",
                              metadata: ["BESS_CODE": "IEC104_RESTART_NEEDED", "MESSAGE_ID": "\(MessageID.reload)"])
            }
            reloadIEC104TLS(new.iec104?.server.tls, was: configuration.iec104?.server.tls, prepared: iec104TLS)
            reloadIEC104Groups(new.iec104?.server.groups, was: configuration.iec104?.server.groups)
            self.configuration.replace(with: new, text: text)
            intake.update(configured: new.units)
            Self.reloadSep2(sep2, to: new)
            optimiser?.reload(new)
            shared.declareAGC(new.iec104?.agc?.limits)
            logger.notice("reload applied: \(configPath)", metadata: ["MESSAGE_ID": "\(MessageID.reload)"])
        } catch {
            logger.error("reload refused: \(error)", metadata: ["BESS_CODE": "\(error.code)", "MESSAGE_ID": "\(MessageID.reload)"])
        }
        // The new cycle thread takes its priority and CPU as it starts; a part refused now (a
        // tightened LimitRTPRIO, a CPU taken away) reaches the journal as it does at start.
        cycle.thread.awaitCycles(1, within: .seconds(2))
        for notice in cycle.thread.realtimeNotices { Journal(logger).write(Self.realtimeNotice(notice)) }
    }

    /// A replacing cycle thread's refused real-time part (`REALTIME_DEGRADED: …`), journalled as a
    /// start journals it — the code's table gives its severity and MESSAGE_ID — its line opening
    /// with `reload:`.
    static func realtimeNotice(_ text: String) -> Notice { Notice(DeviceCode.realtimeDegraded, "reload: \(text)") }

    /// The daemon's sections a reload applies around: a changed restart key's part keeps running as
    /// it started, and the journal names the keys (the cycle's own keys are
    /// `CycleSettings.reloadRules`, which refuse the reload instead). A new section that needs a
    /// restart is one more entry here.
    static var reloadSections: [ReloadRules<BessdConfiguration>] {
        [
            ReloadRules(section: "grid_operator.inputs",
                        outcome: .keep(code: "GRID_LIMIT_INPUT_RESTART_NEEDED", keeps: "the relay contacts' reader keeps its settings"),
                        [.restart("grid_operator.inputs", \.gridLimitInputs)]),
            ReloadRules(section: "realtime",
                        outcome: .keep(code: "REALTIME_RESTART_NEEDED", keeps: "the cycle and its bus and CAN workers keep their priority and CPU"),
                        [.restart("realtime", \.realtime)]),
            ReloadRules(section: "state_directory, control_socket",
                        outcome: .keep(code: "STATE_DIRECTORY_RESTART_NEEDED",
                                       keeps: "bessd keeps its lock, latches, spool and socket where they are"),
                        [.restart("state_directory", \.stateDirectory), .restart("control_socket", \.controlSocket)]),
            ReloadRules(section: "schedule",
                        outcome: .keep(code: "SCHEDULE_RESTART_NEEDED", keeps: "the schedule store keeps its block length and revision gate (the cycle takes the fallback now)"),
                        [.restart("schedule", \.schedule)]),
            ReloadRules(section: "optimiser.enabled",
                        outcome: .keep(code: "OPTIMISER_RESTART_NEEDED", keeps: "the optimiser runs, or stays off, as bessd started"),
                        [.restart("optimiser.enabled", \.optimiserEnabled)]),
            ReloadRules(section: "scada",
                        outcome: .keep(code: "SCADA_RESTART_NEEDED", keeps: "the SCADA server keeps its settings"),
                        [.restart("scada", \.scada)]),
            // The AGC band and expiry apply at once (declareAGC), and so do the TLS files and
            // allow-list (reloadIEC104TLS) and the groups with their rights (reloadIEC104Groups),
            // to the open connections too; the listener and timers are the server's.
            ReloadRules(section: "iec104",
                        outcome: .keep(code: "IEC104_RESTART_NEEDED", keeps: "the IEC 104 outstation keeps its listener and timers"),
                        [.restart("iec104 (present or not, listen, timers, tls on or off, handshake_timeout_s)", \.iec104,
                                  comparing: { fixedPart($0?.server) }),
                         .live("iec104.agc, iec104.groups, iec104.tls's files, allow_certificates and crl_file", \.iec104)]),
            // The 2030.5 client's server, identity, files and rates are its own from start: a
            // changed certificate is a new LFDI, so the whole block needs a restart.
            ReloadRules(section: "ieee2030_5",
                        outcome: .keep(code: "IEEE2030_5_RESTART_NEEDED",
                                       keeps: "the IEEE 2030.5 client keeps its server, certificate, registration and rates"),
                        [.restart("ieee2030_5", \.ieee2030_5)]),
        ]
    }

    /// The outstation's settings a reload cannot move: all but the TLS files and allow-list, which
    /// `reloadIEC104TLS` applies, and the groups, which `reloadIEC104Groups` applies. Whether TLS is
    /// on, and its handshake timeout, stay in.
    static func fixedPart(_ settings: OutstationSettings?) -> OutstationSettings? {
        guard var settings else { return nil }
        settings.groups = []
        if let tls = settings.tls {
            settings.tls = OutstationTLSSettings(certificateFile: "", keyFile: "", caFile: "", handshakeTimeout: tls.handshakeTimeout)
        }
        return settings
    }

    /// The outstation's TLS context from the files as they are now (read and built before the
    /// cycle pauses, `reload`); nil when TLS was not on at start or is off in the file.
    static func prepareIEC104TLS(_ tls: OutstationTLSSettings?, was old: OutstationTLSSettings?)
        -> Result<TLSServerContext, TLSError>?
    {
        guard let tls, old != nil else { return nil }
        return Result { () throws(TLSError) in try tls.serverContext() }
    }

    /// Reads the outstation's TLS files again, whether their paths changed or not (a CRL or
    /// certificate rewritten in place is the usual case), and hands the context to the running
    /// outstation for the connections it accepts from now on; each one already open is checked
    /// against it and closed when it no longer passes (`IEC104_PEER_REVOKED`). A context that
    /// cannot be made leaves the running one in place, with a coded error.
    func reloadIEC104TLS(_ tls: OutstationTLSSettings?, was old: OutstationTLSSettings?,
                         prepared: Result<TLSServerContext, TLSError>?) {
        guard let tls, old != nil, let outstation = iec104?.outstation, let prepared else { return }
        let context: TLSServerContext
        do {
            context = try prepared.get()
        } catch {
            logger.error("reload: iec104.tls: \(error); the outstation keeps the certificate, CA, CRL and allow-list it had",
                         metadata: ["BESS_CODE": "IEC104_TLS_RELOAD_FAILED", "BESS_TLS_ERROR": "\(error.code)", "MESSAGE_ID": "\(MessageID.reload)"])
            return
        }
        guard outstation.replaceTLSContext(context) else { return }
        // The allow-list's size, or "any": every certificate the CA vouches for.
        func listed(_ tls: OutstationTLSSettings?) -> String { tls?.allowedCertificates.map { "\($0.count)" } ?? "any" }
        let crl = tls.crlFile ?? "none"
        logger.notice("reload: iec104.tls read again: CRL \(crl)\(tls.crlFile == old?.crlFile ? "" : " (was \(old?.crlFile ?? "none"))"), allowed certificates \(listed(tls)) (was \(listed(old))); every connection, open or new, is checked against them (IEC104_PEER_REVOKED closes one open that no longer passes)",
                      metadata: ["BESS_CODE": "IEC104_TLS_RELOADED", "BESS_TLS_CRL": "\(crl)", "BESS_TLS_ALLOWED": "\(listed(tls))",
                                 "MESSAGE_ID": "\(MessageID.reload)"])
    }

    /// Hands the groups of the file to the running outstation when they changed: their rights
    /// apply to every open connection, and a connection its group no longer admits (address or
    /// certificate) is closed (`IEC104_PEER_REVOKED`). Revoking a right or a certificate never
    /// needs a restart.
    func reloadIEC104Groups(_ groups: [IEC104Group]?, was old: [IEC104Group]?) {
        guard let groups, let old, groups != old, let outstation = iec104?.outstation else { return }
        outstation.applyGroups(groups)
        logger.notice("reload: iec104.groups applied to the open connections too: \(groups.map(\.name).joined(separator: ", ")); one its group no longer admits is closed (IEC104_PEER_REVOKED)",
                      metadata: ["BESS_CODE": "IEC104_GROUPS_RELOADED", "MESSAGE_ID": "\(MessageID.reload)"])
    }

    /// What a reload moves in the running 2030.5 client: the configured droop's `enabled`, by which
    /// DERCapability and DERSettings claim `opModFreqDroop` and a droop-only control is answered. The
    /// `ieee2030_5:` block itself needs a restart (`reloadSections`).
    static func reloadSep2(_ worker: Sep2Worker?, to new: BessdConfiguration) {
        worker?.useFrequencyDroop(new.grid.droop.enabled)
    }
}
