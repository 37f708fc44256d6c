import BessSystem
import ControlCore
@testable import Cycle
import Testing

/// The site's view is computed once, where the status is published, and read with it.
@Suite("Published site view")
struct PublishedSiteViewTests {
    static func read(_ shared: SharedState) -> (units: [UnitStatus], site: SiteStatus, view: SiteView) {
        var units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
        var site = SiteStatus(), view = SiteView(), frequency = Double.nan
        shared.read(units: &units, site: &site, view: &view, frequency: &frequency)
        return (units, site, view)
    }

    @Test("status written into SharedState publishes the view of it, weighted by the declared energy")
    func writtenStatus() {
        let shared = SharedState(units: 2, capacitiesWh: [100_000, 300_000])
        shared.contents.withLock { c in
            c.units[0].soc = 40
            c.units[0].power = 1000
            c.units[1].soc = 80
        }
        let published = Self.read(shared)
        #expect(published.view.socPercent == 70, "(40 × 100 kWh + 80 × 300 kWh) / 400 kWh")
        #expect(published.view.unitsW == 1000 && published.view.storedWh == 280_000)
        #expect(Self.same(published.view, SiteView(units: published.units, site: published.site, capacitiesWh: [100_000, 300_000])))
    }

    /// The same view, NaN equal to NaN (a quantity nobody reads).
    static func same(_ a: SiteView, _ b: SiteView) -> Bool {
        let pairs = [(a.unitsW, b.unitsW), (a.meteredW, b.meteredW), (a.socPercent, b.socPercent), (a.storedWh, b.storedWh),
                     (a.toFullWh, b.toFullWh), (a.clampedStoredWh, b.clampedStoredWh), (a.clampedSOCPercent, b.clampedSOCPercent),
                     (a.availableUpW, b.availableUpW), (a.availableDownW, b.availableDownW), (a.ratedPowerW, b.ratedPowerW),
                     (a.usableEnergyWh, b.usableEnergyWh)]
        return pairs.allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }
    }
}
