import BessBase
import Config
import ControlCore
import Cycle
import Foundation
import Planning
import Uplink

/// What the optimiser plans from and what it hands on: the problem of docs/optimiser.md built from the
/// configuration (tariff, costs, efficiencies), the site as the cycle last published it (the stored
/// energy, the units in service) with the bounds the schedule's check uses (`ScheduleSite`: the SOC
/// interlocks', the reserve and the energy kept for frequency response), prices and a forecast per
/// block; and the plan turned into the block schedule the executor follows.
struct OptimiserInputs: Sendable {
    let settings: OptimiserConfiguration
    let blockSeconds: Int64
    let site: ScheduleSite

    init(settings: OptimiserConfiguration, blockSeconds: Int64, site: ScheduleSite) {
        self.settings = settings
        self.blockSeconds = blockSeconds
        var site = site
        site.chargeEfficiency = settings.chargeEfficiency
        site.dischargeEfficiency = settings.dischargeEfficiency
        self.site = site
    }

    /// The problem at `now` (Unix seconds), slots as `PlanBuilder` makes them (slot 0 to the end of
    /// the current block, `horizon_blocks` slots in all): prices pushed by the aggregator before the
    /// tariff, the forecast file before a pushed forecast before the meter's history. The battery is
    /// the site as the schedule's check sees it (`ScheduleSite`); the grid limits count with a meter
    /// only (without one the targets are the units' own energy). A failure says why, coded.
    func problem(now: Int64, view: SiteView, units: [UnitStatus], prices: [PricePoint], forecast: [ForecastPoint],
                 history: PersistenceForecast) -> Result<PlanProblem, PlanFailure> {
        guard let input = site.input(view: view, units: units) else {
            return .failure(PlanFailure("PLAN_NO_SOC: no unit reads its SOC yet"))
        }
        let battery = PlanBattery(
            capacityKWh: input.capacityKWh, startKWh: input.socKWh, lowerKWh: input.lowerKWh, upperKWh: input.upperKWh,
            maxChargeKW: input.maxChargeKW, maxDischargeKW: input.maxDischargeKW,
            chargeEfficiency: settings.chargeEfficiency, dischargeEfficiency: settings.dischargeEfficiency)
        let grid = input.metered ? PlanGrid(importLimitKW: input.importLimitKW, exportLimitKW: input.exportLimitKW) : PlanGrid()
        let site = PlanProblem(
            slots: [], battery: battery, grid: grid, wearPerKWh: settings.wearPerKWh,
            demandChargePerKW: settings.demandChargePerKW, demandThresholdKW: settings.demandThresholdKW,
            valueEndPerKWh: settings.valueEndPerKWh, endKWh: settings.endSOCPercent.map { input.capacityKWh * $0 / 100 })
        let request = PlanRequest(nowUnixSeconds: now, blockSeconds: blockSeconds, horizonBlocks: settings.horizonBlocks,
                                  tariff: settings.tariff, priceSeries: prices, forecast: forecast, persistence: history)
        do throws(PlanningError) {
            return .success(try PlanBuilder.problem(request, site: site))
        } catch {
            return .failure(PlanFailure("\(error)"))
        }
    }

    /// The plan as the optimiser's schedule: one block per block a slot covers that has not begun,
    /// each target the energy at the connection point with a meter (export − import) or the units' energy without one (discharge − charge), kWh, + = export. The
    /// revision is the time it was made, so a restarted daemon's plan is never taken for an old one.
    func schedule(_ plan: Plan, madeAt: Int64) -> Schedule {
        var blocks: [ScheduleBlock] = []
        for slot in plan.slots {
            let kw = site.metered ? slot.exportKW - slot.importKW : slot.dischargeKW - slot.chargeKW
            // Every whole block the slot covers that has not begun (slot 0 may run on past the current block).
            let end = slot.startUnixSeconds + Int64((slot.hours * 3600).rounded())
            var start = ScheduleStore.blockStart(slot.startUnixSeconds, blockSeconds)
            while start < end {
                if start > madeAt { blocks.append(ScheduleBlock(startUnixSeconds: start, targetKWh: kw * Double(blockSeconds) / 3600)) }
                start += blockSeconds
            }
        }
        return Schedule(id: "optimiser", revision: Int(madeAt), source: .optimiser, lengthSeconds: blockSeconds, blocks: blocks)
    }
}

/// Why no plan was made, its code first: `PLAN_NO_SOC: …`.
struct PlanFailure: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text }
}
