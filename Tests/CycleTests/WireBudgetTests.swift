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

/// What each cycle costs on the wire, and whether each cycle runs on the reading taken for it.
@Suite("The wire at a fraction of the cost", .serialized)
struct WireBudgetTests {
    /// A site whose inverter readings carry the instants a test chooses.
    final class ScriptedSite: SiteIO {
        var takenAt: [MonotonicInstant?]
        init(units: Int) { takenAt = [MonotonicInstant?](repeating: nil, count: units) }
        func start() {}
        func stop() {}
        var unconfirmedStops: [String] { [] }
        func sample(now: MonotonicInstant, into inputs: inout [UnitInputs]) -> Timestamped<Hertz>? {
            for i in inputs.indices {
                inputs[i].inverter = takenAt[i].map {
                    Timestamped(InverterReading(activePower: .zero, ratedPower: nil, faulted: false, faultBits: 0,
                                                frequency: Hertz(50)), at: $0)
                }
            }
            return nil
        }
        func command(unit: Int, setpoint: Watts) {}
        func commandsIssued() {}
        func reconfigure(_ settings: CycleSettings) {}
        var devicesProbed: Bool { true }
        func busFaults() -> [[String]] { takenAt.map { _ in [] } }
        var workersAliveCheck: @Sendable () -> Bool { { true } }
        var inverterSlots: [DeviceSlot?] { takenAt.map { _ in nil } }
        var bmsSlots: [BMSSlot?] { takenAt.map { _ in nil } }
    }

