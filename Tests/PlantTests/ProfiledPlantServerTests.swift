import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Fieldbus
import Foundation
import HILPlant
import Simulation
import Testing

/// The plant serving profiled devices on the house's Modbus server, over loopback TCP: a BYD C130
/// rack's holding registers and a Sungrow SH-RT's input and holding registers, from devices/*.yaml.
@Suite("HIL plant: profiled Modbus devices on loopback TCP")
struct ProfiledPlantServerTests {
    static let devices = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../devices").standardizedFileURL.path

    /// A plant with one unit: a Sungrow SH-RT (10 kW) and a BYD C130 rack over Modbus, each on a free port.
    static func rig(start: MonotonicInstant) throws -> PlantRig {
        var configuration = try ConfigLoader.parse("""
            mode: hil
            profile_directories: [\(devices)]
            bess_units:
              - {id: U1, capacity_kwh: 20, max_power_kw: 10, modbus: {host: 127.0.0.1, port: 1502, unit_id: 1},
                 inverter: {profile: sungrow-sh-rt},
                 bms: {profile: byd-c130, transport: modbus, cells_in_series: 224, modbus: {host: 127.0.0.1, port: 1503, unit_id: 1}}}
            simulation:
              initial_soc_percent: 60
            """, file: "plant-profiled.yaml")
        configuration.units[0].modbus?.transport = .tcp(host: "127.0.0.1", port: 0)
        configuration.units[0].bms.modbus?.transport = .tcp(host: "127.0.0.1", port: 0)
        return try PlantRig(configuration: configuration, startedAt: start)
    }

    /// A client of the server `which` picks, after one plant step (the registers published).
    static func connect(_ rig: PlantRig, _ which: (PlantRig) -> SunSpecServer?, start: MonotonicInstant) throws
        -> (SunSpecServer, ModbusConnection) {
        let server = try #require(which(rig))
        #expect(server.port > 0)
        _ = rig.step(now: start + .milliseconds(100))
        return (server, try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2)))
    }

    @Test("the rack's registers carry the pack; an address outside the profile's is refused")
    func modbusBMS() throws {
        let start = SystemClock.shared.now()
        let rig = try Self.rig(start: start)
        defer { rig.stop() }
        let (server, client) = try Self.connect(rig, { $0.bmsServers[0] }, start: start)
        let words = try client.readRegisters(unit: 1, at: 0x2100, count: 13)
        #expect(words[3] == 60, "SOC 0x2103: \(words)")
        #expect(Double(words[0]) / 10 > 224 * 2.5, "pack voltage 0x2100 for 224 cells: \(words[0])")
        #expect(try client.readRegisters(unit: 1, at: 0x2143, count: 1) == [0], "no level-3 alarm")
        #expect(throws: DeviceError.self) { try client.readRegisters(unit: 1, at: 0x3000, count: 1) }
        #expect(server.requests == 3)
    }

    @Test("bessd's start, setpoint and heartbeat writes reach the inverter; silent 20 s, it falls back to 0 W")
    func profiledInverter() throws {
        let start = SystemClock.shared.now()
        let rig = try Self.rig(start: start)
        defer { rig.stop() }
        let (_, client) = try Self.connect(rig, { $0.profiledServers[0] }, start: start)
        // Input registers: rating 10 kW (5000, ×100 W), the grid's frequency (5241, 0.01 Hz).
        #expect(try client.readRegisters(unit: 1, table: .input, at: 5000, count: 1) == [100])
        let hz = try client.readRegisters(unit: 1, table: .input, at: 5241, count: 1)[0]
        #expect((4900...5100).contains(hz), "the plant's grid frequency, 0.01 Hz: \(hz)")
        // The profile's start (13049 = 3), a 2 kW discharge (0xBB, 2000 W) and the heartbeat (20 s).
        try client.writeRegisters(unit: 1, at: 13049, [3])
        try client.writeRegisters(unit: 1, at: 13050, [0xBB, 2000])
        try client.writeRegisters(unit: 1, at: 13079, [20])
        // Each write was answered, so the server holds it: the next step applies it.
        _ = rig.step(now: start + .milliseconds(200))
        let inverter = try #require(rig.profiledInverters[0])
        #expect(inverter.inCommandedMode)
        #expect(inverter.requests >= 4, "three writes and a read: \(inverter.requests)")
        #expect(rig.units[0].inverter.setpointW == 2000)
        // Nobody writes again: 20 s later the heartbeat has run out, the stop sequence stands in its
        // registers and the unit is commanded to 0 W.
        _ = rig.step(now: start + .milliseconds(20_300))
        #expect(rig.profiledInverters[0]?.fellBack == true)
        #expect(rig.units[0].inverter.setpointW == 0)
        #expect(try client.readRegisters(unit: 1, at: 13049, count: 3) == [0, 0xCC, 2000])
        #expect(try client.readRegisters(unit: 1, at: 13079, count: 1) == [0])
        // A new start and setpoint command it again.
        try client.writeRegisters(unit: 1, at: 13049, [3])
        try client.writeRegisters(unit: 1, at: 13050, [0xAA, 1500])
        _ = rig.step(now: start + .milliseconds(20_400))
        #expect(rig.units[0].inverter.setpointW == -1500)
    }
}
