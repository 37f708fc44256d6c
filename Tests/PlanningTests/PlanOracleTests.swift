import Foundation
import Testing
import TestSupport
@testable import Planning

/// One case of scripts/plan-oracle.py: the problem (docs/optimiser.md) and HiGHS's answer.
struct OracleCase: Decodable, CustomTestStringConvertible {
    struct Battery: Decodable {
        var capacityKwh, startKwh, lowerKwh, upperKwh, maxChargeKw, maxDischargeKw, chargeEfficiency, dischargeEfficiency: Double
    }
    struct HiGHS: Decodable { var objective, violationKwh, flowScale: Double; var optimal: Bool }
    var name: String
    var start: Int64
    var hours, load, pv, `import`, export: [Double]
    var battery: Battery
    var importLimit, exportLimit, endKwh: Double?
    var wear, demand, threshold, valueEnd: Double
    var highs: HiGHS

    var testDescription: String { name }

    var problem: PlanProblem {
        var at = start
        var slots: [PlanSlotInput] = []
        for t in hours.indices {
            slots.append(PlanSlotInput(startUnixSeconds: at, hours: hours[t], loadKW: load[t], pvKW: pv[t],
                                       priceImportPerKWh: self.import[t], priceExportPerKWh: export[t]))
            at += Int64((hours[t] * 3600).rounded())
        }
        let b = battery
        return PlanProblem(
            slots: slots,
            battery: PlanBattery(capacityKWh: b.capacityKwh, startKWh: b.startKwh, lowerKWh: b.lowerKwh, upperKWh: b.upperKwh, maxChargeKW: b.maxChargeKw,
                                 maxDischargeKW: b.maxDischargeKw, chargeEfficiency: b.chargeEfficiency, dischargeEfficiency: b.dischargeEfficiency),
            grid: PlanGrid(importLimitKW: importLimit, exportLimitKW: exportLimit), wearPerKWh: wear, demandChargePerKW: demand,
            demandThresholdKW: threshold, valueEndPerKWh: valueEnd, endKWh: endKwh)
    }

    /// docs/optimiser.md's tolerance: 0.1 % of HiGHS's objective, plus 0.01 % of the money the case's
    /// flows could move (which matters only for objectives near zero).
    var tolerance: Double { 1e-3 * abs(highs.objective) + 1e-4 * highs.flowScale }

    static func decode(_ data: Data) throws -> [OracleCase] {
        struct File: Decodable { var cases: [OracleCase] }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(File.self, from: data).cases
    }

    static let kept: [OracleCase] = {
        let url = Package.root.appendingPathComponent("Tests/PlanningTests/Fixtures/plan-cases.json")
        return (try? decode(Data(contentsOf: url))) ?? []
    }()

    /// What is wrong with CBC's plan for this case, against HiGHS and against the problem's own rules.
    func check(_ plan: Plan) -> [String] {
        var issues: [String] = []
        let p = problem
        if abs(plan.objective - highs.objective) > tolerance {
            issues.append("objective \(plan.objective), HiGHS \(highs.objective) (tolerance \(tolerance))")
        }
        var soc = p.battery.startKWh
        var total = 0.0
        for (t, s) in plan.slots.enumerated() {
            if s.chargeKW > 1e-6, s.dischargeKW > 1e-6 { issues.append("slot \(t): charge \(s.chargeKW) with discharge \(s.dischargeKW)") }
            if s.importKW > 1e-6, s.exportKW > 1e-6 { issues.append("slot \(t): import \(s.importKW) with export \(s.exportKW)") }
            let input = p.slots[t]
            if abs(s.importKW - s.exportKW - (input.loadKW - input.pvKW + s.chargeKW - s.dischargeKW)) > 1e-6 { issues.append("slot \(t): balance") }
            soc += (p.battery.chargeEfficiency * s.chargeKW - s.dischargeKW / p.battery.dischargeEfficiency) * input.hours
            if abs(s.socKWh - soc) > 1e-6 * max(1, abs(soc)) { issues.append("slot \(t): SOC \(s.socKWh), dynamics \(soc)") }
            if s.chargeKW > p.battery.maxChargeKW + 1e-9 || s.dischargeKW > p.battery.maxDischargeKW + 1e-9 { issues.append("slot \(t): over rating") }
            // Every violation over the report threshold is named, with its slot and amount.
            var expected: [(PlanLimit, Double)] = [(.socLower, p.battery.lowerKWh - s.socKWh), (.socUpper, s.socKWh - p.battery.upperKWh)]
            if let l = p.grid.importLimitKW { expected.append((.importLimit, s.importKW - l)) }
            if let l = p.grid.exportLimitKW { expected.append((.exportLimit, s.exportKW - l)) }
            if t == plan.slots.count - 1, let end = p.endKWh { expected.append((.endSOC, end - s.socKWh)) }
            for (limit, amount) in expected where amount > PlanSolver.reportedViolation {
                total += [.importLimit, .exportLimit].contains(limit) ? amount * input.hours : amount
                let named = plan.violations.contains { $0.limit == limit && $0.startUnixSeconds == s.startUnixSeconds && abs($0.amount - amount) < 1e-9 }
                if !named { issues.append("slot \(t): \(limit) by \(amount) not named") }
            }
        }
        if abs(total - highs.violationKwh) > 1e-4 * max(1, highs.violationKwh) {
            issues.append("total violation \(total) kWh, HiGHS \(highs.violationKwh)")
        }
        return issues
    }
}

/// The optimiser against HiGHS (scripts/plan-oracle.py): the kept cases and fresh seeds.
@Suite struct PlanOracleTests {
    @Test func fixtureHoldsTheCases() {
        #expect(OracleCase.kept.count >= 200)
        #expect(OracleCase.kept.filter { $0.name.hasPrefix("emhass-") }.count >= 3)
        #expect(OracleCase.kept.filter { $0.name.contains("short-first-slot") && $0.hours[0] < 31.0 / 3600 }.count >= 5)
        #expect(OracleCase.kept.contains { $0.highs.violationKwh > 0.01 })
    }

    @Test(arguments: OracleCase.kept)
    func matchesHiGHS(_ oracle: OracleCase) throws {
        let plan = try PlanSolver.solve(oracle.problem)
        #expect(plan.optimal)
        let issues = oracle.check(plan)
        #expect(issues.isEmpty, "\(oracle.name): \(issues.prefix(5).joined(separator: "; "))")
    }

    /// The oracle run now on seeds no fixture holds (at most 48 slots each, so it takes seconds).
    @Test func freshSeedsMatchHiGHS() throws {
        let script = Package.root.appendingPathComponent("scripts/plan-oracle.py").path
        let run = try Package.capture(URL(fileURLWithPath: "/usr/bin/env"),
                                      ["python3", script, "--seeds", "90001-90006", "--max-slots", "48", "--out", "-"])
        try #require(run.status == 0, "plan-oracle.py: \(run.err.suffix(400))")
        let cases = try OracleCase.decode(Data(run.out.utf8))
        #expect(cases.count >= 5)
        for oracle in cases where oracle.highs.optimal {
            let plan = try PlanSolver.solve(oracle.problem)
            let issues = oracle.check(plan)
            #expect(issues.isEmpty, "\(oracle.name): \(issues.prefix(5).joined(separator: "; "))")
        }
    }
}
