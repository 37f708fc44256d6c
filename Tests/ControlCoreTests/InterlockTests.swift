import ControlCore
import Testing

@Suite("Interlocks")
struct InterlockTests {
    static let overvoltage = InterlockRule(
        code: .cellOvervoltage, metric: .cellVoltageMax, comparison: .above, threshold: 3.65,
        hysteresis: 0.1, delay: .seconds(1), hold: .seconds(5), severity: .trip, direction: .charge)

    func t(_ s: Double) -> MonotonicInstant { Fixture.instant(s) }

    @Test("trip: normal → pending → active → clearing → normal, with delay, hysteresis and hold")
    func tripLifecycle() {
        let rule = Self.overvoltage
        var state = RuleState.normal
        state = state.next(rule: rule, value: 3.70, now: t(0))
        #expect(state == .pending(since: t(0)))
        state = state.next(rule: rule, value: 3.70, now: t(0.5))
        #expect(!state.isActing)
        state = state.next(rule: rule, value: 3.70, now: t(1.0))
        #expect(state == .active(since: t(1.0)))
        // Inside the hysteresis band the condition still counts as present.
        state = state.next(rule: rule, value: 3.60, now: t(2))
        #expect(state == .active(since: t(1.0)))
        state = state.next(rule: rule, value: 3.50, now: t(3))
        #expect(state == .clearing(since: t(3)))
        #expect(state.isActing)
        state = state.next(rule: rule, value: 3.50, now: t(7.9))
        #expect(state.isActing)
        state = state.next(rule: rule, value: 3.50, now: t(8))
        #expect(state == .normal)
    }

    @Test("a condition that goes away during the delay never trips")
    func shortGlitch() {
        var state = RuleState.normal
        state = state.next(rule: Self.overvoltage, value: 3.7, now: t(0))
        state = state.next(rule: Self.overvoltage, value: 3.6, now: t(0.5))
        #expect(state == .normal)
    }

    @Test("a return of the condition while clearing re-arms the trip")
    func clearingReturns() {
        var state = RuleState.clearing(since: t(0))
        state = state.next(rule: Self.overvoltage, value: 3.7, now: t(1))
        #expect(state == .active(since: t(1)))
    }

    @Test("an unknown value moves nothing",
          arguments: [RuleState.normal, .pending(since: Fixture.instant(0)), .active(since: Fixture.instant(0)),
                      .clearing(since: Fixture.instant(0))])
    func unknownValue(state: RuleState) {
        #expect(state.next(rule: Self.overvoltage, value: nil, now: t(100)) == state)
    }

    @Test("latch: stays until reset, and a reset is refused while the condition is present or unknown")
    func latchNeedsReset() {
        let rule = InterlockRule(code: .thermalRunaway, metric: .temperatureRiseRate, comparison: .above,
                                 threshold: 0.1, hysteresis: 0.05, severity: .latch, direction: .both)
        var engine = InterlockEngine(rules: [rule])
        var events = EventRing()
        var frame = MetricFrame()
        frame[.temperatureRiseRate] = 0.5
        var verdict = engine.evaluate(frame, now: t(0), unit: 0, events: &events)
        #expect(verdict.latched.contains(.thermalRunaway))
        #expect(verdict.disconnectRequested)
        #expect(verdict.chargeFactor == 0 && verdict.dischargeFactor == 0)
        #expect(events.pop()?.kind == .latched)
        // Condition gone: still latched.
        frame[.temperatureRiseRate] = 0
        verdict = engine.evaluate(frame, now: t(100), unit: 0, events: &events)
        #expect(verdict.latched.contains(.thermalRunaway))
        // Condition unknown: reset refused.
        frame[.temperatureRiseRate] = nil
        _ = engine.evaluate(frame, now: t(101), unit: 0, events: &events)
        var outcome = engine.reset(now: t(101), unit: 0, events: &events)
        #expect(outcome.refused.contains(.thermalRunaway))
        // Condition present: reset refused.
        frame[.temperatureRiseRate] = 0.3
        _ = engine.evaluate(frame, now: t(102), unit: 0, events: &events)
        outcome = engine.reset(now: t(102), unit: 0, events: &events)
        #expect(outcome.refused.contains(.thermalRunaway))
        #expect(engine.state(of: .thermalRunaway).map { $0.isActing } == true)
        // Condition gone and known: reset accepted.
        frame[.temperatureRiseRate] = 0.0
        _ = engine.evaluate(frame, now: t(103), unit: 0, events: &events)
        outcome = engine.reset(now: t(103), unit: 0, events: &events)
        #expect(outcome.cleared.contains(.thermalRunaway))
        verdict = engine.evaluate(frame, now: t(104), unit: 0, events: &events)
        #expect(verdict.latched.isEmpty)
        var kinds: [ControlEventKind] = []
        events.drain { kinds.append($0.kind) }
        #expect(kinds == [.resetRefused, .resetRefused, .resetAccepted])
    }

