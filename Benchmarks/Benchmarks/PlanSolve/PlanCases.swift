import Foundation
import Planning

/// The plans `make bench` times: a day of 15-minute blocks (96 slots) and two days (192), on a
/// 500 kWh / 250 kW site with 400 kW of PV, a Kerala-shaped time-of-day tariff (peak 18–22 h at 1.5×,
/// off-peak 22–06 h at 0.75×), a demand charge above 300 kW, wear, an end value, an export limit of
/// 100 kW and a start below the reserve; `negativeMidday` adds negative prices at noon, so charge and
/// discharge need their binary in those slots (docs/optimiser.md, "Exclusivity").
enum PlanCases {
    static func problem(slots count: Int, negativeMidday: Bool) -> PlanProblem {
        let start: Int64 = 1_795_000_500
        var slots: [PlanSlotInput] = []
        for t in 0..<count {
            let hours = t == 0 ? 0.15 : 0.25
            let clock = (10.0 + 0.15 + 0.25 * Double(t - 1)).truncatingRemainder(dividingBy: 24)
            let load = 300 + 120 * sin((clock - 8) / 24 * 2 * .pi) + 25 * sin(Double(t) * 1.7)
            let pv = clock > 6 && clock < 18 ? 400 * sin((clock - 6) / 12 * .pi) : 0
            var price = 0.12 * (clock >= 18 && clock < 22 ? 1.5 : clock < 6 || clock >= 22 ? 0.75 : 1.0)
            if negativeMidday && clock >= 11 && clock < 14 { price = -0.03 }
            slots.append(PlanSlotInput(startUnixSeconds: start + Int64(t) * 900, hours: hours, loadKW: load, pvKW: pv,
                                       priceImportPerKWh: price, priceExportPerKWh: negativeMidday && price < 0 ? -0.05 : 0.6 * price))
        }
        let battery = PlanBattery(capacityKWh: 500, startKWh: 40, lowerKWh: 50, upperKWh: 475, maxChargeKW: 250, maxDischargeKW: 250,
                                  chargeEfficiency: 0.95, dischargeEfficiency: 0.95)
        return PlanProblem(slots: slots, battery: battery, grid: PlanGrid(importLimitKW: 600, exportLimitKW: 100), wearPerKWh: 0.02,
                           demandChargePerKW: 8, demandThresholdKW: 300, valueEndPerKWh: 0.08, endKWh: 250)
    }
}
