import BessBase
import ControlCore
import Cycle
import Foundation
import GridSupport
import IEEE2030_5
@testable import Sep2Link
import TestSupport
import Testing

/// A watt-var and a volt-watt curve received over 2030.5 (a `DERCurve` the worker read from its
/// control's `DERCurveLink`, decoded and converted by bessd's own path), run by the cycle's law at one
/// unit, against EPRI OpenDER 2.2.0 (hil/peers/opender_reactive_peer.py) given the same curve, voltage
/// and P: the steady state within ±1 % of rating. Volt-var: Sep2CurveOpenDERTests.
@Suite("2030.5 watt-var and volt-watt curves in the cycle against OpenDER", .serialized)
struct Sep2CurvePowerOpenDERTests {
    typealias VoltVar = Sep2CurveOpenDERTests
    static let va = VoltVar.va

    /// A `DERCurve` at /derp/1/dc/1: (x, y) in hundredths, `curveType`, `yRefType`, 5 s.
    static func document(type: Int, yRefType: Int, _ points: [(Int, Int)]) -> String {
        let data = points.map { "<CurveData><xvalue>\($0.0)</xvalue><yvalue>\($0.1)</yvalue></CurveData>" }.joined()
        return #"<DERCurve xmlns="urn:ieee:std:2030.5:ns" href="/derp/1/dc/1"><mRID>DC01</mRID><creationTime>1</creationTime>"#
            + data + "<curveType>\(type)</curveType><openLoopTms>500</openLoopTms><xMultiplier>-2</xMultiplier>"
            + "<yMultiplier>-2</yMultiplier><yRefType>\(yRefType)</yRefType></DERCurve>"
    }

