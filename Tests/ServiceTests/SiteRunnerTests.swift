import BessBase
import BessSystem
import ControlCore
import Simulation
@testable import Service
@testable import Cycle
@testable import Config
import Foundation
import Glibc
import TestSupport
import Testing

@Suite("Simulated site")
struct SiteRunnerTests {
    /// The embedded default; without its site application unless `site` (the droop and interlock
    /// tests watch the units alone).
    func runner(site: Bool = false, _ adjust: (inout BessdConfiguration) -> Void = { _ in }) throws -> SiteRunner {
        var c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        if !site { c.site = SiteConfiguration() }
        adjust(&c)
        return try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
    }

    /// Grid power at the simulated connection point, kW (+ = import).
    func grid(_ r: SiteRunner) -> Double { r.simulation!.meter.gridPowerW / 1000 }

    @Test("only a site that simulates its meter keeps the meter's minutes of history")
    func meterHistoryOnlyWhenSimulated() throws {
        let withMeter = try runner(site: true)
        #expect(withMeter.simulation!.meter.historyCapacity == 8192)
        let without = try runner(site: false)
        #expect(without.simulation!.meter.historyCapacity == 2, "no meter: nothing recorded, nothing kept")
    }

    /// Load steps 180 → 420 → 120 kW; recharge up to 150 kW; the simulated meter 1 s late does not make it hunt.
    @Test("default site: peak shaving holds import at 250 kW within 3 s through load steps, then recharges",
          arguments: [0.0, 1.0])
    func peakShavingOnTheSimulatedSite(meterDelay: Double) throws {
        let r = try runner(site: true) { c in
            if meterDelay > 0 {
                c.simulation.faults = [FaultInjection(kind: .meterDelay, unit: nil, at: .zero, duration: .zero, delay: .seconds(fromDouble: meterDelay))]
            }
        }
        r.simulation!.setFrequency(.steady(hz: 50.0))
        advance(r, from: 0, seconds: 39.5)
        #expect(abs(grid(r) - 180) < 1, "between the thresholds the batteries rest: grid \(grid(r)) kW")
        var samples: [Double] = []
        for k in 0..<400 {  // 39.6 … 79.5 s: the step to 420 kW comes at 40 s
            advance(r, from: 39.5 + Double(k) / 10, seconds: 0.1)
            samples.append(grid(r))
        }
        let settle = (meterDelay > 0 ? 40 : 30) + 5  // samples (100 ms each) after the step: 4 s with the lag, 3 s without
        #expect(samples[settle...].allSatisfy { $0 <= 253 }, "import after the step: max \(samples[settle...].max()!) kW")
        #expect(abs(samples.last! - 250) < 3)
        // No swing below the target band and back: at most one overshoot.
        var below = false, swings = 0
        for w in samples[settle...] {
            if w < 247 { below = true } else if below, w > 253 { swings += 1; below = false }
        }
        #expect(swings == 0)
        #expect(r.controller.siteDecision.applicationActive)
        advance(r, from: 79.5, seconds: 10)
        // Load 120 kW: recharge up to 150 kW of import.
        #expect(abs(grid(r) - 150) < 3, "recharging: grid \(grid(r)) kW")
        #expect(r.controller.siteDecision.delivered < -25_000)
    }

    /// Meter var is the load's at PF 0.95, V below 230 V while importing; each unit's var 0, V beside the site's.
    @Test("the simulated site publishes var and V: meter at PF 0.95 and sagging on import; units beside it")
    func reactivePowerAndVoltage() throws {
        let r = try runner(site: true)
        r.simulation!.setFrequency(.steady(hz: 50.0))
        advance(r, from: 0, seconds: 5)
        let now = MonotonicInstant(nanoseconds: 5_000_000_000)
        var site = SiteStatus()
        r.fill(&site, now: now)
        let load = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded").simulation.sitePower(at: .seconds(5)).load
        #expect(load > 0 && abs(site.gridReactivePower - load * SimulatedMeter.loadVarPerW) < 1, "\(site.gridReactivePower) var for \(load) W of load")
        #expect(site.gridPower > 0 && site.gridVoltage > 207 && site.gridVoltage < 230, "importing lowers it: \(site.gridVoltage) V")
        for i in 0..<r.settings.devices.count {
            var unit = UnitStatus()
            r.fill(&unit, unit: i, now: now)
            #expect(unit.reactivePower == 0 && abs(unit.acVoltage - site.gridVoltage) < 2, "unit \(i): \(unit.reactivePower) var, \(unit.acVoltage) V")
        }
    }

