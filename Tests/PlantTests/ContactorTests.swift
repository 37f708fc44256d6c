import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Fieldbus
import Foundation
import Simulation
import Synchronization
import HILPlant
import TestSupport
import Testing

/// SunSpec model 123 `Conn` (issue 48 §2, opModConnect / opModEnergize false): bessd's driver against
/// the HIL plant's SunSpec server, and against an independent image served by pymodbus from
/// pysunspec2's model definitions.
@Suite("Contactor: SunSpec 123 Conn", .serialized)
struct ContactorTests {
    @Test("the plant's inverter opens on Conn 0 (power 0, ConnSt/St disconnected), closes on Conn 1", arguments: [UInt16(701), 103])
    func plantOpensAndCloses(measurement: UInt16) throws {
        let plant = try PlantInverterRun(SunSpecDeviceProfile(measurementModel: measurement, controlModel: 704, ratingW: 100_000))
        let inverter = plant.inverter
        let model = try #require(inverter.connectControl)
        #expect(model.id == 123)
        func run(_ steps: Int) { plant.run(steps) }
        try inverter.command(.kilowatts(20), revert: .seconds(10), &plant.client)
        run(20)
        #expect(try inverter.readStatus(&plant.client).connected == true)
        #expect(abs(try inverter.readStatus(&plant.client).activePower.value - 20_000) <= 10)
        // Open, armed for 10 s: Conn_RvrtTms and Conn in one request.
        let open = try #require(inverter.connectionWrite(connect: false, revert: .seconds(10)))
        #expect(open.address == model.address + 2 && open.values == [0, 10, 0], "Conn_WinTms 0, Conn_RvrtTms, Conn")
        #expect(inverter.connectionWrite(connect: true, revert: .seconds(10)).map { [UInt16($0.address - model.address)] + $0.values }
                == [2, 0, 0, 1], "a close never reverts")
        try inverter.setConnection(connect: false, revert: .seconds(10), &plant.client)
        run(2)
        let opened = try inverter.readStatus(&plant.client)
        #expect(opened.connected == false)
        #expect(opened.activePower == .zero, "an open contactor carries nothing")
        #expect(try plant.client.readRegisters(at: model.address + 4, count: 1) == [0])
        // Closed again: the setpoint in force flows again.
        try inverter.setConnection(connect: true, revert: .seconds(10), &plant.client)
        run(20)
        let closed = try inverter.readStatus(&plant.client)
        #expect(closed.connected == true)
        #expect(closed.activePower.value > 10_000)
    }

    @Test("an open not re-armed runs out: the plant's inverter returns to connected after Conn_RvrtTms")
    func openReverts() throws {
        let plant = try PlantInverterRun(SunSpecDeviceProfile(measurementModel: 701, ratingW: 100_000))
        let inverter = plant.inverter
        try inverter.setConnection(connect: false, revert: .seconds(3), &plant.client)
        plant.run(25)
        #expect(try inverter.readStatus(&plant.client).connected == false, "still open within Conn_RvrtTms")
        plant.run(10)
        #expect(try inverter.readStatus(&plant.client).connected == true, "connected again after Conn_RvrtTms")
        #expect(try plant.client.readRegisters(at: try #require(inverter.connectControl).address + 4, count: 1) == [1])
    }

    @Test("an inverter without model 123 cannot be opened: nothing written, SUNSPEC_MODEL_MISSING")
    func plantWithout123() throws {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0,
                                       profile: SunSpecDeviceProfile(measurementModel: 701, ratingW: 100_000, immediateControls: false))
        try server.start()
        defer { server.stop() }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.map.models.map(\.id) == [1, 701, 120, 121, 704])
        #expect(inverter.connectControl == nil)
        #expect(inverter.connectionWrite(connect: false, revert: .seconds(10)) == nil)
        #expect(!ModbusDevice.sunspec(inverter).canOpen)
        let before = server.requests
        do {
            try inverter.setConnection(connect: false, revert: .seconds(10), &client)
            Issue.record("an inverter without model 123 was asked to open")
        } catch {
            #expect(error.code.description == "SUNSPEC_MODEL_MISSING")
        }
        #expect(server.requests == before)
    }

    /// pymodbus with pysunspec2's 123 layout.
    @Test("123 layout: Conn 0 with Conn_RvrtTms, re-armed, then Conn 1; ConnSt read back")
    func pymodbusConn() throws {
        let (process, out, port) = try SunSpecBasesPeerTests().start("1:conn")
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.map.models.map(\.id) == [1, 701, 120, 121, 123, 704])
        #expect(try inverter.readStatus(&client).connected == true)
        try inverter.setConnection(connect: false, revert: .seconds(10), &client)
        #expect(Peer.readLine(out) { $0.hasPrefix("CONN unit") } == "CONN unit=1 conn=0 rvrt_tms=10 writes=1")
        #expect(try waitFor { try inverter.readStatus(&client).connected == false })
        #expect(try inverter.readStatus(&client).activePower == .zero)
        // Re-armed with another time: the peer sees the timer change, Conn still 0.
        try inverter.setConnection(connect: false, revert: .seconds(12), &client)
        #expect(Peer.readLine(out) { $0.hasPrefix("CONN unit") } == "CONN unit=1 conn=0 rvrt_tms=12 writes=2")
        try inverter.setConnection(connect: true, revert: .seconds(12), &client)
        #expect(Peer.readLine(out) { $0.hasPrefix("CONN unit") } == "CONN unit=1 conn=1 rvrt_tms=0 writes=3")
        #expect(try waitFor { try inverter.readStatus(&client).connected == true })
    }

    @Test("endpoint worker vs pymodbus: 0 W, Conn 0 after the wait, re-armed past Conn_RvrtTms, Conn 1 at end")
    func workerAgainstPymodbus() throws {
        // The peer's unit keeps reading 1234 W whatever its setpoint (above 1 % of its 50 kW), so the
        // open comes from the bounded wait; it reverts an open not re-written within Conn_RvrtTms.
        // Revert 6 s: re-armed every 3 s, a 3 s margin before the peer would revert it.
        let (process, out, port) = try SunSpecBasesPeerTests().start("1:conn")
        defer { Peer.stop(process) }
        let slot = DeviceSlot()
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: port), devices: [.init(unitID: 1, slot: slot, name: "u1")],
                                    period: .milliseconds(100), timeout: .seconds(1), revert: .seconds(6)) { _ in }
        slot.setSetpoint(.zero)
        slot.setConnect(false)
        worker.start()
        defer { worker.stop() }
        #expect(Peer.readLine(out) { $0.hasPrefix("CONN unit") } == "CONN unit=1 conn=0 rvrt_tms=6 writes=1")
        #expect(waitFor { slot.contactor == .open })
        // Re-armed at least every 3 s: two more writes over more than the 6 s revert, Conn 0 throughout.
        var rearms: [String] = []
        while rearms.count < 2, let line = Peer.readLine(out, until: { $0.hasPrefix("CONN unit") }) { rearms.append(line) }
        #expect(rearms == ["CONN unit=1 conn=0 rvrt_tms=6 writes=2", "CONN unit=1 conn=0 rvrt_tms=6 writes=3"])
        slot.setConnect(true)
        let closed = Peer.readLine(out) { $0.hasPrefix("CONN unit") && !$0.contains("conn=0") }
        #expect(closed?.hasPrefix("CONN unit=1 conn=1 rvrt_tms=0 writes=") == true, "\(String(describing: closed))")
        #expect(waitFor { slot.contactor == .closed })
    }

    /// pymodbus with Conn_WinTms 30 s.
    @Test("a preset Conn_WinTms is written 0 with Conn_RvrtTms and Conn in one request")
    func pymodbusWindowZeroed() throws {
        let (process, out, port) = try SunSpecBasesPeerTests().start("1:conn,wintms=30")
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.connectArmable)
        try inverter.setConnection(connect: false, revert: .seconds(10), &client)
        #expect(Peer.readLine(out) { $0.hasPrefix("CONN unit") } == "CONN unit=1 conn=0 rvrt_tms=10 writes=1 win_tms=0")
    }

    final class Notices: Sendable {
        let list = Mutex<[DeviceNotice]>([])
        var all: [DeviceNotice] { list.withLock { $0 } }
    }

    /// A worker (100 ms period, revert 4 s) asked to open pymodbus unit 1 with `options`.
    func worker(_ options: String, _ notices: Notices) throws -> (Process, Pipe, DeviceSlot, EndpointWorker) {
        let (process, out, port) = try SunSpecBasesPeerTests().start("1:" + options)
        let slot = DeviceSlot()
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: port), devices: [.init(unitID: 1, slot: slot, name: "u1")],
                                    period: .milliseconds(100), timeout: .seconds(1), revert: .seconds(4)) { n in
            notices.list.withLock { $0.append(n) }
        }
        slot.setSetpoint(.zero)
        slot.setConnect(false)
        worker.start()
        return (process, out, slot, worker)
    }

    /// Reads the peer's request counts until unit 1 has answered `more` reads beyond the first seen.
    func rounds(_ out: Pipe, _ more: Int) -> Bool {
        func reads(_ line: String) -> Int? {
            line.split(separator: " ").first { $0.hasPrefix("reads=") }.flatMap { Int($0.dropFirst(6)) }
        }
        guard let first = Peer.readLine(out, until: { $0.hasPrefix("REQUESTS unit=1") }).flatMap(reads) else { return false }
        while let line = Peer.readLine(out, until: { $0.hasPrefix("REQUESTS unit=1") }) {
            if let n = reads(line), n >= first + more { return true }
        }
        return false
    }

    /// pymodbus with 0xFFFF.
    @Test("Conn_RvrtTms not implemented: an open cannot be armed, so the unit cannot open")
    func pymodbusRevertMissing() throws {
        let notices = Notices()
        let (process, out, slot, worker) = try worker("conn,rvrttms=65535", notices)
        defer { Peer.stop(process) }
        defer { worker.stop() }
        #expect(waitFor { slot.contactor == .cannotOpen })
        #expect(rounds(out, 20))
        #expect(notices.all.filter { $0.code == "CONTACTOR_UNAVAILABLE" }.count == 1)
        // Nothing written to 123: Conn_RvrtTms still not implemented, Conn still 1.
        guard case .tcp(_, let port) = worker.endpoint else { Issue.record("not TCP"); return }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let model = try #require(try SunSpecInverter.open(&client).connectControl)
        #expect(try client.readRegisters(at: model.address + 2, count: 3) == [0, 0xFFFF, 1])
    }

    @Test("pymodbus refusing Conn (exception 2): cannot_open, said once, not retried, the unit not rediscovered")
    func pymodbusConnRefused() throws {
        let notices = Notices()
        let (process, out, slot, worker) = try worker("conn,connrefuse", notices)
        defer { Peer.stop(process) }
        defer { worker.stop() }
        // W reads 1234 W: the open is tried at the 5 s bound, refused.
        #expect(waitFor(seconds: 20) { slot.contactor == .cannotOpen })
        #expect(rounds(out, 30))
        #expect(slot.contactor == .cannotOpen)
        let said = notices.all.filter { $0.code == "CONTACTOR_UNAVAILABLE" }
        #expect(said.count == 1, "\(notices.all)")
        // No rediscovery (its warning) and so no second open and refusal.
        #expect(!notices.all.contains { $0.code != nil && $0.code != "CONTACTOR_UNAVAILABLE" }, "\(notices.all)")
        slot.setConnect(true)
        #expect(waitFor { slot.contactor == .closed })
    }

    @Test("pymodbus without 123: bessd finds no Conn and cannot open")
    func pymodbusWithout123() throws {
        let (process, _, port) = try SunSpecBasesPeerTests().start("1")
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.connectControl == nil)
        #expect(try inverter.readStatus(&client).connected == true, "701 ConnSt CONNECTED")
        #expect(throws: DeviceError.self) { try inverter.setConnection(connect: false, revert: .seconds(10), &client) }
    }

    /// The embedded simulated site, stepped 100 ms at a time with the utility's limits published
    /// before each step (valid for 5 s).
    final class UtilityRig {
        let configuration: BessdConfiguration
        let runner: SiteRunner
        let site: SimulatedSite
        let slot = UtilityLimitSlot()
        var ms: Int64 = 1000

        init() throws {
            configuration = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
            runner = try SiteRunner.make(configuration: configuration, startedAt: .zero) { _ in }
            site = try #require(runner.simulation)
            runner.utilityLimits = slot
        }

        var now: MonotonicInstant { MonotonicInstant(nanoseconds: ms * 1_000_000) }

        func run(_ limits: UtilityLimits, cycles: Int) {
            for _ in 0..<cycles {
                ms += 100
                var published = limits
                published.validUntil = MonotonicInstant(nanoseconds: (ms + 5000) * 1_000_000)
                slot.publish(published)
                runner.run(now: now, lateness: .zero, wallClock: 1_800_000_000 + Double(ms) / 1000)
            }
        }

        func power(_ i: Int) -> Double {
            var w = 0.0
            site.withUnit(i) { w = $0.inverter.powerW }
            return w
        }

        func connected(_ i: Int) -> Bool {
            var up = false
            site.withUnit(i) { up = $0.inverter.connected }
            return up
        }
    }

    @Test("connect false zeroes the simulated units, opens them at zero, and closes them at its end")
    func throughTheCycle() throws {
        let rig = try UtilityRig()
        let runner = rig.runner
        let units = rig.configuration.units.indices
        var request = UtilityLimits()
        request.targetW = 20_000
        rig.run(request, cycles: 100)
        #expect(units.contains { rig.power($0) > 1000 }, "the request makes the units discharge")
        #expect(units.allSatisfy { runner.io.contactor(unit: $0) == .closed })
        var disconnect = UtilityLimits()
        disconnect.connect = false
        rig.run(disconnect, cycles: 1)
        #expect(runner.controller.siteDecision.utility.disconnected)
        rig.run(disconnect, cycles: 30)
        #expect(units.allSatisfy { !rig.connected($0) && rig.power($0) == 0 }, "every unit opened, nothing flows")
        #expect(units.allSatisfy { runner.io.contactor(unit: $0) == .open })
        rig.run(request, cycles: 1)
        #expect(units.allSatisfy { rig.connected($0) && runner.io.contactor(unit: $0) == .closed }, "closed as the control ends")
        rig.run(request, cycles: 100)
        #expect(units.contains { rig.power($0) > 1000 }, "the limits rose again")
    }

    @Test("a latch restored at start opens its unit at zero until reset; a utility control ending leaves it")
    func latchThroughTheCycle() throws {
        let rig = try UtilityRig()
        let runner = rig.runner
        var latch = TripCodeSet()
        latch.insert(.thermalRunaway)
        runner.controller.restoreLatches(latch, unit: 0, since: .zero)
        var request = UtilityLimits()
        request.targetW = 20_000
        rig.run(request, cycles: 30)
        #expect(runner.controller.decision(unit: 0).disconnectRequested)
        #expect(!rig.connected(0) && rig.power(0) == 0 && runner.io.contactor(unit: 0) == .open, "the latched unit is opened")
        #expect(rig.connected(1) && runner.io.contactor(unit: 1) == .closed, "the other is not")
        // A utility disconnect that comes and goes closes the other unit again, never the latched one.
        var disconnect = UtilityLimits()
        disconnect.connect = false
        rig.run(disconnect, cycles: 30)
        #expect(!rig.connected(1))
        rig.run(request, cycles: 600)
        #expect(rig.connected(1) && !rig.connected(0) && runner.io.contactor(unit: 0) == .open, "a minute on, still open")
        let outcome = runner.controller.reset(unit: 0, now: rig.now)
        #expect(outcome.first?.outcome.cleared.contains(.thermalRunaway) == true, "\(outcome)")
        rig.run(request, cycles: 1)
        #expect(rig.connected(0) && runner.io.contactor(unit: 0) == .closed, "closed by the reset")
    }
}
