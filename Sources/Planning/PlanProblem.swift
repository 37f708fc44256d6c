public import BessBase

/// The optimiser's pure half: the plan's problem, its solver and its inputs (docs/optimiser.md).
public enum Planning {}

/// One slot of the horizon: when it starts, how long it lasts and what the site does without the
/// battery in it (docs/optimiser.md, "The problem").
public struct PlanSlotInput: Sendable, Equatable, Codable {
    /// Where the slot starts (slot 0: now, the rest of the current block).
    public var startUnixSeconds: Int64
    /// Its length Δ_t in hours (> 0).
    public var hours: Double
    /// The site's load, kW (forecast).
    public var loadKW: Double
    /// The site's PV, kW (forecast; never curtailed by the plan).
    public var pvKW: Double
    /// What a kWh imported in the slot costs (may be negative).
    public var priceImportPerKWh: Double
    /// What a kWh exported in the slot earns (may be negative, or above the import price).
    public var priceExportPerKWh: Double

    /// A slot from its fields.
    public init(startUnixSeconds: Int64, hours: Double, loadKW: Double, pvKW: Double, priceImportPerKWh: Double, priceExportPerKWh: Double) {
        self.startUnixSeconds = startUnixSeconds
        self.hours = hours
        self.loadKW = loadKW
        self.pvKW = pvKW
        self.priceImportPerKWh = priceImportPerKWh
        self.priceExportPerKWh = priceExportPerKWh
    }
}

/// The site's storage as one battery: the units in service summed.
public struct PlanBattery: Sendable, Equatable, Codable {
    /// Usable capacity, kWh: SOC is held in [0, capacity] as physics (a start outside widens it).
    public var capacityKWh: Double
    /// The measured SOC now, kWh (may lie outside [lower, upper]: the plan recovers toward them).
    public var startKWh: Double
    /// The soft floor, kWh (the tighter of the reserve and the SOC interlocks').
    public var lowerKWh: Double
    /// The soft ceiling, kWh.
    public var upperKWh: Double
    /// Σ rated charge power, kW.
    public var maxChargeKW: Double
    /// Σ rated discharge power, kW.
    public var maxDischargeKW: Double
    /// η_c in (0, 1]: kWh stored per kWh charged.
    public var chargeEfficiency: Double
    /// η_d in (0, 1]: kWh delivered per kWh taken from storage.
    public var dischargeEfficiency: Double

    /// A battery from its fields.
    public init(capacityKWh: Double, startKWh: Double, lowerKWh: Double, upperKWh: Double, maxChargeKW: Double, maxDischargeKW: Double,
                chargeEfficiency: Double, dischargeEfficiency: Double) {
        self.capacityKWh = capacityKWh
        self.startKWh = startKWh
        self.lowerKWh = lowerKWh
        self.upperKWh = upperKWh
        self.maxChargeKW = maxChargeKW
        self.maxDischargeKW = maxDischargeKW
        self.chargeEfficiency = chargeEfficiency
        self.dischargeEfficiency = dischargeEfficiency
    }
}

/// The connection point's limits, kW (nil: none).
public struct PlanGrid: Sendable, Equatable, Codable {
    /// Soft limit on import.
    public var importLimitKW: Double?
    /// Soft limit on export.
    public var exportLimitKW: Double?

    /// Limits from their fields.
    public init(importLimitKW: Double? = nil, exportLimitKW: Double? = nil) {
        self.importLimitKW = importLimitKW
        self.exportLimitKW = exportLimitKW
    }
}

/// The problem the solver is given, exactly as docs/optimiser.md states it.
public struct PlanProblem: Sendable, Equatable, Codable {
    /// The most slots a problem may have (a week of 15-minute blocks and more).
    public static let maximumSlots = 2_000

    /// The horizon, in order.
    public var slots: [PlanSlotInput]
    /// The storage.
    public var battery: PlanBattery
    /// The connection point's limits.
    public var grid: PlanGrid
    /// Cost of a kWh charged or discharged (≥ 0).
    public var wearPerKWh: Double
    /// Cost per kW of the horizon's highest import above `demandThresholdKW` (≥ 0).
    public var demandChargePerKW: Double
    /// The import the demand charge starts above, kW (the month's recorded peak, say).
    public var demandThresholdKW: Double
    /// The value of a kWh left in storage at the end of the horizon (≥ 0).
    public var valueEndPerKWh: Double
    /// A soft floor on the SOC at the end of the horizon, kWh (nil: none).
    public var endKWh: Double?

    /// A problem from its fields.
    public init(slots: [PlanSlotInput], battery: PlanBattery, grid: PlanGrid = PlanGrid(), wearPerKWh: Double = 0, demandChargePerKW: Double = 0,
                demandThresholdKW: Double = 0, valueEndPerKWh: Double = 0, endKWh: Double? = nil) {
        self.slots = slots
        self.battery = battery
        self.grid = grid
        self.wearPerKWh = wearPerKWh
        self.demandChargePerKW = demandChargePerKW
        self.demandThresholdKW = demandThresholdKW
        self.valueEndPerKWh = valueEndPerKWh
        self.endKWh = endKWh
    }

    /// Refuses what the model cannot take: no slots or more than `maximumSlots`, a number that is not
    /// finite, a slot not longer than zero, a negative power limit, capacity or cost, an efficiency
    /// outside (0, 1]. Nothing that can merely not be met is refused: that is slack.
    public func validate() throws(PlanningError) {
        func fail(_ what: String) -> PlanningError { PlanningError(.problemInvalid, message: what) }
        guard !slots.isEmpty, slots.count <= Self.maximumSlots else { throw fail("\(slots.count) slots (1...\(Self.maximumSlots))") }
        for (t, s) in slots.enumerated() {
            guard s.hours.isFinite, s.hours > 0, s.hours <= 24 else { throw fail("slot \(t): hours \(s.hours) (0 < h <= 24)") }
            for (name, v) in [("load_kw", s.loadKW), ("pv_kw", s.pvKW), ("price_import_per_kwh", s.priceImportPerKWh),
                              ("price_export_per_kwh", s.priceExportPerKWh)] where !v.isFinite {
                throw fail("slot \(t): \(name) is not finite")
            }
        }
        let b = battery
        for (name, v) in [("capacity_kwh", b.capacityKWh), ("max_charge_kw", b.maxChargeKW), ("max_discharge_kw", b.maxDischargeKW),
                          ("wear_per_kwh", wearPerKWh), ("demand_charge_per_kw", demandChargePerKW), ("value_end_per_kwh", valueEndPerKWh)]
        where !(v.isFinite && v >= 0) {
            throw fail("\(name) \(v) (finite, >= 0)")
        }
        for (name, v) in [("start_kwh", b.startKWh), ("lower_kwh", b.lowerKWh), ("upper_kwh", b.upperKWh), ("demand_threshold_kw", demandThresholdKW),
                          ("end_kwh", endKWh ?? 0), ("import_limit_kw", grid.importLimitKW ?? 0), ("export_limit_kw", grid.exportLimitKW ?? 0)]
        where !v.isFinite {
            throw fail("\(name) is not finite")
        }
        for (name, v) in [("charge efficiency", b.chargeEfficiency), ("discharge efficiency", b.dischargeEfficiency)] where !(v > 0 && v <= 1) {
            throw fail("\(name) \(v) (0 < η <= 1)")
        }
    }
}
