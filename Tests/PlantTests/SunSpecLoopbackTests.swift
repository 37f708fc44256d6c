import BessBase
import ControlCore
import Fieldbus
import Simulation
import HILPlant
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
        try inverter.command(.kilowatts(40), revert: .seconds(10), &client)
        for _ in 0..<20 {  // 2 s of plant time
            unit.step(by: .milliseconds(100))
            link.exchange(&unit, frequencyHz: 49.95)
        }
        #expect(unit.inverter.setpointW == 40_000)
        #expect(unit.inverter.revertTimeout == .seconds(10))
        let status = try inverter.readStatus(&client)
        #expect(abs(status.activePower.value - 40_000) <= 10)  // W_SF 1: 10 W resolution
        #expect(status.frequency == Hertz(49.95))
        #expect(!status.faulted)
        // A charge setpoint is negative WSet.
        try inverter.command(.kilowatts(-25.5), revert: .seconds(10), &client)
        unit.step(by: .milliseconds(100))
        link.exchange(&unit, frequencyHz: 50)
        #expect(unit.inverter.setpointW == -25_500)
        // No more writes: after 10 s of plant time the inverter reverts to 0 W on its own.
        for _ in 0..<105 {
            unit.step(by: .milliseconds(100))
            link.exchange(&unit, frequencyHz: 50)
        }
        #expect(unit.inverter.reverted)
        #expect(unit.inverter.setpointW == 0)
        let after = try inverter.readStatus(&client)
        #expect(abs(after.activePower.value) < 1000)
    }

    @Test("without 704 the storage model 124 carries the setpoint as % of WChaMax (not of WMax)")
    func command124() throws {
        // WMax 250 kW, WChaMax 100 kW: a rate base apart from the rating, as real devices have it.
        let server = try serve(SunSpecDeviceProfile(measurementModel: 103, controlModel: 124, ratingW: 250_000,
                                                    maxChargeRateW: 100_000))
        defer { server.stop() }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.commandPath == .storage124)
        #expect(inverter.ratedPower == Watts(250_000))
        #expect(inverter.storageRateBase == Watts(100_000))
        var unit = SimulatedUnit(capacityKWh: 500, maxPowerKW: 250, initialSOCPercent: 60)
        let link = SunSpecPlantLink(server: server)
        let storage = try #require(server.withImage { image, _ in image.model(SunSpec.Storage.id) })
        func rates() throws -> (out: Int16, into: Int16) {
            let words = try client.readRegisters(at: storage.address + SunSpec.Storage.outWRte, count: 2)
            return (Int16(bitPattern: words[0]), Int16(bitPattern: words[1]))
        }
        try inverter.command(.kilowatts(62.5), revert: .seconds(10), &client)  // 62.5 % of WChaMax, discharge
        #expect(try rates() == (6250, -6250))  // InOutWRte_SF −2
        link.exchange(&unit, frequencyHz: 50)
        #expect(abs(unit.inverter.setpointW - 62_500) < 1)
        try inverter.command(.kilowatts(-40), revert: .seconds(10), &client)  // 40 % charge
        #expect(try rates() == (-4000, 4000))
        link.exchange(&unit, frequencyHz: 50)
        #expect(abs(unit.inverter.setpointW + 40_000) < 1)
    }

    @Test("704 without an implemented WSet_SF is refused with a coded error, as 124 without InOutWRte_SF is")
    func wSetSFNotImplemented() throws {
        let server = try serve(SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000))
        defer { server.stop() }
        server.withImage { image, _ in image[SunSpec.ACControls.id, SunSpec.ACControls.wSetSF] = 0x8000 }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        do {
            let inverter = try SunSpecInverter.open(&client)
            Issue.record("opened with command path \(inverter.commandPath)")
        } catch {
            #expect(error.code.description == "SUNSPEC_VALUE_INVALID")
            #expect(error.message.contains("WSet_SF"))
        }
    }

    /// Records every write and fails the `failing`-th one (1-based) with a timeout.
    struct RecordingDevice: RegisterAccess {
        var inner: ModbusConnection
        var writes: [(address: Int, values: [UInt16])] = []
        var failing: Int?
        mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
            try inner.readRegisters(at: address, count: count)
        }
        mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
            writes.append((address, values))
            if writes.count == failing { throw DeviceError(.timeout, message: "injected") }
            try inner.writeRegisters(at: address, values)
        }
    }

    /// The revert value is 0 W.
    @Test("704: the revert value is written before or with arming, so a failed write arms nothing unknown",
          arguments: [1, 2, 3])
    func revertValueBeforeArming(failing: Int) throws {
        typealias C = SunSpec.ACControls
        let server = try serve(SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000))
        defer { server.stop() }
        // The device holds a revert value of 40 kW from someone else; its revert is not armed.
        server.withImage { image, _ in
            image[C.id, C.wSetRvrt] = 0
            image[C.id, C.wSetRvrt + 1] = 40_000
        }
        var device = RecordingDevice(inner: try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port),
                                                                 timeout: .seconds(2)))
        let inverter = try SunSpecInverter.open(&device)
        device.failing = failing
        #expect(throws: DeviceError.self) { try inverter.command(.kilowatts(30), revert: .seconds(10), &device) }
        let model = try #require(inverter.map.first(C.id)).address
        func covers(_ write: (address: Int, values: [UInt16]), _ offset: Int) -> Bool {
            (write.address..<(write.address + write.values.count)).contains(model + offset)
        }
        // The first write that arms the revert carries, or comes after, WSetRvrt = 0.
        let arming = try #require(device.writes.firstIndex { covers($0, C.wSetEnaRvrt) } ?? (failing < 3 ? Int.max : nil))
        let value = try #require(device.writes.firstIndex { covers($0, C.wSetRvrt) })
        #expect(value <= arming)
        #expect(device.writes[value].values.count >= 2)
        // On the device: armed ⇒ revert value 0 W.
        let block = try SunSpec.read(try #require(inverter.map.first(C.id)), from: &device.inner)
        if block.uint16(C.wSetEnaRvrt) == 1 { #expect(block.int32(C.wSetRvrt) == 0) }
        #expect(block.int32(C.wSetRvrt) == (failing == 1 ? 40_000 : 0))
    }

    /// Records every request (reads and writes) on the way to the server.
    struct CountingDevice: RegisterAccess {
        var inner: ModbusConnection
        var reads: [(address: Int, count: Int)] = []
        var writes: [(address: Int, values: [UInt16])] = []
        mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
            reads.append((address, count))
            return try inner.readRegisters(at: address, count: count)
        }
        mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
            writes.append((address, values))
            try inner.writeRegisters(at: address, values)
        }
    }

    /// The read covers state, alarms, W, var, V, Hz.
    @Test("each cycle costs one read and at most one write; the revert is armed on first write and each refresh",
          arguments: [UInt16(103), 701])
    func wirePerCycle(measurement: UInt16) throws {
        typealias C = SunSpec.ACControls
        let server = try serve(SunSpecDeviceProfile(measurementModel: measurement, controlModel: 704, ratingW: 100_000))
        defer { server.stop() }
        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        unit.inverter.command(setpointW: 42_000)
        unit.step(by: .seconds(1))
        SunSpecPlantLink(server: server).exchange(&unit, frequencyHz: 49.87)
        var device = CountingDevice(inner: try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port),
                                                                timeout: .seconds(2)))
        let inverter = try SunSpecInverter.open(&device)
        let model = try #require(inverter.map.first(measurement))

        device.reads = []
        let reading = try inverter.readStatus(&device)
        let span = SunSpecInverter.pollSpan(measurement)
        #expect(device.reads.count == 1)
        #expect(device.reads.first?.address == model.address + span.lowerBound && device.reads.first?.count == span.count)
        #expect(span.count <= (measurement == 701 ? 16 : 32))
        // The same values as a read of the whole model would give.
        #expect(abs(reading.activePower.value - unit.inverter.powerW) < 1000, "W \(reading.activePower) for \(unit.inverter.powerW)")
        #expect(abs((reading.frequency?.value ?? 0) - 49.87) < 0.011)
        #expect(reading.ratedPower == Watts(100_000))
        // The plant's var (none: bessd commands none) and its AC voltage, 230 V raised 0.5 % at rated export.
        #expect(reading.reactivePower == 0)
        #expect(reading.voltage.map { abs($0 - 230 * (1 + 0.005 * unit.inverter.powerW / 100_000)) < 0.06 } == true,
                "\(String(describing: reading.voltage)) for \(unit.inverter.powerW) W")

        // Between refreshes of the revert timer a changed setpoint is one request: WSetEna, WSetMod, WSet.
        let controls = try #require(inverter.map.first(C.id)).address
        device.writes = []
        try inverter.command(.kilowatts(12), revert: .seconds(10), rearm: false, &device)
        #expect(device.writes.count == 1)
        #expect(device.writes.first?.address == controls + C.wSetEna && device.writes.first?.values.count == 4)
        // A rearm writes the revert value, then enable and time, then the setpoint.
        device.writes = []
        try inverter.command(.kilowatts(12), revert: .seconds(10), rearm: true, &device)
        #expect(device.writes.map(\.address) == [controls + C.wSetRvrt, controls + C.wSetEnaRvrt, controls + C.wSetEna])

        // The minute's refresh of static values and scale factors does not walk the chain again: its
        // one single-register read is model 123's Conn_RvrtTms (whether an open can be armed).
        device.reads = []
        let refreshed = try SunSpecInverter.open(&device, map: inverter.map)
        #expect(refreshed.map == inverter.map)
        let connRvrtTms = inverter.connectControl.map { $0.address + SunSpec.Controls.connRvrtTms }
        #expect(!device.reads.contains { $0.address == inverter.map.base || ($0.count == 1 && $0.address != connRvrtTms) })
        #expect(connRvrtTms == nil || device.reads.contains { $0.address == connRvrtTms && $0.count == 1 })
        #expect(refreshed.ratedPower == inverter.ratedPower)
    }

    @Test("a dead server is a coded error, not a hang or a crash")
    func deadServer() throws {
        let server = try serve(SunSpecDeviceProfile(ratingW: 10_000))
        let port = server.port
        server.stop()
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .milliseconds(300))
        #expect(throws: DeviceError.self) { _ = try SunSpecInverter.open(&client) }
        do {
            _ = try client.readRegisters(at: 40000, count: 2)
            Issue.record("read from a dead server succeeded")
        } catch {
            #expect(error.code.description == "MODBUS_CONNECT_FAILED")
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
            #expect(error.code.description == "MODBUS_TIMEOUT")
        }
        server.silent = false
        #expect(try client.readRegisters(at: 40000, count: 2) == [0x5375, 0x6E53])
        server.responseDelay = .milliseconds(500)
        #expect(throws: DeviceError.self) { _ = try client.readRegisters(at: 40000, count: 2) }
    }
}
