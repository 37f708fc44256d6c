public import ControlCore
import Glibc
import Synchronization

/// A dedicated OS thread for a bus worker or server, with a stop flag its loop polls.
///
/// `@unchecked Sendable`: `thread` is written only by `start` and `stop`, which the owner calls from
/// one thread; the loop reads only the atomic flag.
///
/// Every signal is blocked on the new thread (it inherits a fully blocked mask at creation), so
/// SIGHUP, SIGTERM and SIGINT are delivered to the main thread only and never cut a
/// `clock_nanosleep` or a bus read short.
public final class WorkerThread: @unchecked Sendable {
    private let running = Atomic<Bool>(false)
    private let inBody = Atomic<Bool>(false)
    private let kernelID = Atomic<Int32>(0)
    private var thread: pthread_t?

    public init() {}

    /// True until `stop()` is called; the loop checks it between rounds.
    public var isRunning: Bool { running.load(ordering: .relaxed) }

    /// The monotonic nanoseconds of the loop's last turn (`turn()`); the thread's start until the first.
    private let lastTurnNanoseconds = Atomic<Int64>(0)

    /// Called by the loop at the top of each round in place of `isRunning`: marks the round (the
    /// watchdog's view of progress, `lastTurn`) and says whether to go on. One clock read, no lock.
    public func turn() -> Bool {
        lastTurnNanoseconds.store(SystemClock.shared.now().nanoseconds, ordering: .relaxed)
        return isRunning
    }

    /// When the loop last turned (or the thread started), on the monotonic clock; nil before start.
    /// Any thread may read it.
    public var lastTurn: MonotonicInstant? {
        let ns = lastTurnNanoseconds.load(ordering: .relaxed)
        return ns == 0 ? nil : MonotonicInstant(nanoseconds: ns)
    }

    /// True while the thread's body runs (false before start and once it returned). The watchdog
    /// reads it: a bus worker whose loop has ended is a dead worker.
    public var isAlive: Bool { inBody.load(ordering: .acquiring) }

    /// The thread's kernel id (/proc/PID/task/TID) once its body runs; 0 before.
    public var threadID: Int32 { kernelID.load(ordering: .acquiring) }

    /// Runs `body` on a new thread, named `name` (`ps -L`, `top -H`; at most 15 bytes) before its
    /// id is published. With `prefaultedStackBytes`, the thread runs on a stack of that size that is
    /// mapped, touched and (where permitted) locked before it starts, so the cycle never takes a page
    /// fault on its stack.
    public func start(name: String? = nil, prefaultedStackBytes: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        running.store(true, ordering: .relaxed)
        lastTurnNanoseconds.store(SystemClock.shared.now().nanoseconds, ordering: .relaxed)
        let box = Unmanaged.passRetained(Box({ [self] in
            if let name { CurrentThread.name(name) }
            kernelID.store(CurrentThread.id, ordering: .releasing)
            body()
        }) { [self] in inBody.store(false, ordering: .releasing) })
        var tid = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let bytes = prefaultedStackBytes {
            let size = max(Int(PTHREAD_STACK_MIN), (bytes + 4095) & ~4095)
            let memory = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)
            if let memory, memory != MAP_FAILED {
                memset(memory, 0, size)
                _ = mlock(memory, size)
                pthread_attr_setstack(&attributes, memory, size)
                stack = (memory, size)
            }
        }
        // The new thread inherits the creator's signal mask: block everything around the creation.
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        inBody.store(true, ordering: .releasing)
        pthread_create(&tid, &attributes, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            box.done()
            return nil
        }, box.toOpaque())
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        thread = tid
    }

    private var stack: (UnsafeMutableRawPointer, Int)?

    /// Clears the flag, calls `wake` (to end a wait the loop may be in) and waits for the loop to
    /// return. Safe to call more than once.
    public func stop(wake: (() -> Void)? = nil) {
        guard running.exchange(false, ordering: .relaxed) else { return }
        wake?()
        if let thread { pthread_join(thread, nil) }
        thread = nil
        if let (memory, size) = stack { munmap(memory, size) }
        stack = nil
    }

    private final class Box {
        let body: @Sendable () -> Void
        let done: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void, done: @escaping @Sendable () -> Void) {
            self.body = body
            self.done = done
        }
    }
}
