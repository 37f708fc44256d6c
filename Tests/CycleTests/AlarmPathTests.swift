import BessSystem
import ControlCore
import Fieldbus
import Foundation
import HILPlant
@testable import Cycle
import Synchronization
import TestSupport
import Testing

/// A BMS frame that calls for less power is acted on as it arrives: it ends the cycle's wait at once
/// (an extra cycle, the schedule unchanged), and the bus writes that cycle's setpoints the moment it
/// hands them over, between rounds, without waiting for the next round's reads.
@Suite("Alarms acted on as they arrive", .serialized)
struct AlarmPathTests {
    @Test("an alarm ends the cycle's wait at once; the deadline stays, and without one the wait is the deadline")
    func phaseWakes() throws {
        let phase = CyclePhase(periodNanoseconds: 1_000_000_000)
        phase.enableAlarms()
        let deadline = SystemClock.monotonicNanoseconds() + 5_000_000_000
        // Raised from another thread, before or while the cycle waits: either way the wait ends.
        let raiser = Thread { phase.raiseAlarm() }
        raiser.start()
        let woke = phase.wait(until: deadline)
        #expect(woke.alarm)
        #expect(!woke.onReadings)
        #expect(woke.dueAt < deadline, "woken before the deadline")
        // The same deadline again: no alarm pending, so the wait is the deadline (no extra cycle).
        let near = SystemClock.monotonicNanoseconds() + 30_000_000
        let regular = phase.wait(until: near)
        #expect(!regular.alarm)
        #expect(regular.dueAt == near)
        #expect(SystemClock.monotonicNanoseconds() >= near)
    }

    /// What the stand-in cycle commands: 20 kW and 20.1 kW on alternate cycles (so each regular
    /// round writes, and its write shows on the wire), 0 W once the "alarm" has cut it.
    final class Target: Sendable {
        let cut = Atomic<Bool>(false)
        func watts(_ k: Int) -> Double { cut.load(ordering: .relaxed) ? 0 : 20_000 + Double(100 * (k % 2)) }
    }

    /// Waits until a regular cycle has just run and its setpoint is on the wire (its round is over):
    /// the next regular cycle is then most of a 2 s period away. Returns that cycle's count.
    static func justAfterARound(_ cycles: () -> Int, _ last: () -> Double?, _ target: Target) -> Int? {
        let k = cycles()
        guard waitFor(seconds: 5, { cycles() > k }) else { return nil }
        let c = cycles()
        guard waitFor(seconds: 1, { last() == target.watts(c - 1) }), cycles() == c else { return nil }
        return c
    }

    static func extraCycleReachesWire(alarms: Bool) throws -> (beforeNextCycle: Bool, wrote: Bool) {
        let site = try BusPollerTests.Site(units: 1, periodMs: 2000)
        if alarms { site.phase.enableAlarms() }
        let target = Target()
        let cycle = site.run { _, k in target.watts(k) }
        defer { site.finish(cycle) }
        guard waitFor(seconds: 20, { site.allHandedOver && (site.plant.last(0) ?? 0) >= 20_000 }),
              let handedOver = justAfterARound({ cycle.cycles }, { site.plant.last(0) }, target)
        else { return (false, false) }
        // The alarm's extra cycle: 0 W and a hand-over, off the schedule.
        target.cut.store(true, ordering: .relaxed)
        site.slots[0].setSetpoint(.zero)
        site.poller.kick()
        let wrote = waitFor(seconds: 6) { site.plant.last(0) == 0 }
        return (wrote && cycle.cycles == handedOver, wrote)
    }

    @Test("with alarms, the poller writes an extra cycle's setpoint between rounds, before the next cycle")
    func pollerWritesAtOnce() throws {
        let result = try Self.extraCycleReachesWire(alarms: true)
        #expect(result.wrote)
        #expect(result.beforeNextCycle, "0 W on the wire before the next regular cycle")
    }

    @Test("without alarms (no CAN BMS), a hand-over between rounds waits for the next round, as before")
    func pollerWithoutAlarmsKeepsTheRound() throws {
        let result = try Self.extraCycleReachesWire(alarms: false)
        #expect(result.wrote)
        #expect(!result.beforeNextCycle, "written with the next regular cycle's round")
    }

    @Test("with alarms, an endpoint its own worker drives writes an extra cycle's setpoint at once too")
    func workerWritesAtOnce() throws {
        let plant = try BusPollerTests.Plant(units: 1)
        defer { plant.stop() }
        let phase = CyclePhase(periodNanoseconds: 2_000_000_000)
        phase.enableAlarms()
        let slot = DeviceSlot()
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: plant.servers[0].port), devices: [.init(unitID: 1, slot: slot)],
                                    period: .milliseconds(2000), timeout: .milliseconds(200), revertSeconds: 10, phase: phase) { _ in }
        // No poller: the worker drives its endpoint itself, aligned to the cycle.
        let idle = BusPoller(endpoints: [], phase: phase, realtime: nil) { _ in }
        worker.start()
        let target = Target()
        let cycle = BusPollerTests.Cycle(phase: phase, slots: [slot], workers: [worker], poller: idle) { _, k in target.watts(k) }
        defer {
            cycle.stop()
            worker.stop()
        }
        #expect(waitFor(seconds: 20) { (plant.last(0) ?? 0) >= 20_000 })
        let handedOver = try #require(Self.justAfterARound({ cycle.cycles }, { plant.last(0) }, target))
        target.cut.store(true, ordering: .relaxed)
        slot.setSetpoint(.zero)
        worker.kick()
        #expect(waitFor(seconds: 6) { plant.last(0) == 0 })
        #expect(cycle.cycles == handedOver, "0 W on the wire before the next regular cycle")
    }
}
