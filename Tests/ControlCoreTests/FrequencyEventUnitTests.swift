import ControlCore
import Foundation
import Testing

/// Each unit's part of a frequency event (issue 47 §3): what the droop law required of the unit and
/// what it delivered, carried in the assessment without allocating.
@Suite("Frequency events per unit")
struct FrequencyEventUnitTests {
    /// A site of `count` 100 kW units with the seed's droop, stepped every 100 ms through `FrequencyEventTests.dip`;
    /// each unit delivers its previous setpoint, a unit in `faulted` (by index) none with its inverter
    /// faulted from `faultAt` seconds. Returns the assessments drained.
    static func run(units count: Int, faulted: Set<Int>, faultAt: Double) -> [FrequencyEventAssessment] {
        var control = ControlSettings(droop: .seedDefault, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000)
        control.frequencyEvents = FrequencyEventSettings()
        let settings = (0..<count).map { _ in
            UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000), rules: FrequencyEventTests.rulesWithoutRocof)
        }
        let site = SiteController(control: control, units: settings, startedAt: .zero)
        var delivered = [Double](repeating: 0, count: count)
        var found: [FrequencyEventAssessment] = []
        for k in 1...600 {
            let t = Double(k) / 10
            let now = Fixture.instant(t)
            let inputs = (0..<count).map { index in
                var unit = Fixture.healthyInputs(at: now, power: delivered[index])
                if faulted.contains(index), t >= faultAt { unit.inverter?.value.faulted = true }
                return unit
            }
            site.step(frequency: FrequencyEventTests.dip(t).map { Timestamped(Hertz($0), at: now) }, inputs: inputs, now: now,
                      wallClock: FrequencyEventTests.wallOrigin + t)
            for index in 0..<count {
                delivered[index] = faulted.contains(index) && t >= faultAt ? 0 : site.decision(unit: index).setpoint.value
            }
            site.drainFrequencyAssessments { found.append($0) }
        }
        return found
    }

    @Test("each unit's required and delivered power at response time and on average; a trip's shortfall its own")
    func twoUnits() throws {
        // Unit 1 trips at 12 s, before the response time (15 s).
        let found = Self.run(units: 2, faulted: [1], faultAt: 12)
        try #require(found.count == 1)
        let a = found[0]
        #expect(a.units.count == 2 && a.units.omitted == 0)
        #expect(a.units.map(\.unit) == [0, 1])
        let (healthy, tripped) = (a.units[0], a.units[1])
        // The law for one 100 kW unit at 49.5 Hz, lagged to the response time: each unit's half of the site's.
        let lagged = FrequencyEventTests.droopAtDip * (1 - exp(-5.1 * log(10) / 5))
        #expect(abs(healthy.requiredW - lagged) < 1 && abs(tripped.requiredW - lagged) < 1, "\(healthy.requiredW), \(tripped.requiredW)")
        #expect(abs(healthy.requiredW + tripped.requiredW - a.requiredW) < 1, "the units' parts add up to the site's")
        #expect(tripped.deliveredW == 0)
        #expect(abs(tripped.shortfallW - lagged) < 1)
        #expect(healthy.shortfallW == 0, "the healthy unit delivered (and took its peer's share): \(healthy.deliveredW) W")
        #expect(healthy.deliveredW > lagged - 1000)
        // It delivered only from 10 to 12 s of the 30, while the lag was still rising.
        #expect(tripped.deliveredMeanW < 0.05 * tripped.requiredMeanW && tripped.requiredMeanW > 0.7 * FrequencyEventTests.droopAtDip,
                "\(tripped.deliveredMeanW) of \(tripped.requiredMeanW) W")
        #expect(abs(healthy.requiredMeanW - tripped.requiredMeanW) < 1e-6)
        // What the site measured (no meter: the units' sum), and the worst cycle.
        #expect(!a.metered)
        #expect(a.maxShortfallW >= a.shortfallW)
    }

    @Test("past 32 units the assessment itemises the units with the largest shortfall and counts the rest")
    func bounded() throws {
        let found = Self.run(units: FrequencyEventUnits.capacity + 2, faulted: [FrequencyEventUnits.capacity + 1], faultAt: 12)
        try #require(found.count == 1)
        let units = found[0].units
        #expect(units.count == FrequencyEventUnits.capacity)
        #expect(units.omitted == 2)
        // The short unit is listed; among the rest (none short) the lower indices, all in configuration order.
        #expect(units.map(\.unit) == Array(0..<(FrequencyEventUnits.capacity - 1)) + [FrequencyEventUnits.capacity + 1])
        #expect(units.last.map { $0.shortfallW > 0 } == true)
    }

    @Test("an assessment with its units is a plain value: copying retains nothing, so the cycle never allocates")
    func plainValue() {
        #expect(_isPOD(FrequencyEventAssessment.self))
        #expect(_isPOD(FrequencyEventUnits.self))
        var units = FrequencyEventUnits()
        for index in 0..<(FrequencyEventUnits.capacity + 3) { units.append(FrequencyEventUnitAssessment(unit: index)) }
        #expect(units.count == FrequencyEventUnits.capacity && units.omitted == 3)
    }
}
