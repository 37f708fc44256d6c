import BessSystem
import ControlCore
@testable import Cycle
import GridSupport
@testable import Sep2Link
import TestSupport
import Testing

/// A 2030.5 var curve's y (% of `setMaxVar`) as the law takes it (% of each unit's `VAMax`): rescaled
/// by the site's Σ `VAMax` of the units with var points (`SiteView.apparentPowerVA`), not by its
/// rating in W, so the site's Q is the utility's % of `setMaxVar` where `VAMax` is not the W rating.
@Suite("2030.5 curves: y rescaled by Σ VAMax")
struct Sep2CurveApparentTests {
    typealias Curves = Sep2CurveWorkerTests

    @Test("a 200 kW site of 250 kVA and 100 kvar: 44 % of setMaxVar is 17.6 % of VAMax, not 22 % of the W rating")
    func apparentRating() {
        let chain = Curves.chain(#"<opModVoltVar href="/derp/1/dc/1"/>"#, curves: ["/derp/1/dc/1": Curves.curve("/derp/1/dc/1", type: 11, Curves.categoryB)])
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(chain))
        rig.client.reactive.ratings = (100_000, 100_000)
        rig.client.reactive.apparentVA = 250_000
        rig.settle()
        rig.advance(101)
        rig.settle()
        let curve = rig.slot.read()?.voltVar?.curve
        #expect(curve.map { abs($0[0].y - 17.6) < 1e-9 && abs($0[3].y + 17.6) < 1e-9 } == true, "\(String(describing: curve))")
        // 17.6 % of 250 kVA is 44 kvar: 44 % of the 100 kvar setMaxVar.
        // Not known (no view yet): the W rating stands for it, as before.
        rig.client.reactive.apparentVA = nil
        rig.advance(1)
        rig.settle()
        #expect(rig.slot.read()?.voltVar?.curve[0].y == 22)
    }

    @Test("the cycle's view: Σ VAMax of the units with var points, each as its law runs it")
    func viewSumsVAMax() {
        var big = UnitSettings(rating: Watts.kilowatts(100), capacity: WattHours(250_000))
        big.apparentPowerRating = 125_000
        let plain = UnitSettings(rating: Watts.kilowatts(100), capacity: WattHours(250_000))
        let site = SiteController(control: ControlSettings(), units: [big, plain], startedAt: .zero)
        #expect(site.apparentRating(unit: 0) == 125_000 && site.apparentRating(unit: 1) == 100_000)
        #expect(site.apparentRating(unit: 2) == 0)
        var units = [UnitStatus(), UnitStatus(), UnitStatus()]
        units[0].apparentPowerVA = site.apparentRating(unit: 0)
        units[1].apparentPowerVA = site.apparentRating(unit: 1)
        units[2].apparentPowerVA = .nan
        let view = SiteView(units: units, site: SiteStatus(), capacitiesWh: [])
        #expect(view.apparentPowerVA == 225_000)
    }

    @Test("the worker reads Σ VAMax from the view the cycle publishes, and rescales the curve by it")
    func fromPublishedView() throws {
        let chain = Curves.chain(#"<opModVoltVar href="/derp/1/dc/1"/>"#, curves: ["/derp/1/dc/1": Curves.curve("/derp/1/dc/1", type: 11, Curves.categoryB)])
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(chain))
        let shared = SharedState(units: 2)
        let source = Sep2VarCapability.published(in: shared)
        rig.client.reactive.source = source
        #expect(source() == nil, "nothing before the cycle publishes")
        // Two units of 125 kVA and 50 kvar each way, as a cycle would publish them.
        var unit = UnitStatus()
        unit.varMaxInjecting = 50_000
        unit.varMaxAbsorbing = 50_000
        unit.apparentPowerVA = 125_000
        shared.publish(unitStatus: [unit, unit])
        shared.contents.withLock { $0.stats.cycles &+= 1 }
        let read = try #require(source())
        #expect(read.injecting == 100_000 && read.absorbing == 100_000 && read.apparentVA == 250_000)
        rig.settle()
        rig.advance(101)
        rig.settle()
        let y = rig.slot.read()?.voltVar?.curve[0].y
        #expect(y.map { abs($0 - 17.6) < 1e-9 } == true, "\(String(describing: y))")
    }
}
