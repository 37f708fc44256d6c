import BessSystem
public import Config
public import Cycle
import ControlCore
import Glibc
import Synchronization

/// Feeds systemd's watchdog (`WATCHDOG=1`) from a thread of its own that does nothing else: every
/// half interval it checks that the cycle completed a cycle since the last check, woke within its
/// period, that every bus worker's thread still runs, and that not every one of them has stopped
/// turning (progress, `ServiceProgress`). Nothing that waits on a peer (sockets,
/// the spool, the journal) runs on this thread, so a slow or hostile client can never starve it.
final class Watchdog: @unchecked Sendable {
    /// What the watchdog checks; each closure reads only atomics or short locks.
    struct Health: Sendable {
        /// Cycles completed so far (the cycle's heartbeat).
        var beat: @Sendable () -> UInt64
        /// True when the last cycle woke within its period.
        var onTime: @Sendable () -> Bool
        /// True while every bus worker runs.
        var workersAlive: @Sendable () -> Bool
        /// True when the threads' progress calls for a restart (`ServiceProgress.withholdsBeat`:
        /// every bus and CAN worker stalled); a stall short of that is reported, not a restart.
        var progressHeld: @Sendable () -> Bool = { false }
    }

    let interval: Duration
    let health: Health
    let send: @Sendable (String) -> Void
    private let thread = WorkerThread()
    /// Messages sent (tests and /metrics).
    let fed = Atomic<UInt64>(0)
    /// Checks that found the daemon unhealthy.
    let withheld = Atomic<UInt64>(0)

    /// - Parameter interval: the service manager's `WATCHDOG_USEC`; checks run every half of it.
    init(interval: Duration, health: Health, send: @escaping @Sendable (String) -> Void = { SystemdNotify.send($0) }) {
        self.interval = interval
        self.health = health
        self.send = send
    }

    func start() {
        thread.start { [self] in loop() }
    }

    func stop() { thread.stop() }

    private func loop() {
        let clock = SystemClock.shared
        let half = Duration.nanoseconds(max(interval.nanosecondsClamped / 2, 1_000_000))
        var lastBeat = health.beat()
        var next = clock.now() + half
        while thread.isRunning {
            clock.sleep(until: next)
            next = next + half
            let now = clock.now()
            if now - next > half { next = now + half }  // the machine stalled us: re-phase, never burst
            let beat = health.beat()
            if beat != lastBeat, health.onTime(), health.workersAlive(), !health.progressHeld() {
                send("WATCHDOG=1")
                fed.add(1, ordering: .relaxed)
            } else {
                withheld.add(1, ordering: .relaxed)
            }
            lastBeat = beat
        }
    }
}
