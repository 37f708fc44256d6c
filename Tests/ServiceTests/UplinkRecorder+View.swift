import ControlCore
@testable import Cycle
@testable import Service
import Uplink

extension UplinkRecorder {
    /// The view the daemon's cycle publishes with `units` and `site` (settings from this recorder's
    /// configuration, as `Daemon` builds its `SharedState`).
    func view(_ units: [UnitStatus], _ site: SiteStatus = SiteStatus()) -> SiteView {
        SiteView(units: units, site: site, settings: SiteView.Settings(configuration))
    }

    /// A round as the service runs it after a publication of `units` and `site`.
    func tick(now: MonotonicInstant, units: [UnitStatus], stats: CycleStatistics, blocks: [EnergyBlock],
              site: SiteStatus = SiteStatus()) -> String? {
        tick(now: now, units: units, stats: stats, blocks: blocks, site: site, view: view(units, site))
    }

    /// The site availability the uplink reports after a publication of `units` and `site`.
    func siteAvailability(_ units: [UnitStatus], _ site: SiteStatus) -> SiteAvailability {
        Self.siteAvailability(view(units, site))
    }
}
