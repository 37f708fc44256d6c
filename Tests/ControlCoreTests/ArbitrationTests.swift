import ControlCore
import Testing

@Suite("Arbitration")
struct ArbitrationTests {
    @Test("no power at all before BMS communication is confirmed")
    func noPowerBeforeBMS() {
        let site = Fixture.site()
        let decision = Fixture.run(site, seconds: 2, frequency: 49.0) { now in
            UnitInputs(inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now),
                       dispatch: PowerCommand(power: .kilowatts(50), expiresAt: Fixture.instant(1000)))
        }
        #expect(decision.state == .starting)
        #expect(decision.setpoint == .zero)
        #expect(decision.allowedCharge == .zero && decision.allowedDischarge == .zero)
        #expect(decision.dischargeLimitedBy == .notConfirmed)
    }

    @Test("a limit whose input is absent means zero power in that direction")
    func absentLimitInput() {
        let site = Fixture.site()
        Fixture.run(site, seconds: 2)
        let decision = Fixture.run(site, from: 2, seconds: 0.5) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms.limits = nil  // 0x351 missing
            return inputs
        }
        #expect(decision.allowedDischarge == .zero)
        #expect(decision.allowedCharge == .zero)
        #expect(decision.dischargeLimitedBy == .bmsAbsent)
    }

    @Test("BMS current limit × pack voltage caps droop (30 kW example)")
    func bmsSaturation() {
        let site = Fixture.site()
        // DCL 576.9 A × 52 V ≈ 30 kW; droop at 48.65 Hz asks +50 kW.
        let decision = Fixture.run(site, seconds: 5, frequency: 48.65) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, dischargeA: 30_000.0 / 52)
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts - 30) < 1e-6)
        #expect(decision.dischargeLimitedBy == .bms)
        // Anti-windup: the response asks no further than the 30 kW the BMS allows (not the 50 kW
        // of the curve), so it does not sit on the limit once frequency recovers (DroopTests).
        #expect(abs(decision.request.kilowatts - 30) < 1e-6)
    }

    @Test("limits fall at once and rise ramped")
    func fallAtOnceRiseRamped() {
        let site = Fixture.site(limitRamp: 10)  // 10 %/s of 100 kW = 10 kW/s
        var dcl = 2500.0
        let inputs: (MonotonicInstant) -> UnitInputs = { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, dischargeA: dcl)
            return inputs
        }
        var decision = Fixture.run(site, seconds: 0.1, inputs: inputs)
        #expect(decision.allowedDischarge.kilowatts <= 1.0 + 1e-9)  // first step: 10 kW/s × 0.1 s
        decision = Fixture.run(site, from: 0.1, seconds: 12, inputs: inputs)
        #expect(decision.allowedDischarge == Fixture.rating)
        dcl = 10_000.0 / 52  // BMS drops to 10 kW
        decision = Fixture.run(site, from: 12.1, seconds: 0.1, inputs: inputs)
        #expect(abs(decision.allowedDischarge.kilowatts - 10) < 1e-9)  // at once
        dcl = 2500
        decision = Fixture.run(site, from: 12.2, seconds: 1.0, inputs: inputs)
        #expect(abs(decision.allowedDischarge.kilowatts - 20) < 1e-6)  // +10 kW in 1 s
        #expect(decision.dischargeLimitedBy == .ramp)
    }

    @Test("override outranks dispatch; expired and non-finite commands are ignored")
    func commandPriority() {
        let site = Fixture.site()
        let far = Fixture.instant(1000)
        var decision = Fixture.run(site, seconds: 3) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.dispatch = PowerCommand(power: .kilowatts(30), expiresAt: far)
            inputs.override = PowerCommand(power: .kilowatts(-20), expiresAt: far)
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts + 20) < 1e-9)
        decision = Fixture.run(site, from: 3, seconds: 3) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.dispatch = PowerCommand(power: .kilowatts(30), expiresAt: far)
            inputs.override = PowerCommand(power: .kilowatts(-20), expiresAt: Fixture.instant(1))
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts - 30) < 1e-9)
        decision = Fixture.run(site, from: 6, seconds: 3) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.dispatch = PowerCommand(power: Watts(.nan), expiresAt: far)
            return inputs
        }
        #expect(decision.setpoint == .zero)
        #expect(site.units[0].rejectedCommands > 0)
        var rejected = 0
        site.events.drain { if $0.kind == .commandRejected { rejected += 1 } }
        #expect(rejected == 1)  // reported once, not every cycle
    }

    @Test("a huge dispatch is clamped to the rating, inside every interlock")
    func hostileDispatch() {
        let site = Fixture.site()
        let decision = Fixture.run(site, seconds: 3) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, soc: 3)  // SOC_LOW: no discharge
            inputs.dispatch = PowerCommand(power: Watts(1e12), expiresAt: Fixture.instant(1000))
            return inputs
        }
        #expect(decision.setpoint == .zero)
        #expect(decision.dischargeLimitedBy == .interlock(.socLow))
    }

    @Test("standby gives zero power at once; auto resumes")
    func standby() {
        let site = Fixture.site()
        var decision = Fixture.run(site, seconds: 3, frequency: 49.8)
        #expect(decision.setpoint.kilowatts > 3.9)
        site.setMode(.standby)
        decision = Fixture.run(site, from: 3, seconds: 0.1, frequency: 49.8)
        #expect(decision.state == .standby)
        #expect(decision.setpoint == .zero)
        site.setMode(.auto)
        decision = Fixture.run(site, from: 3.1, seconds: 1, frequency: 49.8)
        #expect(decision.state == .running)
    }

    @Test("the operator outranks the remote: no aggregator auto nor expiry lifts an operator standby")
    func operatorOutranksRemote() {
        let site = Fixture.site()
        var decision = Fixture.run(site, seconds: 3, frequency: 49.8)
        #expect(decision.state == .running)
        // Operator standby on the unit, then the aggregator says auto: still standby.
        site.setOperatorMode(.standby, unit: 0)
        site.setRemoteMode(.auto, until: Fixture.instant(100), unit: 0)
        decision = Fixture.run(site, from: 3, seconds: 0.5, frequency: 49.8)
        #expect(decision.state == .standby && decision.setpoint == .zero)
        // An aggregator standby (an emergency stop) that ends at t=5 s: the operator's still holds after it.
        site.setRemoteMode(.standby, until: Fixture.instant(5), emergency: true, unit: 0)
        decision = Fixture.run(site, from: 3.5, seconds: 3, frequency: 49.8)
        #expect(decision.state == .standby && decision.setpoint == .zero)
        #expect(site.units[0].holds.remoteUntil == nil)  // the remote hold expired
        #expect(site.units[0].holds.operatorUnit)
        // Only the operator lifts it.
        site.setOperatorMode(.auto, unit: 0)
        decision = Fixture.run(site, from: 6.5, seconds: 1, frequency: 49.8)
        #expect(decision.state == .running)
        // A remote standby alone holds until it expires, then auto resumes by itself.
        site.setRemoteMode(.standby, until: Fixture.instant(9), unit: 0)
        decision = Fixture.run(site, from: 7.5, seconds: 1, frequency: 49.8)
        #expect(decision.state == .standby)
        decision = Fixture.run(site, from: 8.5, seconds: 1, frequency: 49.8)
        #expect(decision.state == .running)
    }

    @Test("a site standby and a unit standby are separate holds")
    func siteAndUnitHolds() {
        let site = Fixture.site()
        _ = Fixture.run(site, seconds: 3, frequency: 49.8)
        site.setOperatorMode(.standby)  // the site
        site.setOperatorMode(.auto, unit: 0)  // lifts no site hold
        var decision = Fixture.run(site, from: 3, seconds: 0.5, frequency: 49.8)
        #expect(decision.state == .standby)
        site.setOperatorMode(.standby, unit: 0)
        site.setOperatorMode(.auto)  // lifts the site hold, not the unit's
        decision = Fixture.run(site, from: 3.5, seconds: 0.5, frequency: 49.8)
        #expect(decision.state == .standby)
        site.setOperatorMode(.auto, unit: 0)
        decision = Fixture.run(site, from: 4, seconds: 1, frequency: 49.8)
        #expect(decision.state == .running)
    }

    @Test("schedule changes are ramp-limited")
    func scheduleRamp() {
        let site = Fixture.site(limitRamp: 1000, scheduleRamp: 10)
        let decision = Fixture.run(site, seconds: 2) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.dispatch = PowerCommand(power: .kilowatts(50), expiresAt: Fixture.instant(1000))
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts - 20) < 1e-6)  // 10 kW/s for 2 s
    }

    @Test("the inverter nameplate lowers the rating")
    func nameplate() {
        let site = Fixture.site()
        // 47.2 Hz asks 1.08 pu; the 60 kW nameplate caps it.
        let decision = Fixture.run(site, seconds: 5, frequency: 47.2) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.inverter = Timestamped(InverterReading(activePower: .zero, ratedPower: .kilowatts(60)), at: now)
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts - 60) < 1e-9)
    }
}

