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

/// Measurements for `make bench`: times on the wire, between the plant's side of a change and the
/// setpoint bessd writes in answer. Each prints one line per sample (CSV) and a summary.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Latency measurements against a real bessd (used by make bench).",
        subcommands: [StepLatency.self, AlarmLatency.self, TripLatency.self, LoadStepLatency.self, ScadaWriteLatency.self,
                      ScadaReadLoad.self, CommandPushLatency.self, IEC104Latency.self, PMUDecodeCost.self, PMUWireLatency.self,
                      Sep2WireLatency.self])
}

/// Shared set-up: a one-unit plant (SunSpec inverter on loopback, optionally a Pylontech BMS on
/// CAN), a bessd started on a configuration written for it, and the setpoints bessd writes,
/// stamped by the server thread the moment each write request is answered.
final class WireBench {
    let server: SunSpecServer
    var unit: SimulatedUnit
    let directory: String
    let writes = WriteLog()
    var bessd: Process?
    var hz = 50.0
    let can: CANSocket?
    /// Further units (their own inverters on their own ports) that load bessd like a real site; their
    /// setpoints are not timed.
    var others: [(server: SunSpecServer, unit: SimulatedUnit)] = []

    /// `frequencySource` is the grid_integration lines before its droop settings (a PMU's block with it).
    init(periodMs: Int, canInterface: String?, bessdPath: String, units: Int = 1, extraConfig: String = "",
         frequencySource: String = "frequency_source: inverter") throws {
        directory = "/tmp/bess-hil-bench-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        let profile = SunSpecDeviceProfile(ratingW: 100_000)
        server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
        unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        let log = writes
        server.writeObserver = { image, at in
            if let w = SunSpecPlantLink.commandedWatts(image, profile: profile) { log.list.withLock { $0.append((at, w)) } }
        }
        try server.start()
        for _ in 1..<max(1, units) {
            let other = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
            try other.start()
            others.append((other, SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)))
        }
        let otherUnits = others.enumerated().map { i, other in
            "  - {id: BENCH_\(i + 2), campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100, "
                + "modbus: {host: 127.0.0.1, port: \(other.server.port), unit_id: 1, timeout_ms: 200}, "
                + "inverter: {protocol: sunspec}, bms: {simulated: true}}"
        }.joined(separator: "\n")
        can = try canInterface.map { try CANSocket(interface: $0, filters: [(PylontechLV.keepAliveID, 0x7FF)]) }
        let bms = canInterface.map { "interface: \($0)" } ?? "simulated: true"
        let config = """
        mode: \(canInterface == nil || units > 1 ? "hil" : "hardware")
        period_ms: \(periodMs)
        control_socket: \(directory)/control.sock
        state_directory: \(directory)/state
        bess_units:
          - id: BENCH_01
            campus_id: BENCH
            capacity_kwh: 250
            max_power_kw: 100
            modbus: {host: 127.0.0.1, port: \(server.port), unit_id: 1, timeout_ms: 200}
            inverter: {protocol: sunspec}
            bms: {\(bms)}
        \(otherUnits)
        grid_integration:
          \(frequencySource)
          droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0, response_time_s: 0}
        \(extraConfig)
        """
        try config.write(toFile: directory + "/bessd.yaml", atomically: true, encoding: .utf8)
        step()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bessdPath)
        process.arguments = ["run", "--config", directory + "/bessd.yaml", "--log", "stderr"]
        FileManager.default.createFile(atPath: directory + "/bessd.log", contents: nil)
        let out = FileHandle(forWritingAtPath: directory + "/bessd.log")
        process.standardOutput = out ?? FileHandle.nullDevice
        process.standardError = out ?? FileHandle.nullDevice
        try process.run()
        bessd = process
    }

    /// Advances the plant by `interval` and publishes its registers.
    func step(by interval: Duration = .zero) {
        unit.step(by: interval)
        SunSpecPlantLink(server: server).exchange(&unit, frequencyHz: hz)
        for i in others.indices {
            others[i].unit.step(by: interval)
            SunSpecPlantLink(server: others[i].server).exchange(&others[i].unit, frequencyHz: hz)
        }
    }

    /// Sends one burst of the BMS's frames; returns the instant just before the frame `stampingBefore`
    /// went out (or before the burst).
    @discardableResult
    func sendBMSFrames(stampingBefore id: UInt32? = nil) -> MonotonicInstant {
        var stamp = SystemClock.shared.now()
        guard let can else { return stamp }
        while (try? can.receive(timeout: .zero)) != nil {}
        for frame in unit.pylontechState.frames() {
            if frame.id == id { stamp = SystemClock.shared.now() }
            _ = try? can.send(frame)
        }
        return stamp
    }

    var lastStep = SystemClock.shared.now()
    /// When the BMS sends its frames next (with CAN).
    var nextFrames = MonotonicInstant.zero

    /// Keeps the plant going: a step every 10 ms, the BMS's frames every second.
    func tick() {
        let now = SystemClock.shared.now()
        if now - lastStep >= .milliseconds(10) {
            step(by: now - lastStep)
            lastStep = now
        }
        if can != nil, now >= nextFrames {
            sendBMSFrames()
            nextFrames = now + .seconds(1)
        }
    }

    /// Runs the plant for `seconds`.
    func run(for seconds: Double) {
        let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
        while SystemClock.shared.now() < end {
            usleep(1_000)
            tick()
        }
    }

    var lastCommanded: Double { writes.list.withLock { $0.last?.watts ?? 0 } }

    /// Waits (plant running) for the first write after `since` that `accept`s; its time, or nil.
    func firstWrite(after since: MonotonicInstant, timeout: Double, _ accept: (Double) -> Bool) -> MonotonicInstant? {
        let end = since + .seconds(fromDouble: timeout)
        while SystemClock.shared.now() < end {
            if let at = writes.list.withLock({ $0.first(where: { $0.at >= since && accept($0.watts) })?.at }) { return at }
            usleep(200)
            tick()
        }
        return nil
    }

    func waitReady() throws {
        let end = SystemClock.shared.now() + .seconds(15)
        while SystemClock.shared.now() < end {
            if (try? ControlClient.answer(ControlRequest(.status), socket: directory + "/control.sock", timeout: .seconds(1))) != nil { return }
            usleep(50_000)
        }
        throw ValidationError("bessd did not start; log in \(directory)/bessd.log")
    }

    func stop() {
        if let p = bessd, p.isRunning {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        server.stop()
        for other in others { other.server.stop() }
    }
}

