public import BessBase
import Foundation

/// A price for one block from its start, pushed by the aggregator.
public struct PricePoint: Sendable, Equatable, Codable {
    /// The block's start.
    public var startUnixSeconds: Int64
    /// Import price per kWh.
    public var importPerKWh: Double
    /// Export price per kWh.
    public var exportPerKWh: Double

    /// A price from its fields.
    public init(startUnixSeconds: Int64, importPerKWh: Double, exportPerKWh: Double) {
        self.startUnixSeconds = startUnixSeconds
        self.importPerKWh = importPerKWh
        self.exportPerKWh = exportPerKWh
    }
}

/// What a plan's slots are made from at one instant: the clock, the blocks, the prices and the
/// forecasts (docs/optimiser.md, "Inputs"); the site and the costs come in a `PlanProblem`.
public struct PlanRequest: Sendable {
    /// Now.
    public var nowUnixSeconds: Int64
    /// `schedule.block_s` (60 … 3600); blocks start on multiples of it.
    public var blockSeconds: Int64
    /// `optimiser.horizon_blocks`: slots in the plan (slot 0 included).
    public var horizonBlocks: Int
    /// The configured time-of-day tariff, used where the price series has no point.
    public var tariff: Tariff?
    /// Prices pushed by the aggregator, one per block (any order); they win over the tariff.
    public var priceSeries: [PricePoint]
    /// The forecast (file or pushed), one point per block (any order).
    public var forecast: [ForecastPoint]
    /// The meter's history, used where the forecast has no point (then load and PV are 0 without it).
    public var persistence: PersistenceForecast?

    /// A request; prices and forecasts default to none.
    public init(nowUnixSeconds: Int64, blockSeconds: Int64, horizonBlocks: Int, tariff: Tariff? = nil, priceSeries: [PricePoint] = [],
                forecast: [ForecastPoint] = [], persistence: PersistenceForecast? = nil) {
        self.nowUnixSeconds = nowUnixSeconds
        self.blockSeconds = blockSeconds
        self.horizonBlocks = horizonBlocks
        self.tariff = tariff
        self.priceSeries = priceSeries
        self.forecast = forecast
        self.persistence = persistence
    }
}

/// Builds the `PlanProblem` of a `PlanRequest` (pure).
public enum PlanBuilder {
    /// The problem: the battery, grid and costs of `site` (its slots ignored) over slot 0 from now to
    /// the end of the current block, then `horizonBlocks − 1` whole blocks. When less than a tenth of the current block is left, slot 0 runs on to the end of the
    /// next block instead (a slot of seconds would make the demand term of the penalty, λ/Δ, thousands
    /// of times the prices; docs/optimiser.md). A slot's prices are those at its start (series first,
    /// then the tariff); its load and PV are its block's (forecast first, then persistence, else 0).
    /// `PLAN_PROBLEM_INVALID` for a block length or horizon out of range, `PLAN_PRICE_MISSING` for a
    /// slot nothing prices.
    public static func problem(_ r: PlanRequest, site: PlanProblem) throws(PlanningError) -> PlanProblem {
        var problem = site
        problem.slots = try slots(r)
        try problem.validate()
        return problem
    }

    /// The slots alone, as `problem(_:site:)` makes them.
    public static func slots(_ r: PlanRequest) throws(PlanningError) -> [PlanSlotInput] {
        guard (60...3600).contains(r.blockSeconds) else {
            throw PlanningError(.problemInvalid, message: "block length \(r.blockSeconds) s (60...3600)")
        }
        guard (1...PlanProblem.maximumSlots).contains(r.horizonBlocks) else {
            throw PlanningError(.problemInvalid, message: "horizon \(r.horizonBlocks) blocks (1...\(PlanProblem.maximumSlots))")
        }
        let block = r.blockSeconds
        let current = floorDiv(r.nowUnixSeconds, block) * block
        var firstEnd = current + block
        if firstEnd - r.nowUnixSeconds < block / 10 { firstEnd += block }
        let prices = r.priceSeries.sorted { $0.startUnixSeconds < $1.startUnixSeconds }
        let forecast = r.forecast.sorted { $0.startUnixSeconds < $1.startUnixSeconds }
        var slots: [PlanSlotInput] = []
        slots.reserveCapacity(r.horizonBlocks)
        var start = r.nowUnixSeconds
        var end = firstEnd
        for _ in 0..<r.horizonBlocks {
            let blockStart = floorDiv(start, block) * block
            let price: (importPerKWh: Double, exportPerKWh: Double)
            if let p = covering(prices, start, block, \.startUnixSeconds) {
                price = (p.importPerKWh, p.exportPerKWh)
            } else if let tariff = r.tariff {
                price = tariff.price(atUnixSeconds: start)
            } else {
                throw PlanningError(.priceMissing, message: "no price for the slot from \(RFC3339.text(start)): neither the series nor a tariff")
            }
            let point = covering(forecast, blockStart, block, \.startUnixSeconds) ?? r.persistence?.point(startUnixSeconds: blockStart)
            slots.append(PlanSlotInput(startUnixSeconds: start, hours: Double(end - start) / 3600, loadKW: point?.loadKW ?? 0,
                                       pvKW: point?.pvKW ?? 0, priceImportPerKWh: price.importPerKWh, priceExportPerKWh: price.exportPerKWh))
            start = end
            end += block
        }
        return slots
    }

    /// The last element of `sorted` whose start is at or before `t` and less than `block` before it.
    static func covering<T>(_ sorted: [T], _ t: Int64, _ block: Int64, _ start: KeyPath<T, Int64>) -> T? {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid][keyPath: start] <= t { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return nil }
        let found = sorted[low - 1]
        return t - found[keyPath: start] < block ? found : nil
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
