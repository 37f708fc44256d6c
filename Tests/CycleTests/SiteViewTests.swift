import ControlCore
@testable import Cycle
import Testing

/// The one computation of the site's net power and state of charge that SCADA, IEC 104 and
/// IEEE 2030.5 read.
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
}