/// A binary built beside bess-hil (bessd, bess-aggregator).
func sibling(_ name: String) -> String {
    URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name).path
}

/// Writes the samples (one latency in ms per line) when asked, and prints the summary line.
func report(_ name: String, _ ms: [Double], misses: Int, csv: String?) throws {
    if let csv { try ms.map { String(format: "%.3f", $0) }.joined(separator: "\n").write(toFile: csv, atomically: true, encoding: .utf8) }
    print(summary(name, ms, misses: misses))
}

func summary(_ name: String, _ ms: [Double], misses: Int) -> String {
    let sorted = ms.sorted()
    func q(_ f: Double) -> Double { sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((Double(sorted.count) * f).rounded(.up)) - 1)] }
    return String(format: "SUMMARY %@ n=%d misses=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f", name, sorted.count, misses, q(0.5), q(0.99),
                  sorted.last ?? .nan)
}

/// Frequency steps at random instants → the first changed setpoint bessd writes.
struct StepLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "step-latency",
        abstract: "Frequency step at the plant's registers → new setpoint on the inverter's wire (response time 0).")
    @Option(help: "Steps to time.") var steps = 200
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site, each with its own inverter on its own port; the first is timed.") var units = 1
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        let bessdPath = bessd.path
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessdPath, units: units,
                                  extraConfig: realtime ? "realtime: {priority: 60}" : "")
        defer { bench.stop() }
        try bench.waitReady()
        bench.run(for: 3)
        let (latencies, misses) = bench.timeSteps(steps) { i in
            bench.hz = i % 2 == 0 ? 49.5 : 50.0
            bench.step()
            return SystemClock.shared.now()
        }
        try report("step_to_setpoint", latencies, misses: misses, csv: csv)
    }
}

extension WireBench {
    /// `count` frequency steps, each after a random phase against bessd's cycle and time to settle
    /// (0.35–0.75 s, plant running): `step(i)` makes step `i` and returns the instant it took effect
    /// (nil: it did not); the first write after it more than 100 W from the last one ends the sample.
    func timeSteps(_ count: Int, _ step: (Int) -> MonotonicInstant?) -> (latencies: [Double], misses: Int) {
        var latencies: [Double] = []
        var misses = 0
        var generator = SystemRandomNumberGenerator()
        for i in 0..<count {
            run(for: Double.random(in: 0.35...0.75, using: &generator))
            let before = lastCommanded
            guard let t = step(i), let w = firstWrite(after: t, timeout: 2, { abs($0 - before) > 100 }) else {
                misses += 1
                continue
            }
            latencies.append(milliseconds(w - t))
        }
        return (latencies, misses)
    }
}

