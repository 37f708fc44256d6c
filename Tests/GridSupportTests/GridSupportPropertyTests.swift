import GridSupport
import PropertyBased
import Testing

/// Replaces `value` by a hostile one when `selector` says so: NaN, ±infinity, 0, ×10, ×√3.
func hostile(_ value: Double, _ selector: Int) -> Double {
    switch selector {
    case 0: .nan
    case 1: .infinity
    case 2: -.infinity
    case 3: 0
    case 4: value * 10
    case 5: value * 1.732
    default: value
    }
}

@Suite("GridSupport: properties")
struct GridSupportPropertyTests {
    /// Every mode, with and without volt-watt, under both priorities.
    static func settings(_ mode: Int, voltWatt: Bool, reactivePriority: Bool) -> GridSupportSettings {
        let reactive: ReactivePowerMode? =
            switch mode {
            case 0: .voltVar(catB.voltVar)
            case 1: .wattVar(catB.wattVar)
            case 2: .constantVar(ConstantVarSettings(percent: -80, responseTime: .seconds(2)))
            case 3: .constantPowerFactor(ConstantPowerFactorSettings(
                discharging: PowerFactorSetting(0.5, .injecting), charging: PowerFactorSetting(0.7, .absorbing), responseTime: .seconds(1)))
            default: nil
            }
        return GridSupportSettings(reactive: reactive, voltWatt: voltWatt ? catB.voltWatt : nil, reactivePriority: reactivePriority)
    }

    @Test("|Q| ≤ VAMax and P² + Q² ≤ VAMax² after bounding, for any inputs; NaN in gives no command out")
    func bounded() async {
        await propertyCheck(
            count: 300,
            input: Gen.int(in: 0...4), Gen.bool, Gen.bool, Gen.double(in: 0.3...1.8), Gen.double(in: -150_000...150_000),
            Gen.double(in: 0...2), Gen.int(in: 0...12), Gen.int(in: 0...12)
        ) { mode, voltWatt, priority, v, p, dt, poisonV, poisonP in
            let s = Self.settings(mode, voltWatt: voltWatt, reactivePriority: priority)
            var unit = try! GridSupportController(settings: s, rating: rating)
            for k in 0..<30 {
                let voltage = hostile(v, k % 3 == 0 ? poisonV : 99), power = hostile(p, k % 4 == 1 ? poisonP : 99)
                let out = unit.step(voltage: voltage, desiredPowerW: power, elapsedSeconds: dt)
                if let q = out.reactivePowerVar {
                    #expect(q.isFinite && abs(q) <= rating.apparentPowerVA * (1 + 1e-12))
                    let pw = try! #require(out.activePowerW)
                    #expect(pw * pw + q * q <= rating.apparentPowerVA * rating.apparentPowerVA * (1 + 1e-9))
                }
                if let pw = out.activePowerW {
                    #expect(pw.isFinite && abs(pw) <= rating.apparentPowerVA * (1 + 1e-12))
                    // Bounding and volt-watt only ever take active power away (or, at high voltage, charge).
                    #expect(pw <= power + 1e-6 || (power < 0 && pw >= power - 1e-6))
                }
                if !power.isFinite {
                    #expect(out.activePowerW == nil && out.reactivePowerVar == nil)
                }
                let plausible = voltage.isFinite && GridSupportSettings.plausibleVoltage.contains(voltage)
                if mode == 0, !plausible {
                    #expect(out.reactivePowerVar == nil, "volt-var on a nonsense voltage \(voltage)")
                }
            }
        }
    }

    @Test("a nonsense voltage is stale: volt-var commands nothing, never full vars, and restarts from 0 var")
    func nonsenseVoltage() throws {
        var unit = try controller(.voltVar(catB.voltVar), voltWatt: catB.voltWatt)
        let held = settle(&unit, voltage: 1.09, powerW: 80_000)
        #expect(try #require(held.reactivePowerVar) < -40_000)
        for voltage in [0, -1, 0.1, 1.73, 10, .nan, .infinity] {
            let out = unit.step(voltage: voltage, desiredPowerW: 80_000, elapsedSeconds: 0.1)
            #expect(out.reactivePowerVar == nil, "\(voltage) p.u.")
            // Volt-watt's limit holds where it was.
            #expect(out.voltWattLimitW == held.voltWattLimitW)
            #expect(out.activePowerW == min(80_000, held.voltWattLimitW ?? .infinity))
        }
        // Back to a valid voltage: the reactive response starts again from 0 var, not from the held −44 %.
        let again = unit.step(voltage: 1.09, desiredPowerW: 80_000, elapsedSeconds: 0.1)
        #expect(abs(try #require(again.reactivePowerVar)) < 0.05 * 44_000)
    }

