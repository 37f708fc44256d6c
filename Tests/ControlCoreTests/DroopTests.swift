import ControlCore
import Testing

@Suite("Droop (frequency-watt)")
struct DroopTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let hz: Double
        let kw: Double
        var testDescription: String { "\(hz) Hz → \(kw) kW" }
    }

    // ../shared/REFERENCE.md §1.6 table A: 100 kW, 5 %, [49.90, 50.05], P_pre = 0, + = discharge.
    static let edgeVectors: [Vector] = [
        (50.000, 0), (49.950, 0), (49.901, 0), (49.900, 0), (49.899, 0.04), (49.850, 2), (49.800, 4),
        (49.700, 8), (49.500, 16), (49.000, 36), (48.650, 50), (47.500, 96), (50.050, 0), (50.051, -0.04),
        (50.060, -0.40), (50.100, -2), (50.150, -4), (50.200, -6), (50.500, -18), (51.000, -38), (51.300, -50),
    ].map { Vector(hz: $0.0, kw: $0.1) }

    static let nominalVectors: [Vector] = [
        (50.000, 0), (49.950, 0), (49.900, 0), (49.899, 4.04), (49.850, 6), (49.800, 8), (49.000, 40),
        (50.050, 0), (50.051, -2.04), (50.100, -4), (51.000, -40),
    ].map { Vector(hz: $0.0, kw: $0.1) }

    @Test("edge reference, steady state", arguments: edgeVectors)
    func edgeCurve(vector: Vector) {
        let curve = DroopCurve(.seedDefault)
        let kw = curve.perUnitChange(at: Hertz(vector.hz)) * 100
        #expect(abs(kw - vector.kw) < 1e-9)
    }

    @Test("nominal reference, steady state", arguments: nominalVectors)
    func nominalCurve(vector: Vector) {
        var settings = DroopSettings.seedDefault
        settings.reference = .nominal
        let kw = DroopCurve(settings).perUnitChange(at: Hertz(vector.hz)) * 100
        #expect(abs(kw - vector.kw) < 1e-9)
    }

    @Test("issue vectors through the whole controller (edge, base 0, clamp at rating)")
    func issueVectorsThroughController() {
        let cases: [(Double, Double)] = [(49.80, 4.0), (50.15, -4.0), (49.95, 0), (49.899, 0.04), (47.00, 100)]
        // Grid-frequency trips are left out: this checks the droop law and the clamp at the rating,
        // not the under-frequency protection (tested in InterlockTests).
        let rules = InterlockRule.defaultTable().filter { $0.metric != .frequencyDeviation && $0.metric != .rocof }
        for (hz, kw) in cases {
            let site = Fixture.site(rules: rules)
            let decision = Fixture.run(site, seconds: 20, frequency: hz)
            #expect(abs(decision.setpoint.kilowatts - kw) < 1e-6, "\(hz) Hz gave \(decision.setpoint.kilowatts) kW")
        }
        var nominal = Fixture.immediateDroop
        nominal.reference = .nominal
        let decision = Fixture.run(Fixture.site(droop: nominal), seconds: 20, frequency: 49.80)
        #expect(abs(decision.setpoint.kilowatts - 8.0) < 1e-6)
    }

    @Test("asymmetric droop per direction")
    func perDirectionDroop() {
        var settings = DroopSettings.seedDefault
        settings.droopUnderPercent = 4
        settings.droopOverPercent = 8
        let curve = DroopCurve(settings)
        // 0.1 Hz past each edge: 0.1/(50·0.04) = 5 %, 0.1/(50·0.08) = 2.5 %.
        #expect(abs(curve.perUnitChange(at: Hertz(49.80)) - 0.05) < 1e-12)
        #expect(abs(curve.perUnitChange(at: Hertz(50.15)) + 0.025) < 1e-12)
    }

    @Test("60 Hz nominal, IEEE 1547 characteristic 1 (k = 0.05, ±0.036 Hz)")
    func sixtyHertz() {
        let settings = DroopSettings(
            enabled: true, nominal: Hertz(60), deadbandLow: Hertz(59.964), deadbandHigh: Hertz(60.036),
            droopUnderPercent: 5, droopOverPercent: 5, reference: .edge, responseTime: .zero)
        let curve = DroopCurve(settings)
        // REFERENCE §1.6 table C with p_pre = 0.5: 60.5 Hz → 0.3453, 59.5 → 0.6547.
        #expect(abs(0.5 + curve.perUnitChange(at: Hertz(60.5)) - 0.3453) < 1e-4)
        #expect(abs(0.5 + curve.perUnitChange(at: Hertz(59.5)) - 0.6547) < 1e-4)
    }

    @Test("invalid frequencies give no response", arguments: [Double.nan, .infinity, -.infinity, 0, -50])
    func invalidFrequency(hz: Double) {
        #expect(DroopCurve(.seedDefault).perUnitChange(at: Hertz(hz)) == 0)
    }

    @Test("a disabled droop gives no response")
    func disabled() {
        var settings = DroopSettings.seedDefault
        settings.enabled = false
        #expect(DroopCurve(settings).perUnitChange(at: Hertz(49.0)) == 0)
    }

    @Test("first-order response: 90 % of a step at the response time (5 s at 100 ms)")
    func responseTime() {
        var lag = FirstOrderResponse(responseTime: .seconds(5))
        var outputs: [Double] = []
        for _ in 0..<60 { outputs.append(lag.step(toward: 1, elapsedSeconds: 0.1)) }
        // Step 50 is t = 5.0 s; the 90 % crossing must fall within one period of it.
        #expect(outputs[48] < 0.9)
        #expect(abs(outputs[49] - 0.9) < 1e-9)
        // REFERENCE §1.6 table D: 36.90 % at 1 s, 68.38 % at 2.5 s.
        #expect(abs(outputs[9] - 0.3690) < 1e-4)
        #expect(abs(outputs[24] - 0.6838) < 1e-4)
    }

    @Test("the whole controller reaches 90 % of a 4 kW droop step at 5.0 s ± one period")
    func controllerResponseTime() throws {
        let site = Fixture.site(droop: .seedDefault)
        Fixture.run(site, seconds: 10, frequency: 50.0)  // settle, limits up
        var crossing: Double?
        var t = 10.0
        for _ in 0..<100 {
            t += 0.1
            let now = Fixture.instant(t)
            site.step(frequency: Timestamped(Hertz(49.80), at: now), inputs: [Fixture.healthyInputs(at: now)],
                      now: now, wallClock: 1_800_000_000 + t)
            if crossing == nil, site.decision(unit: 0).setpoint.kilowatts >= 0.9 * 4.0 - 1e-9 { crossing = t - 10 }
        }
        let seconds = try #require(crossing)
        #expect(abs(seconds - 5.0) <= 0.1 + 1e-9)
    }

    @Test("zero response time responds at once")
    func immediate() {
        var lag = FirstOrderResponse(responseTime: .zero)
        #expect(lag.step(toward: 7, elapsedSeconds: 0.01) == 7)
    }

    @Test("pre-disturbance power latches when frequency leaves the deadband")
    func latchedBase() {
        var droop = DroopController(settings: Fixture.immediateDroop)
        let rating = Watts.kilowatts(100)
        _ = droop.step(frequency: Hertz(50), schedule: .kilowatts(20), rating: rating, elapsedSeconds: 0.1)
        #expect(droop.latchedBase == nil)
        var r = droop.step(frequency: Hertz(49.8), schedule: .kilowatts(20), rating: rating, elapsedSeconds: 0.1)
        #expect(r.base == .kilowatts(20))
        #expect(abs(r.droop.kilowatts - 4) < 1e-9)
        // The schedule moves during the event; the base stays latched.
        r = droop.step(frequency: Hertz(49.8), schedule: .kilowatts(50), rating: rating, elapsedSeconds: 0.1)
        #expect(r.base == .kilowatts(20))
        // Back inside the deadband the latch is gone and the base is the schedule the caller passes:
        // the controller held its schedule at 20 kW and ramps it from there (endOfEventRamps).
        r = droop.step(frequency: Hertz(50), schedule: .kilowatts(21), rating: rating, elapsedSeconds: 0.1)
        #expect(r.base == .kilowatts(21))
        #expect(r.droop == .zero)
        #expect(droop.latchedBase == nil)
    }

    /// 20 → 50 kW at 1 kW/cycle.
    @Test("an event's end ramps from the latched base to the new dispatch, never a jump")
    func endOfEventRamps() {
        // Schedule ramp 10 %/s of 100 kW: 1 kW per 100 ms cycle.
        let site = Fixture.site(limitRamp: 1000, scheduleRamp: 10)
        func dispatch(_ kw: Double) -> (MonotonicInstant) -> UnitInputs {
            { now in
                var inputs = Fixture.healthyInputs(at: now)
                inputs.dispatch = PowerCommand(power: .kilowatts(kw), expiresAt: Fixture.instant(1000))
                return inputs
            }
        }
        var d = Fixture.run(site, seconds: 5, frequency: 50, inputs: dispatch(20))
        #expect(abs(d.setpoint.kilowatts - 20) < 1e-6)
        // Under-frequency event (49.8 Hz: +4 kW); 1 s in, dispatch moves to 50 kW: the base holds 20 kW.
        Fixture.run(site, from: 5, seconds: 1, frequency: 49.8, inputs: dispatch(20))
        d = Fixture.run(site, from: 6, seconds: 4, frequency: 49.8, inputs: dispatch(50))
        #expect(abs(d.base.kilowatts - 20) < 1e-6)
        #expect(abs(d.setpoint.kilowatts - 24) < 1e-6)
        // The event ends: droop goes (immediate response), the base ramps 1 kW per cycle.
        var setpoints: [Double] = []
        for i in 1...35 {
            setpoints.append(Fixture.run(site, from: 10 + Double(i - 1) * 0.1, seconds: 0.1, frequency: 50,
                                         inputs: dispatch(50)).setpoint.kilowatts)
        }
        #expect(abs(setpoints[0] - 21) < 1e-6, "first cycle after the event: \(setpoints[0])")
        #expect(abs(setpoints[9] - 30) < 1e-6)
        for i in 1..<setpoints.count { #expect(abs(setpoints[i] - setpoints[i - 1]) <= 1 + 1e-6) }
        #expect(abs(setpoints[34] - 50) < 1e-6)
    }

    /// 10 kW BMS limit; no τ·ln(36/10) = 2.8 s hold.
    @Test("anti-windup: after the event the output leaves a BMS limit at once, without hold")
    func antiWindupByAllowedPower() {
        let site = Fixture.site(droop: .seedDefault, limitRamp: 1000, scheduleRamp: 1000)
        // Discharge limit 192.3 A × 52 V = 10 kW; 49.0 Hz asks (49.9 − 49.0) / 2.5 Hz = 36 kW.
        let limited: (MonotonicInstant) -> UnitInputs = { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, dischargeA: 10_000.0 / 52)
            return inputs
        }
        Fixture.run(site, seconds: 5, frequency: 50, inputs: limited)
        var d = Fixture.run(site, from: 5, seconds: 20, frequency: 49.0, inputs: limited)
        #expect(abs(d.setpoint.kilowatts - 10) < 0.01)
        #expect(d.droop.kilowatts <= 10 + 1e-6, "the response winds no further than the limit: \(d.droop.kilowatts)")
        // Frequency back: the response decays from 10 kW at once (10·e^(−0.5/2.17) = 7.9 kW after 0.5 s).
        d = Fixture.run(site, from: 25, seconds: 0.5, frequency: 50, inputs: limited)
        #expect(d.setpoint.kilowatts < 8.5, "\(d.setpoint.kilowatts)")
        #expect(d.setpoint.kilowatts > 7.0)
    }

    @Test("a trip during an event does not slow the return: the limit ramp alone shapes it")
    func tripGateDoesNotWindDown() {
        let site = Fixture.site(droop: .seedDefault, limitRamp: 10, scheduleRamp: 10)
        Fixture.run(site, seconds: 15, frequency: 48.9)  // 40 kW of droop, settled
        // The BMS forbids discharging for 6 s (a trip), then allows it again.
        var d = Fixture.run(site, from: 15, seconds: 6, frequency: 48.9) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, dischargeEnabled: false)
            return inputs
        }
        #expect(d.setpoint == .zero)
        // 10 %/s limit ramp: 40 kW back in 4 s (plus a cycle).
        d = Fixture.run(site, from: 21, seconds: 4.2, frequency: 48.9)
        #expect(abs(d.setpoint.kilowatts - 40) < 0.5, "\(d.setpoint.kilowatts)")
    }

    @Test("frequency response is not slowed by the schedule ramp")
    func notSlowedByScheduleRamp() {
        // Schedule ramp of 1 %/s would need 4 s for 4 kW; droop must arrive in one step.
        let site = Fixture.site(limitRamp: 1000, scheduleRamp: 1)
        Fixture.run(site, seconds: 5, frequency: 50)
        let decision = Fixture.run(site, from: 5, seconds: 0.1, frequency: 49.80)
        #expect(abs(decision.setpoint.kilowatts - 4.0) < 1e-6)
    }
}

extension DroopTests.Vector {
    init(_ pair: (Double, Double)) { self.init(hz: pair.0, kw: pair.1) }
}

@Suite("Overrides during a frequency event")
struct OverrideDuringEventTests {
    @Test("an operator override acts at once during an event; dispatch waits for it to end")
    func overrideFollows() {
        let site = Fixture.site(limitRamp: 1000, scheduleRamp: 1000)
        Fixture.run(site, seconds: 3, frequency: 49.8)  // event under way: base latched at 0, droop +4 kW
        var decision = Fixture.run(site, from: 3, seconds: 1, frequency: 49.8) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.dispatch = PowerCommand(power: .kilowatts(-30), expiresAt: Fixture.instant(100))
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts - 4) < 1e-6)  // dispatch held off
        decision = Fixture.run(site, from: 4, seconds: 1, frequency: 49.8) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.override = PowerCommand(power: .kilowatts(-30), expiresAt: Fixture.instant(100))
            return inputs
        }
        #expect(abs(decision.setpoint.kilowatts + 26) < 1e-6)  // −30 + 4 kW droop
    }
}
