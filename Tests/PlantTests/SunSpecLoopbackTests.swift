import ControlCore
import Fieldbus
import Plant
import Testing

/// bessd's SunSpec client against the HIL plant's SunSpec server, over Modbus TCP on loopback.
@Suite("SunSpec over Modbus TCP (loopback)")
struct SunSpecLoopbackTests {
    func serve(_ profile: SunSpecDeviceProfile) throws -> SunSpecServer {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0, profile: profile)
        try server.start()
        return server
    }

    @Test("discovery walks the chain 1 → 103 → 120 → 121 → 123 → 704 by length", arguments: [UInt16(103), 701])
    func discovery(measurement: UInt16) throws {
        let server = try serve(SunSpecDeviceProfile(measurementModel: measurement, controlModel: 704, ratingW: 100_000))
        defer { server.stop() }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        let map = try SunSpec.discover(&client)
        #expect(map.base == 40000)
        #expect(map.models.map(\.id) == [1, measurement, 120, 121, 123, 704])
        #expect(map.models[0].address == 40002 && map.models[0].length == 66)
        // Each model starts where the previous one's length says.
        for (a, b) in zip(map.models, map.models.dropFirst()) { #expect(b.address == a.address + 2 + Int(a.length)) }
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.commandPath == .acControls704)
        #expect(inverter.ratedPower == Watts(100_000))
        #expect(client.lastRoundTrip > .zero)
    }

    @Test("a 704 setpoint reaches the simulated inverter, and the revert timer brings it back to zero")
    func command704() throws {
        let server = try serve(SunSpecDeviceProfile(measurementModel: 103, controlModel: 704, ratingW: 100_000))
        defer { server.stop() }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        let link = SunSpecPlantLink(server: server)
        try inverter.command(.kilowatts(40), revertSeconds: 10, &client)
        for _ in 0..<20 {  // 2 s of plant time
            unit.step(seconds: 0.1)
            link.exchange(&unit, frequencyHz: 49.95)
        }
        #expect(unit.inverter.setpointW == 40_000)
        #expect(unit.inverter.revertTimeoutSeconds == 10)
        let status = try inverter.readStatus(&client)
        #expect(abs(status.activePower.value - 40_000) <= 10)  // W_SF 1: 10 W resolution
        #expect(status.frequency == Hertz(49.95))
        #expect(!status.faulted)
        // A charge setpoint is negative WSet.
        try inverter.command(.kilowatts(-25.5), revertSeconds: 10, &client)
        unit.step(seconds: 0.1)
        link.exchange(&unit, frequencyHz: 50)
        #expect(unit.inverter.setpointW == -25_500)
        // No more writes: after 10 s of plant time the inverter reverts to 0 W on its own.
        for _ in 0..<105 {
            unit.step(seconds: 0.1)
            link.exchange(&unit, frequencyHz: 50)
        }
        #expect(unit.inverter.reverted)
        #expect(unit.inverter.setpointW == 0)
        let after = try inverter.readStatus(&client)
        #expect(abs(after.activePower.value) < 1000)
    }

    @Test("without 704 the storage model 124 carries the setpoint as % of WMax")
    func command124() throws {
        let server = try serve(SunSpecDeviceProfile(measurementModel: 103, controlModel: 124, ratingW: 250_000))
        defer { server.stop() }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.commandPath == .storage124)
        var unit = SimulatedUnit(capacityKWh: 500, maxPowerKW: 250, initialSOCPercent: 60)
        let link = SunSpecPlantLink(server: server)
        try inverter.command(.kilowatts(62.5), revertSeconds: 10, &client)  // 25 % discharge
        link.exchange(&unit, frequencyHz: 50)
        #expect(abs(unit.inverter.setpointW - 62_500) < 1)
        try inverter.command(.kilowatts(-100), revertSeconds: 10, &client)  // 40 % charge
        link.exchange(&unit, frequencyHz: 50)
        #expect(abs(unit.inverter.setpointW + 100_000) < 1)
    }

    @Test("a dead server is a coded error, not a hang or a crash")
    func deadServer() throws {
        let server = try serve(SunSpecDeviceProfile(ratingW: 10_000))
        let port = server.port
        server.stop()
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .milliseconds(300))
        #expect(throws: SunSpecError.self) { _ = try SunSpecInverter.open(&client) }
        do {
            _ = try client.readRegisters(at: 40000, count: 2)
            Issue.record("read from a dead server succeeded")
        } catch {
            #expect(error.code == "MODBUS_CONNECT_FAILED")
        }
    }
}

@Suite("SunSpec server faults")
struct SunSpecServerFaultTests {
    @Test("a silenced server times out (coded); answering again recovers")
    func silence() throws {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0, profile: SunSpecDeviceProfile(ratingW: 10_000))
        try server.start()
        defer { server.stop() }
        let client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1,
                                          timeout: .milliseconds(200))
        #expect(try client.readRegisters(at: 40000, count: 2) == [0x5375, 0x6E53])
        server.silent = true
        do {
            _ = try client.readRegisters(at: 40000, count: 2)
            Issue.record("a silent server answered")
        } catch {
            #expect(error.code == "MODBUS_TIMEOUT")
        }
        server.silent = false
        #expect(try client.readRegisters(at: 40000, count: 2) == [0x5375, 0x6E53])
        server.responseDelaySeconds = 0.5
        #expect(throws: ModbusError.self) { _ = try client.readRegisters(at: 40000, count: 2) }
    }
}
