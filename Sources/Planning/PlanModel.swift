/// The MILP of docs/optimiser.md as CBC takes it: columns with bounds and objective coefficients, rows
/// with ranges, the matrix in compressed sparse columns. Built once per solve.
struct PlanModel {
    /// Columns per slot: charge, discharge, import, export, SOC at the slot's end, SOC-floor slack,
    /// SOC-ceiling slack, import-limit slack, export-limit slack.
    static let perSlot = 9
    static let charge = 0, discharge = 1, importKW = 2, exportKW = 3, soc = 4, lowerSlack = 5, upperSlack = 6, importSlack = 7, exportSlack = 8
    /// What COIN-OR reads as an infinite bound.
    static let infinity = Double.greatestFiniteMagnitude

    var columnLower: [Double] = []
    var columnUpper: [Double] = []
    /// Objective coefficients in the problem's units (currency); CBC gets them times `objectiveScale`.
    var objective: [Double] = []
    var integers: [Int32] = []
    var rowLower: [Double] = []
    var rowUpper: [Double] = []
    /// (column, row, value) of every nonzero.
    private var entries: [(column: Int32, row: Int32, value: Double)] = []

    /// The penalty per kWh of violation (docs/optimiser.md: 100 × the largest price-like figure).
    let penaltyPerKWh: Double
    /// CBC's objective is the problem's divided by the price base (`priceBase`), so prices are about 1
    /// whatever the currency (CBC's tolerances are absolute).
    let objectiveScale: Double
    /// The peak column (demand charge), when there is one.
    private(set) var peakColumn: Int?
    /// The end-SOC shortfall column, when there is a target.
    private(set) var endColumn: Int?
    /// Slots whose charge and discharge are kept apart by a binary, and whose import and export are.
    private(set) var batteryBinarySlots = 0
    private(set) var gridBinarySlots = 0

    static func column(_ slot: Int, _ which: Int) -> Int { slot * perSlot + which }

    /// The penalty base: the largest of every price's magnitude, the wear, the end value, the demand
    /// charge over the shortest slot (a kWh of violation in that slot can lower the peak by 1/Δ kW), and 0.01.
    static func penaltyBase(_ p: PlanProblem) -> Double {
        var base = max(0.01, p.wearPerKWh, p.valueEndPerKWh)
        var shortest = Double.infinity
        for s in p.slots {
            base = max(base, abs(s.priceImportPerKWh), abs(s.priceExportPerKWh))
            shortest = min(shortest, s.hours)
        }
        return max(base, p.demandChargePerKW / shortest)
    }

    /// The largest price-like figure without the demand term's 1/Δ: what CBC's objective is divided by.
    static func priceBase(_ p: PlanProblem) -> Double {
        var base = max(0.01, p.wearPerKWh, p.valueEndPerKWh, p.demandChargePerKW)
        for s in p.slots { base = max(base, abs(s.priceImportPerKWh), abs(s.priceExportPerKWh)) }
        return base
    }

    /// True when charging and discharging at once can pay in slot `s` (docs/optimiser.md, "Exclusivity"):
    /// storage loses energy, and the slot has energy to get rid of that neither import nor export takes
    /// for free (a negative price, or export that may reach its limit).
    static func needsBatteryBinary(_ p: PlanProblem, _ s: PlanSlotInput) -> Bool {
        let b = p.battery
        guard b.maxChargeKW > 0, b.maxDischargeKW > 0, b.chargeEfficiency * b.dischargeEfficiency < 1 else { return false }
        if s.priceImportPerKWh < 0 || s.priceExportPerKWh < 0 { return true }
        if let limit = p.grid.exportLimitKW, max(0, s.pvKW - s.loadKW) + b.maxDischargeKW > limit { return true }
        return false
    }

    /// True when importing and exporting at once can pay in slot `s`: export earns more than import costs.
    static func needsGridBinary(_ s: PlanSlotInput) -> Bool { s.priceExportPerKWh > s.priceImportPerKWh }

