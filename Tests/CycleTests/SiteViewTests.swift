import ControlCore
@testable import Cycle
import Testing

/// The one computation of the site's net power, state of charge, availability and ratings that
/// SCADA, IEC 104, IEEE 2030.5 and the uplink read.
@Suite("Site view")
struct SiteViewTests {
    static func unit(soc: Double, power: Double) -> UnitStatus {
        var u = UnitStatus()
        u.soc = soc
        u.power = power
        return u
    }

    @Test("SOC weighted by usable energy as the BMSs state it; clamped to 0…100 per unit only in the clamped pair")
    func stateOfCharge() {
        let units = [Self.unit(soc: 125, power: 1000), Self.unit(soc: 50, power: .nan), Self.unit(soc: .nan, power: -300)]
        let view = SiteView(units: units, site: SiteStatus(), capacitiesWh: [100_000, 300_000, 200_000])
        #expect(view.socPercent == 68.75, "(125 × 100 kWh + 50 × 300 kWh) / 400 kWh")
        #expect(view.storedWh == 125_000 + 150_000 && view.toFullWh == -25_000 + 150_000)
        #expect(view.clampedStoredWh == 100_000 + 150_000 && view.clampedSOCPercent == 62.5)
        #expect(view.unitsW == 700, "the units that read their power, whatever their SOC")
    }

    @Test("net power: the fresh meter's (+ = export) when the site has one, NaN while stale; else the units' sum")
    func netPower() {
        var site = SiteStatus()
        site.gridPower = 2000
        let units = [Self.unit(soc: 50, power: 500)]
        #expect(SiteView(units: units, site: site, capacitiesWh: [1]).netW(hasMeter: true) == -2000)
        #expect(SiteView(units: units, site: site, capacitiesWh: [1]).netW(hasMeter: false) == 500)
        site.meterStale = true
        #expect(SiteView(units: units, site: site, capacitiesWh: [1]).netW(hasMeter: true).isNaN)
        let none = SiteView(units: [Self.unit(soc: .nan, power: .nan)], site: SiteStatus(), capacitiesWh: [1])
        #expect(none.unitsW.isNaN && none.socPercent.isNaN && none.storedWh.isNaN && none.clampedSOCPercent.isNaN)
    }

    @Test("availability: allowed power from the present setpoints, no discharge at the SOC reserve, inside the grid limits")
    func availability() {
        func unit(soc: Double, setpoint: Double) -> UnitStatus {
            var u = Self.unit(soc: soc, power: setpoint)
            u.setpoint = setpoint
            u.allowedCharge = 100_000
            u.allowedDischarge = 100_000
            return u
        }
        let settings = SiteView.Settings(capacitiesWh: [200_000, 200_000], ratingsW: [100_000, 100_000], socReservePercent: 20,
                                         hasMeter: true, exportMaxW: 20_000, importMaxW: 230_000)
        var site = SiteStatus()
        site.gridPower = 150_000
        // A gives 30 kW at 60 %; B takes 10 kW at 15 % (inside the SOC reserve: no discharge).
        let units = [unit(soc: 60, setpoint: 30_000), unit(soc: 15, setpoint: -10_000)]
        let view = SiteView(units: units, site: site, settings: settings)
        #expect(view.availableUpW == 80_000, "A's 100 kW less the 20 kW given now; the export limit allows 170 kW")
        #expect(view.availableDownW == 80_000, "200 kW + 20 kW, inside the import limit's 230 − 150 kW")
        #expect(view.ratedPowerW == 200_000 && view.usableEnergyWh == 400_000)
        site.gridPower = .nan
        let blind = SiteView(units: units, site: site, settings: settings)
        #expect(blind.availableUpW == 0 && blind.availableDownW == 0, "no meter reading: nothing the limits bound")
        let unmetered = SiteView(units: units, site: site, settings: SiteView.Settings(capacitiesWh: [200_000, 200_000], socReservePercent: 20))
        #expect(unmetered.availableUpW == 80_000 && unmetered.availableDownW == 220_000)
    }
}
