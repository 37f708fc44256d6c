/// What a schedule is checked against when it arrives: the site's stored energy and its bounds,
/// the units' power, the grid limits and the load forecast in use.
public struct ScheduleFeasibilityInput: Sendable {
    /// Energy stored now, kWh.
    public var socKWh: Double
    public var capacityKWh: Double
    /// The least energy the schedule may leave (the SOC reserve, with the frequency response's
    /// `sustain_s` reserve), kWh, and the most (capacity, or a SOC interlock's threshold), kWh.
    public var lowerKWh: Double
    public var upperKWh: Double
    /// Energy stored per kWh charged, and kWh delivered per kWh taken from storage.
    public var chargeEfficiency: Double
    public var dischargeEfficiency: Double
    /// Σ the rated power of the units in service, kW, each way (magnitudes).
    public var maxChargeKW: Double
    public var maxDischargeKW: Double
    /// The connection point's limits, kW (magnitudes); nil: none. Judged only with a meter.
    public var importLimitKW: Double?
    public var exportLimitKW: Double?
    /// Net load at the meter (load − PV, + = consumption), kW, for the block starting at the given
    /// Unix second; nil: 0.
    public var loadForecastKW: @Sendable (Int64) -> Double?
    /// True when targets are at the connection point (a site meter), false when they are the units'.
    public var metered: Bool

    public init(socKWh: Double, capacityKWh: Double, lowerKWh: Double, upperKWh: Double, chargeEfficiency: Double = 1,
                dischargeEfficiency: Double = 1, maxChargeKW: Double, maxDischargeKW: Double, importLimitKW: Double? = nil,
                exportLimitKW: Double? = nil, loadForecastKW: @escaping @Sendable (Int64) -> Double? = { _ in nil }, metered: Bool) {
        self.socKWh = socKWh
        self.capacityKWh = capacityKWh
        self.lowerKWh = lowerKWh
        self.upperKWh = upperKWh
        self.chargeEfficiency = chargeEfficiency
        self.dischargeEfficiency = dischargeEfficiency
        self.maxChargeKW = maxChargeKW
        self.maxDischargeKW = maxDischargeKW
        self.importLimitKW = importLimitKW
        self.exportLimitKW = exportLimitKW
        self.loadForecastKW = loadForecastKW
        self.metered = metered
    }
}

/// The first block a schedule cannot meet, and by how much.
public struct ScheduleShortfall: Sendable, Equatable {
    public var blockStartUnixSeconds: Int64
    /// |target − what can be delivered|, kWh.
    public var shortKWh: Double

    public init(blockStartUnixSeconds: Int64, shortKWh: Double) {
        self.blockStartUnixSeconds = blockStartUnixSeconds
        self.shortKWh = shortKWh
    }
}

/// Whether a schedule can be met: a walk of the stored energy block by block.
public enum ScheduleFeasibility {
    /// Shortfalls smaller than this are rounding, kWh.
    public static let toleranceKWh = 1e-6

    /// Walks `s` from `nowUnix` (blocks that have ended are skipped; the block running at `nowUnix`
    /// counts for its remaining part, its target in proportion): each block's target at constant
    /// power, the battery's part of it (target + forecast load × hours with a meter), inside the
    /// grid limits (with a meter: the batteries give at least load − import limit and at most load
    /// + export limit), the units' power, then the stored energy (discharge draws power / η_d,
    /// charge stores power × η_c, between `lowerKWh` and the lower of `upperKWh` and capacity).
    /// Returns the first block whose target cannot be met, with the kWh missing at the target's
    /// point (connection point or units); nil when every block can be.
    public static func check(_ s: Schedule, from nowUnix: Int64, _ input: ScheduleFeasibilityInput) -> ScheduleShortfall? {
        var soc = input.socKWh
        let upper = min(input.upperKWh, input.capacityKWh)
        let etaC = input.chargeEfficiency > 0 && input.chargeEfficiency.isFinite ? input.chargeEfficiency : 1
        let etaD = input.dischargeEfficiency > 0 && input.dischargeEfficiency.isFinite ? input.dischargeEfficiency : 1
        for block in s.blocks {
            let end = block.startUnixSeconds + s.lengthSeconds
            guard end > nowUnix else { continue }
            let seconds = Double(end - max(block.startUnixSeconds, nowUnix))
            let hours = seconds / 3600
            guard hours > 0 else { continue }
            let target = block.targetKWh * seconds / Double(max(1, s.lengthSeconds))
            let load = input.metered ? (input.loadForecastKW(block.startUnixSeconds) ?? 0) : 0
            // The battery power the target needs, kW (+ = discharge).
            let wanted = target / hours + load
            var power = wanted
            if input.metered {
                if let limit = input.importLimitKW { power = max(power, load - limit) }
                if let limit = input.exportLimitKW { power = min(power, load + limit) }
            }
            power = min(max(power, -max(0, input.maxChargeKW)), max(0, input.maxDischargeKW))
            if power > 0 {
                power = min(power, max(0, (soc - input.lowerKWh) * etaD / hours))
                soc -= power * hours / etaD
            } else if power < 0 {
                power = max(power, -max(0, (upper - soc) / (etaC * hours)))
                soc -= power * hours * etaC
            }
            let short = abs(wanted - power) * hours
            if short > toleranceKWh { return ScheduleShortfall(blockStartUnixSeconds: block.startUnixSeconds, shortKWh: short) }
        }
        return nil
    }
}
