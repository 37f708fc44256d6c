import BessBase
import GridSupport
import Testing

/// 100 kVA = 100 kW, reactive capability the whole VA: the unit the OpenDER comparisons use too.
let rating = UnitRating(apparentPowerVA: 100_000)
let catB = GridSupportProfile.ieee1547_2018_cat_b

/// A controller of `rating` with `reactive` (and volt-watt when given); the settings are valid.
func controller(_ reactive: ReactivePowerMode?, voltWatt: VoltWattSettings? = nil, reactivePriority: Bool = true) throws
    -> GridSupportController
{
    try GridSupportController(
        settings: GridSupportSettings(reactive: reactive, voltWatt: voltWatt, reactivePriority: reactivePriority), rating: rating)
}

/// The output after `seconds` of steps of `period` at constant inputs.
func settle(
    _ c: inout GridSupportController, voltage: Double, powerW: Double, seconds: Double = 120, period: Double = 0.1
) -> GridSupportOutput {
    var out = c.step(voltage: voltage, desiredPowerW: powerW, elapsedSeconds: period)
    for _ in 1..<Int((seconds / period).rounded()) { out = c.step(voltage: voltage, desiredPowerW: powerW, elapsedSeconds: period) }
    return out
}

@Suite("GridSupport: curves, defaults and validation")
struct GridSupportCurveTests {
    @Test("a curve is flat outside its points, linear between, and steps where two x are equal")
    func curveValues() throws {
        let curve = try GridCurve([(0.9, 25), (1.0, 0), (1.0, 0), (1.1, -25)])
        #expect(curve.value(at: 0.5) == 25)
        #expect(abs(curve.value(at: 0.95) - 12.5) < 1e-9)
        #expect(curve.value(at: 1.0) == 0)
        #expect(abs(curve.value(at: 1.05) - -12.5) < 1e-9)
        #expect(curve.value(at: 2) == -25)
        #expect(curve.value(at: .nan).isNaN)
        #expect(curve.description == "[[0.9, 25.0], [1.0, 0.0], [1.0, 0.0], [1.1, -25.0]]")
    }

    @Test("curves with no points, seven points, decreasing x or NaN are refused with their codes")
    func curveRefusals() {
        #expect(throws: GridSupportError.self) { try GridCurve([]) }
        #expect(refusal { _ = try GridCurve(Array(repeating: (1, 0), count: 7)) } == .curvePoints)
        #expect(refusal { _ = try GridCurve([(1.0, 0), (0.9, 0)]) } == .curveOrder)
        #expect(refusal { _ = try GridCurve([(1.0, .nan)]) } == .curveOrder)
    }

    @Test("Category B's defaults: volt-var ±22 % at 0.95/1.05 p.u., watt-var −22 % at 75 %, volt-watt 50 % at 1.08 p.u.; Category A's")
    func categoryBDefaults() throws {
        let voltVar = catB.voltVar
        try voltVar.validate()
        try catB.wattVar.validate()
        try catB.voltWatt.validate()
        try catB.constantPowerFactor.validate()
        try catB.constantVar.validate()
        #expect(voltVar.responseTime == .seconds(5) && voltVar.vRef == 1 && !voltVar.autonomousVRef)
        #expect(abs(voltVar.curve.value(at: 0.95) - 22) < 1e-9 && abs(voltVar.curve.value(at: 1.05) + 22) < 1e-9)
        #expect(abs(catB.wattVar.curve.value(at: 75) + 22) < 1e-9 && catB.wattVar.curve.value(at: -75) == 22)
        #expect(abs(catB.voltWatt.curve.value(at: 1.08) - 50) < 1e-9)
        #expect(catB.voltWatt.responseTime == .seconds(10))
        let settings = catB.settings(reactive: .voltVar(voltVar), voltWatt: true)
        #expect(settings.reactivePriority && settings.voltWatt == catB.voltWatt)
        #expect(GridSupportProfile(rawValue: "ieee1547_2018_cat_b") == catB)
        // Category A: no deadband, ±25 %, 10 s; Table 7's 25 % absorbing.
        let catA = GridSupportProfile.ieee1547_2018_cat_a
        try catA.voltVar.validate()
        try catA.wattVar.validate()
        #expect(abs(catA.voltVar.curve.value(at: 0.95) - 12.5) < 1e-9 && catA.voltVar.responseTime == .seconds(10))
        #expect(catA.settings(reactive: nil, voltWatt: false).minimumReactivePercent == (44, 25))
    }

