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

    @Test("invalid frequencies give no response")
    func invalidFrequency() {
        let curve = DroopCurve(.seedDefault)
        for hz in [Double.nan, .infinity, -.infinity, 0, -50] {
            #expect(curve.perUnitChange(at: Hertz(hz)) == 0)
        }
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
        // Back inside the deadband: the base follows the schedule again.
        r = droop.step(frequency: Hertz(50), schedule: .kilowatts(50), rating: rating, elapsedSeconds: 0.1)
        #expect(r.base == .kilowatts(50))
        #expect(r.droop == .zero)
        #expect(droop.latchedBase == nil)
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
