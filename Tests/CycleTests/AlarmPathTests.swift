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
/// hands them over, between rounds, without waiting for the next round's reads (as it does any
/// cycle's: a late one's too). The bus threads run on a `ManualClock`, moved by the test.
@Suite("Alarms acted on as they arrive", .serialized)
struct AlarmPathTests {
    @Test("an alarm ends the cycle's wait at once; the deadline stays, and without one the wait is the deadline")
    func phaseWakes() throws {
        let phase = CyclePhase(period: .seconds(1))
        phase.enableAlarms()
        let deadline = SystemClock.shared.now() + .seconds(5)
        // Raised from another thread, before or while the cycle waits: either way the wait ends.
        let raiser = Thread { phase.raiseAlarm() }
        raiser.start()
        let woke = phase.wait(until: deadline)
        #expect(woke.alarm)
        #expect(!woke.onReadings)
        #expect(woke.dueAt < deadline, "woken before the deadline")
        // The same deadline again: no alarm pending, so the wait is the deadline (no extra cycle).
        let near = SystemClock.shared.now() + .milliseconds(30)
        let regular = phase.wait(until: near)
        #expect(!regular.alarm)
        #expect(regular.dueAt == near)
        #expect(SystemClock.shared.now() >= near)
    }

    /// An alarm's extra cycle, and (without alarms) a late cycle's.
    @Test("the poller writes a hand-over between rounds at once, before the next round's reads",
          arguments: [true, false])
    func pollerWritesAtOnce(alarms: Bool) throws {
        let site = try BusPollerTests.Site(units: 1, periodMs: 2000)
        if alarms { site.phase.enableAlarms() }
        site.start()
        defer { site.stop() }
        #expect(site.bringUp([20_000]))
        // A regular round: read at the deadline, 20.1 kW handed over and on the wire.
        site.toNextDeadline()
        #expect(waitFor(seconds: 5) { site.readingsTaken(at: site.deadline) })
        site.handOver([20_100])
        #expect(waitFor(seconds: 5) { site.plant.last(0) == 20_100 })
        // Between rounds (the clock stands still; the next reads are most of a 2 s period away):
        // 0 W handed over, off the schedule, is on the wire at once.
        site.slots[0].setSetpoint(.zero)
        site.poller.kick()
        #expect(waitFor(seconds: 5) { site.plant.last(0) == 0 }, "0 W on the wire before the next round")
    }

    @Test("an endpoint its own worker drives writes a hand-over between rounds at once too, alarms or not",
          arguments: [true, false])
    func workerWritesAtOnce(alarms: Bool) throws {
        let plant = try BusPollerTests.Plant(units: 1)
        defer { plant.stop() }
        let clock = ManualClock()
        let phase = CyclePhase(period: .seconds(2))
        if alarms { phase.enableAlarms() }
        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(20))
        // No poller: the worker drives its endpoint itself, aligned to the cycle.
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: plant.servers[0].port), devices: [.init(unitID: 1, slot: slot)],
                                    period: .milliseconds(2000), timeout: .milliseconds(200), revert: .seconds(10), phase: phase,
                                    clock: clock) { _ in }
        worker.start()
        defer { worker.stop() }
        // Cycles on time (deadline published, clock moved to it, hand-over) until 20 kW is written.
        var deadline = clock.now()
        for _ in 0..<100 where plant.last(0) != 20_000 {
            deadline = deadline + .seconds(2)
            phase.publish(nextDeadline: deadline)
            clock.advance(to: deadline)
            worker.kick()
            _ = waitFor(seconds: 0.05) { plant.last(0) == 20_000 }
        }
        #expect(plant.last(0) == 20_000)
        // A regular round: read at the deadline; the next deadline published, then 20.1 kW handed over.
        deadline = deadline + .seconds(2)
        phase.publish(nextDeadline: deadline)
        clock.advance(to: deadline)
        #expect(waitFor(seconds: 5) { slot.reading?.takenAt == deadline })
        phase.publish(nextDeadline: deadline + .seconds(2))
        slot.setSetpoint(Watts(20_100))
        worker.kick()
        #expect(waitFor(seconds: 5) { plant.last(0) == 20_100 })
        // Off the schedule, the clock standing still: 0 W is on the wire at once.
        slot.setSetpoint(.zero)
        worker.kick()
        #expect(waitFor(seconds: 5) { plant.last(0) == 0 }, "0 W on the wire before the next round")
    }
}
