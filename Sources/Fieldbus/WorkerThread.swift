import Glibc
import Synchronization

/// A dedicated OS thread for a bus worker or server, with a stop flag its loop polls.
///
/// `@unchecked Sendable`: `thread` is written only by `start` and `stop`, which the owner calls from
/// one thread; the loop reads only the atomic flag.
public final class WorkerThread: @unchecked Sendable {
    private let running = Atomic<Bool>(false)
    private var thread: pthread_t?

    public init() {}

    /// True until `stop()` is called; the loop checks it between rounds.
    public var isRunning: Bool { running.load(ordering: .relaxed) }

    /// Runs `body` on a new thread.
    public func start(_ body: @escaping @Sendable () -> Void) {
        running.store(true, ordering: .relaxed)
        let box = Unmanaged.passRetained(Box(body))
        var tid = pthread_t()
        pthread_create(&tid, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box.toOpaque())
        thread = tid
    }

    /// Clears the flag and waits for the loop to return. Safe to call more than once.
    public func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
