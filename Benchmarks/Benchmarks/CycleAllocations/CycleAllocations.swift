import Benchmark
import ControlCore
import Glibc
import Simulation
import Cycle
import Config
import Synchronization

/// Heap allocations of the control cycle in its steady state: the exact code the cycle thread runs
/// each period (SiteRunner.run: mailbox, the site's step, status and statistics published under the
/// lock), on a simulated site of 1, 8 and 32 units, 1,000 cycles per measured iteration after
/// 3,000 cycles of warm-up (limits ramped up, rule state settled, an energy block closed).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .mallocCountSmall, .mallocCountLarge, .wallClock],
        maxDuration: .seconds(10), maxIterations: 10)

    for units in [1, 8, 32] {
        Benchmark("1000 cycles, \(units) simulated units") { benchmark in
            let (runner, shared) = makeCycle(units: units)
            measureCycles(runner, shared, benchmark)
            // The walk (σ 0.1 Hz) leaves the 49.90–50.05 Hz deadband again and again, so the frequency
            // event assessor's whole path (start, accumulate, end, ring, publication) is in these cycles.
            precondition(shared.frequencyEventTally.count >= 3, "no frequency events were assessed")
        }
    }

    // The site with its connection point acting: a simulated meter, grid limits, peak shaving and a
    // load that steps across the limits every 30 s (so floors, targets and blocks all move).
    Benchmark("1000 cycles, 32 simulated units, site meter with grid limits and peak shaving") { benchmark in
        let (runner, shared) = makeCycle(units: 32, site: true)
        measureCycles(runner, shared, benchmark)
        precondition(shared.site.gridPower.isFinite, "the site meter never read")
    }

    // The block schedule in force (issue 60): 60 s blocks alternating 1,200 and 300 kW of import at
    // the meter, on the wall clock the cycle is handed (so blocks open and close in these cycles, their
    // reports drained into the outbox), the window republished every 60 s as the store does.
    Benchmark("1000 cycles, 32 simulated units, site meter with a block schedule in force") { benchmark in
        let (runner, shared) = makeCycle(units: 32, site: true, schedule: true)
        let start: Int64 = 1_800_000_000
        let blocks = (0..<8).map { ScheduleBlock(startUnixSeconds: start + Int64($0) * 60, targetKWh: $0 % 2 == 0 ? -20 : -5) }
        let window = ScheduleWindow(Schedule(id: "bench", revision: 1, source: .optimiser, lengthSeconds: 60, blocks: blocks),
                                    from: start, generation: 1)
        shared.publishSchedule(window)
        var k = 0
        measureCycles(runner, shared, benchmark, between: { _ in
            k += 1
            if k % 600 == 0 { shared.publishSchedule(window) }
        }, wallClock: { Double(start) + Double($0.nanoseconds) / 1e9 })
        precondition(!shared.takeScheduleReports().isEmpty, "no block of the schedule closed")
    }

    // Frequency from a PMU (followPMU, the slot's read, DFREQ as ROCOF): a sample published between
    // cycles, 10 s above the deadband, 10 s inside it, 10 s below it (each longer than the events'
    // entry and exit delays, so events start and end), and 1 s of silence every 20 s (older than
    // max_age_ms: the fallback to the inverters and the return are in these cycles too).
    Benchmark("1000 cycles, 32 simulated units, frequency from a PMU") { benchmark in
        let slot = FrequencySampleSlot()
        let (runner, shared) = makeCycle(units: 32, pmu: slot)
        var k = 0
        measureCycles(runner, shared, benchmark) { now in
            k += 1
            guard k % 200 >= 10 else { return }
            let phase = k % 300
            let hz = phase < 100 ? 50.15 : phase < 200 ? 50.0 : 49.8
            slot.publish(PMUSample(frequency: Hertz(hz + 0.01 * sin(Double(k) / 7)), rocofHzPerSecond: 0.01 / 0.7 * cos(Double(k) / 7),
                                   takenAt: now - .milliseconds(20), frameTime: 1_800_000_000 + Double(k) / 10))
        }
        precondition(shared.frequencyEventTally.count >= 3, "no frequency events were assessed")
    }

    // The utility's IEEE 2030.5 controls through the slot (the slot's read, the ramps, the connection
    // point with the utility's export and import limits): a new value every 5 s, as the 2030.5 worker
    // would publish it, cycling through export, import, generation/load with rampTms, a target with
    // setGradW and opModFreqDroop (the units' droop retuned and back), and a disconnect, so every
    // limit falls and rises in these cycles.
    Benchmark("1000 cycles, 32 simulated units, site meter with utility limits") { benchmark in
        let slot = UtilityLimitSlot()
        let (runner, shared) = makeCycle(units: 32, site: true, utility: slot)
        var k = 0
        measureCycles(runner, shared, benchmark) { now in
            k += 1
            guard k % 50 == 0 else { return }
            var limits = UtilityLimits()
            switch (k / 50) % 5 {
            case 0: limits.exportLimitW = 500_000
            case 1: limits.importLimitW = 800_000
            case 2: limits.generationLimitW = 1_000_000; limits.loadLimitW = 600_000; limits.rampSeconds = 3
            case 3:
                limits.targetW = 900_000; limits.maxLimW = 2_000_000; limits.gradientWPerSecond = 50_000
                limits.droop = UtilityDroop(deadbandOverHz: 0.02, deadbandUnderHz: 0.02, droopOverPercent: 4, droopUnderPercent: 4,
                                            responseTime: .seconds(2))
            default: limits.connect = false
            }
            limits.validUntil = now + .seconds(6)
            slot.publish(limits)
        }
        precondition(shared.site.utility.active, "the utility's value never reached the cycle")
    }

    // Each unit's reactive law in the cycle (issue 59): volt-var with volt-watt on the simulated
    // inverters' voltage (230 V ± 0.5 % with power, on a 225 V nominal: about 1.02 p.u., around V3),
    // so the stage steps every law, volt-watt's filter included, and writes Q in every measured cycle.
    Benchmark("1000 cycles, 32 simulated units, volt-var and volt-watt per unit") { benchmark in
        let (runner, shared) = makeCycle(units: 32, reactive: true)
        measureCycles(runner, shared, benchmark)
        precondition(shared.units.allSatisfy { $0.reactiveSetpoint.isFinite }, "no unit had a reactive setpoint")
    }

    // The site's law at the connection point (issue 59 slice 5): volt-var and volt-watt on the
    // simulated meter's voltage, Q held at the meter and shared by free apparent power, with the
    // utility's var controls through the slot taking over and ending every 5 s (a fixed var, a
    // target var, a power factor each way, then none: the site's law takes over from where Q stands).
    Benchmark("1000 cycles, 32 simulated units, volt-var at the connection point under the utility's var controls") { benchmark in
        let slot = UtilityLimitSlot()
        let (runner, shared) = makeCycle(units: 32, site: true, utility: slot, siteReactive: true)
        var k = 0
        measureCycles(runner, shared, benchmark) { now in
            k += 1
            guard k % 50 == 0 else { return }
            var limits = UtilityLimits()
            switch (k / 50) % 4 {
            case 0: limits.fixedVar = 300_000
            case 1: limits.targetVar = -200_000
            case 2: limits.powerFactorInjecting = 0.95; limits.powerFactorAbsorbing = -0.97
            default: break
            }
            limits.validUntil = now + .seconds(6)
            slot.publish(limits)
        }
        precondition(shared.units.allSatisfy { $0.reactiveSetpoint.isFinite }, "no unit had a reactive setpoint")
    }

    // The allocation alone: 10,000 calls over units with uneven headroom and SOC.
    for units in [1, 8, 32] {
        Benchmark("SiteAllocator.allocate x 10000, \(units) units") { benchmark in
            var allocator = SiteAllocator(units: units)
            var inputs: [AllocationInput] = []
            for i in 0..<units {
                let request = Double(20_000 + 1_000 * i)
                let charge = Double(10_000 + 7_000 * (i % 13))
                let discharge = Double(5_000 + 9_000 * (i % 11))
                let soc = Double(10 + (i * 37) % 80)
                inputs.append(AllocationInput(request: request, allowedCharge: charge, allowedDischarge: discharge, soc: soc))
            }
            var shares = [Double](repeating: 0, count: units)
            var reasons = [ShareReason](repeating: .idle, count: units)
            benchmark.startMeasurement()
            var delivered = 0.0
            for k in 0..<10_000 {
                let sign: Double = k % 2 == 0 ? 1 : -1
                let pool: Double = sign * 40_000 * Double(units)
                delivered += allocator.allocate(inputs, pool: pool, shares: &shares, reasons: &reasons).delivered
            }
            benchmark.stopMeasurement()
            blackHole(delivered)
        }
    }

    // Calibration: proves the counter sees allocations (1,000 heap arrays must count ≥ 1,000).
    Benchmark("calibration: 1000 heap arrays") { benchmark in
        for i in 0..<1000 { blackHole(Array(repeating: i, count: 64)) }
    }
}