/// A BMS protection frame at a random instant → zero power on the inverter's wire (needs CAN).
struct AlarmLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarm-latency", abstract: "BMS protection frame on CAN → zero setpoint on the inverter's wire.")
    @Option(help: "Alarms to time.") var alarms = 40
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "CAN interface.") var canInterface = "vcan0"
    @Option(help: "Write one latency (ms) per line here.") var csv: String?
    @Option(help: "bessd's realtime.priority (SCHED_FIFO for its cycle, one below for its bus and CAN workers, as config/gateway.yaml); 0: the default policy.")
    var realtimePriority = 0

    func run() throws {
        let bessdPath = bessd.path
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: canInterface, bessdPath: bessdPath,
                                  extraConfig: "interlocks: {bms_protection: {hold_s: 0}}\nlimits: {ramp_percent_per_s: 100}"
                                      + (realtimePriority > 0 ? "\nrealtime: {priority: \(realtimePriority)}" : ""))
        defer { bench.stop() }
        bench.sendBMSFrames()
        try bench.waitReady()
        bench.hz = 49.5  // 16 kW of droop response to cut
        bench.step()
        bench.run(for: 5)
        // Extra cycles only when a frame calls for less power: none in 10 s of ordinary frames
        // (the limits follow SOC and temperature) at 16 kW.
        let quietBefore = alarmCycles(bench)
        bench.run(for: 10)
        let quiet = alarmCycles(bench) - quietBefore
        var latencies: [Double] = []
        var misses = 0
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<alarms {
            bench.unit.bmsOverride = BMSOverride()
            bench.run(for: Double.random(in: 1.5...2.5, using: &generator))
            guard bench.lastCommanded > 1000 else {
                misses += 1
                print("ALARM_SKIP #\(latencies.count + misses): power not back before the alarm (last written \(bench.lastCommanded) W)")
                continue
            }
            bench.unit.bmsOverride.protections = [.overtemperature]
            // The clock starts as the protection frame (0x359) goes out: the frames before it in the
            // burst are not the alarm's, and bessd may act before the burst's last frame is sent.
            let t = bench.sendBMSFrames(stampingBefore: PylontechLV.protectionID)
            bench.nextFrames = t + .seconds(1)
            if let w = bench.firstWrite(after: t, timeout: 2, { abs($0) < 1 }) {
                latencies.append(milliseconds(w - t))
                if w - t > .milliseconds(50) { explainSlow(bench, since: t, until: w, index: latencies.count) }
            } else {
                misses += 1
                explainSlow(bench, since: t, until: SystemClock.shared.now(), index: latencies.count + misses)
            }
        }
        let extra = alarmCycles(bench) - quietBefore - quiet
        try report(realtimePriority > 0 ? "alarm_to_zero_fifo" : "alarm_to_zero", latencies, misses: misses, csv: csv)
        print("ALARM_CYCLES quiet_10s=\(quiet) during_alarms=\(extra) alarms=\(latencies.count + misses)")
    }

    /// What the wire and bessd's log show around an alarm that took longer than 50 ms (a figure
    /// is not enough to act on).
    func explainSlow(_ bench: WireBench, since t: MonotonicInstant, until w: MonotonicInstant, index: Int) {
        let writes = bench.writes.list.withLock { $0.filter { $0.at >= t - .milliseconds(200) && $0.at <= w } }
        print("ALARM_SLOW #\(index) \(String(format: "%.1f", milliseconds(w - t))) ms; alarm cycles \(alarmCycles(bench)); writes from 200 ms before: "
              + writes.map { String(format: "%+.1f ms %.0f W", milliseconds($0.at - t), $0.watts) }.joined(separator: ", "))
        let log = (try? String(contentsOfFile: bench.directory + "/bessd.log", encoding: .utf8)) ?? ""
        for line in log.split(separator: "\n").suffix(8) { print("ALARM_SLOW   bessd: \(line)") }
    }

    /// bessd's extra cycles so far (`cycle.alarm_cycles` in its status).
    func alarmCycles(_ bench: WireBench) -> Int {
        let status = try? ControlClient.answer(ControlRequest(.status), socket: bench.directory + "/control.sock", timeout: .seconds(1))
            .reply(as: StatusReply.self)
        return status.map { Int(clamping: $0.cycle.alarmCycles) } ?? -1
    }
}

