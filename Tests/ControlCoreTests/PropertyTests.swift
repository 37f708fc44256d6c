import ControlCore
import PropertyBased
import Testing

/// Replaces `value` by a hostile one when `selector` says so: NaN, ±infinity, or a huge magnitude.
func hostile(_ value: Double, _ selector: Int) -> Double {
    switch selector {
    case 0: .nan
    case 1: .infinity
    case 2: -.infinity
    case 3: value * 1e12
    case 4: -value
    default: value
    }
}

@Suite("Properties")
struct PropertyTests {
    @Test("the setpoint stays in the allowed range for any input, NaN, infinities and stale included")
    func setpointInsideAllowed() async {
        await propertyCheck(
            count: 300,
            input: Gen.double(in: 45...55), Gen.double(in: -200_000...200_000), Gen.double(in: 0...3000),
            Gen.double(in: 0...3000), Gen.double(in: 0...800), Gen.double(in: -5...105),
            Gen.int(in: 0...11), Gen.int(in: 0...11), Gen.double(in: 0...10)
        ) { hz, dispatch, ccl, dcl, volts, soc, poisonA, poisonB, staleness in
            let site = Fixture.site(droop: .seedDefault, limitRamp: 10, scheduleRamp: 10)
            var t = 0.0
            for step in 0..<40 {
                t += 0.1
                let now = Fixture.instant(t)
                // Stamp the BMS data `staleness` seconds in the past (stale beyond 3 s).
                let stamp = Fixture.instant(max(0, t - staleness))
                var inputs = Fixture.healthyInputs(at: now)
                inputs.bms = Fixture.healthyBMS(
                    at: stamp, soc: hostile(soc, step % 2 == 0 ? poisonA : 99),
                    chargeA: hostile(ccl, poisonA), dischargeA: hostile(dcl, poisonB),
                    volts: hostile(volts, step % 3 == 0 ? poisonB : 99))
                inputs.dispatch = PowerCommand(power: Watts(hostile(dispatch, poisonB)), expiresAt: Fixture.instant(100))
                site.step(frequency: Timestamped(Hertz(hostile(hz, poisonA)), at: now), inputs: [inputs],
                          now: now, wallClock: 1_800_000_000 + t)
                let d = site.decision(unit: 0)
                #expect(d.setpoint.value.isFinite)
                #expect(d.allowedCharge.value >= 0 && d.allowedCharge.value <= Fixture.rating.value)
                #expect(d.allowedDischarge.value >= 0 && d.allowedDischarge.value <= Fixture.rating.value)
                #expect(d.setpoint.value >= -d.allowedCharge.value)
                #expect(d.setpoint.value <= d.allowedDischarge.value)
                // Data older than the 3 s BMS limit is absent: no power at all.
                if t - max(0, t - staleness) > 3.000_001 {
                    #expect(d.setpoint == .zero)
                }
            }
        }
    }