    init(_ p: PlanProblem) {
        let base = Self.penaltyBase(p)
        penaltyPerKWh = 100 * base
        objectiveScale = 1 / Self.priceBase(p)
        let b = p.battery
        let count = p.slots.count
        let socFloor = min(0, b.startKWh), socCeiling = max(b.capacityKWh, b.startKWh)
        for (t, s) in p.slots.enumerated() {
            let net = s.loadKW - s.pvKW, dt = s.hours
            // Big-M from physics: import never exceeds the load's deficit plus full charge, export the
            // surplus plus full discharge (the balance then still holds with c = d = 0).
            let importMax = max(0, net) + b.maxChargeKW, exportMax = max(0, -net) + b.maxDischargeKW
            add(0, b.maxChargeKW, p.wearPerKWh * dt)
            add(0, b.maxDischargeKW, p.wearPerKWh * dt)
            add(0, importMax, s.priceImportPerKWh * dt)
            add(0, exportMax, -s.priceExportPerKWh * dt)
            add(socFloor, socCeiling, t == count - 1 ? -p.valueEndPerKWh : 0)
            add(0, Self.infinity, penaltyPerKWh)
            add(0, Self.infinity, penaltyPerKWh)
            add(0, p.grid.importLimitKW == nil ? 0 : Self.infinity, penaltyPerKWh * dt)
            add(0, p.grid.exportLimitKW == nil ? 0 : Self.infinity, penaltyPerKWh * dt)
        }
        if p.demandChargePerKW > 0 { peakColumn = add(0, Self.infinity, p.demandChargePerKW) }
        if p.endKWh != nil { endColumn = add(0, Self.infinity, penaltyPerKWh) }

        for (t, s) in p.slots.enumerated() {
            let c = Self.column(t, Self.charge), d = Self.column(t, Self.discharge), i = Self.column(t, Self.importKW)
            let e = Self.column(t, Self.exportKW), soc = Self.column(t, Self.soc), dt = s.hours
            // i − e − c + d = load − pv
            row([(i, 1), (e, -1), (c, -1), (d, 1)], s.loadKW - s.pvKW, s.loadKW - s.pvKW)
            // SOC_t − SOC_{t−1} − η_c·Δ·c + Δ/η_d·d = 0 (SOC_{−1} is the start, a constant)
            var dynamics = [(soc, 1.0), (c, -b.chargeEfficiency * dt), (d, dt / b.dischargeEfficiency)]
            if t > 0 { dynamics.append((Self.column(t - 1, Self.soc), -1)) }
            let rhs = t == 0 ? b.startKWh : 0
            row(dynamics, rhs, rhs)
            row([(soc, 1), (Self.column(t, Self.lowerSlack), 1)], b.lowerKWh, Self.infinity)
            row([(soc, 1), (Self.column(t, Self.upperSlack), -1)], -Self.infinity, b.upperKWh)
            if let limit = p.grid.importLimitKW { row([(i, 1), (Self.column(t, Self.importSlack), -1)], -Self.infinity, limit) }
            if let limit = p.grid.exportLimitKW { row([(e, 1), (Self.column(t, Self.exportSlack), -1)], -Self.infinity, limit) }
            if let peak = peakColumn { row([(i, 1), (peak, -1)], -Self.infinity, p.demandThresholdKW) }
            if Self.needsBatteryBinary(p, s) {
                // c ≤ C·β, d ≤ D·(1 − β)
                let beta = add(0, 1, 0, integer: true)
                row([(c, 1), (beta, -b.maxChargeKW)], -Self.infinity, 0)
                row([(d, 1), (beta, b.maxDischargeKW)], -Self.infinity, b.maxDischargeKW)
                batteryBinarySlots += 1
            }
            if Self.needsGridBinary(s) {
                // i ≤ I·γ, e ≤ E·(1 − γ) with I and E the columns' physical bounds
                let gamma = add(0, 1, 0, integer: true)
                row([(i, 1), (gamma, -columnUpper[i])], -Self.infinity, 0)
                row([(e, 1), (gamma, columnUpper[e])], -Self.infinity, columnUpper[e])
                gridBinarySlots += 1
            }
        }
        if let end = endColumn, let target = p.endKWh {
            row([(Self.column(count - 1, Self.soc), 1), (end, 1)], target, Self.infinity)
        }
    }

    @discardableResult
    private mutating func add(_ lower: Double, _ upper: Double, _ cost: Double, integer: Bool = false) -> Int {
        columnLower.append(lower)
        columnUpper.append(upper)
        objective.append(cost)
        if integer { integers.append(Int32(columnLower.count - 1)) }
        return columnLower.count - 1
    }

    private mutating func row(_ terms: [(Int, Double)], _ lower: Double, _ upper: Double) {
        let r = Int32(rowLower.count)
        rowLower.append(lower)
        rowUpper.append(upper)
        for (column, value) in terms where value != 0 { entries.append((Int32(column), r, value)) }
    }

    /// The matrix by columns: starts (one more than columns), row indices, values.
    func compressedColumns() -> (starts: [Int32], rows: [Int32], values: [Double]) {
        var starts = [Int32](repeating: 0, count: columnLower.count + 1)
        for entry in entries { starts[Int(entry.column) + 1] += 1 }
        for j in 0..<columnLower.count { starts[j + 1] += starts[j] }
        var next = starts
        var rows = [Int32](repeating: 0, count: entries.count), values = [Double](repeating: 0, count: entries.count)
        for entry in entries {
            let k = Int(next[Int(entry.column)])
            rows[k] = entry.row
            values[k] = entry.value
            next[Int(entry.column)] += 1
        }
        return (starts, rows, values)
    }
}
