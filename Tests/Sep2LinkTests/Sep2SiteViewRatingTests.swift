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

    @Test("a view of 200 kW and 400 kWh over units of 345 kWh: DERCapability and DERSettings state the view's")
    func ratingsFromView() throws {
        // The view the reporter is given at start (`Sep2ReporterSettings(_:lfdi:view:)`), before any
        // publication. Its energy differs from the units' on purpose: their sum (345 kWh) fails below.
        let view = SharedState(units: 3, view: .init(capacitiesWh: [200_000, 150_000, 50_000], ratingsW: [100_000, 60_000, 40_000])).view
        let ratings = Sep2SiteRatings(view: view, unitEnergyWh: Self.energyWh, rampPercentPerSecond: 0.5)
        #expect(ratings.maxDischargeW == 200_000 && ratings.maxChargeW == 200_000 && ratings.energyWh == 400_000)
        #expect(ratings.unitEnergyWh == Self.energyWh, "SOC is still weighted by each unit's energy")
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
        #expect(watts(capability, "rtgMaxW") == 200_000)
        #expect(watts(capability, "rtgMaxChargeRateW") == 200_000)
        #expect(watts(capability, "rtgMaxWh") == 400_000)
        let settings = try Sep2ReporterTests.root(requests[1])
        #expect(watts(settings, "setMaxW") == 200_000)
        #expect(watts(settings, "setMaxWh") == 400_000)
    }
}
