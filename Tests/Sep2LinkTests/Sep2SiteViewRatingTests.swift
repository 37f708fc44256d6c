import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The 2030.5 reports state the published `SiteView`'s `ratedPowerW` and `usableEnergyWh` (issue 58),
/// not sums of their own.
@Suite("2030.5 reporter: ratings from the SiteView")
struct Sep2SiteViewRatingTests {
    /// Units of 250, 80 and 15 kWh.
    static let energyWh: [Double] = [250_000, 80_000, 15_000]

    @Test("units rated 100, 40 and 7.5 kW: DERCapability and DERSettings state the view's sums")
    func ratingsFromView() throws {
        // The view the reporter is given at start (`Sep2ReporterSettings(_:lfdi:view:)`), before any publication.
        let view = SharedState(units: 3, view: .init(capacitiesWh: Self.energyWh, ratingsW: [100_000, 40_000, 7_500])).view
        let ratings = Sep2SiteRatings(view: view, unitEnergyWh: Self.energyWh, rampPercentPerSecond: 0.5)
        #expect(ratings == Sep2SiteRatings(unitPowerW: [100_000, 40_000, 7_500], unitEnergyWh: Self.energyWh, rampPercentPerSecond: 0.5))
        var reporter = Sep2Reporter(settings: Sep2ReporterSettings(lfdi: Sep2ReporterTests.lfdi, pen: 1, csipaus: .v1_2, postSeconds: 60,
                                                                  ratings: ratings))
        reporter.follow(der: try Sep2ReporterTests.der(), mirrorUsagePointList: nil, postRate: nil)
        reporter.sample(Sep2SiteSample(), serverTime: 1_800_000_000)
        let requests = reporter.dueRequests(now: .at(100), serverTime: 1_800_000_000)
        try #require(requests.count >= 2)
        func watts(_ element: XMLElement, _ name: String) -> Double? {
            guard let value = Sep2ReporterTests.text(element, name, "value").flatMap(Double.init),
                  let multiplier = Sep2ReporterTests.text(element, name, "multiplier").flatMap(Double.init) else { return nil }
            return value * pow(10, multiplier)
        }
        let capability = try Sep2ReporterTests.root(requests[0])
        #expect(watts(capability, "rtgMaxW") == view.ratedPowerW)
        #expect(watts(capability, "rtgMaxChargeRateW") == view.ratedPowerW)
        #expect(watts(capability, "rtgMaxWh") == view.usableEnergyWh)
        let settings = try Sep2ReporterTests.root(requests[1])
        #expect(watts(settings, "setMaxW") == view.ratedPowerW)
    }
}
