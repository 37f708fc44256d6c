import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Foundation
import HILPlant
import Simulation
import Testing

/// The plant's grid voltage: a Thevenin source on the site's base that the site's power moves,
/// V = V0 + (R·P + X·Q) / V0 in p.u.
@Suite("HIL plant: grid voltage, a Thevenin source the site moves")
struct GridVoltageTests {
    @Test("V rises with injected P by R and with injected Q by X, on the site's base")
    func formula() {
        let grid = GridVoltage(nominalV: 230, baseVA: 200_000)
        #expect(grid.resistancePU == 0.03 && grid.reactancePU == 0.10 && grid.sourcePU == 1)
        #expect(grid.perUnit(injectedW: 0, injectedVar: 0) == 1)
        // 88 kvar into the grid (44 % of the base): +4.4 %.
        #expect(abs(grid.perUnit(injectedW: 0, injectedVar: 88_000) - 1.044) < 1e-12)
        // 100 kW out of it (import, 50 %): −1.5 %.
        #expect(abs(grid.perUnit(injectedW: -100_000, injectedVar: 0) - 0.985) < 1e-12)
        // Both, in volts line to neutral.
        let both = grid.volts(injectedW: 200_000, injectedVar: -40_000)
        #expect(abs(both - 230 * (1 + 0.03 * 1 + 0.10 * -0.2)) < 1e-9, "\(both)")
        // Nonsense in: the source's voltage alone.
        #expect(grid.perUnit(injectedW: .nan, injectedVar: 1000) == 1)
        #expect(GridVoltage(baseVA: 0).perUnit(injectedW: 1000, injectedVar: 1000) == 1)
    }

    @Test("a V0 step moves V by the step, and the site's part divides by V0")
    func sourceStep() {
        var grid = GridVoltage(nominalV: 6351, baseVA: 1_000_000)
        let before = grid.perUnit(injectedW: 500_000, injectedVar: 300_000)
        #expect(abs(before - (1 + 0.015 + 0.03)) < 1e-12)
        grid.sourcePU = 1.06
        let after = grid.perUnit(injectedW: 500_000, injectedVar: 300_000)
        #expect(abs(after - (1.06 + 0.045 / 1.06)) < 1e-12, "\(after)")
        #expect(abs(grid.volts(injectedW: 0, injectedVar: 0) - 1.06 * 6351) < 1e-9)
    }

