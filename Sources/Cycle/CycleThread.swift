import BessSystem
public import ControlCore
import Glibc
import Synchronization

/// The control cycle on a dedicated thread, on absolute deadlines (`clock_nanosleep`,
/// `CLOCK_MONOTONIC`, `TIMER_ABSTIME`; or `ppoll` on the poller's hand-over, timed out at the deadline,
/// when the cycle starts as soon as its readings are in: `CyclePhase.wait`). Each period: take operator requests, snapshot → assess →
/// control → command → account (SiteRunner.step), publish status and events, beat the heart. It
/// never waits on I/O, never logs, and allocates nothing in a steady state.
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
        let body = CycleBody(runner: runner, shared: shared, realtime: isRealtime)
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
                body.alarmCycles &+= 1
                body.run(now: now, lateness: nil)
                heartbeat.add(1, ordering: .relaxed)
                continue
            }
            let lateness = now - due.dueAt
            if due.onReadings { body.startedOnReadings &+= 1 }
            if now - deadline > period {
                // Missed at least one deadline: count it and re-phase rather than burst.
                body.overruns &+= 1
                deadline = now - .nanoseconds(now.nanoseconds % period.nanosecondsClamped)
            }
            // The next deadline is published before this cycle runs, so a worker woken by this
            // cycle's hand-over already plans its reads for the next one.
            deadline = deadline + period
            runner.phase.publish(nextDeadline: deadline)
            body.run(now: now, lateness: lateness)
            heartbeat.add(1, ordering: .relaxed)
        }
        runner.phase.publish(nextDeadline: nil)
    }
}

/// Everything one control cycle does after it wakes: take operator requests from the mailbox,
/// run the site (snapshot → assess → control → command → account), publish status, statistics and
/// events. Its storage is allocated once, here; a steady-state `run` allocates nothing (the
/// allocation benchmark in Benchmarks/ calls it exactly as the cycle thread does).
public final class CycleBody {
    let runner: SiteRunner
    let shared: SharedState
    let units: Int
    /// The period, ms, as the statistics show it.
    let periodMs: Int
    let isRealtime: Bool
    var histogram = LatencyHistogram()
    /// The mailbox the cycle took last: swapped with the shared one under the lock when it holds
    /// new requests, applied outside it, then cleared in place for the next swap (both mailboxes
    /// are allocated once, at start).
    var taken: Mailbox
    var outcomes: [ResetOutcome]
    var commandsTaken: UInt64 = 0
    public private(set) var cycles: UInt64 = 0
    public internal(set) var overruns: UInt64 = 0
    /// When the last cycle ran, and the longest interval between two cycles so far.
    var lastRunAt: MonotonicInstant?
    var longestGap = Duration.zero
    /// Cycles started before their deadline because every reading for them was in.
    public internal(set) var startedOnReadings: UInt64 = 0
    /// Extra cycles a BMS alarm woke (besides the regular ones).
    public internal(set) var alarmCycles: UInt64 = 0

    public init(runner: SiteRunner, shared: SharedState, realtime: Bool = false) {
        self.runner = runner
        self.shared = shared
        isRealtime = realtime
        units = runner.settings.devices.count
        periodMs = runner.settings.periodMilliseconds
        taken = Mailbox(units: units)
        outcomes = [ResetOutcome](repeating: ResetOutcome(), count: units)
        // The counters go on from what the cycle before a reload published: a counter never goes
        // back, and an overrun before a reload stays in status and /metrics (zero at start).
        var published = CycleStatistics()
        shared.read(statistics: &published)
        cycles = published.cycles
        overruns = published.overruns
        startedOnReadings = published.startedOnReadings
        alarmCycles = published.alarmCycles
        histogram.copy(from: published.histogram)
        lastRunAt = published.lastRunAt
        longestGap = published.longestGap
    }

