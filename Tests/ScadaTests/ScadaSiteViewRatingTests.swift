import ControlCore
import Cycle
@testable import Scada
import Testing

/// SCADA reads the site's rating and usable energy from the published `SiteView` (issue 58): the
/// 702 and 713 ratings and `WSet`'s bound are `ratedPowerW` and `usableEnergyWh`, not a sum of its own.
@Suite("SCADA: ratings from the SiteView")
struct ScadaSiteViewRatingTests {
    @Test("units rated 100, 40 and 7.5 kW: 702 WMaxRtg, WSet's bound and 713 WHRtg are the view's sums")
    func ratingsFromView() throws {
        let shared = SharedState(units: 3, view: SiteView.Settings(capacitiesWh: [250_000, 80_000, 15_000],
                                                                   ratingsW: [100_000, 40_000, 7_500]))
        let view = shared.view
        #expect(view.ratedPowerW == 147_500 && view.usableEnergyWh == 345_000, "in the view before any publication")
        let image = ScadaImage(site: ScadaSiteDescription(siteID: "SITE_V", version: "0.0.0", mode: "simulation", unitID: 1,
                                                          ratingsW: [100_000, 40_000, 7_500], capacitiesWh: [250_000, 80_000, 15_000],
                                                          hasMeter: false, view: view))
        #expect(image.ratedPower == view.ratedPowerW)
        #expect(image.wSF == 1 && image.whSF == 1)
        let m702 = try #require(image.start(of: SunSpecTables.M702.id))
        #expect(Double(image.words[m702 + SunSpecTables.M702.WMaxRtg.offset]) * 10 == view.ratedPowerW)
        let m713 = try #require(image.start(of: SunSpecTables.M713.id))
        #expect(Double(image.words[m713 + SunSpecTables.M713.WHRtg.offset]) * 10 == view.usableEnergyWh)
        // WSet at W_SF 1: 14,750 is the rating, 14,751 beyond it (03).
        let m704 = try #require(image.start(of: SunSpecTables.M704.id))
        func write(_ raw: UInt16) -> Result<ScadaWrite, ScadaWriteRefusal> {
            image.decodeWrite(address: ScadaImage.base + m704 + SunSpecTables.M704.WSet.offset, values: [0, raw],
                              commands: SiteCommands(maxHold: .seconds(60)), now: MonotonicInstant(nanoseconds: 0))
        }
        #expect(try write(14_750).get().commands.setpoint.value == view.ratedPowerW)
        guard case .failure(let refusal) = write(14_751) else { Issue.record("a setpoint beyond the rating was accepted"); return }
        #expect(refusal.exception == 3)
    }
}