    /// The utility's curves as the worker published them for a 200 kW site of 200 kvar each way, the
    /// control carrying only `element` linking to `document` (the fixture's default export limit left out).
    static func received(_ element: String, _ document: String) throws -> UtilityLimits {
        var chain = Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA])
        chain["/derp/1/derc"] = Sep2Fixture.controlList([Sep2WorkerTests.controlA])
            .replacingOccurrences(of: Sep2Fixture.exportLimit(1500), with: #"<\#(element) href="/derp/1/dc/1"/>"#)
        chain["/derp/1/dc/1"] = document
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(chain))
        rig.client.reactive.ratings = (200_000, 200_000)
        rig.settle()
        rig.advance(101)
        rig.settle()
        let published = try #require(rig.slot.read(), "\(rig.log.all)")
        var out = UtilityLimits()
        out.voltVar = published.voltVar
        out.wattVar = published.wattVar
        out.voltWatt = published.voltWatt
        return out
    }

    /// One 100 kW unit configured at constant var 0 %, the utility's limits `limits` (nil: none).
    static func site(_ limits: UtilityLimits?) -> SiteController {
        let site = VoltVar.site(nil)
        site.utilityLimits = limits
        return site
    }

    /// bessd's (P, Q) against OpenDER's on `grid` (V p.u., P demand p.u.); the worst deviation, % of rating.
    static func compare(_ limits: UtilityLimits, oracle: GridSupportSettings, grid: [(v: Double, p: Double)],
                        source: ReactiveSource) throws -> Double {
        let trace = try #require(try OpenDER.run([OpenDER.Case(settings: OpenDER.parameters(oracle), period: 100_000,
                                                               steps: grid.map { (1, $0.v, $0.p, [:]) })]).first)
        var worst = 0.0
        for (i, point) in grid.enumerated() {
            let d = VoltVar.run(Self.site(limits), powerW: point.p * va, voltagePU: point.v)
            let q = try #require(d.reactive, "\(point)")
            let deviation = max(abs(d.setpoint.value - trace.p[i]), abs(q - trace.q[i])) / va * 100
            worst = max(worst, deviation)
            #expect(deviation <= 1, "at \(point): bessd (\(d.setpoint.value), \(q)), OpenDER (\(trace.p[i]), \(trace.q[i]))")
            #expect(d.reactiveSource == source, "\(point): \(d.reactiveSource)")
        }
        return worst
    }

    @Test("a received watt-var curve's steady state is OpenDER's within ±1 % of rating; without it the configured 0 var holds")
    func wattVar() throws {
        // P1 30 % / 0, P2 60 % / 0, P3 100 % / −35 % of setMaxVar: x 0…100 % of setMaxW only.
        let doc = Self.document(type: 14, yRefType: 2, [(3000, 0), (6000, 0), (10_000, -3500)])
        let limits = try Self.received("opModWattVar", doc)
        let curve = try #require(limits.wattVar)
        #expect(curve.curve.count == 3 && curve.curve[2].x == 100 && curve.curve[2].y == -35 && curve.responseTime == .seconds(5))
        // OpenDER takes six points: the charging side flat at the first point's Q, as bessd applies it.
        let six = try GridCurve([(-100, 0), (-60, 0), (-20, 0), (30, 0), (60, 0), (100, -35)])
        let oracle = GridSupportSettings(reactive: .wattVar(WattVarSettings(curve: six, responseTime: .seconds(5))))
        let grid: [(v: Double, p: Double)] = [-0.8, -0.3, 0, 0.2, 0.45, 0.7, 0.8, 0.9].map { (v: 1.0, p: $0) }
        let worst = try Self.compare(limits, oracle: oracle, grid: grid, source: .utility)
        print("Sep2CurvePowerOpenDERTests: the received watt-var against OpenDER, worst \(worst) % of rating over \(grid.count) points")
        // At 80 % P the curve asks −35 % × 20/40 = −17.5 % of VAMax; without the utility's curve, 0 var.
        let without = VoltVar.run(Self.site(nil), powerW: 80_000, voltagePU: 1)
        #expect(abs(without.reactive ?? .nan) < 1 && without.reactiveSource == .constantVar)
        let with = VoltVar.run(Self.site(limits), powerW: 80_000, voltagePU: 1)
        #expect(abs((with.reactive ?? .nan) + 17_500) < 100, "\(String(describing: with.reactive))")
    }

    @Test("a received volt-watt curve's steady state is OpenDER's within ±1 % of rating; without it P is not limited")
    func voltWatt() throws {
        // 1.05 p.u. / 100 %, 1.09 p.u. / 20 % of setMaxW: stricter than Category B's 1.06 → 1.10.
        let doc = Self.document(type: 12, yRefType: 1, [(10_500, 10_000), (10_900, 2000)])
        let limits = try Self.received("opModVoltWatt", doc)
        let curve = try #require(limits.voltWatt)
        #expect(curve.curve.count == 2 && curve.curve[0].x == 1.05 && curve.curve[1].y == 20 && curve.responseTime == .seconds(5))
        let oracle = GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: 0, responseTime: .seconds(5))), voltWatt: curve)
        let grid: [(v: Double, p: Double)] = [1.00, 1.04, 1.06, 1.08, 1.09, 1.10].flatMap { v in [-0.5, 0.3, 0.9].map { (v: v, p: $0) } }
        let worst = try Self.compare(limits, oracle: oracle, grid: grid, source: .constantVar)
        print("Sep2CurvePowerOpenDERTests: the received volt-watt against OpenDER, worst \(worst) % of rating over \(grid.count) points")
        // At 1.08 p.u. the curve allows 100 − 80 × 3/4 = 40 % of the rating; without it, the 90 % asked.
        let without = VoltVar.run(Self.site(nil), powerW: 90_000, voltagePU: 1.08)
        #expect(abs(without.setpoint.value - 90_000) < 100, "\(without.setpoint.value)")
        let with = VoltVar.run(Self.site(limits), powerW: 90_000, voltagePU: 1.08)
        #expect(abs(with.setpoint.value - 40_000) < 500, "\(with.setpoint.value)")
    }
}
