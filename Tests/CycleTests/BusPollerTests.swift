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
/// discovery and failures.
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

    /// A stand-in cycle at `period`: publishes its deadlines, commands each unit `setpoint(unit, cycle)`
    /// and hands over to the poller and to the workers it does not drive, as `HardwareSite` does.
    final class Cycle: @unchecked Sendable {
        final class State: Sendable {
            let running = Atomic<Bool>(true)
            let cycles = Atomic<Int>(0)
            /// Cycles the poller's readings started before their deadline.
            let onReadings = Atomic<Int>(0)
            /// Of those, the cycles in which every unit's reading was taken after the previous cycle began.
            let onFreshReadings = Atomic<Int>(0)
        }
        let state = State()
        var thread: Thread?
        var cycles: Int { state.cycles.load(ordering: .relaxed) }
        var onReadings: Int { state.onReadings.load(ordering: .relaxed) }
        var onFreshReadings: Int { state.onFreshReadings.load(ordering: .relaxed) }
        init(phase: CyclePhase, slots: [DeviceSlot], workers: [EndpointWorker], poller: BusPoller,
             setpoint: @escaping @Sendable (Int, Int) -> Double) {
            let state = state
            thread = Thread {
                var deadline = MonotonicClock.now().nanoseconds
                var k = 0
                var previous: Int64 = 0
                while state.running.load(ordering: .relaxed) {
                    deadline += phase.periodNanoseconds
                    phase.publish(nextDeadline: deadline)
                    let due = phase.wait(until: deadline)
                    let began = MonotonicClock.now().nanoseconds
                    // As the cycle thread does: the next deadline is published before this cycle
                    // hands over, so a worker woken by the hand-over plans for the next one.
                    phase.publish(nextDeadline: deadline + phase.periodNanoseconds)
                    if due.onReadings {
                        state.onReadings.add(1, ordering: .relaxed)
                        if slots.allSatisfy({ ($0.reading?.takenAt.nanoseconds ?? 0) > previous }) {
                            state.onFreshReadings.add(1, ordering: .relaxed)
                        }
                    }
                    previous = began
                    for (i, slot) in slots.enumerated() { slot.setSetpoint(Watts(setpoint(i, k))) }
                    poller.kick()
                    for w in workers where !w.handedOver.load(ordering: .relaxed) { w.kick() }
                    k += 1
                    state.cycles.store(k, ordering: .relaxed)
                }
                phase.publish(nextDeadline: 0)
            }
            thread?.start()
        }
        func stop() { state.running.store(false, ordering: .relaxed) }
    }

    struct Site {
        let plant: Plant
        let slots: [DeviceSlot]
        let workers: [EndpointWorker]
        let poller: BusPoller
        let phase: CyclePhase
        init(units: Int, periodMs: Int, startsCycles: Bool = false, staticsEvery: Duration = .seconds(60)) throws {
            plant = try Plant(units: units)
            phase = CyclePhase(periodNanoseconds: Int64(periodMs) * 1_000_000)
            slots = (0..<units).map { _ in DeviceSlot() }
            workers = (0..<units).map { [plant, slots, phase] i in
                EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: plant.servers[i].port), devices: [.init(unitID: 1, slot: slots[i])],
                               period: .milliseconds(periodMs), timeout: .milliseconds(200), revertSeconds: 10, phase: phase,
                               staticsEvery: staticsEvery) { _ in }
            }
            poller = BusPoller(endpoints: workers, phase: phase, realtime: nil, startsCycles: startsCycles,
                               takesAnswersTogether: true) { _ in }
        }
        func start() {
            poller.start()
            for w in workers { w.start() }
        }
        func stop() {
            for slot in slots { slot.setSetpoint(.zero) }
            poller.stop()
            for w in workers { w.stop() }
            plant.stop()
        }
        /// Starts the site and a stand-in cycle commanding `setpoint(unit, cycle)`.
        func run(_ setpoint: @escaping @Sendable (Int, Int) -> Double) -> Cycle {
            start()
            return Cycle(phase: phase, slots: slots, workers: workers, poller: poller, setpoint: setpoint)
        }
        /// Stops the stand-in cycle, then the site.
        func finish(_ cycle: Cycle) {
            cycle.stop()
            stop()
        }
        /// True while the poller drives every endpoint.
        var allHandedOver: Bool { workers.allSatisfy { $0.handedOver.load(ordering: .acquiring) } }
    }

    @Test("healthy endpoints are handed to the poller: one read per unit per cycle, each changed setpoint on the wire, zero at stop")
    func drives() throws {
        let site = try Site(units: 3, periodMs: 20)
        site.start()
        // Unit i gets 10 kW + i kW, and 1 kW more on odd cycles: a setpoint that changes every cycle.
        let cycle = Cycle(phase: site.phase, slots: site.slots, workers: site.workers, poller: site.poller) { i, k in
            Double(10_000 + 1000 * i + (k % 2) * 1000)
        }
        #expect(waitFor(seconds: 10) { site.allHandedOver })
        for i in 0..<3 {
            #expect(waitFor(seconds: 5) { [10_000.0 + Double(1000 * i), 11_000.0 + Double(1000 * i)].contains(site.plant.last(i) ?? -1) })
        }
        // Over at least 50 cycles: at least one read per unit per cycle, and no more than a read, a
        // write and the re-arms per unit per cycle.
        let c0 = cycle.cycles
        let r0 = site.workers.map(\.wire.requests)
        #expect(waitFor(seconds: 10) { cycle.cycles >= c0 + 50 })
        let c1 = cycle.cycles
        let r1 = site.workers.map(\.wire.requests)
        let n = UInt64(c1 - c0)
        for i in 0..<3 {
            let made = r1[i] - r0[i]
            #expect(made >= n - 2 && made <= 2 * n + 6, "unit \(i): \(made) requests in \(n) cycles")
        }
        // Readings are fresh: taken within the last few periods.
        for slot in site.slots {
            let age = MonotonicClock.now().nanoseconds - (slot.reading?.takenAt.nanoseconds ?? 0)
            #expect(age < 200_000_000, "reading \(age / 1_000_000) ms old")
        }
        cycle.stop()
        site.stop()
        // Stop: the poller hands back, each worker writes 0 W with the revert armed.
        for i in 0..<3 { #expect(site.plant.last(i) == 0) }
        for server in site.plant.servers {
            server.withImage { image, _ in
                #expect(image[SunSpec.ACControls.id, SunSpec.ACControls.wSetEnaRvrt] == 1)
            }
        }
    }

    @Test("a silent endpoint goes back to its worker (timeout, back-off, rediscovery) while the others stay with the poller, fresh")
    func failureIsolated() throws {
        let site = try Site(units: 3, periodMs: 20)
        let cycle = site.run { i, _ in Double(20_000 + 1000 * i) }
        defer { site.finish(cycle) }
        #expect(waitFor(seconds: 10) { site.allHandedOver })
        site.plant.servers[1].silent = true
        #expect(waitFor(seconds: 5) { site.slots[1].lastError == "MODBUS_TIMEOUT" })
        #expect(waitFor(seconds: 5) { !site.workers[1].handedOver.load(ordering: .acquiring) })
        // While unit 1 is silent, units 0 and 2 are still the poller's, and their readings keep coming.
        let before = site.slots.map { $0.reading?.takenAt.nanoseconds ?? 0 }
        let c0 = cycle.cycles
        #expect(waitFor(seconds: 5) { cycle.cycles >= c0 + 25 })
        for i in [0, 2] {
            let driven = site.workers[i].handedOver.load(ordering: .acquiring)
            #expect(driven)
            let now = MonotonicClock.now().nanoseconds
            let taken = site.slots[i].reading?.takenAt.nanoseconds ?? 0
            #expect(taken > before[i] && now - taken < 200_000_000, "unit \(i): reading \((now - taken) / 1_000_000) ms old")
        }
        // Answering again: rediscovered by its worker, then handed to the poller again.
        site.plant.servers[1].silent = false
        #expect(waitFor(seconds: 15) { site.workers[1].handedOver.load(ordering: .acquiring) })
        #expect(waitFor(seconds: 5) { site.plant.last(1) == 21_000 })
    }

    @Test("the whole site with the poller: each cycle starts once every reading for it is in, before its deadline; a failing endpoint puts the cycle back on its deadline")
    func cycleStartsOnReadings() throws {
        // A long period, so that a round of reads (well under the 400 ms lead) always lands first;
        // longer than the 200 ms timeout, and a setpoint that changes every cycle, so every cycle
        // leaves a write's answer to be taken at the next reads.
        let site = try Site(units: 3, periodMs: 500, startsCycles: true)
        #expect(site.phase.startsOnReadings)
        let cycle = site.run { i, k in Double(5_000 + 1000 * i + (k % 2) * 500) }
        defer { site.finish(cycle) }
        #expect(waitFor(seconds: 15) { site.allHandedOver })
        // Let one whole cycle pass with every endpoint handed over, then count.
        let c0 = cycle.cycles
        #expect(waitFor(seconds: 5) { cycle.cycles >= c0 + 1 })
        let c1 = cycle.cycles, r1 = cycle.onReadings, f1 = cycle.onFreshReadings
        #expect(waitFor(seconds: 10) { cycle.cycles >= c1 + 6 })
        let n = cycle.cycles - c1, started = cycle.onReadings - r1, fresh = cycle.onFreshReadings - f1
        #expect(started >= n - 1, "\(started) of \(n) cycles started on their readings")
        #expect(fresh == started, "\(fresh) of \(started) early cycles ran on readings taken for them")
        // A period longer than the timeout: the write answers left for the next reads never count
        // as timeouts, and the endpoints stay with the poller.
        #expect(site.slots.allSatisfy { $0.errors == 0 && $0.lastError == nil }, "\(site.slots.map(\.lastError))")
        #expect(site.allHandedOver)
        // One endpoint silent: its reads fail, so no round is whole and every cycle keeps its deadline.
        site.plant.servers[2].silent = true
        #expect(waitFor(seconds: 5) { !site.workers[2].handedOver.load(ordering: .acquiring) })
        let c2 = cycle.cycles, r2 = cycle.onReadings
        #expect(waitFor(seconds: 10) { cycle.cycles >= c2 + 4 })
        #expect(cycle.onReadings == r2, "a cycle started early while an endpoint was out")
        // Back: handed over again, and cycles start on their readings again.
        site.plant.servers[2].silent = false
        #expect(waitFor(seconds: 20) { site.workers[2].handedOver.load(ordering: .acquiring) })
        let r3 = cycle.onReadings
        #expect(waitFor(seconds: 10) { cycle.onReadings >= r3 + 3 })
    }
}

