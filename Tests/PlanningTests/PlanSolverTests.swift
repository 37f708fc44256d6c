import Foundation
import Testing
@testable import Planning

/// The solver on cases small enough to solve by hand (docs/optimiser.md; the reference's 4-slot case).
@Suite struct PlanSolverTests {
    /// Prices 2/10/2/10 per kWh, load 5 kW, a 10 kWh / 5 kW battery empty at the start, η_c 0.9, η_d 1, 1 h slots.
    static func handCase(demand: Double = 0) -> PlanProblem {
        let prices = [2.0, 10, 2, 10]
        let slots = prices.enumerated().map { t, p in
            PlanSlotInput(startUnixSeconds: Int64(t) * 3600, hours: 1, loadKW: 5, pvKW: 0, priceImportPerKWh: p, priceExportPerKWh: 0)
        }
        let battery = PlanBattery(capacityKWh: 10, startKWh: 0, lowerKWh: 0, upperKWh: 10, maxChargeKW: 5, maxDischargeKW: 5,
                                  chargeEfficiency: 0.9, dischargeEfficiency: 1)
        return PlanProblem(slots: slots, battery: battery, demandChargePerKW: demand)
    }

    @Test func arbitrageByHand() throws {
        let plan = try PlanSolver.solve(Self.handCase())
        #expect(abs(plan.objective - 50) < 1e-6)
        #expect(plan.optimal)
        #expect(plan.violations.isEmpty)
        #expect(plan.slots.map(\.chargeKW).map { ($0 * 1e6).rounded() / 1e6 } == [5, 0, 5, 0])
        #expect(plan.slots.map(\.dischargeKW).map { ($0 * 1e6).rounded() / 1e6 } == [0, 4.5, 0, 4.5])
    }

    @Test func demandChargeKeepsTheBatteryIdle() throws {
        let plan = try PlanSolver.solve(Self.handCase(demand: 20))
        #expect(abs(plan.objective - 220) < 1e-6)
        #expect(abs(plan.objectiveParts.demand - 100) < 1e-6)
    }

    /// A start below the floor and an import limit below the load: both slack, named, least violation first.
    @Test func infeasibleLimitsBecomeNamedSlack() throws {
        var p = Self.handCase()
        p.battery.startKWh = 0
        p.battery.lowerKWh = 2
        p.grid.importLimitKW = 3
        let plan = try PlanSolver.solve(p)
        let limits = Set(plan.violations.map(\.limit))
        #expect(limits.contains(.importLimit))
        #expect(limits.contains(.socLower) || plan.slots[0].socKWh >= 2 - 1e-9)
        #expect(plan.objectiveParts.penalty > 0)
        // Least violation first: the import limit's 2 kW over 4 h cannot be bettered with a 5 kW battery
        // that must first be charged from the same grid.
        #expect(plan.optimal)
    }

    @Test func refusesWhatIsNotAProblem() {
        var p = Self.handCase()
        p.slots[1].hours = 0
        #expect(throws: PlanningError.self) { try PlanSolver.solve(p) }
        p = Self.handCase()
        p.battery.chargeEfficiency = 1.2
        #expect(throws: PlanningError.self) { try PlanSolver.solve(p) }
        p.slots = []
        #expect(throws: PlanningError.self) { try PlanSolver.solve(p) }
    }
}

/// The solver from several threads at once, and against its time limit.
@Suite struct PlanSolverRunTests {
    /// 48 slots of inverted prices (export above import) and negative ones: binaries in every slot.
    static func hardCase(slots count: Int) -> PlanProblem {
        var slots: [PlanSlotInput] = []
        for t in 0..<count {
            let price = 0.2 + 0.15 * sin(Double(t) * 0.9) - (t % 7 == 3 ? 0.3 : 0)
            slots.append(PlanSlotInput(startUnixSeconds: Int64(t) * 900, hours: 0.25, loadKW: 40 + 30 * sin(Double(t) * 0.4),
                                       pvKW: max(0, 80 * sin(Double(t) * 0.13)), priceImportPerKWh: price,
                                       priceExportPerKWh: price + 0.05 * cos(Double(t) * 1.3)))
        }
        let battery = PlanBattery(capacityKWh: 200, startKWh: 20, lowerKWh: 30, upperKWh: 190, maxChargeKW: 100, maxDischargeKW: 100,
                                  chargeEfficiency: 0.93, dischargeEfficiency: 0.95)
        return PlanProblem(slots: slots, battery: battery, grid: PlanGrid(importLimitKW: 90, exportLimitKW: 50), wearPerKWh: 0.01,
                           demandChargePerKW: 0.5, demandThresholdKW: 60, valueEndPerKWh: 0.1, endKWh: 120)
    }

    @Test func concurrentSolvesAgreeWithOneAtATime() async throws {
        let problems = (0..<6).map { k in Self.hardCase(slots: 12 + 4 * k) }
        let alone = try problems.map { try PlanSolver.solve($0) }
        let together = try await withThrowingTaskGroup(of: (Int, Plan).self) { group in
            for (k, p) in problems.enumerated() { group.addTask { (k, try PlanSolver.solve(p)) } }
            var plans = [Plan?](repeating: nil, count: problems.count)
            for try await (k, plan) in group { plans[k] = plan }
            return plans
        }
        for k in problems.indices {
            #expect(alone[k].optimal && together[k]?.optimal == true)
            #expect(abs(alone[k].objective - (together[k]?.objective ?? .nan)) <= 1e-6 * max(1, abs(alone[k].objective)))
        }
    }

    /// A time limit too short to prove anything: the best answer found (at worst the idle plan), said
    /// not proven, its SOC still by the dynamics and its flows still exclusive.
    @Test func aTimeLimitReturnsTheBestFoundNotProven() throws {
        let p = Self.hardCase(slots: 192)
        let plan = try PlanSolver.solve(p, timeLimitSeconds: 1e-6)
        let proven = try PlanSolver.solve(p)
        #expect(!plan.optimal)
        #expect(proven.optimal)
        #expect(plan.objective >= proven.objective - 1e-6 * abs(proven.objective))
        #expect(plan.slots.count == 192)
        var soc = p.battery.startKWh
        for (t, s) in plan.slots.enumerated() {
            soc += (0.93 * s.chargeKW - s.dischargeKW / 0.95) * p.slots[t].hours
            #expect(abs(s.socKWh - soc) < 1e-9 * max(1, soc))
            #expect(!(s.chargeKW > 1e-6 && s.dischargeKW > 1e-6) && !(s.importKW > 1e-6 && s.exportKW > 1e-6))
        }
    }
}
