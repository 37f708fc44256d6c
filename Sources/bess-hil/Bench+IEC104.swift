import BessSystem
import ArgumentParser
import ControlCore
import Fieldbus
import ControlProtocol
import Foundation
import Glibc
import Simulation
import HILPlant
import Scada
import Cycle
import Config
import Synchronization

/// IEC 104 on the wire beside units on Modbus TCP (each inverter on its own port, bessd SCHED_FIFO
/// 60), against a raw-socket controlling station (hil/peers/iec104_bench.py) that stamps next to its
/// socket calls on the same clock (CLOCK_MONOTONIC) as the plant:
/// - an AGC target (C_SE_NC_1 on 3001, AGC in service first) → the first setpoint on the timed
///   unit's wire that moves towards its share of the target: the schedule ramp is 1000 %/s, so at
///   100 ms that write is the whole step, and at 10 ms it is the ramp's first step;
/// - a frequency change at the plant's registers (inside the droop deadband) → its spontaneous
///   M_ME_TF_1 on IOA 1004 at the station.
struct IEC104Latency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iec104-latency",
        abstract: "IEC 104: AGC target (C_SE_NC_1) → setpoint on the inverter's wire; frequency change → spontaneous frame.")
    @Option(help: "AGC targets to time.") var commands = 100
    @Option(help: "Frequency changes to time.") var changes = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site, each with its own inverter on its own port; the first is timed.") var units = 8
    @Option(help: "The controlling station, run with python3.") var station = "hil/peers/iec104_bench.py"
    @Option(help: "Write the AGC latencies (ms) one per line here.") var csvCommand: String?
    @Option(help: "Write the spontaneous-frame latencies (ms) one per line here.") var csvChange: String?

    /// A target as the station sent it.
    struct Sent: Decodable {
        let tNs: Int64
        let mw: Double
        let conNs: Int64?
        let negative: Bool?
    }

    /// A measured value of IOA 1004 as the station received it.
    struct Received: Decodable {
        let tNs: Int64
        let cot: Int
        let value: Double
    }

    func run() throws {
        let port = freeLoopbackPort()
        let bench = try WireBench(
            periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessd.path, units: units,
            extraConfig: "realtime: {priority: 60}\nlimits: {ramp_percent_per_s: 1000, schedule_ramp_percent_per_s: 1000}\n"
                + "iec104: {listen: 127.0.0.1:\(port), common_address: 7, agc: {expiry_s: 60}, "
                + "groups: [{name: bench, allow_from: [127.0.0.1], commands: [agc, setpoint]}]}\n")
        defer { bench.stop() }
        try bench.waitReady()
        bench.run(for: 3)
        try agcToWire(bench, port: port)
        try valueToFrame(bench, port: port)
    }

    /// Starts the station; closing the pipe on its standard input ends `listen`.
    func start(_ arguments: [String]) throws -> (process: Process, input: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", station] + arguments
        let input = Pipe()
        process.standardInput = input
        try process.run()
        return (process, input)
    }

    /// Keeps the plant going until the station exits; throws when it failed.
    func finish(_ process: Process, _ bench: WireBench) throws {
        while process.isRunning {
            usleep(1_000)
            bench.tick()
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("the controlling station failed (exit \(process.terminationStatus)); bessd's log: \(bench.directory)/bessd.log")
        }
    }

    func records<Record: Decodable>(_ path: String, as: Record.Type) throws -> [Record] {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try decoder.decode(Record.self, from: Data($0.utf8))
        }
    }

    func agcToWire(_ bench: WireBench, port: Int) throws {
        let out = bench.directory + "/agc.jsonl"
        try finish(start(["command", "\(port)", "7", "\(commands)", out, "\(units)"]).process, bench)
        bench.run(for: 1)
        let sent = try records(out, as: Sent.self)
        let writes = bench.writes.list.withLock { $0 }
        var latencies: [Double] = []
        var confirmations: [Double] = []
        var misses = 0
        for (i, target) in sent.enumerated() {
            let t = MonotonicInstant(nanoseconds: target.tNs)
            let until = i + 1 < sent.count ? MonotonicInstant(nanoseconds: sent[i + 1].tNs) : t + .seconds(2)
            let before = writes.last(where: { $0.at < t })?.watts ?? 0
            let share = target.mw * 1e6 / Double(units)
            let toward: Double = share > before ? 1 : -1
            if let con = target.conNs { confirmations.append(Double(con - target.tNs) / 1e6) }
            if target.negative == false, abs(share - before) > 1000,
               let w = writes.first(where: { $0.at >= t && $0.at < until && ($0.watts - before) * toward > 1000 })
            {
                latencies.append(milliseconds(w.at - t))
            } else {
                misses += 1
            }
        }
        try report("agc_to_setpoint", latencies, misses: misses, csv: csvCommand)
        print(summary("agc_act_con", confirmations, misses: sent.count - confirmations.count))
    }

    func valueToFrame(_ bench: WireBench, port: Int) throws {
        let out = bench.directory + "/frequency.jsonl"
        let ready = bench.directory + "/station.ready"
        let station = try start(["listen", "\(port)", "7", "1004", out, ready])
        let end = SystemClock.shared.now() + .seconds(15)
        while !FileManager.default.fileExists(atPath: ready) {
            guard station.process.isRunning, SystemClock.shared.now() < end else {
                throw ValidationError("the controlling station did not start data transfer")
            }
            usleep(1_000)
            bench.tick()
        }
        bench.run(for: 1)
        // Inside the droop deadband (49.9–50.05 Hz), so no unit's power moves; 0.03 Hz is three
        // times the point's deadband.
        var steps: [(at: MonotonicInstant, hz: Double)] = []
        var generator = SystemRandomNumberGenerator()
        for i in 0..<changes {
            bench.run(for: Double.random(in: 0.35...0.75, using: &generator))
            bench.hz = i % 2 == 0 ? 49.97 : 50.0
            steps.append((SystemClock.shared.now(), bench.hz))
            bench.step()
        }
        bench.run(for: 1)
        try station.input.fileHandleForWriting.close()
        try finish(station.process, bench)
        let received = try records(out, as: Received.self).filter { $0.cot == 3 }
        var latencies: [Double] = []
        var misses = 0
        for (i, step) in steps.enumerated() {
            let until = i + 1 < steps.count ? steps[i + 1].at : step.at + .seconds(2)
            if let frame = received.first(where: {
                let at = MonotonicInstant(nanoseconds: $0.tNs)
                return at >= step.at && at < until && abs($0.value - step.hz) < 0.005
            }) {
                latencies.append(milliseconds(MonotonicInstant(nanoseconds: frame.tNs) - step.at))
            } else {
                misses += 1
            }
        }
        try report("value_to_spontaneous", latencies, misses: misses, csv: csvChange)
    }
}