extension BusPollerTests {
    @Test("the minute's refresh of static values runs between rounds: the endpoint goes back and returns before the next reads, so cycles keep starting on their readings")
    func refreshBetweenRounds() throws {
        // Statics every second instead of every minute, so a few seconds hold many refreshes.
        let site = try Site(units: 3, periodMs: 100, startsCycles: true, staticsEvery: .seconds(1))
        let cycle = site.run { i, _ in Double(5_000 + 1000 * i) }
        defer { site.finish(cycle) }
        #expect(waitFor(seconds: 15) { site.allHandedOver })
        let c0 = cycle.cycles, r0 = cycle.onReadings, f0 = cycle.onFreshReadings
        let refreshed0 = site.workers.map { $0.refreshes.load(ordering: .relaxed) }
        #expect(waitFor(seconds: 20) {
            zip(site.workers, refreshed0).allSatisfy { $0.refreshes.load(ordering: .relaxed) >= $1 + 6 }
        })
        let n = cycle.cycles - c0, started = cycle.onReadings - r0, fresh = cycle.onFreshReadings - f0
        let refreshes = zip(site.workers, refreshed0).map { $0.refreshes.load(ordering: .relaxed) - $1 }.reduce(0, +)
        // Refreshed inside the read round, every refresh costs its cycle the early start (and, at a
        // short period, the reading): at least 6 cycles here, as the three workers come due together.
        // Between rounds, none does; two are allowed for a round slowed by a loaded machine.
        #expect(n - started <= 2, "\(n - started) of \(n) cycles kept their deadline across \(refreshes) refreshes")
        #expect(fresh == started)
        #expect(waitFor(seconds: 5) { site.allHandedOver })
    }
}

