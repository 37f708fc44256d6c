import BessSystem
import Config
import ControlCore
import Cycle
import PMULink
import Foundation
import Logging
import Synchronization

// The daemon's services that are not a type of their own elsewhere: each owns what it starts and
// stops, in the order `Daemon.init` lists them.

/// The bus and CAN workers: started and given up to 5 s for every device to answer or fail once;
/// stopped by writing zero with the revert armed to every inverter (the stop line names those that
/// did not take it).
final class BusWorkers: DaemonService {
    let name = "bus workers"
    private let runner: SiteRunner
    /// The units whose inverter did not acknowledge the zero written at stop (the stop line names them).
    private(set) var unconfirmedStops: [String] = []

    init(_ runner: SiteRunner) { self.runner = runner }

    func start() {
        runner.startWorkers()
        let probeEnd = SystemClock.shared.now() + .seconds(5)
        while !runner.devicesProbed, SystemClock.shared.now() < probeEnd, !stopRequested.load(ordering: .relaxed) {
            usleep(20_000)
        }
    }

    func stop() { unconfirmedStops = runner.commandSafeSetpoints() }
}

/// The cycle thread. A reload replaces it (`restart`): whichever runs is the one stopped.
final class CycleService: DaemonService {
    let name = "cycle"
    /// The cycle thread running now.
    private(set) var thread: CycleThread
    private let runner: SiteRunner
    private let shared: SharedState
    /// What runs just before the first cycle (the clock's state, so the first energy block knows it).
    private let beforeFirstCycle: () -> Void

    init(runner: SiteRunner, shared: SharedState, beforeFirstCycle: @escaping () -> Void) {
        thread = CycleThread(runner: runner, shared: shared)
        self.runner = runner
        self.shared = shared
        self.beforeFirstCycle = beforeFirstCycle
    }

    func start() {
        beforeFirstCycle()
        thread.start()
    }

    func stop() { thread.stop() }

    /// Stops the cycle, runs `between` (a reload's swap of the controller), and starts a new cycle
    /// thread that carries on the old one's statistics.
    func restart(between: () -> Void) {
        thread.stop()
        between()
        thread = CycleThread(runner: runner, shared: shared, replacing: thread)
        thread.start()
    }
}

/// The grid operator's relay contacts (`grid_operator.inputs`), read on their own thread; until
/// they are read the lowest limit applies.
final class RelayContactsService: DaemonService {
    let name = "relay contacts"
    let reader: GridLimitInputReader
    private let settings: GridLimitInputsConfiguration
    private let logger: Logger

    init(settings inputs: GridLimitInputsConfiguration, shared: SharedState, logger: Logger) {
        settings = inputs
        self.logger = logger
        reader = GridLimitInputReader(settings: inputs, shared: shared) { Journal(logger).write($0) }
    }

    func start() {
        reader.start()
        let inputs = settings
        let line = "grid operator relay contacts read from \(inputs.modbus.endpoint) unit \(inputs.modbus.unitID) every \(inputs.poll.nanosecondsClamped / 1_000_000) ms; "
            + "until they are read the lowest limit applies (\(GridLimitInputReader.describe(reader.initialContacts)))"
        Journal(logger).write(Notice(GridInputCode.input, line))
    }

    func stop() { reader.stop() }
}

/// The PMU's reader (`grid_integration.pmu`): started before the cycle, stopped after it.
extension PMUReader: DaemonService {
    var name: String { "PMU" }

    /// The reader of the PMU the configuration follows (`frequency_source: pmu`), nil otherwise. Its
    /// connection notices go to the journal as device events of the site, with their code.
    static func following(_ configuration: BessdConfiguration, logger: Logger) -> PMUReader? {
        guard configuration.grid.frequencySource == .pmu, let settings = configuration.grid.pmu else { return nil }
        return PMUReader(settings: settings) { Journal(logger).write($0) }
    }
}

/// systemd's watchdog, started last, after READY.
extension Watchdog: DaemonService {
    var name: String { "watchdog" }

    /// The watchdog when systemd asks for one (`WatchdogSec=`), fed only while the cycle beats on
    /// time and every worker lives. The heartbeat is what the cycle publishes (a reload's new cycle
    /// thread publishes there too).
    static func forCycle(shared: SharedState, runner: SiteRunner, progress: ServiceProgress) -> Watchdog? {
        guard let interval = SystemdNotify.watchdogInterval() else { return nil }
        return Watchdog(interval: interval, health: .init(
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
    }
}