/// One inverter of the site reports a fault at a random instant → the timed unit's new (larger)
/// setpoint on its wire: the site's frequency response moved to the others.
struct TripLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trip-latency",
        abstract: "A unit's inverter faults during a frequency event → another unit's new setpoint on its wire.")
    @Option(help: "Trips to time.") var trips = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site (≥ 2); the second one trips, the first is timed.") var units = 8
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        guard units >= 2 else { throw ValidationError("--units must be at least 2") }
        let bessdPath = bessd.path
        // The fault clears at once (hold 0) and limits rise at once, so each trip starts from the
        // same shares.
        let bench = try WireBench(
            periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessdPath, units: units,
            extraConfig: (realtime ? "realtime: {priority: 60}\n" : "")
                + "interlocks: {inverter_fault: {hold_s: 0}}\nlimits: {ramp_percent_per_s: 1000}")
        defer { bench.stop() }
        try bench.waitReady()
        bench.hz = 49.5  // 0.16 pu of droop on every unit: 16 kW each
        bench.step()
        bench.run(for: 3)
        var latencies: [Double] = []
        var misses = 0
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<trips {
            bench.others[0].unit.inverter.faulted = false
            bench.run(for: Double.random(in: 0.8...1.2, using: &generator))
            let before = bench.lastCommanded
            guard before > 1000 else { misses += 1; continue }
            bench.others[0].unit.inverter.faulted = true
            bench.step()
            let t = SystemClock.shared.now()
            if let w = bench.firstWrite(after: t, timeout: 2, { $0 > before + 100 }) {
                latencies.append(milliseconds(w - t))
            } else {
                misses += 1
            }
        }
        try report("trip_to_others", latencies, misses: misses, csv: csv)
    }
}

/// The site's load steps above the import limit at a random instant (the meter's registers) → the
/// timed unit's new setpoint on its wire, its share of the excess.
struct LoadStepLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load-step-latency",
        abstract: "A load step over the import limit at the site meter → the units' new setpoints on the wire.")
    @Option(help: "Steps to time.") var steps = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site; the first is timed.") var units = 8
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        let bessdPath = bessd.path
        let meter = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: .meter(model: 203, maxW: 2_000_000))
        try meter.start()
        defer { meter.stop() }
        let limitKW = 400.0
        let bench = try WireBench(
            periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessdPath, units: units,
            extraConfig: (realtime ? "realtime: {priority: 60}\n" : "")
                + "site: {meter: {modbus: {host: 127.0.0.1, port: \(meter.port), unit_id: 1, timeout_ms: 200}}, "
                + "grid_limits: {import_max_kw: \(Int(limitKW))}}")
        defer { bench.stop() }
        // The connection point: a load, less what the units give (the plant's inverters follow).
        var loadW = 300_000.0
        let publish = {
            let battery = bench.unit.inverter.powerW + bench.others.reduce(0.0) { $0 + $1.unit.inverter.powerW }
            meter.withImage { image, _ in
                image.publishMeter(gridW: loadW - battery, hz: 50, importedWh: 0, exportedWh: 0, garbage: false)
            }
        }
        func run(for seconds: Double) {
            let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
            while SystemClock.shared.now() < end {
                usleep(1_000)
                bench.tick()
                publish()
            }
        }
        publish()
        try bench.waitReady()
        run(for: 12)  // limits ramped up
        var latencies: [Double] = []
        var misses = 0
        var generator = SystemRandomNumberGenerator()
        for i in 0..<steps {
            // Alternately below and above the limit, at a random phase against the cycle. The
            // connection point must have settled (and the meter's lag window passed) before a step.
            loadW = 300_000
            run(for: Double.random(in: 1.6...2.2, using: &generator))
            let before = bench.lastCommanded
            loadW = limitKW * 1000 + Double(40_000 + (i % 4) * 20_000)  // 40–100 kW over the limit
            publish()
            let t = SystemClock.shared.now()
            var written: MonotonicInstant?
            let end = t + .seconds(2)
            while written == nil, SystemClock.shared.now() < end {
                written = bench.writes.list.withLock { $0.first(where: { $0.at >= t && $0.watts > before + 1000 })?.at }
                usleep(200)
                bench.tick()
                publish()
            }
            if let written { latencies.append(milliseconds(written - t)) } else { misses += 1 }
        }
        try report("load_step_to_setpoint", latencies, misses: misses, csv: csv)
    }
}

