import ControlCore
import Foundation
import Synchronization
import Testing
@testable import Uplink

@Suite("The MQTT uplink's batch rate budget")
struct BatchPacerTests {
    /// Where the tests' time starts: the pacer is pure, so no clock is read.
    static let origin = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// Publishes each record at the later of its own time and the instant the rule allows, plus the
    /// sender's own lateness (`late`: poll rounding, wake-up); returns how long each record waited
    /// beyond that lateness. `next` is the rule: given the instant a batch went, when the next may go.
    func waits(_ times: [Duration], late: [Duration], _ next: (MonotonicInstant) -> MonotonicInstant) -> [Duration] {
        let origin = Self.origin
        var allowed = origin
        return zip(times, late).map { t, late in
            let at = max(origin + t, allowed)
            allowed = next(at + late)
            return at - (origin + t)
        }
    }

    @Test("a once-an-interval record never waits, whatever its phase and jitter; the phase does not drift")
    func oncePerInterval() {
        // 10,000 records one second apart, each written 0–30 ms late; the sender 0–2 ms late itself.
        var generator = SystemRandomNumberGenerator()
        let times = (0..<10_000).map { Duration.seconds($0) + .microseconds(Int.random(in: 0...30_000, using: &generator)) }
        let late = times.map { _ in Duration.microseconds(Int.random(in: 0...2_000, using: &generator)) }
        var pacer = BatchPacer(interval: .seconds(1), now: Self.origin)
        let waited = waits(times, late: late) { pacer.sent(at: $0) }
        #expect(waited.allSatisfy { $0 == .zero })
        // The rule it replaces (the next batch one interval after the last one went) adds the sender's
        // lateness every second, until records wait most of an interval.
        let old = waits(times, late: late) { $0 + .seconds(1) }
        #expect(old.max()! > .milliseconds(500))
    }

    @Test("a burst goes two at once, then one per interval: never more than one batch per interval on average")
    func burst() {
        var burst = BatchPacer(interval: .seconds(1), now: Self.origin)
        let waited = waits(Array(repeating: .zero, count: 10), late: Array(repeating: .zero, count: 10)) { burst.sent(at: $0) }
        #expect(waited == [.zero, .zero] + (1...8).map { Duration.seconds($0) })
        // Records far more often than the interval: at most 1 + elapsed/interval batches, plus the burst.
        var pacer = BatchPacer(interval: .milliseconds(100), now: Self.origin)
        let origin = Self.origin
        var next = origin
        var sent = 0
        for k in 0..<100_000 {
            let t = origin + .microseconds(k * 100)  // 10 s of a record every 100 µs
            if t >= next {
                next = pacer.sent(at: t)
                sent += 1
            }
        }
        #expect(sent <= 101 && sent >= 99)
    }
}

@Suite("The spool's rounds: one service round's records become visible together")
struct SpoolRoundTests {
    @Test("inside a round appends are hidden until its end, then announced once; outside, each at once")
    func round() throws {
        let dir = NSTemporaryDirectory() + "bess-spool-round-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = SpoolQueue(try Spool(directory: dir))
        let announced = Mutex(0)
        queue.onAppend { announced.withLock { $0 += 1 } }
        func record(_ seq: UInt64) -> [UInt8] { Array("{\"seq\":\(seq)}".utf8) }
        try queue.append(record)
        #expect(queue.newest == 1 && announced.withLock { $0 } == 1)
        queue.beginRound()
        try queue.append(record)
        try queue.append(record)
        // A sender looking now sees only what came before the round.
        #expect(queue.newest == 1)
        #expect(try queue.records(after: 0, limit: 100).map(\.seq) == [1])
        #expect(try queue.records(after: 1, limit: 100).isEmpty)
        #expect(announced.withLock { $0 } == 1)
        queue.endRound()
        #expect(queue.newest == 3)
        #expect(try queue.records(after: 0, limit: 100).map(\.seq) == [1, 2, 3])
        #expect(announced.withLock { $0 } == 2)
        // An empty round announces nothing; nested rounds publish at the outermost end.
        queue.beginRound()
        queue.endRound()
        #expect(announced.withLock { $0 } == 2)
        queue.beginRound()
        queue.beginRound()
        try queue.append(record)
        queue.endRound()
        #expect(queue.newest == 3)
        queue.endRound()
        #expect(queue.newest == 4 && announced.withLock { $0 } == 3)
    }
}
