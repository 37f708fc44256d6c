import ControlCore
import Cycle
import Foundation
import GridSupport
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The utility's curve controls through the worker (issue 59 slice 6): the `DERCurve` a control links
/// to is read on the same walk as the programs, and its curve published into the cycle's slot while
/// the control is in force; a curve that cannot be read or does not fit is said not applied, the rest
/// of the control taken.
@Suite("2030.5 worker: the curve controls", .serialized)
struct Sep2CurveWorkerTests {
    typealias Rig = Sep2WorkerTests.Rig

    /// A DERCurve document of `points` (x % of setVRef or setMaxW, y % of yRefType).
    static func curve(_ href: String, type: Int, _ points: [(Int, Int)], yRef: Int = 2, olrt: Int = 500) -> String {
        "<DERCurve \(Sep2Fixture.ns) href=\"\(href)\"><mRID>CC\(points.count)</mRID><creationTime>1</creationTime>"
            + points.map { "<CurveData><xvalue>\($0.0)</xvalue><yvalue>\($0.1)</yvalue></CurveData>" }.joined()
            + "<curveType>\(type)</curveType><openLoopTms>\(olrt)</openLoopTms><xMultiplier>0</xMultiplier><yMultiplier>0</yMultiplier>"
            + "<yRefType>\(yRef)</yRefType></DERCurve>"
    }

    static let categoryB = [(92, 44), (98, 0), (102, 0), (108, -44)]

    /// The fixture's chain with control A1 (1500 W export from t0 + 100 for 60 s) also setting `extra`.
    static func chain(_ extra: String, curves: [String: String]) -> [String: String] {
        var chain = Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA])
        chain["/derp/1/derc"] = Sep2Fixture.controlList([Sep2WorkerTests.controlA])
            .replacingOccurrences(of: "<DERControlBase>", with: "<DERControlBase>" + extra)
        chain.merge(curves) { $1 }
        return chain
    }

    @Test("a volt-var curve linked from a control is read and published while the control is in force")
    func voltVarPublished() {
        let chain = Self.chain(#"<opModVoltVar href="/derp/1/dc/1"/>"#, curves: ["/derp/1/dc/1": Self.curve("/derp/1/dc/1", type: 11, Self.categoryB)])
        let rig = Rig(server: FakeSep2Server(chain))
        rig.client.reactive.ratings = (200_000, 200_000)
        rig.settle()
        #expect(rig.server.requests.contains("/derp/1/dc/1"), "\(rig.server.requests)")
        #expect(rig.slot.read()?.voltVar == nil, "not in force before t0 + 100")
        rig.advance(101)
        rig.settle()
        let limits = rig.slot.read()
        #expect(rig.export == 1500)
        #expect(limits?.voltVar == GridSupportProfile.ieee1547_2018_cat_b.voltVar, "\(String(describing: limits?.voltVar))")
        let request = RequestArbiter.utilityReactive(limits ?? UtilityLimits(), sitePower: 0, expiresAt: nil)
        #expect(request?.ask == .mode(.voltVar(GridSupportProfile.ieee1547_2018_cat_b.voltVar)), "\(String(describing: request))")
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").isEmpty, "\(rig.log.all)")
        // Half the var capability: y (% of setMaxVar) is half the % of VAMax the law takes.
        rig.client.reactive.ratings = (100_000, 100_000)
        rig.advance(1)
        rig.settle()
        #expect(rig.slot.read()?.voltVar?.curve[0].y == 22)
        // The control ends: the curve with it (the configured mode returns in the cycle).
        rig.advance(60)
        rig.settle()
        #expect(rig.slot.read()?.voltVar == nil && rig.export == 5000)
    }

    @Test("a volt-watt and a watt-var curve are published as the law takes them")
    func voltWattAndWattVar() {
        let chain = Self.chain(#"<opModVoltWatt href="/dc/w"/><opModWattVar href="/dc/q"/>"#,
                               curves: ["/dc/w": Self.curve("/dc/w", type: 12, [(106, 100), (110, 0)], yRef: 1, olrt: 1000),
                                        "/dc/q": Self.curve("/dc/q", type: 14, [(20, 0), (50, 0), (100, -44)], olrt: 1000)])
        let rig = Rig(server: FakeSep2Server(chain))
        rig.client.reactive.ratings = (200_000, 200_000)
        rig.settle()
        rig.advance(101)
        rig.settle()
        let limits = rig.slot.read()
        #expect(limits?.voltWatt == GridSupportProfile.ieee1547_2018_cat_b.voltWatt, "\(String(describing: limits?.voltWatt))")
        #expect(limits?.wattVar?.curve.count == 3 && limits?.wattVar?.curve[2].y == -44 && limits?.wattVar?.responseTime == .seconds(10))
        // Watt-var alone speaks for Q; volt-watt is no request.
        let request = RequestArbiter.utilityReactive(limits ?? UtilityLimits(), sitePower: 0, expiresAt: nil)
        #expect(request?.ask == limits?.wattVar.map { .mode(.wattVar($0)) }, "\(String(describing: request))")
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").isEmpty, "\(rig.log.all)")
    }

    @Test("a curve not to be had, or that does not fit, is not applied and said once; the rest of the control taken")
    func notApplied() {
        let cases: [(String, [String: String], String)] = [
            (#"<opModVoltVar href="/derp/1/dc/9"/>"#, [:], #"opModVoltVar not applied: its curve "/derp/1/dc/9" has not been read"#),
            (#"<opModVoltVar href="/derp/1/dc/3"/>"#, ["/derp/1/dc/3": Self.curve("/derp/1/dc/3", type: 11, [(92, 44), (100, 0), (108, -44)])],
             "opModVoltVar not applied: its curve has 3 points, not 4"),
            (#"<opModWattVar href="/derp/1/dc/4"/>"#, ["/derp/1/dc/4": Self.curve("/derp/1/dc/4", type: 14, [(20, 0), (50, 0), (100, -101)])],
             "opModWattVar not applied: GRID_WATT_VAR_RANGE"),
            (#"<opModVoltWatt href="/derp/1/dc/5"/>"#, ["/derp/1/dc/5": Self.curve("/derp/1/dc/5", type: 12, [(106, 100), (110, 0)], yRef: 2)],
             "opModVoltWatt not applied: its curve's yRefType 2 is not 1 (setMaxW)"),
        ]
        for (extra, curves, said) in cases {
            let rig = Rig(server: FakeSep2Server(Self.chain(extra, curves: curves)))
            rig.client.reactive.ratings = (200_000, 200_000)
            rig.settle()
            rig.advance(101)
            rig.settle()
            rig.advance(5)
            rig.settle()
            let limits = rig.slot.read()
            #expect(rig.export == 1500, "the export limit is taken: \(extra)")
            #expect(limits?.voltVar == nil && limits?.wattVar == nil && limits?.voltWatt == nil)
            let lines = rig.log.codes("SEP2_CONTROL_NOT_APPLIED")
            #expect(lines.count == 1 && lines.first?.contains(said) == true && lines.first?.contains("control \"A1\"") == true,
                    "\(extra): \(rig.log.all)")
        }
    }
}

