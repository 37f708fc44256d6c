import BessSystem
import ControlCore
import Fieldbus
import Foundation
import HILPlant
@testable import Cycle
import Synchronization
import TestSupport
import Testing

/// One thread drives the per-cycle exchanges of every healthy Modbus TCP endpoint; each worker keeps
/// discovery and failures. The poller and the workers run on a `ManualClock`: the test is the
/// cycle (it publishes deadlines, moves the clock and hands over setpoints), so every instant a test
/// checks is one it chose, never the wall clock's. A wait on the wall clock (30 s) only guards
/// against a hang: on a starved host the loopback servers' threads may take seconds to run.
@Suite("The bus poller: one thread for every endpoint's cycle", .serialized)
struct BusPollerTests {
    /// Inverters on loopback, each on its own port, each recording the setpoints written to it.
    final class Plant: Sendable {
        final class Log: Sendable { let list = Mutex<[Double]>([]) }
        let servers: [SunSpecServer]
        let logs: [Log]
        init(units: Int) throws {
            let profile = SunSpecDeviceProfile(ratingW: 100_000)
            var servers: [SunSpecServer] = []
            var logs: [Log] = []
            for _ in 0..<units {
                let server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
                let log = Log()
                server.writeObserver = { image, _ in
                    if let w = SunSpecPlantLink.commandedWatts(image, profile: profile) { log.list.withLock { $0.append(w) } }
                }
                try server.start()
                servers.append(server)
                logs.append(log)
            }
            self.servers = servers
            self.logs = logs
        }
        func last(_ i: Int) -> Double? { logs[i].list.withLock { $0.last } }
        func stop() { for server in servers { server.stop() } }
    }

    /// A site of `units` loopback inverters, each on its own endpoint, whose workers and poller run
    /// on a `ManualClock`: the test is the cycle, and moves time itself.
    final class Site: @unchecked Sendable {
        let plant: Plant
        let clock = ManualClock()
        let slots: [DeviceSlot]
        let workers: [EndpointWorker]
        let poller: BusPoller
        let phase: CyclePhase
        let period: Duration
        /// The deadline of the cycle the test runs next.
        private(set) var deadline: MonotonicInstant

