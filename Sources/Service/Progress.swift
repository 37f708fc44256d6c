import BessSystem
import ControlCore
import ControlProtocol
import Cycle
import Logging
import Synchronization

/// A thread that stopped turning: a bus or CAN worker (`WORKER_STALLED`) or the service loop
/// (`SERVICE_STALLED`), with the units it carries and how long it has not turned.
struct Stall: Sendable, Equatable {
    enum Code: String, Sendable {
        case worker = "WORKER_STALLED"
        case service = "SERVICE_STALLED"
    }

    var code: Code
    var thread: String
    var units: [String]
    var since: Duration

    var reply: StallReply { StallReply(code: code.rawValue, thread: thread, units: units, sinceS: since.secondsDouble) }
}

/// Progress, not only liveness: the service loop's last turn beside the workers' (`WorkerTurn`),
/// judged against the clock's `now` (tests pass instants; the watchdog and `status` the system's).
///
/// What a stall does (docs/operations.md, "Watchdog and progress"): it is reported in `status`, in
/// /metrics and in the journal; the watchdog keeps beating, except when every bus and CAN worker is
/// stalled. A stalled worker's units are already safe without a restart (their readings go stale,
/// the cycle commands them zero, and an inverter nobody writes falls back on its revert timer) while
/// the other units keep their control; a stalled service loop leaves the cycle, which holds every
/// latch and hold, running, and a restart would lose what the loop had not yet written and restart
/// into the journald or disk it waits on. With every worker stalled nothing is controlled any more
/// and only a restart can bring the bus back: then the beat stops and systemd restarts bessd.
final class ServiceProgress: Sendable {
    /// The service loop wakes at least once a second; longer than this without a turn is a stall.
    static let serviceStallAfter = Duration.seconds(10)
    private let serviceTurn = Atomic<Int64>(0)
    /// What the service loop last said in the journal: the notices dropped so far, the stalled workers.
    let noticeDropsReported = PILock<UInt64>(0)
    let stalledReported = PILock<Set<String>>([])

    init() {}

    /// Marks a turn of the service loop at `now`; returns the turn before it (nil at the first).
    @discardableResult
    func turn(at now: MonotonicInstant) -> MonotonicInstant? {
        let previous = serviceTurn.exchange(now.nanoseconds, ordering: .relaxed)
        return previous == 0 ? nil : MonotonicInstant(nanoseconds: previous)
    }

    /// The service loop's last turn (nil before the first).
    var lastServiceTurn: MonotonicInstant? {
        let ns = serviceTurn.load(ordering: .relaxed)
        return ns == 0 ? nil : MonotonicInstant(nanoseconds: ns)
    }

    /// The threads stalled at `now`: each worker past its own bound, the service loop past
    /// `serviceStallAfter`.
    static func stalls(workers: [WorkerTurn], service: MonotonicInstant?, now: MonotonicInstant) -> [Stall] {
        var stalls = workers.compactMap { turn -> Stall? in
            guard turn.stalled(at: now), let last = turn.lastTurn else { return nil }
            return Stall(code: .worker, thread: turn.thread, units: turn.units, since: now - last)
        }
        if let service, now - service > serviceStallAfter {
            stalls.append(Stall(code: .service, thread: "service loop", units: [], since: now - service))
        }
        return stalls
    }

    /// True when the watchdog must stop beating for these stalls: every one of `workers` bus and CAN
    /// workers is stalled (none when there are none).
    static func withholdsBeat(_ stalls: [Stall], workers: Int) -> Bool {
        workers > 0 && stalls.filter { $0.code == .worker }.count >= workers
    }
}
