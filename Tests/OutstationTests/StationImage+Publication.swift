import ControlCore
import Cycle
import Outstation

extension StationImage {
    /// Fills the image as the outstation does from a publication of `units` and `site`, with the
    /// site's view computed as `SharedState` computes it when the status is published.
    mutating func fill(units: [UnitStatus], site: SiteStatus, frequency: Double, now: MonotonicInstant) {
        let view = SiteView(units: units, site: site, capacitiesWh: description.capacitiesWh)
        fill(units: units, site: site, view: view, frequency: frequency, now: now)
    }
}