extension Sep2CurveWorkerTests {
    @Test("a control that sets only a curve that does not fit is answered 252, never started; one beside a limit runs")
    func curveOnlyRefused() throws {
        func control(_ mRID: String, start: Int64, limit: Bool = false) -> String {
            Sep2DroopWorkerTests.control(mRID, start: start, limit: limit).replacingOccurrences(
                of: "<opModFreqDroop><dBOF>36</dBOF><dBUF>36</dBUF><kOF>50</kOF><kUF>50</kUF><openLoopTms>500</openLoopTms></opModFreqDroop>",
                with: #"<opModVoltVar href="/dc/3"/>"#)
        }
        let t0 = Sep2Fixture.t0
        let server = Sep2DroopWorkerTests.server([control("A1", start: t0 + 100), control("B2", start: t0 + 200, limit: true)])
        server.set("/dc/3", Self.curve("/dc/3", type: 11, [(92, 44), (100, 0), (108, -44)]))
        let rig = Sep2WorkerTests.Rig(server: server)
        var sample = Sep2SiteSample()
        sample.varMaxInjecting = 200_000
        sample.varMaxAbsorbing = 200_000
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { [sample] in sample })
        rig.client.reactive.ratings = (200_000, 200_000)
        rig.settle()
        for _ in 0..<10 {
            rig.advance(31)
            rig.settle()
        }
        let responses = Sep2ReporterWorkerTests.responses(server)
        #expect(responses.filter { $0.hasSuffix(" A1") } == ["252 A1"], "answered 252 once, never started: \(responses) \(rig.log.all)")
        #expect(responses.contains("2 B2"), "the one with a limit runs: \(responses)")
        #expect(rig.slot.read()?.voltVar == nil)
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").contains { $0.contains("its curve has 3 points, not 4") }, "\(rig.log.all)")
    }
}

extension Sep2CurveWorkerTests {
    @Test("restarted while the server is down: the cached schedule keeps the control's curve")
    func curveSurvivesRestart() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = FakeSep2Server(Self.chain(#"<opModVoltVar href="/derp/1/dc/1"/>"#,
                                               curves: ["/derp/1/dc/1": Self.curve("/derp/1/dc/1", type: 11, Self.categoryB)]))
        let first = Rig(server: server, store: ScheduleStore(stateDirectory: dir))
        first.client.reactive.ratings = (200_000, 200_000)
        first.settle()
        first.advance(101)
        first.settle()
        #expect(first.slot.read()?.voltVar == GridSupportProfile.ieee1547_2018_cat_b.voltVar)
        server.down = true
        let second = Rig(server: server, store: ScheduleStore(stateDirectory: dir))
        second.wall = first.wall + 1
        second.client.reactive.ratings = (200_000, 200_000)
        second.client.restore(now: second.now, wall: second.wall)
        second.settle()
        #expect(second.slot.read()?.voltVar == GridSupportProfile.ieee1547_2018_cat_b.voltVar, "\(second.log.all)")
        #expect(second.export == 1500)
    }
}