    @Test("meter silence: METER_STALE after 3 s, the application rests, the import floor holds until fresh")
    func meterSilence() throws {
        let r = try runner(site: true) { c in
            c.simulation.faults = [FaultInjection(kind: .meterSilence, unit: nil, at: .seconds(50), duration: .seconds(10), delay: .zero)]
        }
        r.simulation!.setFrequency(.steady(hz: 50.0))
        advance(r, from: 0, seconds: 50)
        while r.controller.events.pop() != nil {}
        advance(r, from: 50, seconds: 5)
        #expect(r.controller.connection.stale)
        #expect(!r.controller.siteDecision.applicationActive)
        // The import limit (350 kW) still holds with the load at 420: at least 70 kW given.
        #expect(r.controller.siteDecision.delivered >= 69_000)
        advance(r, from: 55, seconds: 6)
        #expect(!r.controller.connection.stale)
        var kinds: [ControlEventKind] = []
        while let event = r.controller.events.pop() { kinds.append(event.kind) }
        #expect(kinds.contains(.meterStale) && kinds.contains(.meterFresh))
        #expect(abs(grid(r) - 250) < 3)
    }

    /// Steps the runner with injected instants (no sleeping): `seconds` at 100 ms.
    func advance(_ runner: SiteRunner, from start: Double, seconds: Double) {
        for k in 1...Int(seconds * 10) {
            let t = start + Double(k) / 10
            runner.run(now: MonotonicInstant(nanoseconds: Int64((t * 1e9).rounded())), lateness: .zero, wallClock: 1_800_000_000 + t)
        }
    }

    @Test("units follow droop on the simulated wire: 49.80 Hz gives +4 % of each rating")
    func droopFollowed() throws {
        let r = try runner()
        r.simulation!.setFrequency(.steady(hz: 50.0))
        advance(r, from: 0, seconds: 15)
        r.simulation!.setFrequency(.steady(hz: 49.80))
        advance(r, from: 15, seconds: 30)
        for (i, unit) in r.settings.devices.enumerated() {
            let d = r.controller.decision(unit: i)
            let expected = 0.04 * r.settings.units[i].rating.kilowatts
            #expect(abs(d.setpoint.kilowatts - expected) < 0.01 * expected, "\(unit.id): \(d.setpoint)")
            // The simulated inverter delivers it.
            #expect(abs(r.simulation!.units[i].inverter.powerW / 1000 - expected) < 0.02 * expected)
        }
    }

    @Test("a silent BMS trips BMS_COMM_LOST and the inverter goes to zero")
    func bmsSilence() throws {
        let r = try runner()
        r.simulation!.setFrequency(.steady(hz: 49.5))
        advance(r, from: 0, seconds: 20)
        #expect(r.simulation!.units[0].inverter.powerW > 1000)
        r.simulation!.withUnit(0) { $0.bmsSilent = true }
        advance(r, from: 20, seconds: 5)
        let d = r.controller.decision(unit: 0)
        #expect(d.activeCodes.contains(.bmsCommLost))
        #expect(d.setpoint == .zero)
        #expect(abs(r.simulation!.units[0].inverter.powerW) < 1)
        // The other unit is unaffected.
        #expect(r.controller.decision(unit: 1).setpoint.value > 0)
        var lines: [String] = []
        let ids = r.settings.devices.map(\.id)
        r.controller.events.drain { lines.append(EventText.line($0, unitID: ids[$0.unit])) }
        #expect(lines.contains { $0.hasPrefix("BESS_SIM_01 BMS_COMM_LOST tripped: no fresh data from the BMS") })
    }

    /// One unit whose BMS is real, on a CAN interface that does not exist.
    static func missingCANSite() throws -> BessdConfiguration {
        try ConfigLoader.parse("""
            mode: hil
            bess_units:
              - {id: U1, capacity_kwh: 10, max_power_kw: 5, inverter: {simulated: true}, bms: {interface: bessd-none0}}
            """, file: "hw.yaml")
    }

