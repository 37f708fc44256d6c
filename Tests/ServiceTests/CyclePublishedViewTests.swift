import ControlCore
import Config
@testable import Cycle
import Simulation
import Testing

/// The cycle publishes the site's view with the status it publishes, once per publication.
@Suite("Site view published by the cycle")
struct CyclePublishedViewTests {
    @Test("each cycle publishes the view of the status it publishes, over the units' usable energy")
    func cyclePublishes() throws {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        let capacities = c.units.map { $0.capacityKWh * 1000 }
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let shared = SharedState(units: c.units.count, capacitiesWh: capacities)
        runner.attach(shared)
        var units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        var site = SiteStatus(), view = SiteView(), frequency = Double.nan
        for k in 1...30 { runner.run(now: MonotonicInstant(nanoseconds: Int64(k) * 100_000_000), lateness: .zero) }
        shared.read(units: &units, site: &site, view: &view, frequency: &frequency)
        #expect(view.socPercent.isFinite && view.unitsW.isFinite, "\(view)")
        let again = SiteView(units: units, site: site, capacitiesWh: capacities)
        #expect(view.socPercent == again.socPercent && view.unitsW == again.unitsW && view.storedWh == again.storedWh
                && view.toFullWh == again.toFullWh && view.clampedSOCPercent == again.clampedSOCPercent, "\(view) against \(again)")
    }
}
