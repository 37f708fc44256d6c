import BessSystem
import Config
import ControlCore
import Cycle
import Foundation
import Logging
import Scada
import Outstation
import Synchronization

// The daemon's services that are not a type of their own elsewhere: each names what it starts and
// stops, in the order `Daemon.start` lists them.

/// Nothing to start; at stop, latches persisted and the stop's events logged (after the workers'
/// zero, before the uplink flushes).
final class JournalFlush: DaemonService {
    let name = "journal"
    private unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }
    func start() {}
    func stop() {
        daemon.persistLatches()
        daemon.logEvents(now: SystemClock.shared.now())
        daemon.logNotices()
    }
}

/// The bus and CAN workers: started and given up to 5 s for every device to answer or fail once;
/// stopped by writing zero with the revert armed to every inverter (the stop line names those that
/// did not take it).
final class BusWorkers: DaemonService {
    let name = "bus workers"
    private unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }
    func start() {
        daemon.runner.startWorkers()
        let probeEnd = SystemClock.shared.now() + .seconds(5)
        while !daemon.runner.devicesProbed, SystemClock.shared.now() < probeEnd, !stopRequested.load(ordering: .relaxed) {
            usleep(20_000)
        }
    }
    func stop() { daemon.unconfirmedStops = daemon.runner.commandSafeSetpoints() }
}

/// The cycle thread. A reload replaces it: whichever runs is the one stopped.
final class CycleService: DaemonService {
    let name = "cycle"
    private unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }
    func start() { daemon.cycle.start() }
    func stop() { daemon.cycle.stop() }
}

/// The control socket and /metrics (`ServiceServer`).
final class OperatorServer: DaemonService {
    let name = "operator server"
    private unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }
    func start() { daemon.startServer(daemon.configuration) }
    func stop() {
        daemon.server?.stop()
        daemon.server = nil
    }
}

/// The site as a SunSpec device for plant SCADA, on TCP and its RS-485 line.
final class ScadaService: DaemonService {
    let name = "SCADA"
    private unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }
    func start() { daemon.startScada(daemon.configuration) }
    func stop() {
        daemon.scada?.stop()
        daemon.scada = nil
        daemon.scadaSerial?.stop()
        daemon.scadaSerial = nil
    }
}

/// The IEC 60870-5-104 outstation for the grid operator's control centres (`iec104:`).
final class IEC104Service: DaemonService {
    let name = "IEC 104"
    private unowned let daemon: Daemon
    init(_ daemon: Daemon) { self.daemon = daemon }
    func start() { daemon.startIEC104(daemon.configuration) }
    func stop() {
        daemon.outstation?.stop()
        daemon.outstation = nil
    }
}

/// The PMU's reader (`grid_integration.pmu`): started before the cycle, stopped after it.
extension PMUReader: DaemonService {
    var name: String { "PMU" }
}

extension Daemon {
    /// The reader of the PMU the configuration follows (`frequency_source: pmu`), nil otherwise. Its
    /// connection notices go to the journal as device events of the site, with their code.
    static func makePMU(_ configuration: BessdConfiguration, logger: Logger) -> PMUReader? {
        guard configuration.grid.frequencySource == .pmu, let settings = configuration.grid.pmu else { return nil }
        return PMUReader(settings: settings) { code, message, error in
            let metadata: Logger.Metadata = ["BESS_CODE": "\(code)", "MESSAGE_ID": "\(MessageID.device)", "BESS_UNIT": "site"]
            if error { logger.warning("\(message)", metadata: metadata) } else { logger.notice("\(message)", metadata: metadata) }
        }
    }
}

extension GridLimitInputReader: DaemonService {
    var name: String { "relay contacts" }
}

extension Watchdog: DaemonService {
    var name: String { "watchdog" }
}
