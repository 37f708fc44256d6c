import ControlCore
import Foundation
import Testing

/// Frequency events found in the cycle and assessed against the droop law (issue 47 §3).
@Suite("Frequency events")
struct FrequencyEventTests {
    static let wallOrigin = 1_800_000_000.0

    /// The default table without GRID_ROCOF, so a frequency step trips nothing by its slope.
    static var rulesWithoutRocof: [InterlockRule] { InterlockRule.defaultTable().filter { $0.code != .gridRocof } }

    /// A one-unit site (100 kW) with the seed's droop (deadband 49.90–50.05 Hz, 5 %, 5 s response time).
    static func site(_ events: FrequencyEventSettings = FrequencyEventSettings(), rules: [InterlockRule]? = rulesWithoutRocof)
        -> SiteController
    {
        var control = ControlSettings(droop: .seedDefault, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000)
        control.frequencyEvents = events
        return SiteController(control: control, units: [UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000), rules: rules)],
                              startedAt: .zero)
    }

    /// Steps `site` every 100 ms from `start` to `end` seconds. The inverter delivers the previous cycle's
    /// setpoint (an ideal unit one cycle behind); `adjust` changes a unit's inputs at time t. Returns
    /// every assessment drained, with the time it was drained at.
    @discardableResult
    static func run(
        _ site: SiteController, from start: Double = 0, to end: Double, frequency: (Double) -> Double?,
        adjust: (Double, inout UnitInputs) -> Void = { _, _ in }, delivered: inout Double
    ) -> [(t: Double, assessment: FrequencyEventAssessment)] {
        var found: [(t: Double, assessment: FrequencyEventAssessment)] = []
        var k = Int((start * 10).rounded())
        while Double(k) / 10 < end - 1e-9 {
            k += 1
            let t = Double(k) / 10
            let now = Fixture.instant(t)
            var inputs = Fixture.healthyInputs(at: now, power: delivered)
            adjust(t, &inputs)
            site.step(frequency: frequency(t).map { Timestamped(Hertz($0), at: now) }, inputs: [inputs], now: now,
                      wallClock: wallOrigin + t)
            delivered = inputs.inverter?.value.faulted == true ? 0 : site.decision(unit: 0).setpoint.value
            site.drainFrequencyAssessments { found.append((t, $0)) }
        }
        return found
    }

    /// 50 Hz, a step to 49.5 Hz at 10 s, back to 50 Hz at 40 s.
    static func dip(_ t: Double) -> Double? { t >= 10 && t < 40 ? 49.5 : 50 }

    /// The one assessment of `dip` on a fresh site, with `adjust` changing the unit's inputs.
    static func dipAssessed(_ adjust: (Double, inout UnitInputs) -> Void) throws -> FrequencyEventAssessment {
        var delivered = 0.0
        let found = run(site(), to: 60, frequency: dip, adjust: adjust, delivered: &delivered)
        try #require(found.count == 1)
        return found[0].assessment
    }

    /// The droop law at 49.5 Hz: (49.9 − 49.5) / (50 × 5 %) = 0.16 of 100 kW.
    static let droopAtDip = 16_000.0

    @Test("full delivery: score 1, no shortfall, required as the lagged droop law at the response time")
    func fullDelivery() throws {
        let site = Self.site()
        var delivered = 0.0
        let found = Self.run(site, to: 60, frequency: Self.dip, delivered: &delivered)
        try #require(found.count == 1)
        let a = found[0].assessment
        #expect(a.sequence == 1)
        #expect(a.direction == .under)
        #expect(abs(a.start - (Self.wallOrigin + 10)) < 1e-6, "the instant it left, not the entry delay's end")
        #expect(abs(a.end - (Self.wallOrigin + 40)) < 1e-6, "the instant it came back, not the exit delay's end")
        #expect(abs(found[0].t - 45) < 1e-6, "reported once back for the exit delay")
        #expect(a.extremeHz == 49.5)
        #expect(a.preEventW == 0)
        #expect(!a.metered)
        // Samples at 10.0 … 15.0 s: 51 steps of 0.1 s through a lag of τ = 5 s / ln 10.
        let lagged = Self.droopAtDip * (1 - exp(-5.1 * log(10) / 5))
        #expect(abs(a.requiredW - lagged) < 1, "required \(a.requiredW) W, expected \(lagged) W")
        #expect(abs(a.deliveredW - a.requiredW) < 1000, "one cycle behind, within the 1 % tolerance")
        #expect(a.shortfallW == 0)
        #expect(a.score == 1)
        #expect(a.cause == .none && a.causeCode == nil && a.causeUnit == -1)
        #expect(a.requiredMeanW > 0.7 * Self.droopAtDip && a.requiredMeanW < Self.droopAtDip)
        #expect(abs(a.deliveredMeanW - a.requiredMeanW) < 1000)
    }

    @Test("a unit tripping mid-event names the unit and its code")
    func unitTrips() throws {
        let a = try Self.dipAssessed { t, inputs in
            if t >= 20, t < 40 { inputs.inverter?.value.faulted = true }
        }
        #expect(a.cause == .unitTripped)
        #expect(a.causeCode == .inverterFault)
        #expect(a.causeUnit == 0)
        #expect(a.shortfallW == 0, "the response time (15 s) came before the trip (20 s)")
        #expect(a.maxShortfallW > 0.9 * Self.droopAtDip)
        #expect(a.score < 0.7 && a.score > 0.1, "delivered until 20 s of 30: score \(a.score)")
        #expect(a.deliveredMeanW < a.requiredMeanW - 5000)
    }

    @Test("SOC running out mid-event: cause socLimit, SOC_LOW")
    func socRunsOut() throws {
        let a = try Self.dipAssessed { t, inputs in
            // 7 % at the start, 0.2 points a second: SOC_LOW (5 %) from 20 s.
            let soc = t < 10 ? 7 : 7 - 0.2 * (t - 10)
            inputs.bms.status?.value.soc = Percent(soc)
        }
        #expect(a.cause == .socLimit)
        #expect(a.causeCode == .socLow)
        #expect(a.causeUnit == 0)
        #expect(a.score < 0.9)
    }

    @Test("an excursion shorter than the entry delay is no event; one as long is")
    func entryDelay() throws {
        let site = Self.site()
        var delivered = 0.0
        let found = Self.run(site, to: 40, frequency: { t in
            if t >= 10, t < 10.8 { return 49.8 }  // 0.8 s outside
            if t >= 20, t < 21.2 { return 49.8 }  // 1.2 s outside
            return 50
        }, delivered: &delivered)
        try #require(found.count == 1)
        #expect(abs(found[0].assessment.start - (Self.wallOrigin + 20)) < 1e-6)
        #expect(found[0].assessment.sequence == 1)
        #expect(found[0].assessment.extremeHz == 49.8)
    }

    @Test("an event ends only once frequency has been back for the exit delay; leaving again continues it")
    func exitDelay() throws {
        let site = Self.site()
        var delivered = 0.0
        let found = Self.run(site, to: 60, frequency: { t in
            if t >= 10, t < 20 { return 49.7 }
            if t >= 23, t < 25 { return 50.2 }  // back 3 s (< 5 s), then out the other way
            return 50
        }, delivered: &delivered)
        try #require(found.count == 1, "one event, not two")
        let a = found[0].assessment
        #expect(abs(found[0].t - 30) < 1e-6, "drained at 25 s + 5 s, not before")
        #expect(abs(a.end - (Self.wallOrigin + 25)) < 1e-6)
        #expect(a.direction == .under)
        #expect(a.extremeHz == 49.7)
    }

    @Test("a frequency back inside for less than the exit delay, then gone stale, never ends the event early")
    func absentFrequencyHolds() throws {
        let site = Self.site(FrequencyEventSettings(entryDelay: .seconds(1), exitDelay: .seconds(2)))
        var delivered = 0.0
        let found = Self.run(site, to: 30, frequency: { t in
            if t >= 10, t < 15 { return 49.7 }
            if t >= 15, t < 16 { return 50 }
            if t >= 16, t < 19 { return nil }  // no frequency at all for 3 s
            return 50
        }, delivered: &delivered)
        try #require(found.count == 1)
        #expect(found[0].t >= 19 - 1e-6, "ended only on a fresh sample inside")
    }

    @Test("the ring keeps the newest assessments and counts what it overwrote")
    func ringOverwrites() {
        var ring = FrequencyAssessmentRing(capacity: 2)
        for n in 1...3 { ring.push(FrequencyEventAssessment(sequence: UInt64(n))) }
        var drained: [UInt64] = []
        ring.drain { drained.append($0.sequence) }
        #expect(drained == [2, 3])
        #expect(ring.overwritten == 1)
        ring.drain { _ in Issue.record("drained twice") }
    }
}