    @Test("a real BMS whose CAN interface is missing is a coded fault and zero power, not a crash")
    func missingCANInterface() throws {
        let c = try Self.missingCANSite()
        let runner = try SiteRunner.make(configuration: c, startedAt: SystemClock.shared.now()) { _ in }
        runner.startWorkers()
        defer { runner.stopWorkers() }
        #expect(waitFor(seconds: 2) { runner.bmsSlots[0]?.fault != nil })
        #expect(runner.bmsSlots[0]?.fault == "CAN_INTERFACE_MISSING")
        runner.run(now: SystemClock.shared.now(), lateness: .zero)
        let d = runner.controller.decision(unit: 0)
        #expect(d.state == .starting)
        #expect(d.setpoint == .zero)
        #expect(runner.statusLine(now: SystemClock.shared.now()).contains("CAN_INTERFACE_MISSING"))
    }

    @Test("the CAN worker's failure reaches the journal coded: a warning, its code, its unit")
    func canNoticeCoded() throws {
        let c = try Self.missingCANSite()
        let notices = PILock<[DeviceNotice]>([])
        let runner = try SiteRunner.make(configuration: c, startedAt: SystemClock.shared.now()) { notice in
            notices.withLock { $0.append(notice) }
        }
        runner.startWorkers()
        defer { runner.stopWorkers() }
        #expect(waitFor(seconds: 2) { notices.withLock { $0.contains { $0.code == "CAN_INTERFACE_MISSING" } } })
        let notice = notices.withLock { $0.first { $0.code == "CAN_INTERFACE_MISSING" } }
        #expect(notice?.severity == .warning)
        #expect(notice?.units == ["U1"])
        #expect(notice?.text.hasPrefix("bessd-none0: CAN_INTERFACE_MISSING") == true, "\(String(describing: notice))")
    }