    @Test("|Δsetpoint| per cycle ≤ schedule ramp step + |Δdroop| across frequency events and their ends")
    func rampedAcrossEventEnds() async {
        await propertyCheck(
            count: 200,
            input: Gen.double(in: -60...60), Gen.double(in: -60...60), Gen.double(in: 49.3...50.6),
            Gen.double(in: 0.5...6), Gen.double(in: 1...50), Gen.double(in: 0...5), Gen.bool, Gen.double(in: 0...1)
        ) { before, after, eventHz, eventSeconds, rampPercent, responseSeconds, staleEnd, changeAt in
            var droop = DroopSettings.seedDefault
            droop.responseTime = .seconds(fromDouble: responseSeconds)
            let site = Fixture.site(droop: droop, limitRamp: 1000, scheduleRamp: rampPercent)
            let eventStart = 3.0, eventEnd = 3.0 + eventSeconds
            // Dispatch moves somewhere inside the event (or at its very start).
            let change = eventStart + changeAt * eventSeconds
            var t = 0.0
            var previous: UnitDecision?
            while t < eventEnd + 12 {
                t += 0.1
                let now = Fixture.instant(t)
                var inputs = Fixture.healthyInputs(at: now)
                inputs.dispatch = PowerCommand(power: .kilowatts(t < change ? before : after),
                                               expiresAt: Fixture.instant(1000))
                let inEvent = t >= eventStart && t < eventEnd
                let frequency: Timestamped<Hertz>? =
                    inEvent ? Timestamped(Hertz(eventHz), at: now)
                    : (t >= eventEnd && staleEnd ? nil : Timestamped(Hertz(50), at: now))
                site.step(frequency: frequency, inputs: [inputs], now: now, wallClock: 1_800_000_000 + t)
                let d = site.decision(unit: 0)
                if let p = previous, t > 1 {
                    let step = rampPercent / 100 * Fixture.rating.value * 0.1
                    let bound = step + abs(d.droop.value - p.droop.value) + 1e-3  // 1 mW of rounding
                    #expect(abs(d.setpoint.value - p.setpoint.value) <= bound,
                            "t=\(t): \(p.setpoint.kilowatts) → \(d.setpoint.kilowatts) kW, bound \(bound / 1000) kW")
                }
                previous = d
            }
        }
    }

    @Test("droop is monotonic (non-increasing) in frequency, for both references and any droop")
    func droopMonotonic() async {
        await propertyCheck(
            count: 500,
            input: Gen.double(in: 45...55), Gen.double(in: 0.001...0.5), Gen.double(in: 1...12),
            Gen.double(in: 1...12), Gen.double(in: 0...0.2), Gen.double(in: 0...0.2), Gen.bool
        ) { f, delta, droopUnder, droopOver, dbLow, dbHigh, nominalRef in
            let settings = DroopSettings(
                enabled: true, nominal: Hertz(50), deadbandLow: Hertz(50 - dbLow), deadbandHigh: Hertz(50 + dbHigh),
                droopUnderPercent: droopUnder, droopOverPercent: droopOver,
                reference: nominalRef ? .nominal : .edge, responseTime: .zero)
            let curve = DroopCurve(settings)
            let lower = curve.perUnitChange(at: Hertz(f))
            let higher = curve.perUnitChange(at: Hertz(f + delta))
            #expect(lower >= higher)
            // Under-frequency discharges more (≥ 0), over-frequency charges more (≤ 0).
            if f < 50 - dbLow - 0.001 { #expect(lower > 0) }
            if f > 50 + dbHigh + 0.001 { #expect(lower < 0) }
        }
    }

    @Test("a latch never clears without a reset, whatever the metric does")
    func latchNeedsReset() async {
        await propertyCheck(
            count: 200, input: Gen.double(in: -10...10).array(of: 1...60), Gen.int(in: 0...11)
        ) { values, poison in
            let rule = InterlockRule(code: .cellOvervoltageCritical, metric: .cellVoltageMax, comparison: .above,
                                     threshold: 3.8, hysteresis: 0.1, delay: .milliseconds(500), severity: .latch,
                                     direction: .both)
            var engine = InterlockEngine(rules: [rule])
            var events = EventRing(capacity: 8)
            var frame = MetricFrame()
            var t = 0.0
            // Latch first.
            for _ in 0..<10 {
                t += 0.1
                frame[.cellVoltageMax] = 4.5
                _ = engine.evaluate(frame, now: Fixture.instant(t), unit: 0, events: &events)
            }
            #expect(engine.state(of: .cellOvervoltageCritical)?.isActing == true)
            for (i, v) in values.enumerated() {
                t += Double(i % 7) * 13.7
                frame[.cellVoltageMax] = hostile(v, poison)
                let verdict = engine.evaluate(frame, now: Fixture.instant(t), unit: 0, events: &events)
                #expect(verdict.latched.contains(.cellOvervoltageCritical))
                #expect(verdict.dischargeFactor == 0 && verdict.chargeFactor == 0)
            }
        }
    }

    @Test("energy blocks conserve energy: charged + discharged equals ∫|P| dt")
    func energyConservation() async {
        await propertyCheck(
            count: 200, input: Gen.double(in: -100_000...100_000).array(of: 1...400), Gen.double(in: 0.05...5)
        ) { powers, dt in
            var accumulator = EnergyAccumulator(unit: 0, blockLength: .seconds(60))
            var wall = 1_800_000_000.0
            var expected = 0.0
            var total = 0.0
            _ = accumulator.integrate(power: nil, elapsedSeconds: 0, wallClock: wall)
            for p in powers {
                wall += dt
                expected += abs(p) * dt / 3600
                if let block = accumulator.integrate(power: Watts(p), elapsedSeconds: dt, wallClock: wall) {
                    total += block.chargedWh + block.dischargedWh
                    #expect(block.startUnixSeconds % 60 == 0)
                }
            }
            if let current = accumulator.current { total += current.chargedWh + current.dischargedWh }
            #expect(abs(total - expected) <= 1e-6 * max(1, expected))
        }
    }
}
