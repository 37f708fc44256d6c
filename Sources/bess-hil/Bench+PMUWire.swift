import ArgumentParser
import BessSystem
import ControlCore
import Foundation
import Glibc
import Synchronization
import Synchrophasor

/// A frequency step in the PMU's data stream → the timed unit's first changed setpoint on its wire.
struct PMUWireLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pmu-wire",
        abstract: "PMU frequency step (C37.118.2 over TCP, bess-hil as the PMU) → new setpoint on the inverter's wire.")
    @Option(help: "Steps to time.") var steps = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site, each with its own inverter on its own port; the first is timed.") var units = 8
    @Option(help: "The PMU's data frames per second.") var rate = 50
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        let sender = try PMUSender(stream: PMUStream(idcode: 1410, pmus: 1, float: false, dataRate: Int16(clamping: rate)))
        sender.start()
        defer { sender.stop() }
        let source = "frequency_source: pmu\n  pmu: {host: 127.0.0.1, port: \(sender.port), transport: tcp, idcode: 1410, max_age_ms: 100}"
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessd.path, units: units,
                                  extraConfig: realtime ? "realtime: {priority: 60}" : "", frequencySource: source)
        defer { bench.stop() }
        try bench.waitReady()
        // bessd follows the PMU before anything is timed: its frames flow and a step moves the wire.
        let flowing = SystemClock.shared.now() + .seconds(15)
        while sender.frames < rate, SystemClock.shared.now() < flowing { bench.run(for: 0.1) }
        guard sender.frames >= rate else { throw ValidationError("bessd took no data from the PMU in 15 s; log in \(bench.directory)/bessd.log") }
        bench.run(for: 2)
        let before = bench.lastCommanded
        sender.step(to: 49.5)
        guard bench.firstWrite(after: SystemClock.shared.now(), timeout: 5, { abs($0 - before) > 100 }) != nil else {
            throw ValidationError("bessd's setpoints do not follow the PMU (is frequency_source: pmu wired?); log in \(bench.directory)/bessd.log")
        }
        sender.step(to: 50)
        bench.run(for: 1)
        let started = (SystemClock.shared.now(), sender.frames)
        let (latencies, misses) = bench.timeSteps(steps) { i in
            sender.step(to: i % 2 == 0 ? 49.5 : 50.0)
            // The stamp of the frame that carried it, once sent (the plant running meanwhile).
            let deadline = SystemClock.shared.now() + .seconds(1)
            while SystemClock.shared.now() < deadline {
                if let sentAt = sender.state.withLock({ $0.stepSentAt }) { return sentAt }
                usleep(200)
                bench.tick()
            }
            return nil
        }
        let seconds = Double((SystemClock.shared.now() - started.0).nanosecondsClamped) / 1e9
        print(String(format: "pmu-wire: %d frames in %.1f s (%.2f frames/s), %d connection(s)", sender.frames - started.1, seconds,
                     Double(sender.frames - started.1) / seconds, sender.state.withLock { $0.connections }))
        try report("pmu_step_to_setpoint", latencies, misses: misses, csv: csv)
    }
}