    @Test("two real BMS on one CAN interface are refused in the configuration")
    func sharedInterface() {
        #expect(throws: ConfigurationError.self) {
            _ = try ConfigLoader.parse("""
                mode: hil
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

    @Test("a reload refuses device changes (Modbus, inverter, BMS, units, mode, meter), applies control ones")
    func reloadRules() throws {
        let base = try runner(site: true)
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        func refused(_ change: (inout BessdConfiguration) -> Void) -> String? {
            var new = c
            change(&new)
            do throws(RunError) {
                try base.reconfigure(new, now: MonotonicInstant.zero)
                return nil
            } catch {
                return "\(error.code)"
            }
        }
        #expect(refused { $0.units[0].bms.staleAfter = .seconds(7) } == "RELOAD_REFUSED")
        #expect(refused { $0.units[0].inverter.protocolName = .registerMap } == "RELOAD_REFUSED")
        #expect(refused { $0.units.removeLast() } == "RELOAD_REFUSED")
        #expect(refused { $0.mode = .hil } == "RELOAD_REFUSED")
        #expect(refused { $0.site.meter?.staleAfter = .seconds(9) } == "RELOAD_REFUSED")
        #expect(refused { $0.grid.droop.droopUnderPercent = 7 } == nil)
        #expect(base.settings.control.droop.droopUnderPercent == 7)
    }
}

@Suite("Fault injection and frequency profiles")
struct FaultInjectionTests {
    func runner(_ extra: String, profile: String = "  frequency_profile: steady\n  base_hz: 49.8\n") throws -> SiteRunner {
        let yaml = """
            mode: simulation
            bess_units:
              - {id: U1, capacity_kwh: 250, max_power_kw: 100}
              - {id: U2, capacity_kwh: 250, max_power_kw: 100}
            simulation:

            """ + profile + extra
        return try SiteRunner.make(configuration: ConfigLoader.parse(yaml, file: "faults.yaml"), startedAt: .zero) { _ in }
    }

    func advance(_ r: SiteRunner, to seconds: Double, from start: Double = 0) {
        for k in 1...Int((seconds - start) * 10) {
            let t = start + Double(k) / 10
            r.run(now: MonotonicInstant(nanoseconds: Int64((t * 1e9).rounded())), lateness: .zero, wallClock: 1_800_000_000 + t)
        }
    }

    @Test("scheduled faults trip the right interlocks on the right unit, and clear")
    func schedule() throws {
        let r = try runner("""
              faults:
                - {kind: bms_silence, unit: U1, at_s: 20, duration_s: 10}
                - {kind: inverter_fault, unit: U2, at_s: 20, duration_s: 5}
            """)
        advance(r, to: 19)
        #expect(r.controller.decision(unit: 0).state == .running)
        advance(r, to: 24.5, from: 19)
        #expect(r.controller.decision(unit: 0).activeCodes.contains(.bmsCommLost))
        #expect(r.controller.decision(unit: 0).setpoint == .zero)
        #expect(r.controller.decision(unit: 1).activeCodes.contains(.inverterFault))
        // Both clear after their faults end and the hold times pass (BMS 5 s, inverter 10 s).
        advance(r, to: 50, from: 24.5)
        #expect(r.controller.decision(unit: 0).activeCodes.isEmpty)
        #expect(r.controller.decision(unit: 1).activeCodes.isEmpty)
        #expect(r.controller.decision(unit: 0).setpoint.kilowatts > 3.9)
    }

    @Test("injected heat latches THERMAL_RUNAWAY; it stays latched after the heat stops until a reset")
    func thermal() throws {
        let r = try runner("""
              faults:
                - {kind: thermal_runaway, unit: U1, at_s: 15, duration_s: 20}
            """)
        advance(r, to: 40)
        let d = r.controller.decision(unit: 0)
        #expect(d.latchedCodes.contains(.thermalRunaway))
        #expect(d.disconnectRequested)
        #expect(r.controller.decision(unit: 1).latchedCodes.isEmpty)
    }

    @Test("a ramp profile passes through the deadband: response starts only past the edge")
    func ramp() throws {
        let r = try runner("", profile: """
              frequency_profile: ramp
              base_hz: 50.0
              ramp_to_hz: 49.7
              ramp_start_s: 10
              ramp_duration_s: 30

            """)
        advance(r, to: 15)  // 49.95 Hz: inside the deadband
        #expect(r.controller.decision(unit: 0).droop == .zero)
        advance(r, to: 60, from: 15)  // held at 49.7 Hz: +8 kW
        #expect(abs(r.controller.decision(unit: 0).setpoint.kilowatts - 8) < 0.05)
    }

    @Test("a recorded trace drives the frequency; its file errors name the CSV line")
    func trace() throws {
        let directory = NSTemporaryDirectory() + "bessd-trace-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "seconds,hz\n0,50.0\n5,49.8\n100,49.8\n".write(toFile: "\(directory)/trace.csv", atomically: true, encoding: .utf8)
        let yaml = "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n"
            + "simulation:\n  frequency_profile: trace\n  trace_file: trace.csv\n"
        try yaml.write(toFile: "\(directory)/rig.yaml", atomically: true, encoding: .utf8)
        let c = try ConfigLoader.load(path: "\(directory)/rig.yaml")
        #expect(c.simulation.trace == [TracePoint(at: .zero, hz: 50), TracePoint(at: .seconds(5), hz: 49.8),
                                       TracePoint(at: .seconds(100), hz: 49.8)])
        var grid = c.simulation.gridFrequency()
        #expect(abs(grid.frequency(at: .milliseconds(2500)) - 49.9) < 1e-9)
        try "seconds,hz\n0,50.0\n5,fast\n".write(toFile: "\(directory)/trace.csv", atomically: true, encoding: .utf8)
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.load(path: "\(directory)/rig.yaml") }
        #expect(error?.diagnostics.first?.message.contains("trace.csv line 3") == true, "\(String(describing: error))")
    }

    @Test("bad fault entries are refused")
    func badFaults() {
        for entry in ["{kind: meteor}", "{kind: bms_delay, at_s: 3}", "{kind: bms_silence, unit: NOPE}", "{at_s: 1}"] {
            #expect(throws: ConfigurationError.self, "\(entry)") {
                _ = try ConfigLoader.parse("bess_units:\n  - {id: U1, capacity_kwh: 1, max_power_kw: 1}\n"
                                           + "simulation:\n  faults:\n    - \(entry)\n", file: "f.yaml")
            }
        }
    }
}