/// bessd's SCADA server on a free loopback port, writes on: the `scada:` block a bench adds.
func scadaBlock(port: Int) -> String {
    "scada: {listen: 127.0.0.1:\(port), allow_from: [127.0.0.0/8], writes: true, max_hold_s: 600, max_clients: 64}\n"
}

/// Where model 704's points sit in bessd's image for `units` units of 100 kW.
func scadaLayout(units: Int) -> (base: Int, wSF: Int) {
    let image = ScadaImage(site: ScadaSiteDescription(siteID: "BENCH", version: "", mode: "", unitID: 1,
                                                       ratingsW: [Double](repeating: 100_000, count: units),
                                                       capacitiesWh: [Double](repeating: 250_000, count: units), hasMeter: false))
    return (ScadaImage.base + image.start(of: 704)!, image.wSF)
}

/// A SCADA write of a new site setpoint (WSetEna, WSetMod, WSet in one request) at a random instant
/// → the timed unit's new setpoint on its inverter's wire.
struct ScadaWriteLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scada-write-latency",
        abstract: "A SCADA WSet write on bessd's Modbus TCP server → the units' new setpoints on the inverters' wire.")
    @Option(help: "Writes to time.") var writes = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site; the first is timed.") var units = 8
    @Flag(inversion: .prefixedNo, help: "Run bessd's cycle SCHED_FIFO 60.") var realtime = true
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        let bessdPath = bessd.path
        let port = freeLoopbackPort()
        // The schedule follows a command within one cycle, so what is timed is the path, not the ramp.
        let bench = try WireBench(
            periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessdPath, units: units,
            extraConfig: (realtime ? "realtime: {priority: 60}\n" : "") + "limits: {ramp_percent_per_s: 1000, schedule_ramp_percent_per_s: 1000}\n"
                + scadaBlock(port: port))
        defer { bench.stop() }
        try bench.waitReady()
        bench.run(for: 3)
        let layout = scadaLayout(units: units)
        let scada = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(1))
        let wSet = layout.base + SunSpecTables.M704.WSetEna.offset
        var latencies: [Double] = []
        var misses = 0
        var generator = SystemRandomNumberGenerator()
        for i in 0..<writes {
            bench.run(for: Double.random(in: 0.35...0.75, using: &generator))
            let before = bench.lastCommanded
            // Alternately 30 % and 60 % of the site's rating: 30 kW and 60 kW on each unit.
            let watts = Double(units) * (i % 2 == 0 ? 60_000 : 30_000)
            let raw = UInt32(bitPattern: Int32((watts / SunSpec.powerOfTen(layout.wSF)).rounded()))
            let t = SystemClock.shared.now()
            do {
                try scada.writeRegisters(unit: 1, at: wSet, [1, 1, UInt16(raw >> 16), UInt16(raw & 0xFFFF)])
            } catch {
                misses += 1
                continue
            }
            if let w = bench.firstWrite(after: t, timeout: 2, { abs($0 - before) > 1000 }) {
                latencies.append(milliseconds(w - t))
            } else {
                misses += 1
            }
        }
        scada.close()
        try report("scada_write_to_setpoint", latencies, misses: misses, csv: csv)
    }
}

