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
    /// The instant, and how many times the test has moved it.
    private let state: Mutex<(instant: MonotonicInstant, moves: UInt64)>
    /// For each thread now in `poll`: the move it last looked at (`running` once it has returned).
    private let watchers = Mutex<[UInt: UInt64]>([:])
    private static let running = UInt64.max

    /// A clock standing at `start` (a second after zero by default, so "never" stays before it).
    public init(at start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000)) { state = Mutex((start, 0)) }

    public func now() -> MonotonicInstant { state.withLock { $0.instant } }

    /// Moves the clock forward by `step`.
    public func advance(by step: Duration) { state.withLock { $0.instant = $0.instant + step; $0.moves &+= 1 } }

    /// Moves the clock to `target` (never back).
    public func advance(to target: MonotonicInstant) { state.withLock { $0.instant = max($0.instant, target); $0.moves &+= 1 } }

    /// True once every thread that has waited on this clock is waiting again and has looked at the
    /// clock since it was last moved: what the move made due has been acted on. The test's way to
    /// know the threads have caught up, as `EmbeddedEventLoop.advanceTime` runs what fell due.
    public var settled: Bool {
        let moves = state.withLock { $0.moves }
        return watchers.withLock { $0.values.allSatisfy { $0 == moves } }
    }

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
        let thread = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        defer { watchers.withLock { $0[thread] = Self.running } }
        while true {
            let (current, moves) = state.withLock { ($0.instant, $0.moves) }
            watchers.withLock { $0[thread] = moves }
            let due = current >= deadline
            let ready = Glibc.poll(fds, nfds_t(count), due ? 0 : 1)
            if ready != 0 || due { return ready }
        }
    }
}
