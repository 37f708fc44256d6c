import Benchmark
import Planning

/// The optimiser's solve on CBC (model building, solve and post-processing: `PlanSolver.solve`), one
/// plan per iteration, wall clock on one core: targets 50 ms for 96 slots and 200 ms for 192.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .cpuTotal], maxDuration: .seconds(10), maxIterations: 50)
    for slots in [96, 192] {
        for negative in [false, true] {
            let problem = PlanCases.problem(slots: slots, negativeMidday: negative)
            Benchmark("plan solve, \(slots) slots\(negative ? ", negative prices at noon (binaries)" : "")") { benchmark in
                for _ in benchmark.scaledIterations {
                    guard let plan = try? PlanSolver.solve(problem), plan.optimal else { fatalError("no plan proven optimal") }
                    blackHole(plan)
                }
            }
        }
    }
}