/// 3,000 cycles of warm-up, then 1,000 measured, with a reader on another thread: it hammers what
/// status, /metrics and the uplink read, copying into storage of its own under the same lock; the
/// cycle must not copy-on-write or allocate because of it. (The reader copies into preallocated
/// storage, so any allocation counted in the measured window is the cycle's.)
/// `between`, when given, runs before each cycle (a PMU sample published, as the reader thread would);
/// `wallClock`, when given, is the wall clock each cycle is handed (else the system's).
func measureCycles(_ runner: SiteRunner, _ shared: SharedState, _ benchmark: Benchmark,
                   between: (MonotonicInstant) -> Void = { _ in }, wallClock: ((MonotonicInstant) -> Double)? = nil) {
    let reader = Reader(shared: shared)
    reader.start()
    defer { reader.stop() }
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    for _ in 0..<3000 {
        now = now + .milliseconds(100)
        between(now)
        runner.run(now: now, lateness: .zero, wallClock: wallClock?(now))
    }
    benchmark.startMeasurement()
    for _ in 0..<1000 {
        now = now + .milliseconds(100)
        between(now)
        runner.run(now: now, lateness: .zero, wallClock: wallClock?(now))
    }
    benchmark.stopMeasurement()
    blackHole(runner.counters.cycles)
    precondition(reader.reads.load(ordering: .relaxed) > 0, "the reader never ran")
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

func makeCycle(units: Int, site: Bool = false, pmu: FrequencySampleSlot? = nil, utility: UtilityLimitSlot? = nil, reactive: Bool = false,
               siteReactive: Bool = false, schedule: Bool = false)
    -> (SiteRunner, SharedState)
{
    var yaml = """
    mode: simulation
    period_ms: 100
    control_socket: /tmp/bessd-benchmark.sock
    state_directory: /tmp/bessd-benchmark
    grid_integration:
      frequency_source: simulated
      droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0}
    \(reactive ? "  reactive_power: {mode: volt_var, nominal_voltage_v: 225, volt_watt: {enabled: true}}\n" : "")simulation:
      frequency_profile: walk
      amplitude_hz: 0.1
    bess_units:

    """
    for i in 0..<units {
        yaml += "  - {id: BENCH_\(i), campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100}\n"
    }
    if site {
        yaml += "site:\n  meter: {protocol: sunspec}\n"
            + "  grid_limits: {import_max_kw: \(units * 60), export_max_kw: 0}\n"
            + "  application: peak_shaving\n"
            + "  peak_shaving: {import_max_kw: \(units * 40), recharge_below_kw: \(units * 20)}\n"
            + (siteReactive ? "  reactive_power: {mode: volt_var, nominal_voltage_v: 230, volt_watt: {enabled: true}}\n" : "")
        yaml = yaml.replacingOccurrences(
            of: "simulation:\n",
            with: "simulation:\n  load: {profile: steps, base_kw: \(units * 30), levels_kw: [\(units * 90), \(units * 10)], step_period_s: 30}\n")
    }
    var configuration = try! ConfigLoader.parse(yaml, file: "benchmark.yaml")
    if pmu != nil {
        configuration.grid.frequencySource = .pmu
        configuration.grid.pmu = PMUSettings(host: "127.0.0.1", port: 4712, idcode: 1410, maxAge: .milliseconds(500))
    }
    let runner = try! SiteRunner.make(configuration: configuration, startedAt: MonotonicInstant(nanoseconds: 1_000_000_000)) { _ in }
    if schedule {
        var settings = runner.settings
        settings.schedule = ScheduleSettings(lengthSeconds: 60, fallback: .zero)
        try! runner.reconfigure(settings, now: MonotonicInstant(nanoseconds: 1_000_000_000))
    }
    runner.pmuSamples = pmu
    runner.utilityLimits = utility
    let shared = SharedState(units: units, view: SiteView.Settings(capacitiesWh: [], ratingsW: configuration.units.map { $0.maxPowerKW * 1000 }))
    runner.attach(shared)
    return (runner, shared)
}
