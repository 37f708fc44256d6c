/// One of the daemon's long-running parts: a name for the stop line, an explicit start and stop.
/// bessd's services are threads (or a sender's task) with synchronous `start`/`stop`.
protocol DaemonService: AnyObject {
    /// How the stop line names it (`uplink`, `bus workers`, `cycle`…).
    var name: String { get }
    /// Starts it. A service that cannot start throws (after logging why, with its code): the daemon
    /// runs on without it, and it is not stopped.
    func start() throws
    /// Stops it; called once, in the reverse of the start order.
    func stop()
}

/// The daemon's services with one explicit start and stop order, as swift-service-lifecycle's
/// `ServiceGroup` orders async services: started in the order they are given, stopped in the
/// reverse order, each stop run once. bessd's services are threads with synchronous `start`/`stop`,
/// so this is the order only, not the task tree.
///
/// The daemon starts, in this order (`Daemon.services`): uplink → journal flush → bus workers → PMU
/// → 2030.5 client → cycle → optimiser → operator server → SCADA → IEC 104 → relay contacts → watchdog. Stopping
/// therefore runs: the watchdog stops; nothing new comes from the contacts, the control centres,
/// SCADA or operators; the optimiser stops; the cycle stops; the 2030.5 client and the PMU reader stop; the bus workers
/// write zero with the revert armed and stop; latches and events are persisted and logged; the
/// uplink flushes what it has.
final class ServiceGroup {
    private var running: [any DaemonService] = []
    private var stopped: [String] = []

    /// Names of the running services, in start order.
    var names: [String] { running.map(\.name) }
    /// Names of the services stopped so far, in stop order.
    var stoppedNames: [String] { stopped }

    /// Names of the services whose start threw (they logged why), in start order.
    private(set) var failedNames: [String] = []

    /// Starts `services` now, in their order, and keeps each for `stopAll`, which stops it before
    /// every service started earlier. A service whose start throws has logged why: it is not kept
    /// (its stop never runs) and the next one starts.
    func start(_ services: [any DaemonService]) {
        for service in services {
            do {
                try service.start()
                running.append(service)
            } catch {
                failedNames.append(service.name)
            }
        }
    }

    /// Stops every running service, the last started first; `each` hears each name before its stop runs.
    func stopAll(_ each: (String) -> Void = { _ in }) {
        while let service = running.popLast() {
            each(service.name)
            service.stop()
            stopped.append(service.name)
        }
    }
}
