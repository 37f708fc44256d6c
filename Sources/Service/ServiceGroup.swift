/// The daemon's long-running parts with one explicit start and stop order, as swift-service-lifecycle's
/// `ServiceGroup` orders async services: started in the order they are added, stopped in the reverse
/// order, each stop run once. bessd's services are threads with synchronous `start`/`stop`, so this is
/// the order only, not the task tree.
///
/// The daemon adds, in this order: uplink → journal flush → bus workers → cycle → operator server
/// → SCADA → relay contacts → watchdog. Stopping therefore runs: the watchdog stops; nothing new
/// comes from SCADA, the contacts or operators; the cycle stops; the bus workers write zero with the
/// revert armed and stop; latches and events are persisted and logged; the uplink flushes what it has.
final class ServiceGroup {
    private struct Running {
        let name: String
        let stop: () -> Void
    }
    private var running: [Running] = []
    private var stopped: [String] = []

    /// Names of the running services, in start order.
    var names: [String] { running.map(\.name) }
    /// Names of the services stopped so far, in stop order.
    var stoppedNames: [String] { stopped }

    /// Runs `start` now and keeps `stop` for `stopAll`, which runs it before the stop of every service
    /// added earlier. A service whose start throws is not added (its stop never runs) and the error
    /// propagates.
    func add<E: Error>(_ name: String, start: () throws(E) -> Void, stop: @escaping () -> Void) throws(E) {
        try start()
        running.append(Running(name: name, stop: stop))
    }

    /// Adds a service with nothing to start, only a stop at its place in the order.
    func add(_ name: String, stop: @escaping () -> Void) {
        running.append(Running(name: name, stop: stop))
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
