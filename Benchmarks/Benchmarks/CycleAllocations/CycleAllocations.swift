import Benchmark
import ControlCore
import Glibc
import Plant
import Cycle
import Config
import Synchronization

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
            let (body, shared) = makeCycle(units: units)
            // A reader on another thread hammers what status, /metrics and the uplink read, copying
            // into storage of its own under the same lock; the cycle must not copy-on-write or
            // allocate because of it. (The reader copies into preallocated storage, so any
            // allocation counted in the measured window is the cycle's.)
            let reader = Reader(shared: shared)
            reader.start()
            defer { reader.stop() }
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
            precondition(reader.reads.load(ordering: .relaxed) > 0, "the reader never ran")
        }
    }

    // Calibration: proves the counter sees allocations (1,000 heap arrays must count ≥ 1,000).
    Benchmark("calibration: 1000 heap arrays") { benchmark in
        for i in 0..<1000 { blackHole(Array(repeating: i, count: 64)) }
    }
}

/// Reads every unit's status and the cycle statistics in a loop, as fast as the lock allows.
final class Reader: @unchecked Sendable {
    let shared: SharedState
    let running = Atomic<Bool>(false)
    let reads = Atomic<UInt64>(0)
    var thread = pthread_t()
    var units: [UnitStatus]
    var statistics = CycleStatistics()

    init(shared: SharedState) {
        self.shared = shared
        units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
    }

    func start() {
        running.store(true, ordering: .relaxed)
        let box = Unmanaged.passRetained(self)
        pthread_create(&thread, nil, { raw in
            let reader = Unmanaged<Reader>.fromOpaque(raw!).takeRetainedValue()
            while reader.running.load(ordering: .relaxed) {
                reader.shared.read(units: &reader.units)
                reader.shared.read(statistics: &reader.statistics)
                reader.reads.add(1, ordering: .relaxed)
            }
            return nil
        }, box.toOpaque())
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        pthread_join(thread, nil)
    }
}

func makeCycle(units: Int) -> (CycleBody, SharedState) {
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
    let runner = try! SiteRunner.make(configuration: configuration, startedAt: MonotonicInstant(nanoseconds: 1_000_000_000)) { _ in }
    let shared = SharedState(units: units)
    return (CycleBody(runner: runner, shared: shared), shared)
}