    @Test("modes that do not read the voltage command through a stale one; NaN power gives no command")
    func otherModesIgnoreVoltage() throws {
        var unit = try controller(.constantVar(ConstantVarSettings(percent: 30, responseTime: .zero)))
        #expect(unit.step(voltage: .nan, desiredPowerW: 10_000, elapsedSeconds: 0.1).reactivePowerVar == 30_000)
        #expect(unit.step(voltage: 1, desiredPowerW: .nan, elapsedSeconds: 0.1) == GridSupportOutput(activePowerW: nil, reactivePowerVar: nil))
        var none = try controller(nil)
        #expect(none.step(voltage: .nan, desiredPowerW: 150_000, elapsedSeconds: 0.1) == GridSupportOutput(activePowerW: 100_000, reactivePowerVar: 0))
    }

    @Test("constant pf: discharging and charging take their own settings; the pf holds at VAMax")
    func constantPowerFactorSides() throws {
        let s = ConstantPowerFactorSettings(
            discharging: PowerFactorSetting(0.8, .absorbing), charging: PowerFactorSetting(0.6, .injecting), responseTime: .zero)
        var unit = try controller(.constantPowerFactor(s))
        let discharging = unit.step(voltage: 1, desiredPowerW: 40_000, elapsedSeconds: 0.1)
        #expect(abs(try #require(discharging.reactivePowerVar) - -30_000) < 1e-6)
        let charging = unit.step(voltage: 1, desiredPowerW: -30_000, elapsedSeconds: 0.1)
        #expect(abs(try #require(charging.reactivePowerVar) - 40_000) < 1e-6)
        let full = unit.step(voltage: 1, desiredPowerW: 100_000, elapsedSeconds: 0.1)
        #expect(abs((full.activePowerW ?? .nan) - 80_000) < 1e-6 && abs((full.reactivePowerVar ?? .nan) + 60_000) < 1e-6)
    }

    @Test("P and Q collide at VAMax: reactive priority keeps Q, active priority keeps P down to Table 7's 44 %")
    func priorities() throws {
        let q60 = ReactivePowerMode.constantVar(ConstantVarSettings(percent: 60, responseTime: .zero))
        var reactive = try controller(q60, reactivePriority: true)
        let r = reactive.step(voltage: 1, desiredPowerW: 100_000, elapsedSeconds: 0.1)
        #expect(r.reactivePowerVar == 60_000 && abs((r.activePowerW ?? .nan) - 80_000) < 1e-6)
        var active = try controller(q60, reactivePriority: false)
        let a = active.step(voltage: 1, desiredPowerW: 100_000, elapsedSeconds: 0.1)
        #expect(abs((a.reactivePowerVar ?? .nan) - 44_000) < 1e-6 && abs((a.activePowerW ?? .nan) - 89_799.777) < 0.01)
        let b = active.step(voltage: 1, desiredPowerW: 70_000, elapsedSeconds: 0.1)
        #expect(b.activePowerW == 70_000 && abs((b.reactivePowerVar ?? .nan) - 60_000) < 1e-6)
        let c = active.step(voltage: 1, desiredPowerW: 85_000, elapsedSeconds: 0.1)
        #expect(c.activePowerW == 85_000 && abs((c.reactivePowerVar ?? .nan) - 52_678.27) < 0.01)
    }
}

@Suite("GridSupport: the cycle's constraints")
struct GridSupportCycleConstraintTests {
    @Test("the controller and its output are plain values: nothing reference-counted, so a step has nothing to allocate")
    func plainValues() {
        #expect(_isPOD(GridSupportController.self))
        #expect(_isPOD(GridSupportOutput.self))
        #expect(_isPOD(GridSupportSettings.self))
        #expect(MemoryLayout<GridCurve>.size >= 2 * GridCurve.capacity * MemoryLayout<Double>.size, "the points are inline")
    }

    @Test("retuning to another mode keeps Q where it is and moves on through the new response time")
    func retuneIsContinuous() throws {
        var unit = try controller(.voltVar(catB.voltVar))
        let before = try #require(settle(&unit, voltage: 0.95, powerW: 0).reactivePowerVar)
        #expect(abs(before - 22_000) < 1)
        try unit.retune(GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: -30, responseTime: .seconds(10)))))
        let next = try #require(unit.step(voltage: 0.95, desiredPowerW: 0, elapsedSeconds: 0.1).reactivePowerVar)
        #expect(abs(next - before) < 0.03 * abs(-30_000 - before), "one period of 10 s moves Q by about 2.3 % of the step")
        // With the step above: 10 s of the new response time.
        let later = settle(&unit, voltage: 0.95, powerW: 0, seconds: 9.9).reactivePowerVar ?? .nan
        #expect(abs(later - (-30_000 + 0.1 * (before + 30_000))) < 1, "90 % of the way after 10 s")
        // An invalid mode is refused and changes nothing.
        #expect(refusal { try unit.retune(GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: 200, responseTime: .zero)))) } == .varRange)
        #expect(unit.settings.reactive == .constantVar(ConstantVarSettings(percent: -30, responseTime: .seconds(10))))
    }
}
