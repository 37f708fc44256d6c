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
