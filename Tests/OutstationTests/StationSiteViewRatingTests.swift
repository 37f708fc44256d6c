import Cycle
import IEC104
@testable import Outstation
import Testing

/// IEC 104 bounds the site set-point (3002) by the published `SiteView`'s `ratedPowerW` (issue 58),
/// not by a sum of its own.
@Suite("IEC 104: the site set-point's bound from the SiteView")
struct StationSiteViewRatingTests {
    @Test("units rated 100, 40 and 7.5 kW: 0.1475 MW is accepted at 3002, 0.1476 MW refused")
    func setpointBoundFromView() {
        let shared = SharedState(units: 3, view: SiteView.Settings(capacitiesWh: [250_000, 80_000, 15_000],
                                                                   ratingsW: [100_000, 40_000, 7_500]))
        let view = shared.view
        let description = StationDescription(ratingsW: [100_000, 40_000, 7_500], capacitiesWh: [250_000, 80_000, 15_000],
                                             hasMeter: false, frequencyResponseEnabled: false, view: view)
        #expect(description.ratedPowerW == view.ratedPowerW && view.ratedPowerW == 147_500)
        func action(_ megawatts: Double) -> Result<OutstationCommands.Action, CommandRefusal> {
            OutstationCommands.action(of: .init(signal: .siteSetpointCommand, value: megawatts, select: false),
                                      agcBand: (-view.ratedPowerW, view.ratedPowerW), ratingW: description.ratedPowerW)
        }
        guard case .success(.siteSetpoint(let watts)) = action(0.1475) else { Issue.record("the rating itself was refused"); return }
        #expect(watts == view.ratedPowerW)
        guard case .failure = action(0.1476) else { Issue.record("a set-point beyond the rating was accepted"); return }
    }
}
