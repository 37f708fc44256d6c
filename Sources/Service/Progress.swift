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

extension Daemon {
    /// The threads stalled now (status, /metrics, the journal, the watchdog).
    func stalls(now: MonotonicInstant = SystemClock.shared.now()) -> [Stall] {
        ServiceProgress.stalls(workers: runner.workerTurns(), service: progress.lastServiceTurn, now: now)
    }

    /// `health` of `status`.
    func healthReply() -> HealthReply {
        HealthReply(noticesDropped: deviceNotices.dropped, stalled: stalls().map(\.reply))
    }

    /// Journals the bus and CAN workers' notices queued since the last round, and how many were
    /// dropped meanwhile (`NOTICES_DROPPED`). The service thread's side of `NoticeQueue`.
    func logNotices() {
        let taken = deviceNotices.take()
        for notice in taken.notices { Journal(logger).write(notice) }
        let unreported = progress.noticeDropsReported.withLock { reported in
            defer { reported = taken.dropped }
            return taken.dropped - min(reported, taken.dropped)
        }
        if unreported > 0 {
            logger.warning("NOTICES_DROPPED: \(unreported) bus or CAN worker notice(s) were dropped before the journal took them (\(taken.dropped) since start); the workers never wait on the journal",
                           metadata: ["BESS_CODE": "NOTICES_DROPPED", "MESSAGE_ID": "\(MessageID.device)", "BESS_COUNT": "\(unreported)"])
        }
    }

    /// A turn of the service loop: marks it, says in the journal when the loop itself had stalled
    /// (`SERVICE_STALLED`, after it turns again), and each worker that stalled or turns again.
    func serviceTurn(now: MonotonicInstant) {
        if let previous = progress.turn(at: now), now - previous > ServiceProgress.serviceStallAfter {
            logger.error("SERVICE_STALLED: the service loop did not turn for \(Self.seconds(now - previous)) s; latches, events, notices and records waited meanwhile, the cycle ran on",
                         metadata: ["BESS_CODE": "SERVICE_STALLED", "MESSAGE_ID": "\(MessageID.lifecycle)"])
        }
        let stalled = stalls(now: now).filter { $0.code == .worker }
        let names = Set(stalled.map(\.thread))
        let (raised, cleared) = progress.stalledReported.withLock { reported in
            defer { reported = names }
            return (stalled.filter { !reported.contains($0.thread) }, reported.subtracting(names).sorted())
        }
        for stall in raised {
            logger.error("WORKER_STALLED: \(stall.thread) has not turned for \(Self.seconds(stall.since)) s; units \(stall.units.joined(separator: ", ")) get no new reading (zero once stale) and no setpoint (the inverter's revert timer)",
                         metadata: ["BESS_CODE": "WORKER_STALLED", "MESSAGE_ID": "\(MessageID.device)",
                                    "BESS_UNIT": .array(stall.units.map { "\($0)" })])
        }
        for thread in cleared {
            logger.notice("\(thread) turns again (WORKER_STALLED cleared)", metadata: ["BESS_CODE": "WORKER_STALLED", "MESSAGE_ID": "\(MessageID.device)"])
        }
    }

    static func seconds(_ duration: Duration) -> String {
        String(Double(Int(duration.secondsDouble * 10)) / 10)
    }
}

extension Daemon {
    /// Dropped worker notices and stalled threads on /metrics.
    func progressMetrics(into m: inout MetricsText) {
        m.metric("bessd_notices_dropped_total", "counter",
                 "Bus and CAN worker notices dropped before the journal took them (NOTICES_DROPPED).", [("", Double(deviceNotices.dropped))])
        let stalls = stalls()
        m.metric("bessd_threads_stalled", "gauge", "Threads that have not turned for longer than they may (WORKER_STALLED, SERVICE_STALLED).",
                 [Stall.Code.worker, .service].map { code in ("code=\"\(code.rawValue)\"", Double(stalls.filter { $0.code == code }.count)) })
    }
}
