@testable import Config
import ControlCore
import Foundation
@testable import Planning
@testable import Service
import Testing

/// The optimiser's plan turned into the block schedule the executor follows (OptimiserInputs).
@Suite("Optimiser: plan to schedule")
struct OptimiserInputsTests {
    static func inputs(meter: Bool) throws -> OptimiserInputs {
        let yaml = "mode: simulation\nbess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\nschedule: {block_s: 60}\n"
            + (meter ? "site:\n  meter: {protocol: sunspec}\n" : "")
        let configuration = try ConfigLoader.parse(yaml, file: "o.yaml")
        var settings = OptimiserConfiguration()
        settings.enabled = true
        return OptimiserInputs(settings: settings, blockSeconds: 60, site: ScheduleSite(configuration))
    }

    static func slot(_ start: Int64, hours: Double, charge: Double = 0, discharge: Double = 0, imp: Double = 0, exp: Double = 0) -> PlanSlot {
        PlanSlot(startUnixSeconds: start, hours: hours, chargeKW: charge, dischargeKW: discharge, importKW: imp, exportKW: exp,
                 socKWh: 100, priceImportPerKWh: 5, priceExportPerKWh: 2)
    }

    static func plan(_ slots: [PlanSlot]) -> Plan {
        Plan(slots: slots, objective: 0, objectiveParts: PlanObjectiveParts(energy: 0, wear: 0, demand: 0, endValue: 0, penalty: 0),
             violations: [], solveMs: 1, optimal: true)
    }

    @Test("without a meter each block not begun gets the units' energy; slot 0's begun block is left to the executor")
    func unmetered() throws {
        let inputs = try Self.inputs(meter: false)
        // Made at 30 s into the block from 6000: slot 0 is the 30 s left; then two whole blocks.
        let s = inputs.schedule(Self.plan([Self.slot(6030, hours: 30.0 / 3600, discharge: 60),
                                           Self.slot(6060, hours: 1.0 / 60, discharge: 30, exp: 10),
                                           Self.slot(6120, hours: 1.0 / 60, charge: 60, imp: 80)]), madeAt: 6030)
        #expect(s.id == "optimiser" && s.revision == 6030 && s.source == .optimiser && s.lengthSeconds == 60)
        #expect(s.blocks == [ScheduleBlock(startUnixSeconds: 6060, targetKWh: 0.5), ScheduleBlock(startUnixSeconds: 6120, targetKWh: -1)])
    }

    @Test("with a meter the target is the energy at the connection point; a slot 0 that runs past its block covers the next")
    func meteredAndLongSlot0() throws {
        let inputs = try Self.inputs(meter: true)
        // 3 s before the boundary the builder runs slot 0 on to the end of the next block (63 s).
        let s = inputs.schedule(Self.plan([Self.slot(6057, hours: 63.0 / 3600, discharge: 90, exp: 30),
                                           Self.slot(6120, hours: 1.0 / 60, charge: 20, imp: 50)]), madeAt: 6057)
        #expect(s.blocks == [ScheduleBlock(startUnixSeconds: 6060, targetKWh: 0.5), ScheduleBlock(startUnixSeconds: 6120, targetKWh: -50.0 / 60)])
    }
}
