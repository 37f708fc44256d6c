public import ControlCore
public import Glibc
import Synchronization

/// A `MonotonicClock` that only moves when told (`advance(by:)`, `advance(to:)`): the threads'
/// waits end when a descriptor they watch is ready, or when the test has moved the clock to their
/// deadline. For tests; real descriptors (sockets, eventfds) are still watched for real.
public final class ManualClock: MonotonicClock {
    /// The instant, and how many times the test has moved it.
    private let state: Mutex<(instant: MonotonicInstant, moves: UInt64)>
    /// For each thread now in `poll`: the move it last looked at (`running` once it has returned)
    /// and the descriptors it waits on.
    private let watchers = Mutex<[UInt: (looked: UInt64, fds: [pollfd])]>([:])
    private static let running = UInt64.max

    /// What `sleep` blocks on and every move signals (a condition, not a spin: the machine may
    /// have two cores). Allocated once, never freed while the clock lives.
    private nonisolated(unsafe) let moveLock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private nonisolated(unsafe) let moved = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// A clock standing at `start` (a second after zero by default, so "never" stays before it).
    public init(at start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000)) {
        state = Mutex((start, 0))
        pthread_mutex_init(moveLock, nil)
        pthread_cond_init(moved, nil)
    }

    deinit {
        pthread_cond_destroy(moved)
        pthread_mutex_destroy(moveLock)
        moved.deallocate()
        moveLock.deallocate()
    }

    public func now() -> MonotonicInstant { state.withLock { $0.instant } }

    /// Moves the clock forward by `step`.
    public func advance(by step: Duration) { move { $0.instant = $0.instant + step } }

    /// Moves the clock to `target` (never back).
    public func advance(to target: MonotonicInstant) { move { $0.instant = max($0.instant, target) } }

    /// Applies `change`, counts the move, and wakes every `sleep`. The change is made under the
    /// condition's lock, so a sleeper that has just looked at the clock cannot miss it.
    private func move(_ change: (inout (instant: MonotonicInstant, moves: UInt64)) -> Void) {
        pthread_mutex_lock(moveLock)
        state.withLock { change(&$0); $0.moves &+= 1 }
        pthread_cond_broadcast(moved)
        pthread_mutex_unlock(moveLock)
    }

    /// True once every thread that has waited on this clock is waiting again, having looked at the
    /// clock since it was last moved and found nothing due or ready: what the move made due has been
    /// acted on, and what the threads sent meanwhile is sent. The test's way to know the threads
    /// have caught up, as `EmbeddedEventLoop.advanceTime` runs what fell due.
    public var settled: Bool {
        let moves = state.withLock { $0.moves }
        let waiting = watchers.withLock { all in all.values.allSatisfy { $0.looked == moves } ? all.values.flatMap(\.fds) : nil }
        // Still unsettled while a descriptor a waiting thread watches is ready (bytes a test sent
        // it, not yet read): the thread is about to act on them.
        guard var fds = waiting else { return false }
        return fds.isEmpty || Glibc.poll(&fds, nfds_t(fds.count), 0) == 0
    }

    /// How many times a `sleep` has looked at the clock: once on entry and once per move (tests
    /// read it to see that a sleep blocks rather than spins).
    package var sleepLooks: UInt64 { looks.load(ordering: .relaxed) }
    private let looks = Atomic<UInt64>(0)

    /// Blocks until the clock has been moved to `deadline`.
    public func sleep(until deadline: MonotonicInstant) {
        pthread_mutex_lock(moveLock)
        while looks.add(1, ordering: .relaxed).newValue > 0, now() < deadline { pthread_cond_wait(moved, moveLock) }
        pthread_mutex_unlock(moveLock)
    }

    public func wait(for wakeup: Wakeup, until deadline: MonotonicInstant) -> Bool {
        var fd = pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)
        return withUnsafeMutablePointer(to: &fd) { pointer in
            poll(pointer, count: 1, until: deadline) > 0 && wakeup.drain()
        }
    }

    /// Watches the descriptors in real time, in slices of a millisecond, until one is ready or the
    /// clock has been moved to `deadline`. The thread counts as waiting (for `settled`) only once it
    /// has found the deadline not yet due and no descriptor ready: a move that made the deadline due
    /// leaves it unsettled until it has returned, acted, and come back to wait.
    public func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, until deadline: MonotonicInstant) -> Int32 {
        let thread = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        defer { watchers.withLock { $0[thread] = (Self.running, []) } }
        while true {
            let (current, moves) = state.withLock { ($0.instant, $0.moves) }
            let ready = Glibc.poll(fds, nfds_t(count), 0)
            if ready != 0 || current >= deadline { return ready }
            let watched = Array(UnsafeBufferPointer(start: fds, count: count))
            watchers.withLock { $0[thread] = (moves, watched) }
            let woken = Glibc.poll(fds, nfds_t(count), 1)
            if woken != 0 { return woken }
        }
    }
}
