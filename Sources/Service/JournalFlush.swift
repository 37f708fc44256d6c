import BessSystem
import Config
import ControlCore
import Cycle
import Logging
import Uplink

/// What each round of the service loop writes down, and the last of it at stop: the latch file
/// (`LatchKeeper`), the cycle's events and frequency-event assessments (`EventJournal`,
/// `FrequencyEventReports`), the bus and CAN workers' notices (`NoticeQueue`) and the threads that
/// stopped turning (`ServiceProgress`). As a service it starts nothing; its stop persists the
/// latches and logs the stop's events after the workers' zero, before the uplink flushes.
final class JournalFlush: DaemonService {
    let name = "journal"
    /// Latched trips on disk.
    private var latches: LatchKeeper
    /// The cycle's events to the journal and the uplink.
    let journal: EventJournal
    /// The cycle's frequency-event assessments to the journal, the uplink, `bessctl events` and /metrics.
    let frequencyEvents: FrequencyEventReports
    /// The bus and CAN workers' notices on their way to the journal (`logNotices`).
    let deviceNotices: NoticeQueue
    /// The service loop's last turn, and what it said of stalls (`ServiceProgress`).
    let progress: ServiceProgress
    private let runner: SiteRunner
    private let shared: SharedState
    private let configuration: RunningConfiguration
    private let recorder: UplinkRecorder?
    private let logger: Logger

    init(latches: LatchKeeper, journal: EventJournal, frequencyEvents: FrequencyEventReports, deviceNotices: NoticeQueue,
         progress: ServiceProgress, runner: SiteRunner, shared: SharedState, configuration: RunningConfiguration,
         recorder: UplinkRecorder?, logger: Logger) {
        self.latches = latches
        self.journal = journal
        self.frequencyEvents = frequencyEvents
        self.deviceNotices = deviceNotices
        self.progress = progress
        self.runner = runner
        self.shared = shared
        self.configuration = configuration
        self.recorder = recorder
        self.logger = logger
    }

    func start() {}

    func stop() {
        persistLatches()
        logEvents(now: SystemClock.shared.now())
        logNotices()
    }

    /// Writes the latch file when a unit's latched codes changed (`LatchKeeper.persist`).
    func persistLatches() {
        latches.persist(shared) { configuration.current.units.map(\.id) }
    }

    /// Logs and records the events the cycle published since the last round (`EventJournal`), and
    /// its frequency-event assessments (`FrequencyEventReports`).
    func logEvents(now: MonotonicInstant) {
        let configuration = self.configuration.current
        journal.log(shared.takeEvents(), now: now, configuration: configuration, recorder: recorder)
        frequencyEvents.record(shared.takeFrequencyEvents(), unitIDs: configuration.units.map(\.id), recorder: recorder)
    }

    /// The threads stalled now (status, /metrics, the journal, the watchdog).
    func stalls(now: MonotonicInstant = SystemClock.shared.now()) -> [Stall] {
        ServiceProgress.stalls(workers: runner.workerTurns(), service: progress.lastServiceTurn, now: now)
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
            Journal(logger).write(Notice(ServiceCode.noticesDropped,
                                         titled: "\(unreported) bus or CAN worker notice(s) were dropped before the journal took them (\(taken.dropped) since start); the workers never wait on the journal",
                                         [.count: "\(unreported)"]))
        }
    }

    /// A turn of the service loop: marks it, says in the journal when the loop itself had stalled
    /// (`SERVICE_STALLED`, after it turns again), and each worker that stalled or turns again.
    func serviceTurn(now: MonotonicInstant) {
        if let previous = progress.turn(at: now), now - previous > ServiceProgress.serviceStallAfter {
            Journal(logger).write(Notice(ServiceCode.serviceStalled,
                                         titled: "the service loop did not turn for \(Self.seconds(now - previous)) s; latches, events, notices and records waited meanwhile, the cycle ran on"))
        }
        let stalled = stalls(now: now).filter { $0.code == .worker }
        let names = Set(stalled.map(\.thread))
        let (raised, cleared) = progress.stalledReported.withLock { reported in
            defer { reported = names }
            return (stalled.filter { !reported.contains($0.thread) }, reported.subtracting(names).sorted())
        }
        for stall in raised {
            Journal(logger).write(Notice(ServiceCode.workerStalled,
                                         titled: "\(stall.thread) has not turned for \(Self.seconds(stall.since)) s; units \(stall.units.joined(separator: ", ")) get no new reading (zero once stale) and no setpoint (the inverter's revert timer)",
                                         units: stall.units))
        }
        for thread in cleared {
            Journal(logger).write(Notice(ServiceCode.workerStalled, "\(thread) turns again (\(ServiceCode.workerStalled.code) cleared)", severity: .notice))
        }
    }

    static func seconds(_ duration: Duration) -> String {
        String(Double(Int(duration.secondsDouble * 10)) / 10)
    }

    /// The event journal's lines of /metrics, dropped worker notices and stalled threads, then the
    /// frequency-event assessments'.
    func metrics(into m: inout MetricsText) {
        journal.metrics(into: &m)
        m.metric("bessd_notices_dropped_total", "counter",
                 "Bus and CAN worker notices dropped before the journal took them (NOTICES_DROPPED).", [("", Double(deviceNotices.dropped))])
        let stalls = stalls()
        m.metric("bessd_threads_stalled", "gauge", "Threads that have not turned for longer than they may (WORKER_STALLED, SERVICE_STALLED).",
                 [Stall.Code.worker, .service].map { code in ("code=\"\(code.rawValue)\"", Double(stalls.filter { $0.code == code }.count)) })
        frequencyEvents.metrics(into: &m)
    }
}