/// 20 SCADA clients read bessd's whole SunSpec map (every model, 125 registers a request) at 10 Hz for
/// a minute while the site runs on the wire and a reader asks for status twice a second: the
/// cycle's overruns and lateness over the run, the slowest status answer; then the same clients as
/// fast as they can for 10 s: maps read per second.
struct ScadaReadLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scada-read-load", abstract: "20 SCADA clients polling the whole map: cycle health and read throughput.")
    @Option(help: "SCADA clients.") var clients = 20
    @Option(help: "Polls per second per client in the paced phase.") var rate = 10.0
    @Option(help: "Seconds of the paced phase.") var seconds = 60.0
    @Option(help: "Seconds of the flat-out phase.") var flatOut = 10.0
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "Units on the site.") var units = 8

    func run() throws {
        let bessdPath = bessd.path
        let port = freeLoopbackPort()
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessdPath, units: units,
                                  extraConfig: "realtime: {priority: 60}\n" + scadaBlock(port: port))
        defer { bench.stop() }
        try bench.waitReady()
        bench.run(for: 3)
        // The map's length: SunS, every model's ID + L + L registers, the end model.
        let layout = ScadaImage(site: ScadaSiteDescription(siteID: "BENCH", version: "", mode: "", unitID: 1,
                                                           ratingsW: [Double](repeating: 100_000, count: units),
                                                           capacitiesWh: [Double](repeating: 250_000, count: units), hasMeter: false))
        let words = layout.words.count
        let socket = bench.directory + "/control.sock"
        func status() -> CycleReply? {
            try? ControlClient.answer(ControlRequest(.status), socket: socket, timeout: .seconds(5)).reply(as: StatusReply.self).cycle
        }
        final class Counters: Sendable {
            let maps = Atomic<Int>(0)
            let failures = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
            let paced = Atomic<Bool>(true)
        }
        let counters = Counters()
        let pace = Int64(1e9 / rate)
        var threads: [Thread] = []
        for _ in 0..<clients {
            let thread = Thread {
                guard let client = try? ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(1)) else {
                    counters.failures.add(1, ordering: .relaxed)
                    return
                }
                var next = SystemClock.shared.now() + .nanoseconds(Int64.random(in: 0..<pace))
                while !counters.stop.load(ordering: .relaxed) {
                    if counters.paced.load(ordering: .relaxed) {
                        let now = SystemClock.shared.now()
                        if now < next { usleep(UInt32(min(50_000, (next - now).nanosecondsClamped / 1000))); continue }
                        next = next + .nanoseconds(pace)
                    }
                    do {
                        var address = ScadaImage.base
                        while address < ScadaImage.base + words {
                            let count = min(125, ScadaImage.base + words - address)
                            _ = try client.readRegisters(unit: 1, at: address, count: count)
                            address += count
                        }
                        counters.maps.add(1, ordering: .relaxed)
                    } catch {
                        counters.failures.add(1, ordering: .relaxed)
                    }
                }
                client.close()
            }
            threads.append(thread)
            thread.start()
        }
        let before = status()
        var slowestStatus = 0.0
        var statusFailures = 0
        let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
        var nextStatus = SystemClock.shared.now()
        while SystemClock.shared.now() < end {
            usleep(1_000)
            bench.tick()
            if SystemClock.shared.now() >= nextStatus {
                let t = SystemClock.shared.now()
                if status() == nil { statusFailures += 1 }
                slowestStatus = max(slowestStatus, milliseconds(SystemClock.shared.now() - t))
                nextStatus = t + .milliseconds(500)
            }
        }
        let after = status()
        let pacedMaps = counters.maps.load(ordering: .relaxed)
        let pacedFailures = counters.failures.load(ordering: .relaxed)
        counters.paced.store(false, ordering: .relaxed)
        let flatStart = counters.maps.load(ordering: .relaxed)
        let flatEnd = SystemClock.shared.now() + .seconds(fromDouble: flatOut)
        while SystemClock.shared.now() < flatEnd {
            usleep(1_000)
            bench.tick()
        }
        let flatMaps = counters.maps.load(ordering: .relaxed) - flatStart
        let afterFlat = status()
        counters.stop.store(true, ordering: .relaxed)
        /// A counter of the cycle's status; NaN when bessd did not answer.
        func n<Value: BinaryInteger>(_ cycle: CycleReply?, _ counter: KeyPath<CycleReply, Value>) -> Double {
            cycle.map { Double($0[keyPath: counter]) } ?? .nan
        }
        print(String(format: "SUMMARY scada_read_load clients=%d rate=%.0f seconds=%.0f words=%d maps=%d failures=%d maps_per_s=%.1f "
                     + "overruns=%.0f late=%.0f lateness_p99_us=%.0f lateness_max_us=%.0f status_max_ms=%.1f status_failures=%d "
                     + "flat_maps_per_s=%.1f flat_overruns=%.0f",
                     clients, rate, seconds, words, pacedMaps, pacedFailures, Double(pacedMaps) / seconds,
                     n(after, \.overruns) - n(before, \.overruns), n(after, \.lateReadings) - n(before, \.lateReadings),
                     n(after, \.jitterP99Us), n(after, \.jitterMaxUs), slowestStatus, statusFailures,
                     Double(flatMaps) / flatOut, n(afterFlat, \.overruns) - n(after, \.overruns)))
    }
}

/// A free TCP port on loopback.
func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// The setpoints written to the bench's inverter, with when each write was answered.
final class WriteLog: Sendable {
    let list = PILock<[(at: MonotonicInstant, watts: Double)]>([])
}

/// A span in milliseconds, as the benchmarks report latencies.
func milliseconds(_ span: Duration) -> Double { Double(span.nanosecondsClamped) / 1e6 }
