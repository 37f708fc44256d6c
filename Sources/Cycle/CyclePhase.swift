public import BessSystem
public import ControlCore
import Glibc
import Synchronization

/// How long before the cycle's deadline a reader (the bus poller, or a worker driving its own line)
/// starts its reads, so the reading lands before the cycle wakes: twice the worst recent time from
/// the planned start to the last reply (the thread's own wake-up lateness and the device's answer
/// time, which on a loaded machine is most of it), plus 0.5 ms; at least 1 ms and `floor` of the
/// period, at most half a period. One slow round widens the lead at once; the worst decays by 1/256
/// a round (about 2.5 s at 10 ms), so spikes seen recently stay covered.
///
/// The floor: 5 % of the period when the cycle keeps its deadline whatever the readings do (at
/// 100 ms, 5 ms: a 10,000-cycle run with a 1 ms floor ran 13 of 80,000 unit-cycles on the previous
/// reading). When the cycle starts as soon as the readings are in (`CyclePhase.startsOnReadings`),
/// the lead no longer adds to the time a change takes to reach the wire: the whole schedule (reads,
/// cycle, writes) moves a lead ahead of the deadlines, and the deadline is only how long the cycle
/// waits for a slow round. The lead is then 80 % of the period: a round may take that long and still
/// start its cycle. The previous cycle's writes still go out a whole period (less one round) before
/// the next reads, whatever the lead.
struct ReadLead {
    /// The worst recent time from a round's planned start to its last answer, in nanoseconds.
    private(set) var worst: Int64 = 1_000_000

    /// A round planned at `readAt` had its last answer at `done`.
    mutating func record(readAt: MonotonicInstant, done: MonotonicInstant) {
        let took = max(0, (done - readAt).nanosecondsClamped)
        worst = took > worst ? took : worst - (worst - took) / 256
    }

    /// How long before a deadline of a cycle of `period` the reads start.
    func lead(period: Duration, startsOnReadings: Bool = false) -> Duration {
        let period = period.nanosecondsClamped
        if startsOnReadings { return .nanoseconds(max(1_000_000, period * 4 / 5)) }
        return .nanoseconds(min(max(1_000_000, period / 20, 2 * worst + 500_000), period / 2))
    }
}

/// The control cycle's schedule as the bus workers see it: the deadline of the next cycle, and —
/// when one bus poller reads every real device of the site — the hand-back that says "the readings
/// for that cycle are in".
///
/// Deadlines stay on a fixed grid (one period apart); the readers start their reads a lead before
/// each. With `startsOnReadings`, the cycle runs at the earlier of its deadline and the moment the
/// poller has every reading for it, so a change on the bus reaches the control law one round after
/// the read starts instead of one lead; a round that is late changes nothing (the cycle runs at its
/// deadline on what it has, as before).
public final class CyclePhase: @unchecked Sendable {
    /// The next deadline's nanoseconds; 0 while no cycle thread runs (an atomic holds no instant).
    private let deadline = Atomic<Int64>(0)
    /// The cycle's period.
    public let period: Duration
    private let early = Atomic<Bool>(false)
    private let readyFor = Atomic<Int64>(0)
    private let readyAt = Atomic<Int64>(0)
    private let ready = Wakeup()
    private let alarms = Atomic<Bool>(false)
    private let alarmRaised = Atomic<Bool>(false)

    /// The schedule of a cycle of `period`. Its waits are timed on the clock the cycle passes to
    /// `wait(until:on:)`, the one the cycle reads its own instants from.
    public init(period: Duration) {
        self.period = period
    }

    /// The next cycle's deadline; nil while no cycle thread runs.
    public var upcoming: MonotonicInstant? {
        let ns = deadline.load(ordering: .acquiring)
        return ns > 0 ? MonotonicInstant(nanoseconds: ns) : nil
    }

    /// Published by the cycle before it sleeps (nil when it stops).
    public func publish(nextDeadline: MonotonicInstant?) {
        deadline.store(nextDeadline?.nanoseconds ?? 0, ordering: .releasing)
    }