    @Test("derate falls linearly from start to threshold, per direction")
    func derate() {
        let rule = InterlockRule(code: .temperatureHighDerate, metric: .temperatureMax, comparison: .above,
                                 threshold: 55, severity: .derate(start: 45), direction: .discharge)
        #expect(rule.derateFactor(40) == 1)
        #expect(abs(rule.derateFactor(50) - 0.5) < 1e-12)
        #expect(rule.derateFactor(60) == 0)
        var engine = InterlockEngine(rules: [rule])
        var events = EventRing()
        var frame = MetricFrame()
        frame[.temperatureMax] = 47.5
        let verdict = engine.evaluate(frame, now: t(0), unit: 0, events: &events)
        #expect(abs(verdict.dischargeFactor - 0.75) < 1e-12)
        #expect(verdict.chargeFactor == 1)
        #expect(verdict.dischargeLimitedBy == .temperatureHighDerate)
        let below = InterlockRule(code: .cellVoltageLowDerate, metric: .cellVoltageMin, comparison: .below,
                                  threshold: 2.9, severity: .derate(start: 3.1), direction: .discharge)
        #expect(abs(below.derateFactor(3.0) - 0.5) < 1e-9)
    }

    @Test("every trip code has a stable unique name that parses back")
    func codes() {
        let names = TripCode.allCases.map { "\($0.name)" }
        #expect(Set(names).count == names.count)
        for code in TripCode.allCases {
            #expect(TripCode(name: "\(code.name)") == code)
            #expect(TripCode(name: "\(code.name)".lowercased()) == code)
        }
        #expect(TripCode.cellOvervoltage.description == "CELL_OVERVOLTAGE")
        #expect(TripCode.allCases.count < 64)  // TripCodeSet holds them in one word
    }

    @Test("the default table covers every required condition")
    func defaultTableCoverage() {
        let metrics = Set(InterlockRule.defaultTable().map(\.metric))
        #expect(metrics == Set(InterlockMetric.allCases))
        let codes = InterlockRule.defaultTable().map(\.code)
        #expect(Set(codes).count == codes.count)
        for required in [TripCode.cellOvervoltage, .thermalRunaway, .bmsCommLost, .inverterFault, .socLow] {
            #expect(codes.contains(required))
        }
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        let code: TripCode
        let bms: @Sendable (MonotonicInstant) -> BMSSnapshot
        let blocksCharge: Bool
        let blocksDischarge: Bool
        var testDescription: String { "\(code.name)" }
    }

    static let scenarios: [Scenario] = [
        Scenario(code: .cellOvervoltage, bms: { Fixture.healthyBMS(at: $0, cellMax: 3.70, cellMin: 3.60) },
                 blocksCharge: true, blocksDischarge: false),
        Scenario(code: .cellUndervoltage, bms: { Fixture.healthyBMS(at: $0, cellMax: 2.75, cellMin: 2.70) },
                 blocksCharge: false, blocksDischarge: true),
        Scenario(code: .socHigh, bms: { Fixture.healthyBMS(at: $0, soc: 97) },
                 blocksCharge: true, blocksDischarge: false),
        Scenario(code: .socLow, bms: { Fixture.healthyBMS(at: $0, soc: 3) },
                 blocksCharge: false, blocksDischarge: true),
        Scenario(code: .overtemperature, bms: { Fixture.healthyBMS(at: $0, temperature: 58) },
                 blocksCharge: true, blocksDischarge: true),
        Scenario(code: .undertemperatureCharge, bms: { Fixture.healthyBMS(at: $0, temperature: -5) },
                 blocksCharge: true, blocksDischarge: false),
        Scenario(code: .bmsProtection, bms: { Fixture.healthyBMS(at: $0, protections: [.cellOvervoltage]) },
                 blocksCharge: true, blocksDischarge: true),
        Scenario(code: .bmsChargeDisabled, bms: { Fixture.healthyBMS(at: $0, chargeEnabled: false) },
                 blocksCharge: true, blocksDischarge: false),
        Scenario(code: .bmsDischargeDisabled, bms: { Fixture.healthyBMS(at: $0, dischargeEnabled: false) },
                 blocksCharge: false, blocksDischarge: true),
        Scenario(code: .packOvervoltage, bms: { Fixture.healthyBMS(at: $0, volts: 59.0) },
                 blocksCharge: true, blocksDischarge: false),
        Scenario(code: .chargeOvercurrent, bms: { Fixture.healthyBMS(at: $0, chargeA: 100, currentA: 150) },
                 blocksCharge: true, blocksDischarge: false),
    ]

