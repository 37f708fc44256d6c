import Benchmark
import ControlCore
import Runtime

/// Heap allocations of the control cycle in its steady state: the exact code the cycle thread runs
/// each period (CycleBody.run: mailbox, the site's step, status and statistics published under the
/// lock), on a simulated site of 1, 8 and 32 units, 1,000 cycles per measured iteration after
/// 3,000 cycles of warm-up (limits ramped up, rule state settled, an energy block closed).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .mallocCountSmall, .mallocCountLarge, .wallClock],
        maxDuration: .seconds(10), maxIterations: 10)

    for units in [1, 8, 32] {
        Benchmark("1000 cycles, \(units) simulated units") { benchmark in
            let body = makeCycle(units: units)
            var now = MonotonicInstant(nanoseconds: 1_000_000_000)
            for _ in 0..<3000 {
                now = now + .milliseconds(100)
                body.run(now: now, lateness: 0)
            }
            benchmark.startMeasurement()
            for _ in 0..<1000 {
                now = now + .milliseconds(100)
                body.run(now: now, lateness: 0)
            }
            benchmark.stopMeasurement()
            blackHole(body.cycles)
        }
    }

    // Calibration: proves the counter sees allocations (1,000 heap arrays must count ≥ 1,000).
    Benchmark("calibration: 1000 heap arrays") { benchmark in
        for i in 0..<1000 { blackHole(Array(repeating: i, count: 64)) }
    }
}

func makeCycle(units: Int) -> CycleBody {
    var yaml = """
    mode: simulation
    period_ms: 100
    control_socket: /tmp/bessd-benchmark.sock
    state_directory: /tmp/bessd-benchmark
    grid_integration:
      frequency_source: simulated
      droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0}
    simulation:
      frequency_profile: walk
      amplitude_hz: 0.1
    bess_units:

    """
    for i in 0..<units {
        yaml += "  - {id: BENCH_\(i), campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100}\n"
    }
    let configuration = try! ConfigLoader.parse(yaml, file: "benchmark.yaml")
    let runner = try! SiteRunner(configuration: configuration, startedAt: MonotonicInstant(nanoseconds: 1_000_000_000)) { _ in }
    return CycleBody(runner: runner, shared: SharedState(units: units))
}
