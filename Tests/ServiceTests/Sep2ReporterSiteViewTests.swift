import Config
import Cycle
import Sep2Link
@testable import Service
import Testing

/// The daemon's 2030.5 reporter takes the site's ratings from the `SiteView` it is given (issue 58),
/// not from a sum over `bess_units`.
@Suite("2030.5 reporter settings: ratings from the SiteView")
struct Sep2ReporterSiteViewTests {
    @Test("units configured at 100, 40, 7.5 kW and 345 kWh, a view of 200 kW and 400 kWh: the view's")
    func settingsFromView() throws {
        let configuration = try ConfigLoader.parse("""
            mode: simulation
            bess_units:
              - {id: U1, capacity_kwh: 250, max_power_kw: 100}
              - {id: U2, capacity_kwh: 80, max_power_kw: 40}
              - {id: U3, capacity_kwh: 15, max_power_kw: 7.5}
            """, file: "sep2-view.yaml")
        // Unlike the configuration's sums on purpose: a sum of the units (147.5 kW, 345 kWh) fails below.
        let view = SharedState(units: 3, view: SiteView.Settings(capacitiesWh: [200_000, 150_000, 50_000],
                                                                 ratingsW: [100_000, 60_000, 40_000])).view
        let ratings = Sep2ReporterSettings(configuration, lfdi: "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5", view: view).ratings
        #expect(ratings.maxDischargeW == 200_000 && ratings.maxChargeW == 200_000)
        #expect(ratings.energyWh == 400_000)
        #expect(ratings.unitEnergyWh == [250_000, 80_000, 15_000], "SOC is still weighted by each configured unit's energy")
    }
}
