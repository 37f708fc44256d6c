public import BessSystem
public import ControlCore
public import Glibc
import Synchronization

/// Where the bus threads (the bus poller, the endpoint workers, their connections) read the time
/// and wait: the system's monotonic clock in bessd (`SystemBusClock`), a clock the test moves in
/// tests (`ManualBusClock`), which step the threads the way swift-nio's `EmbeddedEventLoop` steps
/// time. Each call is one call through the protocol and allocates nothing.
public protocol BusClock: AnyObject, Sendable {
    /// The current instant.
    func now() -> MonotonicInstant
    /// Sleeps until `deadline`; a signal never ends the sleep early.
    func sleep(until deadline: MonotonicInstant)
    /// Waits for `wakeup` until `deadline`; true when it was signalled (every pending signal is
    /// consumed).
    func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool
    /// `poll` over the first `count` entries of `fds` until one is ready or `deadline` comes (at
    /// once when it has passed): the number ready, `revents` filled; 0 at the deadline.
    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`), as bessd's bus threads use it.
public final class SystemBusClock: BusClock {
    /// The one instance (it holds no state).
    public static let shared = SystemBusClock()

    private init() {}

    public func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: SystemClock.monotonicNanoseconds()) }

    public func sleep(until deadline: MonotonicInstant) { SystemClock.sleep(untilMonotonic: deadline.nanoseconds) }

    /// To the nanosecond (`ppoll`), as `sleep` is.
    public func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool {
        _ = wakeup.waitPrecisely(until: deadline.nanoseconds)
        return wakeup.drain()
    }

    /// The timeout is rounded up to the millisecond, so the wake-up finds the deadline passed.
    public func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32 {
        let left = deadline.nanoseconds - SystemClock.monotonicNanoseconds()
        let ms = left <= 0 ? 0 : Int32(clamping: (left + 999_999) / 1_000_000)
        return Glibc.poll(fds, nfds_t(count), ms)
    }
}

/// A clock that only moves when told (`advance(by:)`, `advance(to:)`): the bus threads' waits end
/// when a descriptor they watch is ready, or when the test has moved the clock to their deadline.
/// For tests; real descriptors (sockets, eventfds) are still watched for real.
public final class ManualBusClock: BusClock {
    private let instant: Mutex<MonotonicInstant>

    /// A clock standing at `start` (a second after zero by default, so "never" stays before it).
    public init(at start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000)) { instant = Mutex(start) }

    public func now() -> MonotonicInstant { instant.withLock { $0 } }

    /// Moves the clock forward by `step`.
    public func advance(by step: Duration) { instant.withLock { $0 = $0 + step } }

    /// Moves the clock to `target` (never back).
    public func advance(to target: MonotonicInstant) { instant.withLock { $0 = max($0, target) } }

    public func sleep(until deadline: MonotonicInstant) {
        while now() < deadline { usleep(200) }
    }

    public func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool {
        var fd = pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)
        return withUnsafeMutablePointer(to: &fd) { pointer in
            poll(pointer, count: 1, until: deadline) > 0 && wakeup.drain()
        }
    }

    /// Watches the descriptors in real time, in slices of a millisecond, until one is ready or the
    /// clock has been moved to `deadline`.
    public func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32 {
        while true {
            let due = now() >= deadline
            let ready = Glibc.poll(fds, nfds_t(count), due ? 0 : 1)
            if ready != 0 || due { return ready }
        }
    }
}

extension MonotonicInstant {
    /// The time from `rhs` to `lhs` (negative when `rhs` is later).
    @inlinable public static func - (lhs: Self, rhs: Self) -> Duration { .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds) }
}
