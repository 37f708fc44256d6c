import Config
import Cycle
import ControlCore

extension SiteView.Settings {
    /// What the published `SiteView` needs of `configuration`: the units' usable energy and
    /// ratings, their frequency-response reserves (`droop_settings.sustain_s`), the SOC reserve,
    /// and the grid limits when the site has a meter.
    init(_ configuration: BessdConfiguration) {
        let site = configuration.site
        self.init(capacitiesWh: configuration.units.map { $0.capacityKWh * 1000 },
                  ratingsW: configuration.units.map { $0.maxPowerKW * 1000 },
                  reserve: ResponseReserve(droop: configuration.controlSettings.droop, units: configuration.unitSettings).units,
                  socReservePercent: site.socReservePercent, hasMeter: site.meter != nil,
                  exportMaxW: site.exportMaxKW.map { $0 * 1000 }, importMaxW: site.importMaxKW.map { $0 * 1000 })
    }
}
