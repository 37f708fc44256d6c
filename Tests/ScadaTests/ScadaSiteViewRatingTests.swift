import ControlCore
import Cycle
@testable import Scada
import Testing

/// SCADA reads the site's rating and usable energy from the published `SiteView` (issue 58): the
/// 702 and 713 ratings and `WSet`'s bound are `ratedPowerW` and `usableEnergyWh`, not a sum of its own.
@Suite("SCADA: ratings from the SiteView")
struct ScadaSiteViewRatingTests {
    @Test("a view of 200 kW and 400 kWh over units listed at 100, 40, 7.5 kW: 702, 713 and WSet's bound are the view's")
    func ratingsFromView() throws {
        // The view's ratings differ from the description's units on purpose: a sum of the units
        // (147.5 kW, 345 kWh) fails every check below.
        let shared = SharedState(units: 3, view: SiteView.Settings(capacitiesWh: [200_000, 150_000, 50_000],
                                                                   ratingsW: [100_000, 60_000, 40_000]))
        let view = shared.view
        #expect(view.ratedPowerW == 200_000 && view.usableEnergyWh == 400_000, "in the view before any publication")
        let image = ScadaImage(site: ScadaSiteDescription(siteID: "SITE_V", version: "0.0.0", mode: "simulation", unitID: 1,
                                                          ratingsW: [100_000, 40_000, 7_500], capacitiesWh: [250_000, 80_000, 15_000],
                                                          hasMeter: false, view: view))
        #expect(image.ratedPower == 200_000)
        #expect(image.wSF == 1 && image.whSF == 1)
        let m702 = try #require(image.start(of: SunSpecTables.M702.id))
        #expect(Int(image.words[m702 + SunSpecTables.M702.WMaxRtg.offset]) * 10 == 200_000)
        let m713 = try #require(image.start(of: SunSpecTables.M713.id))
        #expect(Int(image.words[m713 + SunSpecTables.M713.WHRtg.offset]) * 10 == 400_000)
        // WSet at W_SF 1: 20,000 is the rating, 20,001 beyond it (03).
        let m704 = try #require(image.start(of: SunSpecTables.M704.id))
        func write(_ raw: UInt16) -> Result<ScadaWrite, ScadaWriteRefusal> {
            image.decodeWrite(address: ScadaImage.base + m704 + SunSpecTables.M704.WSet.offset, values: [0, raw],
                              commands: SiteCommands(maxHold: .seconds(60)), now: MonotonicInstant(nanoseconds: 0))
        }
        #expect((try? write(20_000).get())?.commands.setpoint.value == 200_000, "the view's rating is accepted")
        guard case .failure(let refusal) = write(20_001) else { Issue.record("a setpoint beyond the rating was accepted"); return }
        #expect(refusal.exception == 3)
    }
}