    @Test("a reading taken before the previous cycle counts as late; a fresh one and a dead unit do not")
    func lateReadingsCounted() throws {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")  // 2 units, 100 ms
        let site = ScriptedSite(units: c.units.count)
        let runner = SiteCycle(configuration: c, io: site, phase: CyclePhase(period: .milliseconds(100)), startedAt: .zero)
        func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: ms * 1_000_000) }
        // Cycle at 1000 ms; both readings taken 2 ms before it.
        site.takenAt = [at(998), at(998)]
        runner.run(now: at(1000), lateness: .zero, wallClock: 1_800_000_000)
        #expect(runner.lateReadings == 0)
        // Cycle at 1100 ms: unit 0 read at 1098 (on time), unit 1 still holds its 998 reading: late.
        site.takenAt = [at(1098), at(998)]
        runner.run(now: at(1100), lateness: .zero, wallClock: 1_800_000_000.1)
        #expect(runner.lateReadings == 1)
        // Cycle at 1200: unit 1's reading is now more than two periods old — not answering, which the
        // staleness rule handles; not counted again.
        site.takenAt = [at(1198), at(998)]
        runner.run(now: at(1200), lateness: .zero, wallClock: 1_800_000_000.2)
        #expect(runner.lateReadings == 1)
        // A reading taken exactly as the previous cycle woke was that cycle's: late for this one.
        site.takenAt = [at(1200), at(1298)]
        runner.run(now: at(1300), lateness: .zero, wallClock: 1_800_000_000.3)
        #expect(runner.lateReadings == 2)
    }

    /// Bounds 1 ms … half a period (80 % when the cycle starts on its readings).
    @Test("the read lead widens at once after a slow round, narrows slowly, stays within its bounds")
    func readLead() {
        var lead = ReadLead()
        let period = Duration.milliseconds(10)
        /// Round `k` of a cycle of `period` started on time and took `took`.
        func round(_ k: Int, of period: Duration, took: Duration) -> (readAt: MonotonicInstant, done: MonotonicInstant) {
            let readAt = MonotonicInstant.zero + period * k
            return (readAt, readAt + took)
        }
        #expect(lead.lead(period: period) == .microseconds(2500))  // 2 × 1 ms + 0.5 ms
        for k in 0..<2000 { let r = round(k, of: period, took: .microseconds(100)); lead.record(readAt: r.readAt, done: r.done) }
        #expect(lead.lead(period: period) == .milliseconds(1))  // fast answers: the floor
        lead.record(readAt: .zero, done: .zero + .microseconds(1500))  // one slow round (a late wake-up)
        #expect(lead.lead(period: period) == .microseconds(3500))
        for k in 0..<100 { let r = round(k, of: period, took: .microseconds(100)); lead.record(readAt: r.readAt, done: r.done) }
        // A second later (100 rounds) most of the widening is still there.
        #expect(lead.lead(period: period) > .milliseconds(2))
        lead.record(readAt: .zero, done: .zero + .milliseconds(40))  // a round longer than the period: capped at half of it
        #expect(lead.lead(period: period) == period / 2)
        // At 100 ms the floor is 5 % of the period.
        var slow = ReadLead()
        for k in 0..<2000 { let r = round(k, of: .milliseconds(100), took: .microseconds(100)); slow.record(readAt: r.readAt, done: r.done) }
        #expect(slow.lead(period: .milliseconds(100)) == .milliseconds(5))
        // When the cycle starts on its readings: 80 % of the period, however fast the rounds.
        #expect(slow.lead(period: .milliseconds(100), startsOnReadings: true) == .milliseconds(80))
        #expect(lead.lead(period: period, startsOnReadings: true) == .milliseconds(8))
    }

    @Test("the worker writes a setpoint only when it changes, and re-arms the revert timer every half of it")
    func writesOnlyChanges() throws {
        final class Log: Sendable { let list = Mutex<[(at: MonotonicInstant, watts: Double)]>([]) }
        let profile = SunSpecDeviceProfile(ratingW: 100_000)
        let server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
        let log = Log()
        // Every write request, stamped as it is answered.
        server.writeObserver = { image, at in
            log.list.withLock { $0.append((at, SunSpecPlantLink.commandedWatts(image, profile: profile) ?? .nan)) }
        }
        try server.start()
        defer { server.stop() }
        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(10))
        // Polls every 10 ms on its own (no cycle); the revert timer is 2 s, so it is re-armed every 1 s.
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: server.port), devices: [.init(unitID: 1, slot: slot)],
                                    period: .milliseconds(10), timeout: .milliseconds(500), revert: .seconds(2)) { _ in }
        worker.start()
        defer { worker.stop() }
        func writes() -> [(at: MonotonicInstant, watts: Double)] { log.list.withLock { $0 } }
        // The first write arms the revert: revert value, enable and time, setpoint (three requests).
        #expect(waitFor(seconds: 5) { writes().count >= 3 })
        #expect(waitFor(seconds: 5) { slot.reading != nil })
        // The refresh: three more writes, and none between (a steady setpoint is not rewritten), though
        // the worker read about a hundred times meanwhile.
        let requestsAtArm = worker.wire.requests
        #expect(waitFor(seconds: 5) { writes().count >= 6 })
        let w = writes()
        #expect(w.count == 6, "writes: \(w.count)")
        #expect(w.allSatisfy { $0.watts == 10_000 || $0.watts == 0 })
        // Not before half the revert time, and well before the device would revert (2 s).
        let gap = w[3].at.seconds(since: w[2].at)
        #expect(gap >= 0.9 && gap < 2, "refresh came after \(gap) s")
        #expect(worker.wire.requests - requestsAtArm >= 30)
        // A changed setpoint is one request.
        #expect(waitFor(seconds: 5) { writes().count == 6 })
        slot.setSetpoint(.kilowatts(20))
        #expect(waitFor(seconds: 5) { writes().count >= 7 })
        // The next write is the new setpoint alone (the next refresh is about a second away): ten more
        // rounds of reads and still seven writes.
        #expect(writes()[6].watts == 20_000)
        let requestsAtChange = worker.wire.requests
        #expect(waitFor(seconds: 5) { worker.wire.requests >= requestsAtChange + 10 })
        #expect(writes().count == 7, "writes after the change: \(writes().dropFirst(6).map(\.watts))")
        #expect(waitFor(seconds: 5) { writes().count >= 10 })
        #expect(writes()[7..<10].allSatisfy { $0.watts == 20_000 }, "\(writes().map(\.watts))")
    }

    @Test("a setpoint moving less than the register step is not rewritten; one that changes it is")
    func writesOnlyNewRegisters() throws {
        final class Log: Sendable { let list = Mutex<[Double]>([]) }
        // Model 124: the rates are 0.01 % of WChaMax (InOutWRte_SF −2), so one step is 10 W at 100 kW.
        let profile = SunSpecDeviceProfile(controlModel: 124, ratingW: 100_000)
        let server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
        let log = Log()
        server.writeObserver = { image, _ in
            log.list.withLock { $0.append(SunSpecPlantLink.commandedWatts(image, profile: profile) ?? .nan) }
        }
        try server.start()
        defer { server.stop() }
        let slot = DeviceSlot()
        slot.setSetpoint(Watts(10_000))
        // The revert timer is 60 s: no re-arm within the test.
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: server.port), devices: [.init(unitID: 1, slot: slot)],
                                    period: .milliseconds(10), timeout: .milliseconds(500), revert: .seconds(60)) { _ in }
        worker.start()
        defer { worker.stop() }
        func writes() -> [Double] { log.list.withLock { $0 } }
        // The first write arms the revert: the rates with the revert time, then the mode (two requests).
        #expect(waitFor(seconds: 5) { writes().count >= 2 && slot.reading != nil })
        #expect(writes().count == 2 && abs((writes().last ?? 0) - 10_000) < 0.01, "\(writes())")
        // 10,004 W is 10.004 %, which is 1000 steps of 0.01 % like 10,000 W: 4 W moved, the registers
        // did not; twenty rounds of reads and no write.
        slot.setSetpoint(Watts(10_004))
        var requests = worker.wire.requests
        #expect(waitFor(seconds: 5) { worker.wire.requests >= requests + 20 })
        #expect(writes().count == 2, "\(writes())")
        // 10,006 W rounds to 1001 steps: written, as one request, and the device holds 10,010 W.
        slot.setSetpoint(Watts(10_006))
        #expect(waitFor(seconds: 5) { writes().count >= 3 })
        requests = worker.wire.requests
        #expect(waitFor(seconds: 5) { worker.wire.requests >= requests + 10 })
        #expect(writes().count == 3 && abs(writes()[2] - 10_010) < 0.01, "\(writes())")
        // Back to 10,000 W: the registers change again, so it is written.
        slot.setSetpoint(Watts(10_000))
        #expect(waitFor(seconds: 5) { writes().count >= 4 })
        #expect(abs(writes()[3] - 10_000) < 0.01, "\(writes())")
    }
}
