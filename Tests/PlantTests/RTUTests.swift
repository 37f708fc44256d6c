import BessBase
import ControlCore
import Fieldbus
import Foundation
import Simulation
import HILPlant
import Testing

/// Modbus RTU over a socat pty pair: the simulator on one end, bessd's client on the other.
@Suite("SunSpec over Modbus RTU (socat pty pair)", .serialized)
struct RTUTests {
    @Test("discovery and a 704 command over RTU at 19200 8E1, unit 7")
    func rtu() throws {
        let directory = NSTemporaryDirectory() + "bessd-rtu-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (socat, _) = try Peer.start(["socat", "pty,raw,echo=0,link=\(directory)/plant", "pty,raw,echo=0,link=\(directory)/bessd"])
        defer { Peer.stop(socat) }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: "\(directory)/bessd") { usleep(20_000) }
        #expect(FileManager.default.fileExists(atPath: "\(directory)/bessd"))

        let server = try SunSpecServer(
            transport: .rtu(device: "\(directory)/plant", baud: 19200, parity: "E", dataBits: 8, stopBits: 1, unitID: 7),
            profile: SunSpecDeviceProfile(ratingW: 100_000))
        try server.start()
        defer { server.stop() }
        var client = try ModbusConnection(
            endpoint: .rtu(device: "\(directory)/bessd", baud: 19200, parity: "E", dataBits: 8, stopBits: 1, rs485: false),
            unitID: 7, timeout: .seconds(1))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.map.models.map(\.id) == [1, 103, 120, 121, 123, 704])
        try inverter.command(.kilowatts(12), revert: .seconds(10), &client)
        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        SunSpecPlantLink(server: server).exchange(&unit, frequencyHz: 50)
        #expect(unit.inverter.setpointW == 12_000)
        // A request to another unit id gets no answer: a timeout, coded.
        let stranger = try ModbusConnection(
            endpoint: .rtu(device: "\(directory)/bessd", baud: 19200, parity: "E", dataBits: 8, stopBits: 1, rs485: false),
            unitID: 9, timeout: .milliseconds(300))
        client.close()
        do {
            _ = try stranger.readRegisters(at: 40000, count: 2)
            Issue.record("unit 9 answered")
        } catch {
            #expect(error.code.description == "MODBUS_TIMEOUT")
        }
    }
}
