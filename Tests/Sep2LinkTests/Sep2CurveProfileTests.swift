import ControlCore
import Cycle
import Foundation
import GridSupport
import IEEE2030_5
@testable import Sep2Link
import Testing

/// A received curve without `openLoopTms` takes the response time of the site's configured profile (the
/// category the reporter says as `rtgNormalCategory`), not always Category B's.
@Suite("2030.5 worker: a curve's default response time from the configured profile", .serialized)
struct Sep2CurveProfileTests {
    typealias Rig = Sep2WorkerTests.Rig

    /// Control A1 (t0 + 100 for 60 s) linking a Category B volt-var curve that gives no `openLoopTms`.
    static func rig(category: NormalCategory?) -> Rig {
        let document = Sep2CurveWorkerTests.curve("/dc/v", type: 11, Sep2CurveWorkerTests.categoryB)
            .replacingOccurrences(of: "<openLoopTms>500</openLoopTms>", with: "")
        let rig = Rig(server: FakeSep2Server(Sep2CurveWorkerTests.chain(#"<opModVoltVar href="/dc/v"/>"#, curves: ["/dc/v": document])))
        var settings = Sep2ReporterTests.settings()
        settings.reference = Sep2ReferenceRatings(maxVA: 200_000, nominalVoltageV: 230, normalCategory: category)
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: settings), sample: { nil })
        rig.client.reactive.ratings = (200_000, 200_000)
        rig.settle()
        rig.advance(101)
        rig.settle()
        return rig
    }

    @Test("Category A configured: volt-var's 10 s; Category B or none said: 5 s")
    func responseTimeFromProfile() {
        #expect(GridSupportProfile.ieee1547_2018_cat_a.voltVar.responseTime == .seconds(10))
        #expect(GridSupportProfile.ieee1547_2018_cat_b.voltVar.responseTime == .seconds(5))
        let a = Self.rig(category: .a).slot.read()?.voltVar
        #expect(a?.responseTime == .seconds(10), "\(String(describing: a))")
        #expect(a?.curve == GridSupportProfile.ieee1547_2018_cat_b.voltVar.curve, "the curve is the server's, whatever the profile")
        #expect(Self.rig(category: .b).slot.read()?.voltVar?.responseTime == .seconds(5))
        #expect(Self.rig(category: nil).slot.read()?.voltVar?.responseTime == .seconds(5), "no mode configured: the configuration's default, B")
    }

    @Test("the profile of each category")
    func profileOfCategory() {
        #expect(Sep2ReferenceRatings(normalCategory: .a).profile == .ieee1547_2018_cat_a)
        #expect(Sep2ReferenceRatings(normalCategory: .b).profile == .ieee1547_2018_cat_b)
        #expect(Sep2ReferenceRatings(normalCategory: .unspecified).profile == .ieee1547_2018_cat_b)
        #expect(Sep2ReferenceRatings().profile == .ieee1547_2018_cat_b)
    }
}