extension BusPollerTests {
    @Test("an endpoint slower than its round holds back no other answer past the cycle's deadline, however many rounds it stays slow")
    func slowLastEndpoint() throws {
        // Of the answers nothing else waits on, the poller watches only the last request sent
        // (endpoint 2, the last read of each round) and takes the others when it comes; each other
        // waits unwatched at most twice its last round trip plus 0.5 ms, and never past a margin
        // before the deadline (10 ms at 200 ms). Endpoint 2 answers 150 ms late, under the 200 ms
        // timeout, so it stays with the poller; the reads start 100 ms before the deadline (half a
        // period). Held until endpoint 2 answers, the others' readings would take 150 ms and miss
        // their cycle; taken by the margin, under 90 ms.
        let site = try Site(units: 3, periodMs: 200)
        site.plant.servers[2].responseDelaySeconds = 0.15
        let cycle = site.run { i, _ in Double(5_000 + 1000 * i) }
        defer { site.finish(cycle) }
        #expect(waitFor(seconds: 30) { site.allHandedOver })
        // Rounds enough for a wait that grows with each round trip to reach endpoint 2's answer.
        let c0 = cycle.cycles
        #expect(waitFor(seconds: 10) { cycle.cycles >= c0 + 12 })
        for _ in 0..<5 {
            let taken = site.slots.map { $0.reading?.takenAt.nanoseconds ?? 0 }
            #expect(waitFor(seconds: 5) { zip(site.slots, taken).allSatisfy { ($0.reading?.takenAt.nanoseconds ?? 0) > $1 } })
            #expect(site.allHandedOver)
            #expect(site.slots[2].roundTrip >= .milliseconds(150), "endpoint 2: \(site.slots[2].roundTrip)")
            for i in 0..<2 {
                #expect(site.slots[i].roundTrip < .milliseconds(120), "endpoint \(i): \(site.slots[i].roundTrip)")
            }
        }
        #expect(site.slots.allSatisfy { $0.errors == 0 }, "\(site.slots.map(\.lastError))")
    }
}