        init(units: Int, periodMs: Int, startsCycles: Bool = false, staticsEvery: Duration = .seconds(60)) throws {
            plant = try Plant(units: units)
            period = .milliseconds(periodMs)
            phase = CyclePhase(period: .milliseconds(periodMs))
            slots = (0..<units).map { _ in DeviceSlot() }
            deadline = clock.now()
            workers = (0..<units).map { [plant, slots, phase, clock] i in
                EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: plant.servers[i].port), devices: [.init(unitID: 1, slot: slots[i])],
                               period: .milliseconds(periodMs), timeout: .milliseconds(200), revert: .seconds(10), phase: phase,
                               staticsEvery: staticsEvery, clock: clock) { _ in }
            }
            poller = BusPoller(endpoints: workers, phase: phase, realtime: nil, startsCycles: startsCycles,
                               takesAnswersTogether: true, clock: clock) { _ in }
        }

        func start() {
            poller.start()
            for w in workers { w.start() }
        }

        func stop() {
            for slot in slots { slot.setSetpoint(.zero) }
            phase.publish(nextDeadline: nil)
            poller.stop()
            for w in workers { w.stop() }
            plant.stop()
        }

        /// True while the poller drives every endpoint.
        var allHandedOver: Bool { workers.allSatisfy { $0.handedOver.load(ordering: .acquiring) } }

        /// The threads have looked at the clock since its last move, every endpoint is with the
        /// poller and no worker is asking for one back (a refresh that fell due is done).
        var settledWithPoller: Bool {
            clock.settled && allHandedOver && workers.allSatisfy { !$0.wantsBack.load(ordering: .relaxed) }
        }

        /// The next cycle's deadline published and the clock moved to `lead` before it (to the
        /// deadline itself by default): what the readers see before a cycle runs.
        func toNextDeadline(lead: Duration = .zero) {
            deadline = max(deadline + period, clock.now() + lead)
            phase.publish(nextDeadline: deadline)
            clock.advance(to: deadline - lead)
        }

        /// The cycle's hand-over: the next deadline published first (as the cycle thread does), then
        /// the setpoints, then the kick of the poller and of every worker that drives its own endpoint.
        func handOver(_ setpoints: [Double]) {
            phase.publish(nextDeadline: deadline + period)
            for (slot, watts) in zip(slots, setpoints) { slot.setSetpoint(Watts(watts)) }
            poller.kick()
            for w in workers where !w.handedOver.load(ordering: .acquiring) { w.kick() }
        }

        /// Cycles until every endpoint is with the poller (connected, discovered, armed) and stays
        /// there once the threads have caught up with the last move. On a starved host a loopback
        /// server may answer later than bring-up's next move of a whole period and time a request out:
        /// a worker that took its endpoint back for it is brought up again here, never left to a test
        /// whose clock stands still. Errors of bring-up stay counted: tests compare against the count
        /// they start from.
        func bringUp(_ setpoints: [Double]) -> Bool {
            for _ in 0..<500 {
                toNextDeadline()
                handOver(setpoints)
                guard waitFor(seconds: 0.02, { allHandedOver }) else { continue }
                if waitFor(seconds: 30, { clock.settled }), settledWithPoller { return true }
            }
            return false
        }

        /// True once every reading of the endpoints the poller drives was taken at `instant`.
        func readingsTaken(at instant: MonotonicInstant, units: [Int]? = nil) -> Bool {
            (units ?? Array(slots.indices)).allSatisfy { slots[$0].reading?.takenAt == instant }
        }
    }

    @Test("the poller reads each unit once per cycle at its instant, writes changed setpoints, zeroes at stop")
    func drives() throws {
        let site = try Site(units: 3, periodMs: 20)
        site.start()
        // Unit i gets 10 kW + i kW, and 1 kW more on odd cycles: a setpoint that changes every cycle.
        func setpoints(_ k: Int) -> [Double] { (0..<3).map { Double(10_000 + 1000 * $0 + (k % 2) * 1000) } }
        #expect(site.bringUp(setpoints(0)))
        // The threads caught up with bring-up's last clock step before the counted cycles: on a loaded
        // machine the first cycle's reads were seen missing their instant without this.
        #expect(waitFor(seconds: 30) { site.settledWithPoller })
        let r0 = site.workers.map(\.wire.requests)
        let n = 50
        for k in 1...n {
            site.toNextDeadline()
            // The round's reads went out when the clock reached the deadline, and nothing moved it since.
            #expect(waitFor(seconds: 30) { site.readingsTaken(at: site.deadline) }, "cycle \(k)")
            site.handOver(setpoints(k))
            #expect(waitFor(seconds: 30) { (0..<3).allSatisfy { site.plant.last($0) == setpoints(k)[$0] } }, "cycle \(k)")
        }
        // A read and a write per unit and cycle, counted when the lane is idle (a write's echo is
        // taken at the next reads), so the count stands within one request of 2n.
        let r1 = site.workers.map(\.wire.requests)
        for i in 0..<3 {
            let made = Int(r1[i] - r0[i])
            #expect(abs(made - 2 * n) <= 1, "unit \(i): \(made) requests in \(n) cycles")
        }
        site.stop()
        // Stop: the poller hands back, each worker writes 0 W with the revert armed.
        for i in 0..<3 { #expect(site.plant.last(i) == 0) }
        for server in site.plant.servers {
            server.withImage { image, _ in
                #expect(image[SunSpec.ACControls.id, SunSpec.ACControls.wSetEnaRvrt] == 1)
            }
        }
    }

    @Test("a silent endpoint returns to its worker on the poller's timeout; the others stay, read every cycle")
    func failureIsolated() throws {
        let site = try Site(units: 3, periodMs: 20)
        site.start()
        defer { site.stop() }
        let setpoints = (0..<3).map { Double(20_000 + 1000 * $0) }
        #expect(site.bringUp(setpoints))
        let errors = site.slots[1].errors
        site.plant.servers[1].silent = true
        site.toNextDeadline()
        #expect(waitFor(seconds: 30) { site.readingsTaken(at: site.deadline, units: [0, 2]) })
        // Unit 1's read is in flight; its 200 ms timeout runs on the poller's clock, not the wall's.
        #expect(site.slots[1].errors == errors)
        site.clock.advance(by: .milliseconds(201))
        #expect(waitFor(seconds: 30) { site.slots[1].errors > errors && site.slots[1].lastError == "MODBUS_TIMEOUT" })
        #expect(waitFor(seconds: 30) { !site.workers[1].handedOver.load(ordering: .acquiring) })
        site.handOver(setpoints)
        // While unit 1 is silent, units 0 and 2 stay the poller's, read at every cycle's instant.
        for _ in 0..<10 {
            site.toNextDeadline()
            #expect(waitFor(seconds: 30) { site.readingsTaken(at: site.deadline, units: [0, 2]) })
            #expect(site.workers[0].handedOver.load(ordering: .acquiring) && site.workers[2].handedOver.load(ordering: .acquiring))
            site.handOver(setpoints)
        }
        // Answering again: rediscovered by its worker after its back-off, then handed to the poller again.
        site.plant.servers[1].silent = false
        #expect(site.bringUp(setpoints))
        #expect(waitFor(seconds: 30) { site.plant.last(1) == 21_000 })
    }

    @Test("with the poller the cycle waits for its deadline's readings; a failing endpoint reverts to deadline")
    func cycleStartsOnReadings() throws {
        let site = try Site(units: 3, periodMs: 500, startsCycles: true)
        #expect(site.phase.startsOnReadings)
        site.start()
        defer { site.stop() }
        func setpoints(_ k: Int) -> [Double] { (0..<3).map { Double(5_000 + 1000 * $0 + (k % 2) * 500) } }
        #expect(site.bringUp(setpoints(0)))
        let errors = site.slots.map(\.errors)
        // The reads start at least 5 % of the period before the deadline (80 % once the poller plans
        // for the whole site): the clock stops 5 % before it, and the cycle's wait (CyclePhase's own)
        // returns with the readings' instant.
        for k in 1...6 {
            site.toNextDeadline(lead: .milliseconds(25))
            let at = site.deadline - .milliseconds(25)
            #expect(waitFor(seconds: 30) { site.readingsTaken(at: at) }, "cycle \(k)")
            #expect(waitFor(seconds: 30) { site.phase.wait(until: site.deadline) == (at, true, false) }, "cycle \(k)")
            site.handOver(setpoints(k))
            // Past the deadline before the next cycle, and the threads caught up with the step: a
            // minute's refresh that fell due meanwhile (bring-up may take many stepped periods) is
            // done between rounds, as in bessd, not in the middle of the next round's reads.
            site.clock.advance(to: site.deadline + .milliseconds(10))
            #expect(waitFor(seconds: 30) { site.settledWithPoller }, "cycle \(k)")
        }
        // A period longer than the timeout: the write answers left for the next reads never count
        // as timeouts, and the endpoints stay with the poller.
        #expect(site.slots.map(\.errors) == errors && site.slots.allSatisfy { $0.lastError == nil }, "\(site.slots.map(\.lastError))")
        #expect(site.allHandedOver)
        // One endpoint silent: its read times out, no round is whole, and the wait is the deadline's.
        site.plant.servers[2].silent = true
        site.toNextDeadline(lead: .milliseconds(25))
        #expect(waitFor(seconds: 30) { site.readingsTaken(at: site.deadline - .milliseconds(25), units: [0, 1]) })
        site.clock.advance(by: .milliseconds(201))
        #expect(waitFor(seconds: 30) { !site.workers[2].handedOver.load(ordering: .acquiring) })
        #expect(!site.phase.wait(until: site.deadline).onReadings)
    }
}