    /// One cycle at `now`, `lateness` after its deadline; nil for an extra cycle an alarm woke
    /// (off the schedule: no lateness recorded, no reading counted late).
    public func run(now: MonotonicInstant, lateness: Duration?) {
        let lateness = lateness?.nanosecondsClamped
        if let lateness { histogram.record(microseconds: max(0, lateness) / 1000) }
        if let lastRunAt { longestGap = max(longestGap, now - lastRunAt) }
        lastRunAt = now
        // Operator requests: the shared mailbox is swapped for the cleared one under the lock.
        var pending = false
        shared.contents.withLock { c in
            // SCADA's commands and the relay contacts' limit: plain values.
            if c.commandsGeneration != commandsTaken {
                commandsTaken = c.commandsGeneration
                runner.controller.commands = c.commands
            }
            runner.controller.inputLimitPercent = c.inputLimitPercent
            runner.controller.agc = c.agc
            runner.controller.clockSynchronized = c.clockSynchronized
            guard c.mailbox.generation != taken.generation else { return }
            pending = true
            // The cleared mailbox goes back for the next requests, with the generation carried on.
            taken.generation = c.mailbox.generation
            swap(&c.mailbox, &taken)
        }
        if pending {
            if let siteMode = taken.siteMode { runner.controller.setOperatorMode(siteMode) }
            for i in 0..<units {
                if let mode = taken.mode[i] { runner.controller.setOperatorMode(mode, unit: i) }
                if let r = taken.remoteMode[i] {
                    runner.controller.setRemoteMode(r.mode, until: now + r.lasting, emergency: r.emergency, unit: i)
                }
                if let o = taken.override[i] {
                    runner.setOverride(PowerCommand(power: o.power, expiresAt: now + o.lasting), unit: i)
                }
                if taken.clearOverride[i] { runner.setOverride(nil, unit: i) }
                if let d = taken.dispatch[i] {
                    runner.setDispatch(PowerCommand(power: d.power, expiresAt: now + d.lasting, pinned: d.pinned), unit: i)
                }
                if taken.clearDispatch[i] { runner.setDispatch(nil, unit: i) }
                // A reset is an operator action, not the steady state: its small result array may allocate.
                if taken.reset[i] { outcomes[i] = runner.controller.reset(unit: i, now: now).first?.outcome ?? ResetOutcome() }
            }
        }

        runner.step(now: now, wallClock: SystemClock.wallClockSeconds(), extra: lateness == nil)
        cycles &+= 1

        var published = false
        shared.contents.withLock { c in
            for i in 0..<units { runner.fill(&c.units[i], unit: i, now: now) }
            runner.fill(&c.site, now: now)
            // SCADA's commands as this cycle settled them go back into the record SCADA reads and
            // writes against, unless written since: the cycle is the one judge of their expiry.
            if c.commandsGeneration == commandsTaken { c.commands = runner.controller.commands }
            c.stats.periodMs = periodMs
            c.stats.cycles = cycles
            c.stats.overruns = overruns
            c.stats.lateReadings = runner.lateReadings
            c.stats.startedOnReadings = startedOnReadings
            c.stats.alarmCycles = alarmCycles
            c.stats.lastRunAt = lastRunAt
            c.stats.longestGap = longestGap
            if let lateness { c.stats.lastLatenessMicroseconds = lateness / 1000 }
            c.stats.histogram.copy(from: histogram)
            c.stats.frequency = runner.controller.site.frequency?.value ?? .nan
            c.stats.frequencySource = runner.frequencySourceInUse
            c.stats.frequencyAge = runner.frequencyTakenAt.map { max(0, now.seconds(since: $0)) } ?? .nan
            c.stats.realtime = isRealtime
            c.stats.clockSteps = runner.controller.clockSteps
            c.stats.lastClockStep = runner.controller.lastClockStep
            runner.controller.events.drain {
                c.events.push($0)
                published = true
            }
            runner.controller.drainClosedBlocks { block in
                if c.blocks.count < c.blocks.capacity { c.blocks.append(block) }
                published = true
            }
            runner.controller.drainFrequencyAssessments { assessment in
                c.frequencyEvents.publish(assessment)
                published = true
            }
            if pending {
                for i in 0..<units where taken.reset[i] { c.resetOutcomes[i] = outcomes[i] }
                c.appliedGeneration = taken.generation
            }
        }
        if pending { taken.clear() }
        // Outside the lock: the service loop wakes to log and record what was published.
        if published { shared.serviceWakeup.signal() }
        if shared.publicationsAreWatched { shared.publicationWakeup.signal() }
    }
}

extension Mailbox {
    /// Empties every request in place, keeping the arrays' storage and the generation: what the
    /// cycle does to the mailbox it has applied before it swaps it back.
    mutating func clear() {
        siteMode = nil
        for i in mode.indices {
            mode[i] = nil
            remoteMode[i] = nil
            override[i] = nil
            clearOverride[i] = false
            reset[i] = false
            dispatch[i] = nil
            clearDispatch[i] = false
        }
    }
}
