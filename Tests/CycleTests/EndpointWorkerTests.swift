import BessSystem
import ControlCore
import Fieldbus
import Foundation
import HILPlant
@testable import Cycle
@testable import Config
import Synchronization
import TestSupport
import Testing

@Suite("Inverter worker on the cycle's schedule", .serialized)
struct EndpointWorkerTests {
    /// A SunSpec inverter on loopback whose written setpoints are recorded as they arrive.
    final class Inverter: Sendable {
        final class Log: Sendable { let list = Mutex<[Double]>([]) }
        let server: SunSpecServer
        let log = Log()
        init() throws {
            let profile = SunSpecDeviceProfile(ratingW: 100_000)
            server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
            server.writeObserver = { [log] image, _ in
                if let w = SunSpecPlantLink.commandedWatts(image, profile: profile) { log.list.withLock { $0.append(w) } }
            }
            try server.start()
        }
        var last: Double? { log.list.withLock { $0.last } }
        var all: [Double] { log.list.withLock { $0 } }
    }

    func worker(_ inverter: Inverter, slot: DeviceSlot, phase: CyclePhase) -> EndpointWorker {
        EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: inverter.server.port),
                       devices: [.init(unitID: 1, slot: slot)], period: .milliseconds(100), timeout: .milliseconds(500),
                       revert: .seconds(10), phase: phase) { _ in }
    }

    @Test("setpoints handed over on time are followed; a stalled cycle gets zero within about a second")
    func stalledCycleMeansZero() throws {
        let inverter = try Inverter()
        defer { inverter.server.stop() }
        let slot = DeviceSlot()
        let phase = CyclePhase(period: .milliseconds(100))
        let w = worker(inverter, slot: slot, phase: phase)
        // A stand-in cycle: publishes its deadlines and kicks after each, commanding 30 kW.
        let running = Atomic<Bool>(true)
        let handedOver = Atomic<Int>(0)
        let cycle = Thread {
            var deadline = SystemClock.shared.now()
            while running.load(ordering: .relaxed) {
                deadline = deadline + .milliseconds(100)
                phase.publish(nextDeadline: deadline)
                SystemClock.shared.sleep(until: deadline)
                slot.setSetpoint(.kilowatts(30))
                w.kick()
                handedOver.add(1, ordering: .relaxed)
            }
        }
        cycle.start()
        w.start()
        defer { w.stop() }
        #expect(waitFor(seconds: 5) { inverter.last == 30_000 }, "writes: \(inverter.all)")
        // Twenty more cycles of a healthy cycle (2 s): nothing but 30 kW is written.
        let now = handedOver.load(ordering: .relaxed)
        #expect(waitFor(seconds: 5) { handedOver.load(ordering: .relaxed) >= now + 20 })
        #expect(inverter.last == 30_000)
        // The cycle stalls: its deadline stays published, no more hand-overs.
        running.store(false, ordering: .relaxed)
        let stalledAt = SystemClock.shared.now()
        #expect(waitFor(seconds: 4) { inverter.last == 0 }, "the worker kept \(String(describing: inverter.last)) W")
        let after = SystemClock.shared.now().seconds(since: stalledAt)
        #expect(after < 3, "zero came \(after) s after the stall")
    }
}