extension BusPollerTests {
    /// The endpoint goes back and returns before the next reads.
    @Test("the minute's static refresh runs between rounds so every cycle still starts on its readings")
    func refreshBetweenRounds() throws {
        // Statics every second instead of every minute: ten cycles of 100 ms a refresh.
        let site = try Site(units: 3, periodMs: 100, startsCycles: true, staticsEvery: .seconds(1))
        site.start()
        defer { site.stop() }
        let setpoints = (0..<3).map { Double(5_000 + 1000 * $0) }
        #expect(site.bringUp(setpoints))
        let refreshed0 = site.workers.map { $0.refreshes.load(ordering: .relaxed) }
        for k in 1...35 {
            site.toNextDeadline(lead: .milliseconds(5))  // 5 % of the period: the shortest lead
            let at = site.deadline - .milliseconds(5)
            // Every cycle's readings come in, whichever refresh fell due: the endpoint that went back
            // for it was handed over again before the reads.
            #expect(waitFor(seconds: 30) { site.readingsTaken(at: at) }, "cycle \(k)")
            #expect(waitFor(seconds: 30) { site.phase.wait(until: site.deadline).onReadings }, "cycle \(k)")
            site.handOver(setpoints)
            // Between rounds the clock moves on (a refresh falls due there, as its minute runs from
            // the last one): the endpoint goes back after the writes and is back before the next reads.
            // The clock moves in a step, not over 90 ms of real time: wait until the threads have
            // looked at it (a worker whose refresh fell due has asked for its endpoint back) and
            // every endpoint is with the poller again, refreshed or not.
            site.clock.advance(to: site.deadline + .milliseconds(10))
            #expect(waitFor(seconds: 30) { site.settledWithPoller }, "cycle \(k)")
        }
        let refreshes = zip(site.workers, refreshed0).map { $0.refreshes.load(ordering: .relaxed) - $1 }
        #expect(refreshes.allSatisfy { $0 >= 3 }, "\(refreshes)")
    }
}