    @Test("each rule trips through the whole controller and stops the right direction", arguments: scenarios)
    func tripThroughController(scenario: Scenario) {
        let site = Fixture.site()
        let decision = Fixture.run(site, seconds: 10) { now in
            UnitInputs(bms: scenario.bms(now),
                       inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now))
        }
        #expect(decision.activeCodes.contains(scenario.code))
        #expect((decision.allowedCharge == .zero) == scenario.blocksCharge)
        #expect((decision.allowedDischarge == .zero) == scenario.blocksDischarge)
        #expect(decision.setpoint.value >= -decision.allowedCharge.value)
        #expect(decision.setpoint.value <= decision.allowedDischarge.value)
    }

    @Test("BMS silence trips BMS_COMM_LOST after the stale time and zeroes power at once")
    func bmsSilence() {
        let site = Fixture.site()
        Fixture.run(site, seconds: 5)
        #expect(site.decision(unit: 0).allowedDischarge == Fixture.rating)
        // BMS falls silent at t = 5 s; the inverter keeps answering.
        let lastBMS = Fixture.healthyBMS(at: Fixture.instant(5))
        let inputs: (MonotonicInstant) -> UnitInputs = { now in
            UnitInputs(bms: lastBMS,
                       inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now))
        }
        var decision = Fixture.run(site, from: 5, seconds: 3.1, inputs: inputs)
        #expect(decision.allowedDischarge == .zero)  // stale data is absent: zero power
        #expect(decision.dischargeLimitedBy == .interlock(.bmsCommLost))
        decision = Fixture.run(site, from: 8.1, seconds: 1, inputs: inputs)
        #expect(decision.activeCodes.contains(.bmsCommLost))
        #expect(decision.state == .tripped)
    }

    /// 50 s to start, power zero meanwhile.
    @Test("start-up grace: a BMS slow to start is no BMS_COMM_LOST; afterwards the steady 3 s applies")
    func startupGrace() {
        var settings = UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000))
        settings.bmsStartupGrace = .seconds(60)
        settings.inverterStartupGrace = .seconds(60)
        let site = SiteController(control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000,
                                                           scheduleRampPercentPerSecond: 1000),
                                  units: [settings], startedAt: .zero)
        let silent: (MonotonicInstant) -> UnitInputs = { now in
            UnitInputs(inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now))
        }
        var decision = Fixture.run(site, seconds: 50, inputs: silent)
        #expect(!decision.activeCodes.contains(.bmsCommLost), "inside the start-up grace")
        #expect(decision.setpoint == .zero && decision.state == .starting)
        // The BMS starts at 50 s and talks for 10 s, then falls silent: the steady-state 3 s, not the grace.
        decision = Fixture.run(site, from: 50, seconds: 10)
        #expect(decision.allowedDischarge == Fixture.rating)
        let lastBMS = Fixture.healthyBMS(at: Fixture.instant(60))
        decision = Fixture.run(site, from: 60, seconds: 4) { now in
            UnitInputs(bms: lastBMS, inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now))
        }
        #expect(decision.activeCodes.contains(.bmsCommLost), "3 s after the BMS fell silent, well inside 60 s")
        #expect(decision.allowedDischarge == .zero)

        // Without a BMS at all, BMS_COMM_LOST comes once the grace and the stale time have passed.
        let never = SiteController(control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000,
                                                            scheduleRampPercentPerSecond: 1000),
                                   units: [settings], startedAt: .zero)
        #expect(!Fixture.run(never, seconds: 62.5, inputs: silent).activeCodes.contains(.bmsCommLost))
        #expect(Fixture.run(never, from: 62.5, seconds: 1, inputs: silent).activeCodes.contains(.bmsCommLost))
    }

    @Test("thermal runaway latches, requests disconnect, and only a reset clears it")
    func thermalRunaway() {
        let site = Fixture.site()
        Fixture.run(site, seconds: 12)
        // Temperature rising 1 °C/s from 25 °C, samples once per second.
        var temperature = 25.0
        var decision = Fixture.run(site, from: 12, seconds: 8) { now in
            let seconds = Double(now.nanoseconds) / 1e9
            temperature = 25 + max(0, (seconds - 12).rounded(.down))
            let stamp = Fixture.instant((seconds).rounded(.down))
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: stamp, temperature: temperature)
            return inputs
        }
        #expect(decision.latchedCodes.contains(.thermalRunaway))
        #expect(decision.disconnectRequested)
        #expect(decision.state == .faulted)
        #expect(decision.setpoint == .zero)
        // Temperature steady again (rate 0) for a long time: still faulted.
        decision = Fixture.run(site, from: 20, seconds: 60) { now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, temperature: 33)
            return inputs
        }
        #expect(decision.state == .faulted)
        let outcome = site.reset(unit: 0, now: Fixture.instant(80))
        #expect(outcome.first?.outcome.cleared.contains(.thermalRunaway) == true)
        decision = Fixture.run(site, from: 80, seconds: 1)
        #expect(decision.state == .running)
    }
}