    /// True when the cycle starts as soon as the readings for it are in.
    public var startsOnReadings: Bool { early.load(ordering: .relaxed) }

    /// Set once, before the cycle starts, by the site whose every per-cycle read the bus poller
    /// makes (a site with a serial line or a register map read by its own worker keeps the deadline).
    func enableStartOnReadings() { early.store(true, ordering: .relaxed) }

    /// True when a CAN worker may wake the cycle for an alarm (set once, before the cycle starts):
    /// the cycle then waits on its wake-up even without `startsOnReadings`, and the bus workers put
    /// an extra cycle's setpoints on the wire the moment it hands them over.
    public var alarmsEnabled: Bool { alarms.load(ordering: .relaxed) }

    func enableAlarms() { alarms.store(true, ordering: .relaxed) }

    /// A BMS frame calls for less power (`BMSAlarmWatch`): wake the cycle now for an extra cycle.
    /// One eventfd write; no allocation; from any thread.
    public func raiseAlarm() {
        alarmRaised.store(true, ordering: .releasing)
        ready.signal()
    }

    /// The poller's side: every reading for the cycle due at `deadline` came in at `at`. One eventfd
    /// write; no allocation.
    func readingsIn(for deadline: MonotonicInstant, at: MonotonicInstant) {
        readyAt.store(at.nanoseconds, ordering: .relaxed)
        readyFor.store(deadline.nanoseconds, ordering: .releasing)
        ready.signal()
    }

    /// The cycle's side: sleeps until `deadline` or, with `startsOnReadings`, until the readings for
    /// it are in, whichever is first; with alarms enabled, an alarm ends the wait at once (`alarm`:
    /// an extra cycle, the deadline stays). Returns the instant the cycle was due (the deadline, or
    /// when the readings came in), from which its wake-up lateness counts, and whether the readings
    /// started it.
    ///
    /// Generic over `clock`, so the cycle's calls on the system's clock are direct (the cycle
    /// thread's use is specialised for `SystemClock`); a test passes the `ManualClock` it moves.
    public func wait<Clock: MonotonicClock>(until deadline: MonotonicInstant, on clock: Clock)
        -> (dueAt: MonotonicInstant, onReadings: Bool, alarm: Bool) {
        let early = early.load(ordering: .relaxed)
        guard early || alarms.load(ordering: .relaxed) else {
            clock.sleep(until: deadline)
            return (deadline, false, false)
        }
        // True right after the wait below consumed a signal: the readings' check then has nothing
        // left to consume (a read of an empty eventfd is a system call a cycle for nothing).
        var drained = false
        while true {
            if alarmRaised.exchange(false, ordering: .acquiringAndReleasing) {
                return (clock.now(), false, true)
            }
            if early, readyFor.load(ordering: .acquiring) == deadline.nanoseconds {
                if !drained { ready.drain() }
                let at = MonotonicInstant(nanoseconds: readyAt.load(ordering: .relaxed))
                if at < deadline {
                    alarmRaised.store(false, ordering: .relaxed)  // this cycle reads the frame that raised it
                    return (at, true, false)
                }
            }
            if clock.now() >= deadline {
                alarmRaised.store(false, ordering: .relaxed)
                return (deadline, false, false)
            }
            // On the system clock, ppoll: its timer is cancelled when the readings come first (no
            // stray timer interrupt). Real-time threads get no timer slack; others up to 0.1 % of
            // the wait, and only when the cycle runs at its deadline because the readings did not come.
            // A signal left from a round that came in after its cycle had already run is consumed
            // here, so it cannot keep the wait spinning; the flags above, not the signal, say what
            // woke it.
            drained = clock.wait(for: ready, until: deadline)
        }
    }

    /// `wait(until:on:)` on the system's clock.
    public func wait(until deadline: MonotonicInstant) -> (dueAt: MonotonicInstant, onReadings: Bool, alarm: Bool) {
        wait(until: deadline, on: SystemClock.shared)
    }
}
