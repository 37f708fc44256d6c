public import Glibc

/// A lock around a value, built on a POSIX mutex with priority inheritance
/// (`PTHREAD_PRIO_INHERIT`): a reader holding it while the SCHED_FIFO cycle waits runs at the
/// cycle's priority until it lets go, so the wait is bounded by the reader's critical section.
///
/// Why not `Synchronization.Mutex`: ThreadSanitizer cannot see the futex calls inside the standard
/// library, so every access `Mutex` protects is reported as a race and `make tsan` proves nothing.
/// A pthread mutex is intercepted by ThreadSanitizer, and its priority inheritance is explicit.
///
/// `@unchecked Sendable`: `value` is only reached inside `withLock`, under the mutex.
public final class PILock<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    /// The mutex is allocated once, here; locking allocates nothing.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_setprotocol(&attributes, Int32(PTHREAD_PRIO_INHERIT))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    /// The corresponding C functions are `pthread_mutex_lock` and `pthread_mutex_unlock`.
    @inlinable
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
