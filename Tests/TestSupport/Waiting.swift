import BessSystem
import ControlCore
import Foundation
import Synchronization

/// Waits until `condition` holds or `seconds` pass; returns whether it held. The one place tests
/// poll: every wait names the condition it waits for. Timed on the monotonic clock: a wall clock
/// stepped meanwhile (the CAN VM's clock is set after boot) neither ends a wait early nor stretches it.
public func waitFor(seconds: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
    while SystemClock.shared.now() < end {
        if try condition() { return true }
        usleep(2_000)
    }
    return try condition()
}

/// Runs `work` on a thread of its own and waits until it returned or `seconds` pass; returns whether
/// it returned (a `stop()` that must end a wait with no timeout).
public func returns(within seconds: Double = 5, _ work: @escaping @Sendable () -> Void) -> Bool {
    let done = Atomic<Bool>(false)
    let thread = Thread {
        work()
        done.store(true, ordering: .releasing)
    }
    thread.start()
    return waitFor(seconds: seconds) { done.load(ordering: .acquiring) }
}
