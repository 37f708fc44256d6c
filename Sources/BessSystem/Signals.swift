import Glibc
public import Synchronization

// The process's signals: SIGINT and SIGTERM stop, SIGHUP reloads, SIGXFSZ is ignored. Every worker
// thread blocks them all (`WorkerThread`), so they reach the main thread only.

/// Set by SIGINT/SIGTERM; the run loop stops at the next cycle.
public let stopRequested = Atomic<Bool>(false)

/// Set by SIGHUP; the service loop reloads the configuration.
public let reloadRequested = Atomic<Bool>(false)

/// The eventfd the signal handlers write to after setting a flag, so that a thread sleeping on it
/// (the service loop) acts at once; -1 when none. One `write(2)`: async-signal-safe.
let signalWakeupDescriptor = Atomic<Int32>(-1)

/// Wakes `wakeup` whenever SIGINT, SIGTERM or SIGHUP arrives (after `installStopHandlers`); nil
/// wakes nothing. The caller keeps `wakeup` alive while it is set.
public func wakeOnSignals(_ wakeup: Wakeup?) {
    signalWakeupDescriptor.store(wakeup?.descriptor ?? -1, ordering: .releasing)
}

private func wakeSleeper() {
    let fd = signalWakeupDescriptor.load(ordering: .acquiring)
    guard fd >= 0 else { return }
    var one: UInt64 = 1
    _ = write(fd, &one, 8)
}

/// Installs SIGINT/SIGTERM handlers that stop the run loop cleanly, and SIGHUP for a reload.
public func installStopHandlers() {
    stopRequested.store(false, ordering: .relaxed)
    reloadRequested.store(false, ordering: .relaxed)
    let handler: @convention(c) (Int32) -> Void = { _ in
        stopRequested.store(true, ordering: .relaxed)
        wakeSleeper()
    }
    signal(SIGINT, handler)
    signal(SIGTERM, handler)
    let hup: @convention(c) (Int32) -> Void = { _ in
        reloadRequested.store(true, ordering: .relaxed)
        wakeSleeper()
    }
    signal(SIGHUP, hup)
    // A file-size limit must cost a record (SPOOL_FULL), never the daemon.
    signal(SIGXFSZ, SIG_IGN)
    // A parent may have spawned us with these blocked; a service must always hear them.
    var set = sigset_t()
    sigemptyset(&set)
    for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, number) }
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
}
