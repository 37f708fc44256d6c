import Cycle
import Sep2Link

extension Sep2SiteSample {
    /// The sample the reporter takes from a publication of `units` and `site`, with the site's view
    /// computed as `SharedState` computes it when the status is published (over `ratings`' energy).
    init(site: SiteStatus, units: [UnitStatus], frequency: Double, ratings: Sep2SiteRatings) {
        let view = SiteView(units: units, site: site, capacitiesWh: ratings.unitEnergyWh)
        self.init(site: site, units: units, view: view, frequency: frequency)
    }
}
