import BessSystem
public import ControlCore
import Glibc
import Synchronization

/// The control cycle on a dedicated thread, on absolute deadlines (`clock_nanosleep`,
/// `CLOCK_MONOTONIC`, `TIMER_ABSTIME`; or `ppoll` on the poller's hand-over, timed out at the deadline,
/// when the cycle starts as soon as its readings are in: `CyclePhase.wait`). Each period it runs
/// the cycle (`SiteRunner.run`: takeInputs → sample → decide → command → publish) and beats the
/// heart. It never waits on I/O, never logs, and allocates nothing in a steady state.
public final class CycleThread: @unchecked Sendable {
    let runner: SiteRunner
    public let shared: SharedState
    let period: Duration
    /// The cycle's priority and CPU (`Realtime.placement`), nil without `realtime:`.
    let realtime: RealtimeThread?
    private let worker = WorkerThread()
    let heartbeat = Atomic<UInt64>(0)
    /// True for a cycle that replaces another after a reload: its first cycle runs at once, so the
    /// period the old thread waited out before it saw the stop is not lost a second time.
    let continues: Bool

    /// Cycles completed (the watchdog's heartbeat).
    public var cyclesCompleted: UInt64 { heartbeat.load(ordering: .relaxed) }

    /// Waits (polling every 5 ms, off the cycle) until `count` cycles have completed or `limit`
    /// has passed: by then the thread has applied its real-time settings (`realtimeNotices`).
    public func awaitCycles(_ count: UInt64, within limit: Duration) {
        let end = SystemClock.shared.now() + limit
        while cyclesCompleted < count, SystemClock.shared.now() < end { usleep(5_000) }
    }
    /// Notices from applying the real-time settings on the thread itself.
    private let threadNotices = PILock<[String]>([])

    /// - Parameter replacing: the cycle this one replaces after a reload: its priority and CPU
    ///   stay, as the bus and CAN workers' do (they change at a restart).
    public init(runner: SiteRunner, shared: SharedState, replacing previous: CycleThread? = nil) {
        self.runner = runner
        self.shared = shared
        period = runner.settings.period
        continues = previous != nil
        if let previous {
            realtime = previous.realtime
        } else if let settings = runner.settings.realtime {
            let placement = Realtime.placement(settings)
            realtime = placement.cycle
            if let notice = placement.notice { threadNotices.withLock { $0 = [notice] } }
        } else {
            realtime = nil
        }
    }

    /// The notices from placing the thread (a `realtime.cpu` outside bessd's CPUs) and making it
    /// real-time, for each part that was refused.
    public var realtimeNotices: [String] { threadNotices.withLock { $0 } }
    /// Where the cycle and its workers run, for the log; nil without `realtime:`.
    public var realtimePlacement: String? {
        realtime.map {
            "the cycle SCHED_FIFO \($0.priority), its bus and CAN workers \(RealtimeSettings.workerPriority(below: $0.priority)), "
                + ($0.cpu.map { "all on CPU \($0)" } ?? "not pinned")
        }
    }

    public func start() {
        worker.start(name: "bessd-cycle", prefaultedStackBytes: realtime == nil ? nil : 512 * 1024) { [self] in loop() }
    }

    /// The thread's kernel id once it runs (tests read its affinity and policy from /proc).
    var threadID: Int32 { worker.threadID }

    /// Stops after the current cycle.
    public func stop() { worker.stop() }

    private func loop() {
        var isRealtime = false
        if let realtime {
            let entered = Realtime.enter(realtime, as: "the cycle")
            threadNotices.withLock { $0 += entered.notices }
            isRealtime = entered.isFIFO
        }
        runner.attach(shared, realtime: isRealtime)
        let clock = SystemClock.shared
        var deadline = continues ? clock.now() : clock.now() + period
        runner.phase.publish(nextDeadline: deadline)
        while worker.isRunning {
            // The deadline, or earlier when the bus poller has every reading for this cycle.
            let due = runner.phase.wait(until: deadline, on: clock)
            let now = clock.now()
            if due.alarm {
                // A BMS frame calls for less power: an extra cycle now. The deadline stays where it
                // was, and the lateness of the schedule is not this cycle's to record.
                runner.counters.alarmCycles &+= 1
                runner.run(now: now, lateness: nil)
                heartbeat.add(1, ordering: .relaxed)
                continue
            }
            let lateness = now - due.dueAt
            if due.onReadings { runner.counters.startedOnReadings &+= 1 }
            if now - deadline > period {
                // Missed at least one deadline: count it and re-phase rather than burst.
                runner.counters.overruns &+= 1
                deadline = now - .nanoseconds(now.nanoseconds % period.nanosecondsClamped)
            }
            // The next deadline is published before this cycle runs, so a worker woken by this
            // cycle's hand-over already plans its reads for the next one.
            deadline = deadline + period
            runner.phase.publish(nextDeadline: deadline)
            runner.run(now: now, lateness: lateness)
            heartbeat.add(1, ordering: .relaxed)
        }
        runner.phase.publish(nextDeadline: nil)
    }
}

/// The cycle's timing: counted by the cycle thread and `SiteRunner.run`, published with the
/// statistics. Plain values and one histogram allocated at start.
public struct CycleCounters {
    var histogram = LatencyHistogram()
    public internal(set) var cycles: UInt64 = 0
    public internal(set) var overruns: UInt64 = 0
    /// Cycles started before their deadline because every reading for them was in.
    public internal(set) var startedOnReadings: UInt64 = 0
    /// Extra cycles a BMS alarm woke (besides the regular ones).
    public internal(set) var alarmCycles: UInt64 = 0
    /// When the last cycle ran, and the longest interval between two cycles so far.
    var lastRunAt: MonotonicInstant?
    var longestGap = Duration.zero
    /// The running cycle's lateness, µs; nil for an extra cycle an alarm woke.
    var latenessMicroseconds: Int64?
    var realtime = false

    /// A cycle starts at `now`, `lateness` after its deadline (nil: an extra cycle, off the schedule).
    mutating func record(now: MonotonicInstant, lateness: Duration?) {
        let nanoseconds = lateness?.nanosecondsClamped
        if let nanoseconds { histogram.record(microseconds: max(0, nanoseconds) / 1000) }
        latenessMicroseconds = nanoseconds.map { $0 / 1000 }
        if let lastRunAt { longestGap = max(longestGap, now - lastRunAt) }
        lastRunAt = now
        cycles &+= 1
    }

    /// The counters go on from what the cycle before a reload published: a counter never goes
    /// back, and an overrun before a reload stays in status and /metrics (zero at start).
    mutating func resume(from published: CycleStatistics, realtime: Bool) {
        cycles = published.cycles
        overruns = published.overruns
        startedOnReadings = published.startedOnReadings
        alarmCycles = published.alarmCycles
        histogram.copy(from: published.histogram)
        lastRunAt = published.lastRunAt
        longestGap = published.longestGap
        self.realtime = realtime
    }
}

extension SiteRunner {
    /// Takes orders from and publishes into `shared` from the next `run` on, with the counters as
    /// `shared` last published them (a cycle thread after a reload goes on counting). SCADA's
    /// commands and the mailbox are taken afresh: a reloaded controller gets them again.
    public func attach(_ shared: SharedState, realtime: Bool = false) {
        self.shared = shared
        var published = CycleStatistics()
        shared.read(statistics: &published)
        counters.resume(from: published, realtime: realtime)
        inbox.commandsTaken = 0
        inbox.mailbox.generation = 0
    }
}
