import ControlCore
import Plant
@testable import Runtime
import Glibc
import Testing

@Suite("Simulated site")
struct SiteRunnerTests {
    func runner() throws -> SiteRunner {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        return try SiteRunner(configuration: c, startedAt: .zero) { _ in }
    }

    /// Steps the runner with injected instants (no sleeping): `seconds` at 100 ms.
    func advance(_ runner: SiteRunner, from start: Double, seconds: Double) {
        for k in 1...Int(seconds * 10) {
            let t = start + Double(k) / 10
            runner.step(now: MonotonicInstant(nanoseconds: Int64((t * 1e9).rounded())), wallClock: 1_800_000_000 + t)
        }
    }

    @Test("units follow droop on the simulated wire: 49.80 Hz gives +4 % of each rating")
    func droopFollowed() throws {
        let r = try runner()
        r.setFrequency(.steady(hz: 50.0))
        advance(r, from: 0, seconds: 15)
        r.setFrequency(.steady(hz: 49.80))
        advance(r, from: 15, seconds: 30)
        for (i, unit) in r.configuration.units.enumerated() {
            let d = r.controller.decision(unit: i)
            let expected = 0.04 * unit.maxPowerKW
            #expect(abs(d.setpoint.kilowatts - expected) < 0.01 * expected, "\(unit.id): \(d.setpoint)")
            // The simulated inverter delivers it.
            #expect(abs(r.units[i].inverter.powerW / 1000 - expected) < 0.02 * expected)
        }
    }

    @Test("a silent BMS trips BMS_COMM_LOST and the inverter goes to zero")
    func bmsSilence() throws {
        let r = try runner()
        r.setFrequency(.steady(hz: 49.5))
        advance(r, from: 0, seconds: 20)
        #expect(r.units[0].inverter.powerW > 1000)
        r.withUnit(0) { $0.bmsSilent = true }
        advance(r, from: 20, seconds: 5)
        let d = r.controller.decision(unit: 0)
        #expect(d.activeCodes.contains(.bmsCommLost))
        #expect(d.setpoint == .zero)
        #expect(abs(r.units[0].inverter.powerW) < 1)
        // The other unit is unaffected.
        #expect(r.controller.decision(unit: 1).setpoint.value > 0)
        var lines: [String] = []
        let c = r.configuration
        r.controller.events.drain { lines.append(EventText.line($0, unitID: c.units[$0.unit].id)) }
        #expect(lines.contains { $0.hasPrefix("BESS_SIM_01 BMS_COMM_LOST tripped: no fresh data from the BMS") })
    }

    @Test("a real BMS whose CAN interface is missing is a coded fault and zero power, not a crash")
    func missingCANInterface() throws {
        let c = try ConfigLoader.parse("""
            mode: hardware
            bess_units:
              - {id: U1, capacity_kwh: 10, max_power_kw: 5, inverter: {simulated: true}, bms: {interface: bessd-none0}}
            """, file: "hw.yaml")
        let runner = try SiteRunner(configuration: c, startedAt: MonotonicClock.now()) { _ in }
        runner.startWorkers()
        defer { runner.stopWorkers() }
        var fault: String?
        for _ in 0..<40 where fault == nil {
            usleep(50_000)
            fault = runner.bmsSlots[0]?.fault
        }
        #expect(fault == "CAN_INTERFACE_MISSING")
        runner.step(now: MonotonicClock.now(), wallClock: MonotonicClock.wallClock())
        let d = runner.controller.decision(unit: 0)
        #expect(d.state == .starting)
        #expect(d.setpoint == .zero)
        #expect(runner.statusLine(now: MonotonicClock.now()).contains("CAN_INTERFACE_MISSING"))
    }

    @Test("two real BMS on one CAN interface are refused in the configuration")
    func sharedInterface() {
        #expect(throws: ConfigurationError.self) {
            _ = try ConfigLoader.parse("""
                mode: hardware
                bess_units:
                  - {id: U1, capacity_kwh: 10, max_power_kw: 5, inverter: {simulated: true}, bms: {interface: can0}}
                  - {id: U2, capacity_kwh: 10, max_power_kw: 5, inverter: {simulated: true}, bms: {interface: can0}}
                """, file: "hw.yaml")
        }
    }

    @Test("the status line names every unit with its state, SOC and power")
    func statusLine() throws {
        let r = try runner()
        advance(r, from: 0, seconds: 2)
        let line = r.statusLine(now: MonotonicInstant(nanoseconds: 2_000_000_000))
        #expect(line.hasPrefix("t=2s f="))
        #expect(line.contains("BESS_SIM_01 running SOC 60.0%"))
        #expect(line.contains("BESS_SIM_02 running"))
    }
}
