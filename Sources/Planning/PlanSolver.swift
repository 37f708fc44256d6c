public import BessBase

import CCbc
import Synchronization

/// Solves a `PlanProblem` on COIN-OR CBC (docs/optimiser.md): one model per solve, built, solved and
/// freed inside `solve`, so any thread may call it (CBC's driver keeps process-wide state, so solves
/// are taken one at a time). Never infeasible: every limit that can fail is slack.
public enum PlanSolver {
    /// The longest the branch and bound may run; past it the best answer found is returned, not proven.
    public static let defaultTimeLimitSeconds = 2.0
    /// A violation smaller than this (kWh or kW) is solver noise, not reported.
    public static let reportedViolation = 1e-6

    /// CBC's solve is not re-entrant (CbcMain1 keeps static state): one solve at a time in the process.
    private static let cbc = Mutex(())

    /// The plan for `problem`: CBC's answer, post-processed (docs/optimiser.md, "Solver") and with its
    /// objective recomputed in the problem's units. Throws only for a problem `validate()` refuses.
    public static func solve(_ problem: PlanProblem, timeLimitSeconds: Double = defaultTimeLimitSeconds) throws(PlanningError) -> Plan {
        try problem.validate()
        let clock = ContinuousClock()
        let started = clock.now
        let model = PlanModel(problem)
        let (solution, optimal) = run(model, timeLimitSeconds: timeLimitSeconds)
        var charge = [Double](repeating: 0, count: problem.slots.count)
        var discharge = charge
        if let solution {
            for t in problem.slots.indices {
                charge[t] = solution[PlanModel.column(t, PlanModel.charge)]
                discharge[t] = solution[PlanModel.column(t, PlanModel.discharge)]
            }
        }
        var plan = PlanEvaluation.plan(problem, chargeKW: charge, dischargeKW: discharge, penaltyPerKWh: model.penaltyPerKWh)
        plan.optimal = optimal && solution != nil
        let elapsed = clock.now - started
        plan.solveMs = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        return plan
    }

    /// CBC's column values and whether it proved them optimal; nil when it found no solution at all
    /// (then the caller plans idle: c = d = 0, always feasible).
    private static func run(_ model: PlanModel, timeLimitSeconds: Double) -> ([Double]?, Bool) {
        let columns = model.columnLower.count
        let matrix = model.compressedColumns()
        let cost = model.objective.map { $0 * model.objectiveScale }
        return cbc.withLock { _ -> ([Double]?, Bool) in
            guard let cbcModel = Cbc_newModel() else { return (nil, false) }
            defer { Cbc_deleteModel(cbcModel) }
            Cbc_setLogLevel(cbcModel, 0)
            Cbc_loadProblem(cbcModel, Int32(columns), Int32(model.rowLower.count), matrix.starts, matrix.rows, matrix.values,
                            model.columnLower, model.columnUpper, cost, model.rowLower, model.rowUpper)
            for j in model.integers { Cbc_setInteger(cbcModel, j) }
            Cbc_setObjSense(cbcModel, 1)
            Cbc_setMaximumSeconds(cbcModel, timeLimitSeconds)
            Cbc_setParameter(cbcModel, "log", "0")
            Cbc_setParameter(cbcModel, "slog", "0")
            // Measured on the proof's cases and the bench's (docs/optimiser.md, "Solver"): CBC's integer
            // preprocessing and its primal heuristics cost more than they find on these models (worst
            // case 220 ms → 60 ms, the 192-slot bench 47 ms → 28 ms); branching finds the incumbents.
            Cbc_setParameter(cbcModel, "preprocess", "off")
            Cbc_setParameter(cbcModel, "heuristics", "off")
            _ = Cbc_solve(cbcModel)
            let optimal = Cbc_isProvenOptimal(cbcModel) != 0
            let values: UnsafePointer<Double>?
            if model.integers.isEmpty {
                values = optimal ? Cbc_getColSolution(cbcModel) : nil
            } else {
                values = Cbc_bestSolution(cbcModel).map { UnsafePointer($0) }
            }
            guard let values else { return (nil, false) }
            return (Array(UnsafeBufferPointer(start: values, count: columns)), optimal)
        }
    }
}

/// A plan from the battery's flows alone: the SOC by the dynamics, import and export from the
/// balance (never both), the objective and the violations recomputed in the problem's units. The
/// solver's post-processing, and the tests' check of what any plan costs.
public enum PlanEvaluation {
    /// The plan whose battery charges `chargeKW` and discharges `dischargeKW` in each slot. Flows are
    /// clamped to [0, rated]; values below 1e-9 kW are zeroed; with lossless storage (η_c·η_d = 1) a
    /// slot's charge and discharge are netted (the SOC is the same). `solveMs` 0, `optimal` false.
    public static func plan(_ p: PlanProblem, chargeKW: [Double], dischargeKW: [Double], penaltyPerKWh: Double? = nil) -> Plan {
        let b = p.battery
        let penalty = penaltyPerKWh ?? 100 * PlanModel.penaltyBase(p)
        let lossless = b.chargeEfficiency * b.dischargeEfficiency >= 1
        var slots: [PlanSlot] = []
        slots.reserveCapacity(p.slots.count)
        var violations: [PlanViolation] = []
        var parts = PlanObjectiveParts(energy: 0, wear: 0, demand: 0, endValue: 0, penalty: 0)
        var soc = b.startKWh
        var peak = -Double.infinity
        for (t, s) in p.slots.enumerated() {
            var c = min(max(chargeKW[t], 0), b.maxChargeKW), d = min(max(dischargeKW[t], 0), b.maxDischargeKW)
            if c < 1e-9 { c = 0 }
            if d < 1e-9 { d = 0 }
            if lossless { let both = min(c, d); c -= both; d -= both }
            soc += (b.chargeEfficiency * c - d / b.dischargeEfficiency) * s.hours
            let grid = s.loadKW - s.pvKW + c - d
            let i = max(grid, 0), e = max(-grid, 0)
            peak = max(peak, i)
            parts.energy += (s.priceImportPerKWh * i - s.priceExportPerKWh * e) * s.hours
            parts.wear += p.wearPerKWh * (c + d) * s.hours
            func violated(_ limit: PlanLimit, _ amount: Double, _ weight: Double) {
                guard amount > 0 else { return }
                parts.penalty += penalty * weight * amount
                if amount > PlanSolver.reportedViolation {
                    violations.append(PlanViolation(limit: limit, startUnixSeconds: s.startUnixSeconds, amount: amount))
                }
            }
            violated(.socLower, b.lowerKWh - soc, 1)
            violated(.socUpper, soc - b.upperKWh, 1)
            if let limit = p.grid.importLimitKW { violated(.importLimit, i - limit, s.hours) }
            if let limit = p.grid.exportLimitKW { violated(.exportLimit, e - limit, s.hours) }
            if t == p.slots.count - 1, let target = p.endKWh { violated(.endSOC, target - soc, 1) }
            slots.append(PlanSlot(startUnixSeconds: s.startUnixSeconds, hours: s.hours, chargeKW: c, dischargeKW: d, importKW: i, exportKW: e,
                                  socKWh: soc, priceImportPerKWh: s.priceImportPerKWh, priceExportPerKWh: s.priceExportPerKWh))
        }
        if p.demandChargePerKW > 0 { parts.demand = p.demandChargePerKW * max(0, peak - p.demandThresholdKW) }
        parts.endValue = -p.valueEndPerKWh * soc
        return Plan(slots: slots, objective: parts.total, objectiveParts: parts, violations: violations, solveMs: 0, optimal: false)
    }
}