@Suite("Unit state machine")
struct UnitStateTests {
    func inputs(confirmed: Bool = true, mode: OperatingMode = .auto, tripped: Bool = false, latched: Bool = false,
                derate: Bool = false) -> UnitState.Inputs {
        var verdict = InterlockVerdict()
        if tripped || latched {
            verdict.chargeFactor = 0
            verdict.dischargeFactor = 0
            verdict.tripped.insert(.overtemperature)
        }
        if latched { verdict.latched.insert(.thermalRunaway) }
        if derate { verdict.dischargeFactor = 0.5 }
        return .init(bmsConfirmed: confirmed, mode: mode, verdict: verdict)
    }

    @Test("transitions")
    func transitions() {
        #expect(UnitState.starting.next(inputs(confirmed: false)) == .starting)
        #expect(UnitState.starting.next(inputs()) == .running)
        #expect(UnitState.starting.next(inputs(latched: true)) == .faulted)
        #expect(UnitState.running.next(inputs(derate: true)) == .limited)
        #expect(UnitState.limited.next(inputs()) == .running)
        #expect(UnitState.running.next(inputs(tripped: true)) == .tripped)
        #expect(UnitState.tripped.next(inputs()) == .running)
        #expect(UnitState.running.next(inputs(mode: .standby)) == .standby)
        #expect(UnitState.standby.next(inputs()) == .running)
        #expect(UnitState.standby.next(inputs(confirmed: false)) == .starting)
        #expect(UnitState.standby.next(inputs(latched: true)) == .faulted)
        #expect(UnitState.faulted.next(inputs(latched: true)) == .faulted)
        #expect(UnitState.faulted.next(inputs(mode: .standby, latched: true)) == .faulted)
        #expect(UnitState.faulted.next(inputs()) == .running)
        #expect(UnitState.allCases.filter(\.mayOperate) == [.running, .limited])
    }
}
