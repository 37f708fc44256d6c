/// `bessctl plan`: the optimiser's last plan (docs/optimiser.md), what the schedule store said of it,
/// or why there is none. Powers kW, energies kWh (`soc_kwh` at the slot's end), prices per kWh.
public struct PlanReply: ControlReply, Equatable {
    /// When the plan was made (RFC 3339, UTC); nil before the first.
    public var madeAt: String?
    public var slots: [PlanSlotReply]
    /// The cost, penalties included, and its parts.
    public var objective: Double?
    public var objectiveParts: PlanPartsReply?
    /// Each limit the plan could not keep: its name, the slot's start and by how much.
    public var violations: [PlanViolationReply]
    /// Wall time of the solve, ms, and whether the solver proved the plan optimal.
    public var solveMs: Double?
    public var optimal: Bool?
    /// What the schedule store answered (`followed`, `SCHEDULE_INFEASIBLE: …`, `SCHEDULE_HELD: …`).
    public var answer: String?
    /// Why the last try made no plan (`PLAN_PRICE_MISSING: …`), nil when it made one.
    public var problem: String?

    public init(madeAt: String?, slots: [PlanSlotReply], objective: Double?, objectiveParts: PlanPartsReply?,
                violations: [PlanViolationReply], solveMs: Double?, optimal: Bool?, answer: String?, problem: String?) {
        self.madeAt = madeAt
        self.slots = slots
        self.objective = objective
        self.objectiveParts = objectiveParts
        self.violations = violations
        self.solveMs = solveMs
        self.optimal = optimal
        self.answer = answer
        self.problem = problem
    }

    enum CodingKeys: String, CodingKey {
        case slots, objective, violations, optimal, answer, problem
        case madeAt = "made_at", objectiveParts = "objective_parts", solveMs = "solve_ms"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.answer, answer)
        json.field(CodingKeys.madeAt, madeAt)
        json.field(CodingKeys.objective, objective)
        json.field(CodingKeys.objectiveParts, ifPresent: objectiveParts)
        json.field(okKey, true)
        json.field(CodingKeys.optimal, optimal)
        json.field(CodingKeys.problem, problem)
        json.field(CodingKeys.slots, slots)
        json.field(CodingKeys.solveMs, solveMs)
        json.field(CodingKeys.violations, violations)
        json.endObject()
    }
}

/// One slot of the plan: slot 0 is the rest of the current block.
public struct PlanSlotReply: Codable, Sendable, Equatable, JSONWritable {
    public var start: String
    public var chargeKW: Double
    public var dischargeKW: Double
    public var importKW: Double
    public var exportKW: Double
    public var socKWh: Double
    public var priceImportPerKWh: Double
    public var priceExportPerKWh: Double

    public init(start: String, chargeKW: Double, dischargeKW: Double, importKW: Double, exportKW: Double, socKWh: Double,
                priceImportPerKWh: Double, priceExportPerKWh: Double) {
        self.start = start
        self.chargeKW = chargeKW
        self.dischargeKW = dischargeKW
        self.importKW = importKW
        self.exportKW = exportKW
        self.socKWh = socKWh
        self.priceImportPerKWh = priceImportPerKWh
        self.priceExportPerKWh = priceExportPerKWh
    }

    enum CodingKeys: String, CodingKey {
        case start
        case chargeKW = "charge_kw", dischargeKW = "discharge_kw", importKW = "import_kw", exportKW = "export_kw", socKWh = "soc_kwh"
        case priceImportPerKWh = "price_import_per_kwh", priceExportPerKWh = "price_export_per_kwh"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.chargeKW, chargeKW)
        json.field(CodingKeys.dischargeKW, dischargeKW)
        json.field(CodingKeys.exportKW, exportKW)
        json.field(CodingKeys.importKW, importKW)
        json.field(CodingKeys.priceExportPerKWh, priceExportPerKWh)
        json.field(CodingKeys.priceImportPerKWh, priceImportPerKWh)
        json.field(CodingKeys.socKWh, socKWh)
        json.field(CodingKeys.start, start)
        json.endObject()
    }
}

/// The objective's parts: energy bought less sold, wear, the demand charge, minus the stored energy's
/// end value, and the penalties of violated limits.
public struct PlanPartsReply: Codable, Sendable, Equatable, JSONWritable {
    public var energy: Double
    public var wear: Double
    public var demand: Double
    public var endValue: Double
    public var penalty: Double

    public init(energy: Double, wear: Double, demand: Double, endValue: Double, penalty: Double) {
        self.energy = energy
        self.wear = wear
        self.demand = demand
        self.endValue = endValue
        self.penalty = penalty
    }

    enum CodingKeys: String, CodingKey {
        case energy, wear, demand, penalty
        case endValue = "end_value"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.demand, demand)
        json.field(CodingKeys.endValue, endValue)
        json.field(CodingKeys.energy, energy)
        json.field(CodingKeys.penalty, penalty)
        json.field(CodingKeys.wear, wear)
        json.endObject()
    }
}

/// A limit the plan could not keep: `soc_lower`, `soc_upper`, `end_soc`, `import_limit`, `export_limit`;
/// the slot's start (RFC 3339) and by how much (kWh for energies, kW for powers).
public struct PlanViolationReply: Codable, Sendable, Equatable, JSONWritable {
    public var limit: String
    public var start: String
    public var amount: Double

    public init(limit: String, start: String, amount: Double) {
        self.limit = limit
        self.start = start
        self.amount = amount
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.amount, amount)
        json.field(CodingKeys.limit, limit)
        json.field(CodingKeys.start, start)
        json.endObject()
    }
}
