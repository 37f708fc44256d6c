/// One slot of a plan: what the battery and the grid do, and the SOC at the slot's END.
public struct PlanSlot: Sendable, Equatable, Codable {
    /// The slot's start (slot 0: when the plan was made).
    public var startUnixSeconds: Int64
    /// Its length, hours.
    public var hours: Double
    /// Battery charge, kW (never with discharge).
    public var chargeKW: Double
    /// Battery discharge, kW (never with charge).
    public var dischargeKW: Double
    /// Grid import, kW (never with export).
    public var importKW: Double
    /// Grid export, kW (never with import).
    public var exportKW: Double
    /// The SOC at the slot's end, kWh.
    public var socKWh: Double
    /// The slot's import price.
    public var priceImportPerKWh: Double
    /// The slot's export price.
    public var priceExportPerKWh: Double
}

/// The objective split by what makes it up (all in currency; their sum is `Plan.objective`).
public struct PlanObjectiveParts: Sendable, Equatable, Codable {
    /// Σ (p_imp·i − p_exp·e)·Δ.
    public var energy: Double
    /// Σ wear·(c + d)·Δ.
    public var wear: Double
    /// demand·max(0, max i − threshold).
    public var demand: Double
    /// −value_end·SOC_T (a negative cost: the stored energy's worth).
    public var endValue: Double
    /// The penalty on every violated limit (docs/optimiser.md).
    public var penalty: Double

    /// The sum of the parts.
    public var total: Double { energy + wear + demand + endValue + penalty }
}

/// A limit the plan could not keep.
public enum PlanLimit: String, Sendable, Equatable, Codable, CaseIterable, CustomStringConvertible {
    /// SOC at a slot's end below the floor (kWh).
    case socLower = "soc_lower"
    /// SOC at a slot's end above the ceiling (kWh).
    case socUpper = "soc_upper"
    /// SOC at the horizon's end below `endKWh` (kWh).
    case endSOC = "end_soc"
    /// Import above the limit (kW).
    case importLimit = "import_limit"
    /// Export above the limit (kW).
    case exportLimit = "export_limit"

    /// The snake_case name (`soc_lower`).
    public var description: String { rawValue }
}

/// One violated limit: which, in which slot, by how much (kWh for SOC limits, kW for grid limits).
public struct PlanViolation: Sendable, Equatable, Codable {
    /// The limit.
    public var limit: PlanLimit
    /// The start of the slot it is violated in (for `end_soc`, the last slot's).
    public var startUnixSeconds: Int64
    /// How far past the limit: kWh (`soc_lower`, `soc_upper`, `end_soc`) or kW (`import_limit`, `export_limit`).
    public var amount: Double
}

/// What the solver answers: the schedule, its cost and what it could not keep.
public struct Plan: Sendable, Equatable, Codable {
    /// The slots, in the problem's order.
    public var slots: [PlanSlot]
    /// The cost, penalties included, in the problem's original units (recomputed from `slots`).
    public var objective: Double
    /// `objective` by part.
    public var objectiveParts: PlanObjectiveParts
    /// Every limit violated by more than `PlanSolver.reportedViolation`.
    public var violations: [PlanViolation]
    /// The solve's wall time, model building and post-processing included, ms.
    public var solveMs: Double
    /// True when CBC proved the answer optimal; false when the time limit (or a numerical failure)
    /// ended the search first and this is the best answer found (at worst the idle plan).
    public var optimal: Bool
}
