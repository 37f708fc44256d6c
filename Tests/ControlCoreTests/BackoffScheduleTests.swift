import ControlCore
import Testing

@Suite("Backoff schedule")
struct BackoffScheduleTests {
    /// The doubling loop the 2030.5 stacks wrote four times, as it stood: the reference the schedule must match.
    private static func doublingLoop(lower: UInt32, upper: UInt32, failures: Int) -> UInt64 {
        var step = UInt64(lower)
        for _ in 1..<max(failures, 1) where step < UInt64(upper) { step *= 2 }
        return min(step, UInt64(upper))
    }

    @Test("2 s doubling to 300 s: 2, 4, 8 … 256, then 300 from the ninth failure on")
    func doublesToTheCap() {
        let schedule = BackoffSchedule(first: 2, maximum: 300)
        let delays = (1...12).map { schedule.delay(afterFailures: $0) }
        #expect(delays == [2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300, 300])
        #expect(schedule.delay(afterFailures: 0) == 2, "no failure yet reads as the first")
        #expect(schedule.delay(afterFailures: .max) == 300)
    }

    @Test("the delay equals the 2030.5 doubling loop for every failure count up to 64 and several bounds")
    func matchesTheDoublingLoop() {
        for (lower, upper) in [(UInt32(2), UInt32(300)), (1, 1), (5, 3), (0, 10), (7, 7_000), (3, .max)] {
            let schedule = BackoffSchedule(first: UInt64(lower), maximum: UInt64(upper))
            for failures in 1...64 {
                #expect(schedule.delay(afterFailures: failures) == Self.doublingLoop(lower: lower, upper: upper, failures: failures),
                        "\(lower)...\(upper) after \(failures)")
            }
        }
    }

    @Test("doubling near the top of UInt64 saturates at the maximum instead of trapping")
    func saturates() {
        let schedule = BackoffSchedule(first: UInt64.max / 3, maximum: .max)
        #expect(schedule.delay(afterFailures: 3) == .max)
        #expect(BackoffSchedule.jittered(.max, draw: .max) == .max)
    }

    @Test("jitter adds up to a quarter of the delay from the draw's top 24 bits; none under 4")
    func jitterBounds() {
        var state: UInt64 = 42 | 1
        for _ in 0..<1_000 {
            let draw = BackoffSchedule.nextDraw(&state)
            let pause = BackoffSchedule.jittered(1_000_000, draw: draw)
            #expect(pause >= 1_000_000 && pause <= 1_250_000)
            #expect(pause - 1_000_000 == (draw >> 40) % 250_001)
        }
        #expect(BackoffSchedule.jittered(3, draw: .max) == 3)
        #expect(BackoffSchedule.jittered(100, draw: 0) == 100)
    }

    @Test("the same seed gives the same draws; the caller owns the generator state")
    func seededDraws() {
        var a: UInt64 = 7, b: UInt64 = 7, c: UInt64 = 9
        let first = (0..<8).map { _ in BackoffSchedule.nextDraw(&a) }
        let second = (0..<8).map { _ in BackoffSchedule.nextDraw(&b) }
        let other = (0..<8).map { _ in BackoffSchedule.nextDraw(&c) }
        #expect(first == second)
        #expect(first != other)
        #expect(a == first.last)
    }
}
