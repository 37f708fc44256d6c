import ControlCore
@testable import Cycle
import Testing

/// The site's reactive capability as SCADA, IEC 104 and dispatch judge a var or power-factor
/// command against it: each unit's status carries its own (the reactive stage's ratings), the site
/// view sums them (docs/design/0010-reactive-power.md, the Decision section).
@Suite("ReactiveCapabilityViewTests: Σ VarMaxInj / VarMaxAbs of the units with var points")
struct ReactiveCapabilityViewTests {
    @Test("each unit's 702 VarMaxInj / VarMaxAbs (else VAMax) in its status; a unit without var points counts 0; the view sums them")
    func summedFromTheCycle() {
        let site = SiteController(
            control: ControlSettings(droop: DroopSettings.seedDefault),
            units: (0..<3).map { _ in UnitSettings(rating: .kilowatts(100), capacity: WattHours(250_000)) }, startedAt: .zero)
        let now = MonotonicInstant(nanoseconds: 100_000_000)
        var readings = (0..<3).map { _ in InverterReading(activePower: .zero, ratedPower: .kilowatts(100)) }
        readings[0].varMaxInjecting = 60_000
        readings[0].varMaxAbsorbing = 40_000
        readings[2].reactiveAvailable = false
        let inputs = readings.map { UnitInputs(inverter: Timestamped($0, at: now)) }
        site.step(frequency: Timestamped(Hertz(50), at: now), inputs: inputs, now: now, wallClock: 1_800_000_000)
        var statuses = [UnitStatus](repeating: UnitStatus(), count: 3)
        for i in 0..<3 { statuses[i].fill(from: site, unit: i, inputs: inputs[i], driven: .closed, now: now) }
        #expect(statuses[0].varMaxInjecting == 60_000 && statuses[0].varMaxAbsorbing == 40_000)
        #expect(statuses[1].varMaxInjecting == 100_000 && statuses[1].varMaxAbsorbing == 100_000, "no 702 ratings: VAMax")
        #expect(statuses[2].varMaxInjecting == 0 && statuses[2].varMaxAbsorbing == 0, "no var points")
        let view = SiteView(units: statuses, site: SiteStatus(), settings: SiteView.Settings(capacitiesWh: [], ratingsW: [100_000, 100_000, 100_000]))
        #expect(view.varMaxInjecting == 160_000 && view.varMaxAbsorbing == 140_000)
        #expect(view.acceptsVar(160_000) && !view.acceptsVar(160_001) && view.acceptsVar(-140_000) && !view.acceptsVar(-140_001))
        // PF at rated power 300 kW with 160 kvar injecting: 300 / √(300² + 160²) = 0.882.
        #expect(view.acceptsPowerFactor(0.89) && !view.acceptsPowerFactor(0.87))
    }
}
