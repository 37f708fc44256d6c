import BessBase
import ControlCore
import Cycle
import Foundation
import GridSupport
import IEEE2030_5
@testable import Sep2Link
import TestSupport
import Testing

/// A volt-var curve received over 2030.5 (a `DERCurve` the worker read from its control's
/// `DERCurveLink`), run by the cycle's law at one unit in place of its configured mode, against EPRI
/// OpenDER 2.2.0 (hil/peers/opender_reactive_peer.py) given the same curve, voltage and P.
@Suite("2030.5 volt-var curve in the cycle against OpenDER", .serialized)
struct Sep2CurveOpenDERTests {
    static let nominalV = 230.0
    static let va = 100_000.0

    /// The curve as the utility writes it: V in % of setVRef × 10^−2, Q in % of setMaxVar × 10^−2,
    /// a narrower dead-band and less var than Category B's default, 5 s.
    static let document = """
        <DERCurve xmlns="urn:ieee:std:2030.5:ns" href="/derp/1/dc/1"><mRID>DC01</mRID><creationTime>1</creationTime>\
        <CurveData><xvalue>9300</xvalue><yvalue>3000</yvalue></CurveData><CurveData><xvalue>9900</xvalue><yvalue>0</yvalue></CurveData>\
        <CurveData><xvalue>10100</xvalue><yvalue>0</yvalue></CurveData><CurveData><xvalue>10700</xvalue><yvalue>-3000</yvalue></CurveData>\
        <curveType>11</curveType><openLoopTms>500</openLoopTms><xMultiplier>-2</xMultiplier><yMultiplier>-2</yMultiplier>\
        <yRefType>2</yRefType></DERCurve>
        """

    /// The curve as the worker published it for a 200 kW site of 200 kvar each way.
    static func received() throws -> VoltVarSettings {
        try #require(try Sep2CurvePowerOpenDERTests.received("opModVoltVar", document).voltVar)
    }

    /// One 100 kW unit on 230 V (line to neutral), configured at constant var 0 %, the utility's
    /// limits carrying only the curve.
    static func site(_ curve: VoltVarSettings?) -> SiteController {
        var unit = UnitSettings(rating: Watts.kilowatts(100), capacity: WattHours(250_000))
        unit.gridSupport = GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: 0, responseTime: .seconds(5))))
        unit.nominalVoltageV = nominalV
        var droop = DroopSettings.seedDefault
        droop.responseTime = .zero
        let site = SiteController(control: ControlSettings(droop: droop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
                                  units: [unit], startedAt: .zero)
        if let curve {
            var limits = UtilityLimits()
            limits.voltVar = curve
            site.utilityLimits = limits
        }
        return site
    }

    /// Runs `site` for 60 s in 0.5 s periods at `powerW` (the unit's own dispatch) and `voltagePU`.
    static func run(_ site: SiteController, powerW: Double, voltagePU: Double) -> UnitDecision {
        for step in 1...120 {
            let now = MonotonicInstant(nanoseconds: Int64(step) * 500_000_000)
            let inputs = UnitInputs(bms: bms(at: now),
                                    inverter: Timestamped(InverterReading(activePower: Watts(powerW), ratedPower: Watts.kilowatts(100),
                                                                          voltage: voltagePU * nominalV), at: now),
                                    dispatch: PowerCommand(power: Watts(powerW), expiresAt: now + .seconds(5), pinned: true))
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [inputs], now: now, wallClock: 1_800_000_000 + Double(step) / 2)
        }
        return site.decision(unit: 0)
    }

    static func bms(at t: MonotonicInstant) -> BMSSnapshot {
        BMSSnapshot(
            limits: Timestamped(BMSLimits(chargeCurrentLimit: Amps(2500), dischargeCurrentLimit: Amps(2500)), at: t),
            status: Timestamped(BMSStatus(soc: Percent(60), soh: Percent(99)), at: t),
            measurements: Timestamped(BMSMeasurements(packVoltage: Volts(52), packCurrent: Amps(0), temperature: Celsius(25)), at: t),
            cells: Timestamped(CellStatistics(minCellVoltage: Volts(3.28), maxCellVoltage: Volts(3.30), minTemperature: Celsius(24),
                                              maxTemperature: Celsius(25)), at: t),
            protection: Timestamped(BMSProtectionState(protections: [], alarms: []), at: t),
            requests: Timestamped(BMSRequests(chargeEnabled: true, dischargeEnabled: true), at: t))
    }

    @Test("the received volt-var curve's steady state is OpenDER's within ±1 % of rating; without it the configured 0 var holds")
    func steadyState() throws {
        let curve = try Self.received()
        #expect(curve.curve[0].x == 0.93 && curve.curve[0].y == 30 && curve.curve[3].y == -30 && curve.responseTime == .seconds(5))
        let grid: [(v: Double, p: Double)] = [0.90, 0.95, 0.98, 1.00, 1.02, 1.05, 1.10].flatMap { v in [-0.5, 0, 0.5].map { (v: v, p: $0) } }
        let trace = try #require(try OpenDER.run([OpenDER.Case(settings: OpenDER.parameters(GridSupportSettings(reactive: .voltVar(curve))),
                                                               period: 100_000, steps: grid.map { (1, $0.v, $0.p, [:]) })]).first)
        var worst = 0.0
        for (i, point) in grid.enumerated() {
            let d = Self.run(Self.site(curve), powerW: point.p * Self.va, voltagePU: point.v)
            let q = try #require(d.reactive, "\(point)")
            let deviation = max(abs(d.setpoint.value - trace.p[i]), abs(q - trace.q[i])) / Self.va * 100
            worst = max(worst, deviation)
            #expect(deviation <= 1, "at \(point): bessd (\(d.setpoint.value), \(q)), OpenDER (\(trace.p[i]), \(trace.q[i]))")
            #expect(d.reactiveSource == .utility, "\(point): \(d.reactiveSource)")
        }
        print("Sep2CurveOpenDERTests: the received volt-var against OpenDER, worst \(worst) % of rating over \(grid.count) points")
        // At 0.95 p.u. the curve asks 30 % × 4/6 = 20 % of VAMax; without the utility's curve, the configured 0 var.
        let without = Self.run(Self.site(nil), powerW: 0, voltagePU: 0.95)
        #expect(abs(without.reactive ?? .nan) < 1 && without.reactiveSource == .constantVar)
        let with = Self.run(Self.site(curve), powerW: 0, voltagePU: 0.95)
        #expect(abs((with.reactive ?? .nan) - 20_000) < 100, "\(String(describing: with.reactive))")
    }
}
