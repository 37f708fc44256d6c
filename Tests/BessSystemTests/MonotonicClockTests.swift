import BessSystem
import ControlCore
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite("The one monotonic clock and the back-off on it")
struct MonotonicClockTests {
    @Test("a poll timeout: the deadline rounded up plus 1 ms, 0 once passed, a minute at most, none without")
    func pollTimeout() {
        let now = MonotonicInstant(nanoseconds: 1_000_000_000)
        #expect(SystemClock.pollTimeout(until: nil, now: now) == -1)
        #expect(SystemClock.pollTimeout(until: now + .milliseconds(250), now: now) == 251)
        #expect(SystemClock.pollTimeout(until: now + .nanoseconds(1), now: now) == 2)
        #expect(SystemClock.pollTimeout(until: now, now: now) == 0)
        #expect(SystemClock.pollTimeout(until: now - .seconds(1), now: now) == 0)
        #expect(SystemClock.pollTimeout(until: now + .seconds(3600), now: now) == 60_000)
    }

    @Test("a sleep on the system clock ends at or after its deadline, never before")
    func systemClock() {
        let clock: any MonotonicClock = SystemClock.shared
        let before = clock.now()
        let deadline = before + .milliseconds(2)
        clock.sleep(until: deadline)
        #expect(clock.now() >= deadline)
    }

    @Test("a manual clock moves only when told, and never back")
    func manualClock() {
        let clock = ManualClock(at: MonotonicInstant(nanoseconds: 5_000_000_000))
        #expect(clock.now() == MonotonicInstant(nanoseconds: 5_000_000_000))
        clock.advance(by: .milliseconds(10))
        #expect(clock.now() == MonotonicInstant(nanoseconds: 5_010_000_000))
        clock.advance(to: MonotonicInstant(nanoseconds: 1_000_000_000))
        #expect(clock.now() == MonotonicInstant(nanoseconds: 5_010_000_000))
        #expect(clock.settled, "no thread waits on it")
    }

    @Test("a sleep on a manual clock returns only once the clock reaches its deadline, woken by each move")
    func manualClockSleepBlocks() {
        let clock = ManualClock(at: MonotonicInstant(nanoseconds: 5_000_000_000))
        let deadline = clock.now() + .seconds(1)
        final class Flag: Sendable { let raised = Atomic<Bool>(false) }
        let done = Flag()
        let sleeper = Thread {
            clock.sleep(until: deadline)
            done.raised.store(true, ordering: .releasing)
        }
        sleeper.start()
        #expect(waitFor { clock.sleepLooks >= 1 }, "the sleeper looked once")
        var looks: UInt64 = 1
        /// Moves the clock and waits for the sleeper's look at it. A move is made under the lock the
        /// sleeper holds from its look until it waits again, so each move gets its own look.
        func move(_ change: () -> Void) -> Bool {
            change()
            looks += 1
            let expected = looks
            return waitFor { clock.sleepLooks >= expected }
        }
        for step in 1...9 {
            // A move short of the deadline, then a move that leaves the instant where it is: the
            // sleeper looks at the second only if it went back to waiting after the first.
            let woken = move { clock.advance(by: .milliseconds(100)) }
            #expect(woken, "move \(step) woke the sleeper")
            let waitingAgain = move { clock.advance(to: clock.now() - .seconds(1)) }
            #expect(waitingAgain, "after move \(step) the sleeper waited again")
            let returned = done.raised.load(ordering: .acquiring)
            #expect(!returned, "returned \(10 - step) moves before its deadline")
        }
        clock.advance(by: .milliseconds(100))
        #expect(waitFor { done.raised.load(ordering: .acquiring) }, "woken at its deadline")
        #expect(clock.sleepLooks <= looks + 5, "one look per move (a spurious wake or two allowed): \(clock.sleepLooks)")
    }

    @Test("back-off pauses: current back-off plus up to a quarter, doubling to the maximum, reset to the first")
    func backoff() {
        var backoff = Backoff(first: .milliseconds(100), maximum: .milliseconds(300), seed: 42)
        #expect(backoff.isFirst)
        let bounds: [(Duration, Duration)] = [(.milliseconds(100), .milliseconds(125)), (.milliseconds(200), .milliseconds(250)),
                                              (.milliseconds(300), .milliseconds(375)), (.milliseconds(300), .milliseconds(375))]
        for (low, high) in bounds {
            let pause = backoff.next()
            #expect(pause >= low && pause <= high, "\(pause) not in \(low)...\(high)")
        }
        #expect(!backoff.isFirst)
        backoff.reset()
        #expect(backoff.isFirst)
        let first = backoff.next()
        #expect(first >= .milliseconds(100) && first <= .milliseconds(125))
        // A first back-off of nothing still waits: at least a nanosecond.
        var zero = Backoff(first: .zero, maximum: .zero, seed: 1)
        #expect(zero.next() > .zero)
    }

    @Test("Backoff over BackoffSchedule gives, pause for pause, what its own doubling and LCG gave before")
    func backoffMatchesTheFormerLoop() {
        for (first, maximum, seed) in [(Duration.milliseconds(100), Duration.milliseconds(300), UInt64(42)), (.milliseconds(500), .seconds(30), 7),
                                       (.seconds(1), .seconds(300), 123_456_789), (.seconds(2), .seconds(1), 3), (.zero, .zero, 1)] {
            var backoff = Backoff(first: first, maximum: maximum, seed: seed)
            // The former implementation, inline.
            let firstNanoseconds = max(1, first.nanosecondsClamped)
            let maximumNanoseconds = max(firstNanoseconds, maximum.nanosecondsClamped)
            var current = firstNanoseconds, state = seed | 1
            for step in 0..<40 {
                if step == 25 { backoff.reset(); current = firstNanoseconds }
                #expect(backoff.isFirst == (current == firstNanoseconds))
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let expected = Duration.nanoseconds(current + Int64(state >> 40) % (current / 4 + 1))
                current = min(current * 2, maximumNanoseconds)
                #expect(backoff.next() == expected, "\(first)...\(maximum) seed \(seed) step \(step)")
            }
        }
    }
}
