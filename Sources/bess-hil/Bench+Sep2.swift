import ArgumentParser
import BessSystem
import ControlCore
import Foundation
import Glibc

/// A 2030.5 DERControl's scheduled start → the timed unit's first setpoint towards it on its wire, and
/// the 2030.5 client's CPU time over the same run (issue 48's two benchmark rows).
///
/// bess-hil runs the plant (8 units on Modbus TCP, as pmu-wire does) below the droop deadband, so the
/// site discharges; hil/peers/sep2_server.py (TLS CCM8, client certificates) publishes, before the
/// first starts, `controls` back-to-back DERControls of `seconds` each, starting on whole Unix
/// seconds on the server's time (the same host's wall clock, its Time resource's offset zero, no
/// randomisation), their `opModGenLimW` alternating so that each moves the timed unit's setpoint.
/// Each start is placed on CLOCK_MONOTONIC through one pairing of the wall and monotonic clocks; the
/// first write to the timed inverter that moves by more than 100 W from 200 ms before the start ends
/// the sample (a write before the start counts negative). The client's thread (`bessd-2030.5`) is
/// found by name in /proc/<pid>/task and its CPU time read before and after the controls.
/// The starts fall on whole seconds and the cycle's period divides a second, so one bessd meets every
/// start at the same phase of its cycle: `--rounds N` starts bessd N times, each after a random wait
/// of up to one period, and shares the controls out among them, so the samples cover the phase.
struct Sep2WireLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sep2-wire",
        abstract: "2030.5 DERControl start (server time) → new setpoint on the inverter's wire; the 2030.5 client's CPU.")
    @Option(help: "DERControls to time.") var controls = 100
    @Option(help: "Each control's duration, s (back to back).") var seconds = 3
    @Option(help: "The server's pollRate and bessd's poll_s, s.") var pollS = 10
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site, each with its own inverter on its own port; the first is timed.") var units = 8
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "hil/peers (where sep2_server.py is).") var peers = "hil/peers"
    @Option(help: "Write one latency (ms) per line here.") var csv: String?
    @Option(help: "bessd starts, each at a random phase of its cycle; the controls are shared out among them.") var rounds = 1

    func validate() throws {
        guard controls > 0, seconds >= 2, pollS >= 1, (1...controls).contains(rounds) else {
            throw ValidationError("--controls > 0, --seconds ≥ 2, --poll-s ≥ 1, 1 ≤ --rounds ≤ --controls")
        }
    }

    func run() throws {
        let directory = "/tmp/bess-hil-sep2-\(getpid())"
        // A default export limit at the site's rating: without a meter it bounds Σ units, and must not bind.
        let settings = Scenario.Sep2Settings(pollSeconds: pollS, defaultLimits: ["opModExpLimW": Double(units) * 100_000],
                                             peersDirectory: URL(fileURLWithPath: peers).standardized.path)
        let server: Sep2Plant
        do { server = try Sep2Plant(settings: settings, directory: directory) } catch { throw ValidationError("\(error)") }
        defer { server.stop() }
        var latencies: [Double] = []
        var misses = 0
        var (elapsed, cpu, polls) = (0.0, 0.0, 0)
        var next = 0
        for round in 0..<rounds {
            // The controls shared out among the rounds, the remainder to the first ones.
            let count = controls / rounds + (round < controls % rounds ? 1 : 0)
            // A fresh bessd whose cycle starts at a phase drawn uniformly over one period: the starts fall on whole
            // seconds, so within one bessd they always meet the cycle at the same phase.
            usleep(UInt32.random(in: 0..<UInt32(max(1, bessd.periodMs) * 1000)))
            let result = try runRound(server: server, directory: directory, first: next, count: count)
            next += count
            latencies += result.latencies
            misses += result.misses
            elapsed += result.elapsed
            cpu += result.cpuMs
            polls += result.polls
        }
        print(String(format: "sep2-wire: %d controls of %d s over %d bessd start(s), first writes at %@ ms from the start", controls, seconds,
                     rounds, latencies.prefix(6).map { String(format: "%.1f", $0) }.joined(separator: " ")))
        try report("sep2_start_to_setpoint", latencies, misses: misses, csv: csv)
        print(String(format: "SUMMARY sep2_client_cpu seconds=%.1f cpu_ms=%.1f polls=%d share_pct=%.4f ms_per_poll=%.2f", elapsed, cpu, polls,
                     cpu / (elapsed * 1000) * 100, polls > 0 ? cpu / Double(polls) : .nan))
    }

    /// One bessd started on the plant, `count` controls (mRIDs from `first` on) timed against it, then stopped.
    private func runRound(server: Sep2Plant, directory: String, first: Int, count: Int) throws
        -> (latencies: [Double], misses: Int, elapsed: Double, cpuMs: Double, polls: Int) {
        let block = "ieee2030_5: {server: \"https://127.0.0.1:\(server.port)/dcap\", cert_file: \(directory)/client.pem, "
            + "key_file: \(directory)/client.key, ca_file: \(directory)/ca.pem, pin: \"111115\", poll_s: \(pollS), timeout_s: 2}"
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessd.path, units: units,
                                  extraConfig: (realtime ? "realtime: {priority: 60}\n" : "") + "limits: {ramp_percent_per_s: 1000}\n" + block)
        defer { bench.stop() }
        try bench.waitReady()
        bench.hz = 48.5  // below the deadband: every unit discharges (droop), so a generation limit binds
        bench.run(for: 2)
        guard let pid = bench.bessd?.processIdentifier, let tid = Self.thread(named: "bessd-2030.5", of: pid) else {
            throw ValidationError("bessd has no thread bessd-2030.5 (is the ieee2030_5 block read?); log in \(bench.directory)/bessd.log")
        }
        // The schedule: published at once, the first start two polls ahead on a whole second.
        let start0 = Int(Date().timeIntervalSince1970.rounded(.up)) + 2 * pollS + 3
        for i in 0..<count {
            let limit = (first + i) % 2 == 0 ? 160_000.0 : 80_000.0
            let answer = server.send(.control(mrid: String(format: "%04X", 0xB000 + first + i), start: Double(start0 + i * seconds),
                                              duration: Double(seconds), limits: ["opModGenLimW": limit]), now: Date().timeIntervalSince1970)
            guard answer.hasPrefix("ok") else { throw ValidationError("sep2_server.py: \(answer)") }
        }
        // One pairing of the clocks: a Unix second → its monotonic instant.
        let (wall, mono) = (Date().timeIntervalSince1970, SystemClock.shared.now())
        func instant(_ unix: Int) -> MonotonicInstant { mono + .seconds(fromDouble: Double(unix) - wall) }
        let cpuBefore = Self.cpuNanoseconds(pid: pid, tid: tid)
        let pollsBefore = Self.polls(server.logPath)
        let started = SystemClock.shared.now()
        var latencies: [Double] = []
        var misses = 0
        for i in 0..<count {
            let start = instant(start0 + i * seconds)
            let look = start - .milliseconds(200)
            while SystemClock.shared.now() < look { usleep(1_000); bench.tick() }
            let before = bench.lastCommanded
            guard let w = bench.firstWrite(after: look, timeout: 0.2 + Double(seconds) - 0.5, { abs($0 - before) > 100 }) else {
                misses += 1
                continue
            }
            latencies.append(milliseconds(w - start))
        }
        let elapsed = Double((SystemClock.shared.now() - started).nanosecondsClamped) / 1e9
        let cpu = Double(Self.cpuNanoseconds(pid: pid, tid: tid) - cpuBefore) / 1e6
        return (latencies, misses, elapsed, cpu, Self.polls(server.logPath) - pollsBefore)
    }

    /// The thread of `pid` whose name (`comm`) is `name`.
    static func thread(named name: String, of pid: Int32) -> Int32? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { Int32($0) }.first { tid in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    /// The thread's CPU time (user + system) from /proc/<pid>/task/<tid>/stat, ns (clock-tick resolution).
    static func cpuNanoseconds(pid: Int32, tid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        // After "pid (comm)": state is field 3, utime and stime fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return (user + system) * (1_000_000_000 / max(1, sysconf(Int32(_SC_CLK_TCK))))
    }

    /// The client's polls so far: its reads of the control list in the server's log.
    static func polls(_ log: String) -> Int {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.contains("\"path\": \"/derp/1/derc") }.count
    }
}