    /// The plant serves one SunSpec inverter (103 + 704, as `bess-hil plant` does) and a 203 meter;
    /// pysunspec2 reads the meter's PhV and the inverter's phase voltage before and after V0 steps.
    @Test("a V0 step at the plant moves the meter's PhV and the inverter's voltage, read by pysunspec2")
    func plantStep() throws {
        var configuration = try ConfigLoader.parse("""
            mode: hil
            bess_units:
              - {id: U1, capacity_kwh: 100, max_power_kw: 50, modbus: {host: 127.0.0.1, port: 1502, unit_id: 1},
                 inverter: {protocol: sunspec}, bms: {simulated: true}}
            site:
              meter: {protocol: sunspec, modbus: {host: 127.0.0.1, port: 1503, unit_id: 1}}
            simulation:
              load: {profile: steady, base_kw: 20}
              pv: {profile: steady, base_kw: 0}
            """, file: "plant-voltage.yaml")
        // Free ports instead of the configured ones.
        configuration.units[0].modbus?.transport = .tcp(host: "127.0.0.1", port: 0)
        configuration.site.meter?.modbus?.transport = .tcp(host: "127.0.0.1", port: 0)
        let rig = try PlantRig(configuration: configuration, startedAt: SystemClock.shared.now())
        defer { rig.stop() }
        let inverter = try #require(rig.servers[0])
        let meter = try #require(rig.meterServer)
        func read() throws -> (meter: Double?, inverter: Double?) {
            _ = rig.step(now: SystemClock.shared.now())
            func scan(_ port: Int, _ model: String, _ point: String) throws -> Double? {
                let result = try Peer.run(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(port)])
                #expect(result.status == 0, "\(result.out)")
                let json = try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any]
                let value = (json?["points"] as? [String: [String: Any]])?[model]?[point]
                return (value as? Double) ?? (value as? Int).map(Double.init)
            }
            return (try scan(meter.port, "203", "PhV"), try scan(inverter.port, "103", "PhVphA"))
        }
        // The idle unit, 20 kW of load at PF 0.95 lagging on a 50 kVA base: V0 less 1.2 % and 1.3 %.
        let drop = (0.03 * 20_000 + 0.10 * 20_000 * SimulatedMeter.loadVarPerW) / 50_000
        let before = try read()
        #expect(before.meter.map { abs($0 - 230 * (1 - drop)) < 0.06 } == true, "\(before)")
        #expect(before.inverter.map { abs($0 - 230 * (1 - drop)) < 0.06 } == true, "\(before)")
        rig.gridVoltage.sourcePU = 1.05
        let after = try read()
        #expect(after.meter.map { abs($0 - 230 * (1.05 - drop / 1.05)) < 0.06 } == true, "\(after)")
        #expect(after.inverter.map { abs($0 - 230 * (1.05 - drop / 1.05)) < 0.06 } == true, "\(after)")
        #expect(rig.statusLine(now: SystemClock.shared.now(), frequency: 50).contains("V=1.0"))
    }

    @Test("the units' var and power move the plant's voltage: injecting raises it by X and R")
    func unitsMoveV() throws {
        var configuration = try ConfigLoader.parse("""
            mode: hil
            bess_units:
              - {id: U1, capacity_kwh: 400, max_power_kw: 100, max_apparent_power_kva: 100,
                 inverter: {simulated: true}, bms: {simulated: true}}
            site:
              meter: {protocol: sunspec, modbus: {host: 127.0.0.1, port: 1503, unit_id: 1}}
            simulation:
              load: {profile: steady, base_kw: 0}
              pv: {profile: steady, base_kw: 0}
            """, file: "plant-voltage-units.yaml")
        configuration.site.meter?.modbus?.transport = .tcp(host: "127.0.0.1", port: 0)
        let start = SystemClock.shared.now()
        let rig = try PlantRig(configuration: configuration, startedAt: start)
        defer { rig.stop() }
        _ = rig.step(now: start + Duration.seconds(1))
        #expect(abs(rig.voltageV - 230) < 1e-9, "\(rig.voltageV)")
        rig.withUnit(0) {
            $0.inverter.command(setpointW: 40_000)
            $0.inverter.command(reactiveVar: 30_000, revert: nil)
        }
        // Plant time, not wall time: steps of a second, within the setpoint's revert time.
        for k in 2...4 { _ = rig.step(now: start + Duration.seconds(Int64(k))) }
        let unit = rig.units[0].inverter
        #expect(abs(unit.reactiveVar - 30_000) < 1 && abs(unit.powerW - 40_000) < 1, "\(unit.reactiveVar) var, \(unit.powerW) W")
        _ = rig.step(now: start + Duration.seconds(5))
        let expected = 230 * (1 + 0.03 * 0.4 + 0.10 * 0.3)
        #expect(abs(rig.voltageV - expected) < 0.01, "\(rig.voltageV) V, want \(expected)")
    }

    @Test("the meter's var is the load's less what the batteries inject, so it sees the units' Q")
    func meterSeesBatteryVar() {
        var meter = SimulatedMeter(history: 4)
        meter.record(elapsed: .seconds(1), loadW: 100_000, pvW: 0, batteryW: 40_000)
        #expect(abs(meter.gridReactiveVar - 32_870) < 1e-6, "the load's at PF 0.95: \(meter.gridReactiveVar)")
        meter.record(elapsed: .seconds(2), loadW: 100_000, pvW: 0, batteryW: 40_000, batteryVar: 30_000)
        #expect(abs(meter.gridReactiveVar - 2_870) < 1e-6, "30 kvar injected by the units: \(meter.gridReactiveVar)")
        meter.record(elapsed: .seconds(3), loadW: 0, pvW: 0, batteryW: 0, batteryVar: -10_000)
        #expect(abs(meter.gridReactiveVar - 10_000) < 1e-6, "units absorbing: the site imports var")
    }
}
