import Config
import ControlCore
import Cycle
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
    }
}

extension Sep2Worker {
    /// Reports `shared`'s site to the server with the reporter of `configuration`. Call before `start`.
    func reportSite(_ configuration: BessdConfiguration, shared: SharedState) {
        reportSite(Sep2ReporterSettings(configuration, lfdi: state.lfdi, view: shared.view), shared: shared)
    }
}
