import BessSystem
import ControlCore
import Config
import Cycle
import Fieldbus
import Foundation
import Simulation
import HILPlant
import Testing

/// The site meter against an independent SunSpec image: pymodbus serving model 203 laid out from
/// pysunspec2's model JSON (hil/peers/pymodbus_sunspec_meter.py).
@Suite("Site meter against an independent peer", .serialized)
struct MeterPeerTests {
    func start(_ extra: [String] = []) throws -> (Process, Pipe, Int) {
        let (process, out) = try Peer.start(["python3", "hil/peers/pymodbus_sunspec_meter.py", "30"] + extra)
        let portLine = try #require(Peer.readLine(out) { $0.hasPrefix("PORT ") })
        return (process, out, try #require(Int(portLine.dropFirst(5))))
    }

    @Test("bessd discovers model 203 and reads W, Hz and both energy registers with their scale factors")
    func discoverAndRead() throws {
        let (process, _, port) = try start()
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let meter = try SunSpecMeter.open(&client)
        #expect(meter.model.id == 203)
        #expect(meter.map.models.map(\.id) == [1, 203])
        let reading = try meter.read(&client)
        #expect(reading.gridPower == Watts(1234.5))
        #expect(reading.frequency == Hertz(49.98))
        #expect(reading.importedEnergy == WattHours(2_500_000))
        #expect(reading.exportedEnergy == WattHours(1_000_000))
        #expect(reading.reactivePower.map { abs($0 + 432.1) < 1e-9 } == true, "VAR × 10^VAR_SF, signed as W: \(String(describing: reading.reactivePower))")
        #expect(reading.voltage.map { abs($0 - 230.5) < 1e-9 } == true, "PhV (line to neutral), not PPV: \(String(describing: reading.voltage))")
    }

    /// PhV not implemented, PPV 400.0 V line to line.
    @Test("a delta meter gives no site voltage, never PPV as line to neutral")
    func deltaMeterHasNoVoltage() throws {
        let (process, _, port) = try start(["12345", "delta"])
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let meter = try SunSpecMeter.open(&client)
        let reading = try meter.read(&client)
        #expect(reading.gridPower == Watts(1234.5), "the image read")
        #expect(reading.voltage == nil, "\(String(describing: reading.voltage))")
    }

    @Test("through a bus worker the site runner reads the meter, sign by import_positive, and its frequency")
    func throughTheWorker() throws {
        let (process, _, port) = try start()
        defer { Peer.stop(process) }
        let yaml = """
            mode: hil
            bess_units:
              - id: U1
                capacity_kwh: 100
                max_power_kw: 50
                inverter: {simulated: true}
                bms: {simulated: true}
            site:
              meter:
                modbus: {host: 127.0.0.1, port: \(port), unit_id: 1}
                import_positive: false
            grid_integration:
              frequency_source: meter
            """
        let configuration = try ConfigLoader.parse(yaml, file: "meter-peer.yaml")
        let runner = try SiteRunner.make(configuration: configuration, startedAt: SystemClock.shared.now()) { _ in }
        runner.startWorkers()
        defer { runner.stopWorkers() }
        // Wait for the worker's first reading (condition, bounded at 10 s).
        let deadline = SystemClock.shared.now() + .seconds(10)
        while runner.io.meterSlot?.reading == nil, SystemClock.shared.now() < deadline { usleep(10_000) }
        #expect(runner.io.meterSlot?.reading != nil, "no meter reading: \(runner.io.meterSlot?.lastError ?? "-")")
        runner.run(now: SystemClock.shared.now(), lateness: .zero, wallClock: 1_800_000_000)
        #expect(runner.meter?.value.gridPower == Watts(-1234.5))
        #expect(runner.controller.connection.gridPower == -1234.5)
        #expect(runner.controller.site.frequency == Hertz(49.98))
        #expect(runner.devicesProbed)
    }

    /// simulation.meter_model 201 and 204.
    @Test("the plant's meter serves the configured model; pysunspec2 reads load − PV − battery as W",
          arguments: [UInt16(201), 204])
    func plantServesTheConfiguredModel(model: UInt16) throws {
        var configuration = try ConfigLoader.parse("""
            mode: hil
            bess_units:
              - {id: U1, capacity_kwh: 100, max_power_kw: 50, inverter: {simulated: true}, bms: {simulated: true}}
            site:
              meter: {protocol: sunspec, modbus: {host: 127.0.0.1, port: 1502, unit_id: 1}}
            simulation:
              meter_model: \(model)
              load: {profile: steady, base_kw: 80}
              pv: {profile: steady, base_kw: 30}
            """, file: "plant-meter.yaml")
        #expect(configuration.simulation.meterModel == model)
        // A free port instead of the configured one.
        configuration.site.meter?.modbus?.transport = .tcp(host: "127.0.0.1", port: 0)
        let rig = try PlantRig(configuration: configuration, startedAt: SystemClock.shared.now())
        defer { rig.stop() }
        _ = rig.step(now: SystemClock.shared.now())
        let server = try #require(rig.meterServer)
        let result = try Peer.run(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(server.port)])
        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let chain = try #require(json["models"] as? [[String: Any]])
        #expect(chain.compactMap { $0["id"] as? Int } == [1, Int(model)])
        let meter = try #require((json["points"] as? [String: [String: Any]])?[String(model)])
        let w = (meter["W"] as? Double) ?? (meter["W"] as? Int).map(Double.init)
        // The unit is idle (0 W): the connection point imports load − PV = 50 kW.
        #expect(w == 50_000)
    }
}