/// The cycle's wait: the deadline, or the poller's "readings in" for exactly that deadline.
@Suite("CyclePhase: deadline or readings")
struct CyclePhaseTests {
    @Test("without start-on-readings the wait is the deadline; with it, readings for this deadline end the wait at their instant, and readings for another deadline do not")
    func wait() {
        let plain = CyclePhase(periodNanoseconds: 100_000_000)
        let d0 = MonotonicClock.now().nanoseconds + 20_000_000
        plain.readingsIn(for: d0, at: d0 - 10_000_000)  // ignored: not enabled
        let r0 = plain.wait(until: d0)
        #expect(r0.dueAt == d0 && !r0.onReadings)
        #expect(MonotonicClock.now().nanoseconds >= d0)

        let phase = CyclePhase(periodNanoseconds: 100_000_000)
        phase.enableStartOnReadings()
        #expect(phase.startsOnReadings)
        // Readings for an earlier deadline: the wait still runs to its own deadline.
        let d1 = MonotonicClock.now().nanoseconds + 30_000_000
        phase.readingsIn(for: d1 - 100_000_000, at: d1 - 120_000_000)
        let r1 = phase.wait(until: d1)
        #expect(r1.dueAt == d1 && !r1.onReadings)
        #expect(MonotonicClock.now().nanoseconds >= d1)
        // Readings for this deadline, given from another thread while the cycle waits a minute.
        let d2 = MonotonicClock.now().nanoseconds + 60_000_000_000
        let at = MonotonicClock.now().nanoseconds + 5_000_000
        let giver = Thread { phase.readingsIn(for: d2, at: at) }
        giver.start()
        let r2 = phase.wait(until: d2)
        #expect(r2.dueAt == at && r2.onReadings)
        #expect(MonotonicClock.now().nanoseconds < d2)
        // Readings that came in after the deadline do not start the cycle early.
        let d3 = MonotonicClock.now().nanoseconds + 10_000_000
        phase.readingsIn(for: d3, at: d3 + 1)
        let r3 = phase.wait(until: d3)
        #expect(r3.dueAt == d3 && !r3.onReadings)
    }
}
