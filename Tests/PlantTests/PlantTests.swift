import ControlCore
import Simulation
import Testing

@Suite("Plant models")
struct PlantTests {
    @Test("SOC integrates energy: 100 kW for 30 min takes ≈ 50 kWh out of 250 kWh (20 % SOC)")
    func socIntegration() {
        var battery = BatteryModel(parameters: .lfp(capacityWh: 250_000, maxPowerW: 100_000), soc: 0.6)
        for _ in 0..<1800 { battery.step(dcPowerW: 100_000, seconds: 1) }
        // Capacity is Ah at 3.2 V/cell nominal; the LFP plateau sits a little above it, so slightly
        // less than 20 % leaves. Within 1.5 % SOC.
        #expect(abs((0.6 - battery.soc) * 100 - 20) < 1.5)
        #expect(battery.current < 0)  // discharging: negative in the BMS convention
    }

    @Test("terminal voltage rises while charging and falls while discharging")
    func internalResistance() {
        var battery = BatteryModel(parameters: .lfp(capacityWh: 250_000, maxPowerW: 100_000), soc: 0.5)
        let ocv = battery.openCircuitVoltage
        battery.step(dcPowerW: -50_000, seconds: 0.1)
        #expect(battery.packVoltage > ocv)
        battery.step(dcPowerW: 50_000, seconds: 0.1)
        #expect(battery.packVoltage < battery.openCircuitVoltage)
    }

    @Test("OCV curve is monotonic and clamps outside 0–1")
    func ocvCurve() {
        var previous = LFPCurve.openCircuitVolts(soc: 0)
        for i in 1...100 {
            let v = LFPCurve.openCircuitVolts(soc: Double(i) / 100)
            #expect(v >= previous)
            previous = v
        }
        #expect(LFPCurve.openCircuitVolts(soc: -1) == 2.80)
        #expect(LFPCurve.openCircuitVolts(soc: 2) == 3.55)
        #expect(LFPCurve.openCircuitVolts(soc: .nan) == 2.80)
    }

    @Test("limits taper to zero at full and empty, and with heat")
    func limits() {
        var battery = BatteryModel(parameters: .lfp(capacityWh: 250_000, maxPowerW: 100_000), soc: 1.0)
        #expect(battery.chargeCurrentLimit == 0)
        #expect(battery.dischargeCurrentLimit > 0)
        battery.setSOC(0)
        #expect(battery.dischargeCurrentLimit == 0)
        battery.setSOC(0.5)
        battery.setTemperature(56)
        #expect(battery.chargeCurrentLimit == 0 && battery.dischargeCurrentLimit == 0)
    }

    @Test("injected heat drives temperature up fast (thermal runaway)")
    func thermalRunaway() {
        var battery = BatteryModel(parameters: .lfp(capacityWh: 250_000, maxPowerW: 100_000), soc: 0.5)
        battery.injectedHeatW = 500_000
        let before = battery.temperature
        for _ in 0..<10 { battery.step(dcPowerW: 0, seconds: 1) }
        #expect((battery.temperature - before) / 10 > 0.2)  // °C/s, well above the 0.1 °C/s trip
    }

    @Test("inverter follows its setpoint and reverts to zero when its timer runs out")
    func inverterRevert() {
        var inverter = SimulatedInverter(ratingW: 100_000, revertTimeout: .seconds(10))
        inverter.command(setpointW: 40_000)
        for _ in 0..<20 { _ = inverter.step(by: .milliseconds(100), chargeLimitW: 1e9, dischargeLimitW: 1e9) }
        #expect(abs(inverter.powerW - 40_000) < 1)
        for _ in 0..<75 { _ = inverter.step(by: .milliseconds(100), chargeLimitW: 1e9, dischargeLimitW: 1e9) }
        #expect(!inverter.reverted)  // 9.5 s since the write: inside the 10 s timer
        #expect(abs(inverter.powerW - 40_000) < 1)
        for _ in 0..<40 { _ = inverter.step(by: .milliseconds(100), chargeLimitW: 1e9, dischargeLimitW: 1e9) }
        #expect(inverter.reverted)
        #expect(abs(inverter.powerW) < 1)
        // The timer runs out strictly after its timeout, not on it; without one it never does.
        inverter.command(setpointW: 40_000)
        _ = inverter.step(by: .seconds(10), chargeLimitW: 1e9, dischargeLimitW: 1e9)
        #expect(!inverter.reverted)
        _ = inverter.step(by: .nanoseconds(1), chargeLimitW: 1e9, dischargeLimitW: 1e9)
        #expect(inverter.reverted)
        inverter.revertTimeout = nil
        inverter.command(setpointW: 40_000)
        _ = inverter.step(by: .seconds(86_400), chargeLimitW: 1e9, dischargeLimitW: 1e9)
        #expect(!inverter.reverted && inverter.setpointW == 40_000)
        inverter.command(setpointW: 1e12)
        #expect(inverter.setpointW == 100_000)
        inverter.command(setpointW: .nan)
        #expect(inverter.setpointW == 0)
    }

    @Test("frequency profiles: steady, steps, trace and a repeatable walk")
    func frequency() {
        var steady = GridFrequency(.steady(hz: 50))
        #expect(steady.frequency(at: .seconds(100)) == 50)
        var steps = GridFrequency(.steps(baseHz: 50, amplitudeHz: 0.2, period: .seconds(10)))
        #expect([0, 10, 20, 30, 40].map { steps.frequency(at: .seconds($0)) } == [50, 49.8, 50, 50.2, 50])
        #expect(steps.frequency(at: .seconds(10) - .nanoseconds(1)) == 50, "a step changes at its period, not a nanosecond early")
        var trace = GridFrequency(.trace([(.zero, 50), (.seconds(10), 49), (.seconds(20), 49)]))
        #expect(abs(trace.frequency(at: .seconds(5)) - 49.5) < 1e-12)
        #expect(trace.frequency(at: .seconds(99)) == 49)
        var ramp = GridFrequency(.ramp(fromHz: 50, toHz: 49, start: .seconds(10), duration: .seconds(20)))
        #expect(ramp.frequency(at: .seconds(10)) == 50 && ramp.frequency(at: .seconds(30)) == 49)
        #expect(abs(ramp.frequency(at: .seconds(15)) - 49.75) < 1e-12)
        var a = GridFrequency(.walk(baseHz: 50, amplitudeHz: 0.1, seed: 42))
        var b = GridFrequency(.walk(baseHz: 50, amplitudeHz: 0.1, seed: 42))
        var values: [Double] = []
        for i in 0..<6000 {
            let t = Duration.milliseconds(100 * i)
            let x = a.frequency(at: t)
            #expect(x == b.frequency(at: t))
            values.append(x)
        }
        let mean = values.reduce(0, +) / Double(values.count)
        #expect(abs(mean - 50) < 0.1)
        #expect(values.contains { $0 < 49.95 } && values.contains { $0 > 50.05 })
    }

    @Test("a simulated unit's BMS snapshot is stamped and consistent")
    func snapshot() {
        let unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        let now = MonotonicInstant(nanoseconds: 5_000_000_000)
        let bms = unit.bmsSnapshot(at: now)
        #expect(bms.limits?.takenAt == now)
        #expect(bms.status.map { abs($0.value.soc.value - 60) < 1e-9 } == true)
        #expect(bms.cells.map { $0.value.maxCellVoltage >= $0.value.minCellVoltage } == true)
        #expect(bms.requests?.value.chargeEnabled == true)
    }
}