    @Test("settings outside IEEE 1547-2018's ranges are refused with the function's code")
    func rangeRefusals() throws {
        var voltVar = catB.voltVar
        voltVar.curve = try GridCurve([(0.92, 44), (0.96, 0), (1.02, 0), (1.08, -44)])  // V2 below VRef − 0.03
        #expect(refusal { try voltVar.validate() } == .voltVarRange)
        voltVar = catB.voltVar
        voltVar.curve = try GridCurve([(0.92, 44), (0.98, 0), (1.08, -44)])
        #expect(refusal { try voltVar.validate() } == .curvePoints)
        voltVar = catB.voltVar
        voltVar.vRef = 1.06
        #expect(refusal { try voltVar.validate() } == .voltVarRange)
        voltVar = catB.voltVar
        voltVar.responseTime = .seconds(0.5)
        #expect(refusal { try voltVar.validate() } == .responseTimeRange)
        var wattVar = catB.wattVar
        wattVar.curve = try GridCurve([(20, 0), (30, 0), (100, -44)])  // P2 below 40 %
        #expect(refusal { try wattVar.validate() } == .wattVarRange)
        var voltWatt = catB.voltWatt
        voltWatt.curve = try GridCurve([(1.04, 100), (1.10, 0)])
        #expect(refusal { try voltWatt.validate() } == .voltWattRange)
        voltWatt.curve = try GridCurve([(1.06, 100), (1.10, -100)])
        try voltWatt.validate()  // storage: the last limit may be negative
        voltWatt.curve = try GridCurve([(1.06, 50), (1.10, 80)])  // a limit rising with voltage
        #expect(refusal { try voltWatt.validate() } == .voltWattRange)
        let pf = ConstantPowerFactorSettings(discharging: PowerFactorSetting(1.2, .injecting), charging: .unity, responseTime: .seconds(5))
        #expect(refusal { try pf.validate() } == .powerFactorRange)
        #expect(refusal { try ConstantVarSettings(percent: 120, responseTime: .seconds(5)).validate() } == .varRange)
        #expect(refusal { try ConstantVarSettings(percent: 10, responseTime: .seconds(11)).validate() } == .responseTimeRange)
        #expect(refusal { _ = try GridSupportController(settings: .init(reactive: nil), rating: UnitRating(apparentPowerVA: 0)) } == .rating)
        let error = GridSupportError(.voltWattRange, message: "m")
        #expect(error.description == "GRID_VOLT_WATT_RANGE: m")
    }
}

/// The code `body` throws, nil when it does not.
func refusal(_ body: () throws -> Void) -> GridSupportErrorCode? {
    do {
        try body()
        return nil
    } catch {
        return (error as? GridSupportError)?.code
    }
}

@Suite("GridSupport: the response filter")
struct GridSupportFilterTests {
    @Test("90 % of a step at the first step at or after the response time, for any period", arguments: [0.001, 0.01, 0.1, 0.25, 1.0, 3.0])
    func ninetyPercentAtResponseTime(period: Double) {
        for olrt in [1.0, 5.0, 10.0, 90.0] {
            var filter = ResponseFilter(responseTime: .seconds(olrt), initial: 0)
            var t = 0.0
            var crossed: Double?
            while crossed == nil, t < 2 * olrt + period {
                t += period
                if filter.step(toward: 1, elapsedSeconds: period) >= 0.9 - 1e-12 { crossed = t }
            }
            let expected = (olrt / period).rounded(.up) * period
            #expect(abs((crossed ?? .infinity) - expected) < 1e-6 * olrt, "OLRT \(olrt) s at \(period) s: 90 % at \(crossed ?? -1) s")
        }
    }

    @Test("exact discretisation: steps of different lengths give the same output as one step of their sum")
    func exactForAnyPeriod() {
        var a = ResponseFilter(responseTime: .seconds(5), initial: 0)
        var b = ResponseFilter(responseTime: .seconds(5), initial: 0)
        for dt in [0.01, 0.3, 0.07, 1.2, 0.42] { _ = a.step(toward: 10, elapsedSeconds: dt) }
        let one = b.step(toward: 10, elapsedSeconds: 2.0)
        #expect(abs((a.output ?? 0) - one) < 1e-9)
        #expect(abs(one - 10 * (1 - 0.398_107_170_553_497_25)) < 1e-9)  // 10^(−2/5) left after 2 s of 5
        // A NaN input holds; a zero response time passes through; a negative elapsed time is none.
        #expect(a.step(toward: .nan, elapsedSeconds: 1) == a.output)
        let held = a.output
        #expect(a.step(toward: 0, elapsedSeconds: -3) == held)
        var none = ResponseFilter(responseTime: .zero, initial: 0)
        #expect(none.step(toward: 7, elapsedSeconds: 0.1) == 7)
    }
}
