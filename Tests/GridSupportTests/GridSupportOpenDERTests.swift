import Foundation
import GridSupport
import TestSupport
import Testing

/// The control law against EPRI OpenDER 2.2.0 on the same inputs (issue 59 §3): steady state within
/// ±1 % of rating over a grid of voltages and powers for every mode, P and Q colliding at VAMax under
/// each priority, and step responses reaching 90 % within one period of OpenDER's and of the OLRT.
///
/// Where OpenDER departs from IEEE 1547-2018 as bessd reads it, bessd follows the standard and the
/// test says where: constant power factor while charging (OpenDER signs Q with P; bessd has its own
/// charging setting, `pf_absorb`/`excitation_absorb`), active priority beyond Table 7's minimum
/// (`ApparentPower.bound`: OpenDER gives P more than was asked), watt-var where VarMax binds before
/// VAMax (`ApparentPower.boundAlongCurve`: OpenDER cuts P further than the circle needs), and the
/// time to 90 % (OpenDER's Tustin lag is one period late at 100 ms, two at 10 ms).
@Suite("GridSupport against OpenDER", .serialized)
struct GridSupportOpenDERTests {
    static let voltages = [0.85, 0.90, 0.92, 0.95, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09, 1.10, 1.12]
    static let powers = [-1.0, -0.85, -0.75, -0.5, -0.2, 0, 0.2, 0.5, 0.75, 0.85, 0.9, 1.0]
    static let va = 100_000.0

    /// Every (V, P) of the grid.
    static var grid: [(v: Double, p: Double)] { voltages.flatMap { v in powers.map { (v, $0) } } }

