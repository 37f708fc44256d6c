import BessSystem
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import Glibc
@testable import Service
import Synchronization
import TestSupport
import Testing

/// Progress, not only liveness (issue 57 part 5): the workers' and the service loop's last turns
/// judged on instants the test gives, the notice queue's bound, and the watchdog's answer.
@Suite("Progress: stalled threads and dropped notices")
struct ProgressTests {
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    static func turn(_ thread: String, _ units: [String], lastTurn: MonotonicInstant?, after: Duration = .seconds(10)) -> WorkerTurn {
        WorkerTurn(thread: thread, units: units, lastTurn: lastTurn, stallAfter: after)
    }

    @Test("a worker past its bound is WORKER_STALLED with its units; within it, or not started, not")
    func workerStalls() {
        let now = Self.t0 + .seconds(30)
        let turns = [
            Self.turn("bus 127.0.0.1:1502", ["D1", "D2"], lastTurn: now - .seconds(11)),
            Self.turn("bus 127.0.0.1:1503", ["D3"], lastTurn: now - .seconds(9)),
            Self.turn("CAN can0", ["D1"], lastTurn: nil),
            Self.turn("bus /dev/ttyS0", ["D4"], lastTurn: now - .seconds(15), after: .seconds(20)),
        ]
        let stalls = ServiceProgress.stalls(workers: turns, service: now - .seconds(1), now: now)
        #expect(stalls == [Stall(code: .worker, thread: "bus 127.0.0.1:1502", units: ["D1", "D2"], since: .seconds(11))])
        #expect(stalls.first?.reply.code == "WORKER_STALLED" && stalls.first?.reply.sinceS == 11)
        // A worker that turns again is no longer stalled.
        let again = ServiceProgress.stalls(workers: [Self.turn("bus 127.0.0.1:1502", ["D1"], lastTurn: now)], service: nil, now: now)
        #expect(again.isEmpty)
    }

    @Test("the service loop is SERVICE_STALLED past 10 s without a turn; not within it or before its first")
    func serviceStalls() {
        let now = Self.t0 + .seconds(60)
        #expect(ServiceProgress.stalls(workers: [], service: now - .seconds(9), now: now).isEmpty)
        #expect(ServiceProgress.stalls(workers: [], service: nil, now: now).isEmpty)
        let stalled = ServiceProgress.stalls(workers: [], service: now - .seconds(12), now: now)
        #expect(stalled.map(\.code) == [.service] && stalled.first?.since == .seconds(12))
        // The mark: each turn returns the one before it.
        let progress = ServiceProgress()
        #expect(progress.turn(at: Self.t0) == nil)
        #expect(progress.turn(at: Self.t0 + .seconds(1)) == Self.t0)
        #expect(progress.lastServiceTurn == Self.t0 + .seconds(1))
    }

    @Test("the watchdog stops only when every bus and CAN worker is stalled, never for the service loop alone")
    func beatWithheldOnlyWhenNothingIsControlled() {
        let now = Self.t0 + .seconds(30)
        let one = Self.turn("bus a", ["D1"], lastTurn: now - .seconds(20))
        let other = Self.turn("bus b", ["D2"], lastTurn: now)
        let some = ServiceProgress.stalls(workers: [one, other], service: now - .seconds(20), now: now)
        #expect(some.count == 2)  // a worker and the service loop
        #expect(!ServiceProgress.withholdsBeat(some, workers: 2))
        let all = ServiceProgress.stalls(workers: [one, Self.turn("bus b", ["D2"], lastTurn: now - .seconds(20))], service: now, now: now)
        #expect(ServiceProgress.withholdsBeat(all, workers: 2))
        #expect(!ServiceProgress.withholdsBeat(ServiceProgress.stalls(workers: [], service: now - .seconds(60), now: now), workers: 0))
    }

    @Test("the watchdog withholds WATCHDOG=1 while its progress check says so, and feeds again after")
    func watchdogProgress() {
        let beat = Atomic<UInt64>(0)
        let held = Atomic<Bool>(false)
        let sent = Atomic<Int>(0)
        let dog = Watchdog(interval: .milliseconds(40), health: .init(
            beat: { beat.add(1, ordering: .relaxed).newValue }, onTime: { true }, workersAlive: { true },
            progressHeld: { held.load(ordering: .relaxed) })) { message in
            if message == "WATCHDOG=1" { sent.add(1, ordering: .relaxed) }
        }
        dog.start()
        defer { dog.stop() }
        #expect(waitFor { sent.load(ordering: .relaxed) >= 2 })
        held.store(true, ordering: .relaxed)
        let withheld = dog.withheld.load(ordering: .relaxed)
        #expect(waitFor { dog.withheld.load(ordering: .relaxed) >= withheld + 2 })
        let whileHeld = sent.load(ordering: .relaxed)
        #expect(waitFor { dog.withheld.load(ordering: .relaxed) >= withheld + 4 })
        #expect(sent.load(ordering: .relaxed) <= whileHeld + 1)  // at most the check already under way
        held.store(false, ordering: .relaxed)
        #expect(waitFor { sent.load(ordering: .relaxed) >= whileHeld + 3 })
    }

    @Test("a worker thread's loop marks each turn; one stuck inside a turn keeps its last mark")
    func workerThreadTurns() {
        let thread = WorkerThread()
        #expect(thread.lastTurn == nil)
        let stuck = Atomic<Bool>(false)
        let release = DispatchSemaphore(value: 0)
        thread.start {
            while thread.turn() {
                if stuck.load(ordering: .relaxed) { release.wait() }
                usleep(1_000)
            }
        }
        let first = thread.lastTurn
        #expect(first != nil)
        #expect(waitFor { (thread.lastTurn ?? .zero) > (first ?? .zero) }, "the loop's turns move the mark")
        stuck.store(true, ordering: .relaxed)
        var settled: MonotonicInstant?
        #expect(waitFor {
            let mark = thread.lastTurn
            defer { settled = mark }
            return mark != nil && mark == settled
        }, "stuck inside a turn, the mark stays")
        let turn = WorkerTurn(thread: "test", units: ["D1"], lastTurn: thread.lastTurn, stallAfter: .seconds(10))
        #expect(turn.stalled(at: (thread.lastTurn ?? .zero) + .seconds(11)))
        #expect(!turn.stalled(at: (thread.lastTurn ?? .zero) + .seconds(9)))
        stuck.store(false, ordering: .relaxed)
        release.signal()
        thread.stop()
    }

    @Test("the notice queue never blocks: past its bound a notice is dropped and counted, oldest kept")
    func noticeQueueBound() {
        let wakeup = Wakeup()
        let queue = NoticeQueue(capacity: 4, wakeup: wakeup)
        for i in 0..<6 { queue.post(DeviceNotice("notice \(i)", severity: .warning, code: "MODBUS_TIMEOUT", units: ["D1"])) }
        #expect(wakeup.wait(until: SystemClock.shared.now()), "the service loop is woken")
        #expect(queue.dropped == 2)
        let taken = queue.take()
        #expect(taken.notices.map(\.text) == ["notice 0", "notice 1", "notice 2", "notice 3"])
        #expect(taken.notices.first?.code == "MODBUS_TIMEOUT" && taken.notices.first?.units == ["D1"])
        #expect(taken.dropped == 2)
        queue.post(DeviceNotice("notice 6"))
        let next = queue.take()
        #expect(next.notices.map(\.text) == ["notice 6"] && next.dropped == 2)
    }
}
