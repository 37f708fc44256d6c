public import ControlCore
import BessSystem

/// A bus or CAN worker's thread as the watchdog sees its progress: which thread, the units it
/// carries, when its loop last turned (`WorkerThread.turn`), and how long a turn may take before
/// the thread counts as stalled (`WORKER_STALLED`): longer than any wait or bus timeout of one
/// round, so a slow device is never called a stalled worker.
public struct WorkerTurn: Sendable, Equatable {
    /// `bus 127.0.0.1:1502`, `bus poller`, `CAN can0`.
    public var thread: String
    /// The configured unit ids (or `site` for the meter) whose readings and setpoints pass through it.
    public var units: [String]
    /// nil before the thread started.
    public var lastTurn: MonotonicInstant?
    public var stallAfter: Duration

    public init(thread: String, units: [String], lastTurn: MonotonicInstant?, stallAfter: Duration) {
        self.thread = thread
        self.units = units
        self.lastTurn = lastTurn
        self.stallAfter = stallAfter
    }

    /// The least a worker may take for one turn before it is called stalled.
    public static let stallFloor = Duration.seconds(10)

    /// True when the thread has not turned for longer than `stallAfter` at `now`.
    public func stalled(at now: MonotonicInstant) -> Bool {
        guard let lastTurn else { return false }
        return now - lastTurn > stallAfter
    }
}

extension HardwareSite {
    /// Each worker's last turn: an endpoint worker may spend a timeout on every request of a round
    /// (each device's read and write, a reconnect), the poller one on each endpoint's exchange, a
    /// CAN worker waits 100 ms at most, a Modbus BMS worker a timeout per read and its period; none is
    /// called stalled sooner than `WorkerTurn.stallFloor`.
    public var workerTurns: @Sendable () -> [WorkerTurn] {
        let endpoints = workers
        let bms = bmsWorkers
        let modbusBMS = modbusBMSWorkers
        let poller = poller
        return {
            var turns = endpoints.map { worker in
                WorkerTurn(thread: "bus \(worker.endpoint)", units: worker.devices.map(\.name), lastTurn: worker.lastTurn,
                           stallAfter: max(WorkerTurn.stallFloor, worker.timeout * (4 * worker.devices.count + 2)))
            }
            if let poller {
                let timeout = poller.endpoints.map(\.timeout).max() ?? .zero
                turns.append(WorkerTurn(thread: "bus poller", units: poller.endpoints.flatMap { $0.devices.map(\.name) },
                                        lastTurn: poller.lastTurn, stallAfter: max(WorkerTurn.stallFloor, timeout * 4)))
            }
            turns += bms.map { WorkerTurn(thread: "CAN \($0.interface)", units: $0.units, lastTurn: $0.lastTurn, stallAfter: WorkerTurn.stallFloor) }
            // A Modbus BMS round: a timeout on each read of its plan and a reconnect, then its period.
            turns += modbusBMS.map {
                WorkerTurn(thread: "BMS \($0.endpoint)", units: $0.units, lastTurn: $0.lastTurn,
                           stallAfter: max(WorkerTurn.stallFloor, $0.timeout * ($0.reads + 2) + $0.period))
            }
            return turns
        }
    }
}

extension SiteRunner {
    /// Each bus and CAN worker's last turn (any thread may call the closure).
    public var workerTurns: @Sendable () -> [WorkerTurn] { io.workerTurns }
}
