import Config
import ControlCore
import Cycle
import GridSupport
import IEEE2030_5
import Sep2Link

extension Sep2ReporterSettings {
    /// The reporter's settings for bessd's site: the ratings of the published `view` (Σ
    /// `units[].max_power_kw` and `capacity_kwh`), the schedule ramp
    /// `limits.schedule_ramp_percent_per_s`, `ieee2030_5.post_s` and `ieee2030_5.pen` (0 when none is
    /// configured), `droop_settings.enabled`.
    init(_ configuration: BessdConfiguration, lfdi: String, view: SiteView) {
        let ratings = Sep2SiteRatings(view: view, unitEnergyWh: configuration.units.map { $0.capacityKWh * 1000 },
                                      rampPercentPerSecond: configuration.scheduleRampPercentPerSecond)
        self.init(lfdi: lfdi, pen: configuration.ieee2030_5?.pen ?? 0, csipaus: .v1_2, postSeconds: configuration.ieee2030_5?.postSeconds ?? 300,
                  ratings: ratings)
        frequencyDroopEnabled = configuration.grid.droop.enabled
        reference = Self.reference(configuration)
    }

    /// Σ units' `VAMax` (`max_apparent_power_kva`, else `max_power_kw`), the units' nominal voltage (else
    /// the site's) and the category of the profile their settings come from (else the site's): a
    /// profile is known by Table 7's reactive capability it sets (A 44/25 %, B 44/44 %), which no key overrides.
    static func reference(_ configuration: BessdConfiguration) -> Sep2ReferenceRatings {
        let va = configuration.units.reduce(0.0) { $0 + ($1.maxApparentPowerKVA ?? $1.maxPowerKW) * 1000 }
        let grid = configuration.grid.reactivePower, site = configuration.site.reactivePower
        let category = (grid.settings ?? site.settings).map { settings -> NormalCategory in
            let table7 = settings.minimumReactivePercent
            let profile = GridSupportProfile.allCases.first { $0.minimumReactivePercent == table7 }
            return profile == .ieee1547_2018_cat_a ? .a : profile == .ieee1547_2018_cat_b ? .b : .unspecified
        }
        return Sep2ReferenceRatings(maxVA: va, nominalVoltageV: grid.nominalVoltageV ?? site.nominalVoltageV, normalCategory: category)
    }
}

extension Sep2Worker {
    /// Reports `shared`'s site to the server with the reporter of `configuration`. Call before `start`.
    func reportSite(_ configuration: BessdConfiguration, shared: SharedState) {
        reportSite(Sep2ReporterSettings(configuration, lfdi: state.lfdi, view: shared.view), shared: shared)
    }
}