    /// Settings of every steady-state case, named.
    static func steadyCases() throws -> [(name: String, settings: GridSupportSettings, category: String)] {
        let wide = try GridCurve([(0.90, 60), (0.98, 0), (1.02, 0), (1.10, -60)])  // beyond Table 7's 44 %
        var wideVoltVar = catB.voltVar
        wideVoltVar.curve = wide
        var shifted = catB.voltVar
        shifted.vRef = 1.02
        let pf = { (pf: Double, excitation: Excitation) in
            ReactivePowerMode.constantPowerFactor(ConstantPowerFactorSettings(
                discharging: PowerFactorSetting(pf, excitation),
                charging: PowerFactorSetting(pf, excitation == .injecting ? .absorbing : .injecting), responseTime: .seconds(5)))
        }
        var storageVoltWatt = catB.voltWatt
        storageVoltWatt.curve = try GridCurve([(1.06, 100), (1.10, -50)])
        let catA = GridSupportProfile.ieee1547_2018_cat_a
        let catACases: [(String, GridSupportSettings, String)] = [
            ("Category A volt-var", catA.settings(reactive: .voltVar(catA.voltVar), voltWatt: false), "CAT_A"),
            ("Category A watt-var", catA.settings(reactive: .wattVar(catA.wattVar), voltWatt: false), "CAT_A"),
            ("Category A constant var −44 %, active priority",
             GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: -44, responseTime: .seconds(5))), reactivePriority: false,
                                 minimumReactivePercent: catA.minimumReactivePercent), "CAT_A"),
        ]
        let catBCases: [(String, GridSupportSettings)] = [
            ("volt-var, reactive priority", GridSupportSettings(reactive: .voltVar(catB.voltVar))),
            ("volt-var, active priority", GridSupportSettings(reactive: .voltVar(catB.voltVar), reactivePriority: false)),
            ("volt-var at VRef 1.02", GridSupportSettings(reactive: .voltVar(shifted))),
            ("volt-var ±60 %, reactive priority", GridSupportSettings(reactive: .voltVar(wideVoltVar))),
            ("volt-var ±60 %, active priority", GridSupportSettings(reactive: .voltVar(wideVoltVar), reactivePriority: false)),
            ("constant pf 0.90 injecting", GridSupportSettings(reactive: pf(0.90, .injecting))),
            ("constant pf 0.95 absorbing", GridSupportSettings(reactive: pf(0.95, .absorbing))),
            ("constant var +30 %", GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: 30, responseTime: .seconds(5))))),
            ("constant var −44 %, active priority",
             GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: -44, responseTime: .seconds(5))), reactivePriority: false)),
            ("watt-var", GridSupportSettings(reactive: .wattVar(catB.wattVar))),
            ("volt-watt", GridSupportSettings(reactive: nil, voltWatt: catB.voltWatt)),
            ("volt-watt to −50 % (storage)", GridSupportSettings(reactive: nil, voltWatt: storageVoltWatt)),
            ("volt-var with volt-watt", GridSupportSettings(reactive: .voltVar(catB.voltVar), voltWatt: catB.voltWatt)),
            ("watt-var with volt-watt to −50 %", GridSupportSettings(reactive: .wattVar(catB.wattVar), voltWatt: storageVoltWatt)),
            ("constant pf 0.90 injecting with volt-watt", GridSupportSettings(reactive: pf(0.90, .injecting), voltWatt: catB.voltWatt)),
        ]
        return catBCases.map { ($0.0, $0.1, "CAT_B") } + catACases
    }

    @Test("steady state within ±1 % of rating of OpenDER's for every mode over the grid, collisions at VAMax included")
    func steadyState() throws {
        let report = try Self.compareSteadyState(try Self.steadyCases(), rating: rating)
        print("OpenDER steady state, max deviation % of rating:\n  " + report.joined(separator: "\n  "))
    }

    @Test("steady state as OpenDER's where the reactive capability (30 % of VA) binds before VAMax")
    func steadyStateWithinCapability() throws {
        let limited = UnitRating(apparentPowerVA: 100_000, maxInjectVar: 30_000, maxAbsorbVar: 30_000)
        let pf = ReactivePowerMode.constantPowerFactor(ConstantPowerFactorSettings(
            discharging: PowerFactorSetting(0.8, .injecting), charging: PowerFactorSetting(0.8, .absorbing), responseTime: .seconds(5)))
        let cases: [(String, GridSupportSettings, String)] = [
            ("volt-var, VarMax 30 %", GridSupportSettings(reactive: .voltVar(catB.voltVar)), "CAT_B"),
            ("watt-var, VarMax 30 %", GridSupportSettings(reactive: .wattVar(catB.wattVar)), "CAT_B"),
            ("constant pf 0.80, VarMax 30 %", GridSupportSettings(reactive: pf), "CAT_B"),
        ]
        let report = try Self.compareSteadyState(cases, rating: limited)
        print("OpenDER steady state within the reactive capability:\n  " + report.joined(separator: "\n  "))
    }

    /// Runs `cases` on a unit of `rating` and OpenDER over the grid and compares them; one report line
    /// per case.
    static func compareSteadyState(_ cases: [(name: String, settings: GridSupportSettings, category: String)], rating: UnitRating) throws
        -> [String]
    {
        // OpenDER's snapshot (t_s 100000 s: every filter bypassed): one step per grid point.
        let traces = try OpenDER.run(cases.map { c in
            var settings = OpenDER.parameters(c.settings, category: c.category)
            settings["NP_Q_MAX_INJ"] = rating.maxInjectVar
            settings["NP_Q_MAX_ABS"] = rating.maxAbsorbVar
            return OpenDER.Case(settings: settings, period: 100_000, steps: Self.grid.map { (1, $0.v, $0.p, [:]) })
        })
        var report: [String] = []
        for (c, trace) in zip(cases, traces) {
            var worst = 0.0
            var documented = 0
            var documentedWorst = 0.0
            var collisions = 0
            for (i, point) in Self.grid.enumerated() {
                var unit = try GridSupportController(settings: c.settings, rating: rating)
                let out = settle(&unit, voltage: point.v, powerW: point.p * Self.va, seconds: 200, period: 1)
                let p = try #require(out.activePowerW), q = try #require(out.reactivePowerVar)
                if point.p * point.p * Self.va * Self.va + q * q > Self.va * Self.va * 0.999 { collisions += 1 }
                let deviation = max(abs(p - trace.p[i]), abs(q - trace.q[i])) / Self.va * 100
                let minimum = (q >= 0 ? c.settings.minimumReactivePercent.injecting : c.settings.minimumReactivePercent.absorbing) / 100
                if deviation > 1, !c.settings.reactivePriority, abs(q) > minimum * Self.va + 1 {
                    // Active priority beyond Table 7 (ApparentPower.bound): OpenDER cuts Q to Table 7's
                    // minimum and gives P the rest of the circle, even more than was asked; bessd keeps
                    // P as asked and Q what the circle leaves it, no less than the minimum.
                    documented += 1
                    documentedWorst = max(documentedWorst, deviation)
                    #expect(abs(abs(trace.q[i]) - minimum * Self.va) < 1, "\(c.name) \(point): OpenDER's Q \(trace.q[i])")
                    #expect(abs(p) <= abs(point.p) * Self.va + 1e-6 && abs(p) <= abs(trace.p[i]) + 1e-6, "\(c.name) \(point)")
                    #expect(abs(p * p + q * q - Self.va * Self.va) <= 1e-6 * Self.va * Self.va, "on the circle")
                    continue
                }
                if deviation > 1, case .wattVar = c.settings.reactive, abs(abs(q) - rating.maxInjectVar) < 1, abs(abs(trace.q[i]) - abs(q)) < 1 {
                    // Watt-var where the capability binds (ApparentPower.boundAlongCurve): OpenDER moves P
                    // back to where the uncapped curve meets the circle, then caps Q, leaving P lower
                    // than the circle needs; bessd meets the circle with the capped curve.
                    documented += 1
                    documentedWorst = max(documentedWorst, deviation)
                    #expect(abs(p) > abs(trace.p[i]) && abs(p * p + q * q - Self.va * Self.va) <= 1e-6 * Self.va * Self.va, "\(c.name) \(point)")
                    continue
                }
                worst = max(worst, deviation)
                #expect(deviation <= 1, "\(c.name) at \(point.v) p.u., P \(point.p): bessd (\(p), \(q)), OpenDER (\(trace.p[i]), \(trace.q[i]))")
            }
            report.append("\(c.name): max \(String(format: "%.4f", worst)) % (at VAMax \(collisions) of \(Self.grid.count); "
                + "documented differences \(documented), up to \(String(format: "%.2f", documentedWorst)) %)")
        }
        return report
    }

    /// One step-response case: settings, the inputs before and after the step, and what to time.
    struct StepCase {
        var name: String
        var settings: GridSupportSettings
        var before: (v: Double, p: Double)
        var after: (v: Double, p: Double)
        /// OpenDER parameters changed at the step (a new constant var).
        var change: [String: Any] = [:]
        var retuned: GridSupportSettings?
        var responseTime: Double
        /// Time the active power (volt-watt) rather than the reactive.
        var timesActive = false
    }

    static func stepCases() throws -> [StepCase] {
        let constantVar = { (percent: Double) in
            GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: percent, responseTime: .seconds(5))))
        }
        var voltVar10 = catB.voltVar
        voltVar10.responseTime = .seconds(10)
        let pf = ReactivePowerMode.constantPowerFactor(ConstantPowerFactorSettings(
            discharging: PowerFactorSetting(0.9, .injecting), charging: PowerFactorSetting(0.9, .absorbing), responseTime: .seconds(5)))
        var wattVar = catB.wattVar
        wattVar.responseTime = .seconds(5)
        return [
            StepCase(name: "volt-var 1.00 → 0.95 p.u., OLRT 5 s", settings: .init(reactive: .voltVar(catB.voltVar)),
                     before: (1.0, 0.3), after: (0.95, 0.3), responseTime: 5),
            StepCase(name: "volt-var 1.00 → 1.06 p.u., OLRT 10 s", settings: .init(reactive: .voltVar(voltVar10)),
                     before: (1.0, -0.5), after: (1.06, -0.5), responseTime: 10),
            StepCase(name: "constant pf 0.9, P 20 → 80 %", settings: .init(reactive: pf), before: (1.0, 0.2), after: (1.0, 0.8), responseTime: 5),
            StepCase(name: "constant var 0 → 30 %", settings: constantVar(0), before: (1.0, 0.5), after: (1.0, 0.5),
                     change: ["CONST_Q": 0.3], retuned: constantVar(30), responseTime: 5),
            StepCase(name: "watt-var P 50 → 75 %", settings: .init(reactive: .wattVar(wattVar)), before: (1.0, 0.5), after: (1.0, 0.75),
                     responseTime: 5),
            StepCase(name: "volt-watt 1.00 → 1.08 p.u., OLRT 10 s", settings: .init(reactive: nil, voltWatt: catB.voltWatt),
                     before: (1.0, 1.0), after: (1.08, 1.0), responseTime: 10, timesActive: true),
        ]
    }

    /// The time after the step at which `trace` first has 90 % of its change behind it.
    static func ninetyPercentTime(_ trace: [Double], stepIndex: Int, period: Double) -> Double? {
        let start = trace[stepIndex - 1], end = trace[trace.count - 1]
        guard abs(end - start) > 1 else { return nil }
        let index = trace[stepIndex...].firstIndex { ($0 - start) / (end - start) >= 0.9 - 1e-9 }
        return index.map { Double($0 - stepIndex + 1) * period }
    }

    @Test("step responses: 90 % within one period of the OLRT and of OpenDER's, traces within 1 % of rating", arguments: [0.1, 0.01])
    func stepResponses(period: Double) throws {
        let cases = try Self.stepCases()
        let before = Int((60 / period).rounded()), after = Int((40 / period).rounded())
        let traces = try OpenDER.run(cases.map { c in
            OpenDER.Case(settings: OpenDER.parameters(c.settings), period: period,
                         steps: [(before, c.before.v, c.before.p, [:]), (after, c.after.v, c.after.p, c.change)])
        })
        var report: [String] = []
        for (c, trace) in zip(cases, traces) {
            var unit = try GridSupportController(settings: c.settings, rating: rating)
            var ours: (p: [Double], q: [Double]) = ([], [])
            for k in 0..<(before + after) {
                if k == before, let retuned = c.retuned { try unit.retune(retuned) }
                let input = k < before ? c.before : c.after
                let out = unit.step(voltage: input.v, desiredPowerW: input.p * Self.va, elapsedSeconds: period)
                ours.p.append(try #require(out.activePowerW))
                ours.q.append(try #require(out.reactivePowerVar))
            }
            let mine = c.timesActive ? ours.p : ours.q, theirs = c.timesActive ? trace.p : trace.q
            let t90 = try #require(Self.ninetyPercentTime(mine, stepIndex: before, period: period), "\(c.name): no step")
            let openDER = try #require(Self.ninetyPercentTime(theirs, stepIndex: before, period: period), "\(c.name): OpenDER no step")
            #expect(abs(t90 - c.responseTime) <= period + 1e-9, "\(c.name): 90 % after \(t90) s, OLRT \(c.responseTime) s")
            // OpenDER's Tustin lag (τ = OLRT/2.3, not OLRT/ln 10) reaches 90 % a little after the OLRT:
            // one period late at 100 ms, two at 10 ms (5.02 s for 5 s). The standard defines the OLRT
            // as the time to 90 %, which bessd meets to the period; OpenDER is held to 0.5 % of it.
            #expect(abs(t90 - openDER) <= period + 0.005 * c.responseTime + 1e-9, "\(c.name): 90 % after \(t90) s, OpenDER \(openDER) s")
            var worst = 0.0
            for k in (before - 10)..<(before + after) {
                worst = max(worst, abs(ours.p[k] - trace.p[k]), abs(ours.q[k] - trace.q[k]))
            }
            #expect(worst / Self.va <= 0.01, "\(c.name): traces differ by \(worst) W or var")
            report.append("\(c.name): t90 \(t90) s, OpenDER \(openDER) s (\(((t90 - openDER) / period).rounded()) periods), "
                + "trace max \(String(format: "%.3f", worst / Self.va * 100)) %")
        }
        print("OpenDER step responses at \(period) s:\n  " + report.joined(separator: "\n  "))
    }

    @Test("autonomous VRef: Q returns to 0 as VRef follows a held 1.04 p.u., as OpenDER's (τ 300 s)")
    func autonomousVRef() throws {
        var voltVar = catB.voltVar
        voltVar.autonomousVRef = true
        let settings = GridSupportSettings(reactive: .voltVar(voltVar))
        let period = 0.1
        let trace = try OpenDER.run([OpenDER.Case(settings: OpenDER.parameters(settings), period: period,
                                                   steps: [(100, 1.0, 0.2, [:]), (15000, 1.04, 0.2, [:])])])[0]
        var unit = try GridSupportController(settings: settings, rating: rating)
        var worst = 0.0
        var last = GridSupportOutput(activePowerW: nil, reactivePowerVar: nil)
        for k in 0..<15100 {
            last = unit.step(voltage: k < 100 ? 1.0 : 1.04, desiredPowerW: 20_000, elapsedSeconds: period)
            worst = max(worst, abs((last.reactivePowerVar ?? .nan) - trace.q[k]))
        }
        #expect(worst / Self.va <= 0.01, "Q differs from OpenDER's by \(worst) var")
        #expect(abs((last.vRef ?? .nan) - 1.04) < 0.001 && abs((last.reactivePowerVar ?? .nan)) < 0.002 * Self.va)
        #expect(trace.q.min()! < -0.1 * Self.va, "the comparison means something: Q moved first")
        print("OpenDER autonomous VRef: max deviation \(String(format: "%.3f", worst / Self.va * 100)) % of rating")
    }
}
