import BessSystem
import ControlCore
import Fieldbus
import Foundation
import Plant
@testable import Cycle
import Synchronization
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
        }
        let state = State()
        var thread: Thread?
        var cycles: Int { state.cycles.load(ordering: .relaxed) }
        init(phase: CyclePhase, slots: [InverterSlot], workers: [InverterWorker], poller: BusPoller,
             setpoint: @escaping @Sendable (Int, Int) -> Double) {
            let state = state
            thread = Thread {
                var deadline = MonotonicClock.now().nanoseconds
                var k = 0
                while state.running.load(ordering: .relaxed) {
                    deadline += phase.periodNanoseconds
                    phase.publish(nextDeadline: deadline)
                    MonotonicClock.sleep(until: MonotonicInstant(nanoseconds: deadline))
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
        let slots: [InverterSlot]
        let workers: [InverterWorker]
        let poller: BusPoller
        let phase: CyclePhase
        init(units: Int, periodMs: Int) throws {
            plant = try Plant(units: units)
            phase = CyclePhase(periodNanoseconds: Int64(periodMs) * 1_000_000)
            slots = (0..<units).map { _ in InverterSlot() }
            workers = (0..<units).map { [plant, slots, phase] i in
                InverterWorker(endpoint: .tcp(host: "127.0.0.1", port: plant.servers[i].port), devices: [.init(unitID: 1, slot: slots[i])],
                               period: .milliseconds(periodMs), timeout: .milliseconds(200), revertSeconds: 10, phase: phase) { _ in }
            }
            poller = BusPoller(endpoints: workers, phase: phase, priority: nil) { _ in }
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
    }

    @Test("healthy endpoints are handed to the poller: one read per unit per cycle, each changed setpoint on the wire, zero at stop")
    func drives() throws {
        let site = try Site(units: 3, periodMs: 20)
        site.start()
        // Unit i gets 10 kW + i kW, and 1 kW more on odd cycles: a setpoint that changes every cycle.
        let cycle = Cycle(phase: site.phase, slots: site.slots, workers: site.workers, poller: site.poller) { i, k in
            Double(10_000 + 1000 * i + (k % 2) * 1000)
        }
        #expect(waitFor(seconds: 10) { site.workers.allSatisfy { $0.handedOver.load(ordering: .acquiring) } })
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
        site.start()
        let cycle = Cycle(phase: site.phase, slots: site.slots, workers: site.workers, poller: site.poller) { i, _ in
            Double(20_000 + 1000 * i)
        }
        defer {
            cycle.stop()
            site.stop()
        }
        #expect(waitFor(seconds: 10) { site.workers.allSatisfy { $0.handedOver.load(ordering: .acquiring) } })
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
}