extension BusPollerTests {
    @Test("a silent endpoint holds back no other: theirs are taken at the round's instant")
    func slowEndpoint() throws {
        let site = try Site(units: 3, periodMs: 200)
        site.start()
        defer { site.stop() }
        let setpoints = (0..<3).map { Double(5_000 + 1000 * $0) }
        #expect(site.bringUp(setpoints))
        let errors = site.slots[2].errors
        // Endpoint 2 is the last read sent each round; it stops answering.
        site.plant.servers[2].silent = true
        site.toNextDeadline()
        // The clock stands still: endpoint 2's timeout never comes, yet 0 and 1 are read.
        #expect(waitFor(seconds: 30) { site.readingsTaken(at: site.deadline, units: [0, 1]) })
        #expect(site.slots[2].reading?.takenAt != site.deadline && site.slots[2].errors == errors)
        #expect(site.allHandedOver)
        site.plant.servers[2].silent = false
        site.clock.advance(by: .milliseconds(201))
        #expect(waitFor(seconds: 30) { site.slots[2].lastError == "MODBUS_TIMEOUT" })
    }
}


/// The cycle's wait: the deadline, or the poller's "readings in" for exactly that deadline. The
/// phase runs on a `ManualClock` the test moves: no result depends on how much real time passes.
@Suite("CyclePhase: deadline or readings")
struct CyclePhaseTests {
    /// `phase.wait(until:on:)` on a thread of its own, timed on `clock`; `result` once it has returned.
    final class Waiter: Sendable {
        private let outcome = Mutex<(dueAt: MonotonicInstant, onReadings: Bool, alarm: Bool)?>(nil)
        var result: (dueAt: MonotonicInstant, onReadings: Bool, alarm: Bool)? { outcome.withLock { $0 } }

        init(_ phase: CyclePhase, until deadline: MonotonicInstant, on clock: ManualClock) {
            let thread = Thread { [self] in
                let woke = phase.wait(until: deadline, on: clock)
                outcome.withLock { $0 = woke }
            }
            thread.start()
        }
    }

    @Test("without start-on-readings the wait sleeps on the cycle's clock until the deadline, readings or not")
    func waitIsTheDeadline() {
        let clock = ManualClock()
        let plain = CyclePhase(period: .milliseconds(100))
        let deadline = clock.now() + .milliseconds(100)
        plain.readingsIn(for: deadline, at: deadline - .milliseconds(10))  // ignored: not enabled
        let waiter = Waiter(plain, until: deadline, on: clock)
        #expect(waitFor { clock.sleepLooks >= 1 }, "the wait sleeps on the clock it was given")
        // A move short of the deadline: the sleep looks at it and sleeps on.
        clock.advance(to: deadline - .nanoseconds(1))
        #expect(waitFor { clock.sleepLooks >= 2 })
        clock.advance(to: deadline - .nanoseconds(1))
        #expect(waitFor { clock.sleepLooks >= 3 }, "back to sleep after the move before")
        #expect(waiter.result == nil, "returned before the clock reached the deadline")
        clock.advance(to: deadline)
        #expect(waitFor { waiter.result != nil })
        #expect(waiter.result.map { $0 == (deadline, false, false) } == true, "\(String(describing: waiter.result))")
    }

    /// The wait ends at their instant while the clock stands.
    @Test("start-on-readings: readings for this deadline end the wait; others leave the deadline")
    func waitOnReadings() {
        // The cycle's clock stands an hour ahead of the system's: a wait timed on the system's
        // clock instead would not end when the test moves this one to the deadline.
        let clock = ManualClock(at: SystemClock.shared.now() + .seconds(3600))
        let phase = CyclePhase(period: .milliseconds(100))
        phase.enableStartOnReadings()
        #expect(phase.startsOnReadings)
        // Readings for this deadline, given from another thread while the clock stands a minute
        // before it: they end the wait, at their instant.
        let d1 = clock.now() + .seconds(60)
        let first = Waiter(phase, until: d1, on: clock)
        let at = clock.now() + .milliseconds(5)
        phase.readingsIn(for: d1, at: at)
        #expect(waitFor { first.result != nil })
        #expect(first.result.map { $0 == (at, true, false) } == true, "\(String(describing: first.result))")
        #expect(clock.now() < d1, "the clock never moved")
        // Readings for an earlier deadline, in (and signalled) before the wait: the wait runs until
        // the clock is moved to its own deadline.
        let d2 = clock.now() + .milliseconds(100)
        phase.readingsIn(for: d2 - .milliseconds(100), at: d2 - .milliseconds(120))
        let second = Waiter(phase, until: d2, on: clock)
        clock.advance(to: d2)
        #expect(waitFor { second.result != nil })
        #expect(second.result.map { $0 == (d2, false, false) } == true, "\(String(describing: second.result))")
        // Readings that came in at the deadline or after it do not start the cycle early either.
        let d3 = clock.now() + .milliseconds(100)
        phase.readingsIn(for: d3, at: d3)
        let third = Waiter(phase, until: d3, on: clock)
        clock.advance(to: d3)
        #expect(waitFor { third.result != nil })
        #expect(third.result.map { $0 == (d3, false, false) } == true, "\(String(describing: third.result))")
    }
}
