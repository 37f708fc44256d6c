import BessSystem
public import ControlCore

extension SharedState {
    /// Publishes the block schedule's window (the store's blocks from the current one on; nil: no
    /// schedule): the cycle takes it at the start of its next period, through its inbox, without
    /// allocating (docs/design/0011-block-schedule.md).
    public func publishSchedule(_ window: ScheduleWindow?) {
        contents.withLock { c in
            c.orders.schedule = window
            c.orders.scheduleGeneration &+= 1
        }
    }

    /// Removes and returns the schedule's blocks the cycle closed since the last call, oldest first
    /// (the service thread's side; storage reserved outside the lock).
    public func takeScheduleReports() -> [ScheduleBlockReport] { take(\.scheduleReports) }

    /// Removes and returns what the outbox holds at `path`, oldest first, into storage reserved
    /// outside the lock (the cycle's own keeps its capacity).
    func take<Element>(_ path: WritableKeyPath<CycleOutbox, [Element]>) -> [Element] {
        var taken: [Element] = []
        taken.reserveCapacity(64)
        contents.withLock { c in
            for element in c.outbox[keyPath: path] where taken.count < taken.capacity { taken.append(element) }
            c.outbox[keyPath: path].removeAll(keepingCapacity: true)
        }
        return taken
    }
}
