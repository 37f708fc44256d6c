import BessBase
import ArgumentParser
import ControlCore
import ControlProtocol
import BessSystem
import Foundation
import Simulation
import HILPlant
import Cycle
import Config
import Uplink
import Glibc

@main
struct BessHil: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bess-hil",
        abstract: "Hardware-in-loop plant: simulated batteries, inverters and grid.",
        version: BessdVersion.string,
        subcommands: [PlantCommand.self, ScenarioCommand.self, BenchCommand.self, Battery.self, Frequency.self, SpoolWriter.self,
                      FleetCommand.self, SoakCommand.self])
}

/// Runs the battery model at a constant power and prints its trajectory as CSV.
struct Battery: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a battery model trajectory at constant power as CSV (seconds,soc_percent,pack_v,current_a,temp_c,ccl_a,dcl_a).")

    @Option(help: "Usable capacity, kWh.") var capacityKwh: Double = 250
    @Option(help: "Rated power, kW.") var maxPowerKw: Double = 100
    @Option(help: "DC power, kW (+ = discharge).") var powerKw: Double = 100
    @Option(help: "Initial state of charge, %.") var socPercent: Double = 60
    @Option(help: "Seconds to simulate.") var seconds: Double = 3600
    @Option(help: "Seconds between rows.") var step: Double = 60

    func validate() throws {
        guard capacityKwh > 0, maxPowerKw > 0, step > 0, seconds >= 0, (0...100).contains(socPercent) else {
            throw ValidationError("capacity, power and step must be positive, SOC within 0–100 %")
        }
    }

    func run() {
        var battery = BatteryModel(
            parameters: .lfp(capacityWh: capacityKwh * 1000, maxPowerW: maxPowerKw * 1000), soc: socPercent / 100)
        print("seconds,soc_percent,pack_v,current_a,temp_c,ccl_a,dcl_a")
        var t = 0.0
        while t <= seconds {
            print("\(t),\(battery.soc * 100),\(battery.packVoltage),\(battery.current),\(battery.temperature),\(battery.chargeCurrentLimit),\(battery.dischargeCurrentLimit)")
            let limit = powerKw > 0 ? battery.dischargeCurrentLimit : battery.chargeCurrentLimit
            let power = min(abs(powerKw * 1000), limit * battery.packVoltage) * (powerKw < 0 ? -1 : 1)
            battery.step(dcPowerW: power, seconds: step)
            t += step
        }
    }
}

/// Prints a grid frequency profile as CSV.
struct Frequency: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a simulated grid frequency profile as CSV (seconds,hz).")

    enum Shape: String, ExpressibleByArgument { case steady, walk, steps, ramp }
    @Option(help: "steady | walk | steps") var profile: Shape = .walk
    @Option(help: "Centre frequency, Hz.") var baseHz: Double = 50
    @Option(help: "Excursion or step size, Hz.") var amplitudeHz: Double = 0.15
    @Option(help: "Seconds between steps.") var stepPeriod: Double = 30
    @Option(help: "Random seed (walk).") var seed: UInt64 = 1
    @Option(help: "Ramp end, Hz (ramp).") var rampToHz: Double = 49.5
    @Option(help: "Ramp duration, s (ramp, starting at 0).") var rampDuration: Double = 60
    @Option(help: "Seconds to print.") var seconds: Double = 120
    @Option(help: "Seconds between rows.") var step: Double = 1

    func run() throws {
        guard step > 0 else { throw ValidationError("step must be positive") }
        var grid: GridFrequency
        switch profile {
        case .steady: grid = GridFrequency(.steady(hz: baseHz))
        case .walk: grid = GridFrequency(.walk(baseHz: baseHz, amplitudeHz: amplitudeHz, seed: seed))
        case .steps: grid = GridFrequency(.steps(baseHz: baseHz, amplitudeHz: amplitudeHz, period: .seconds(fromDouble: stepPeriod)))
        case .ramp:
            grid = GridFrequency(.ramp(fromHz: baseHz, toHz: rampToHz, start: .zero, duration: .seconds(fromDouble: rampDuration)))
        }
        print("seconds,hz")
        var t = 0.0
        while t <= seconds {
            print("\(t),\(grid.frequency(at: .seconds(fromDouble: t)))")
            t += step
        }
    }
}

/// Serves the rig's devices on the wire.
struct PlantCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plant",
        abstract: "Serve every device of a rig file on the wire (SunSpec inverters on Modbus TCP/RTU) until Ctrl-C.")

    @Option(help: ArgumentHelp(
        "The rig: a bessd configuration in mode: hil (e.g. hil/rigs/loopback.yaml).",
        discussion: "The plant serves every device the file does not mark simulated: true and plays the simulation.faults "
            + "that act on them; mode: hardware refuses faults and simulated devices, so a rig is mode: hil."))
    var config: String

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Option(help: ArgumentHelp(
        "Hold the rig's time zero until this file exists.",
        discussion: "The frequency profile and simulation.faults count from the moment the file appears, not from "
            + "the plant's start: a test creates it once bessd is up, however slowly bessd started."))
    var originFile: String?

    func run() throws {
        guard let loaded = ConfigLoader.loadReporting(path: config) else { throw ExitCode(1) }
        let rig: PlantRig
        do {
            rig = try PlantRig(configuration: loaded, startedAt: SystemClock.shared.now())
        } catch {
            FileHandle.standardError.write(Data("bess-hil: \(error)\n".utf8))
            throw ExitCode(3)
        }
        installStopHandlers()
        let say: (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }
        for (i, unit) in loaded.units.enumerated() {
            if let server = rig.servers[i] {
                say("bess-hil: \(unit.id) SunSpec inverter on \(server.port > 0 ? "127.0.0.1:\(server.port)" : "serial")")
            }
        }
        let hold: (() -> Bool)? = originFile.map { file in { access(file, F_OK) != 0 } }
        rig.run(duration: duration.map { .seconds(fromDouble: $0) }, holdOrigin: hold, output: say)
        say("bess-hil: stopped")
    }
}

/// Appends records to a spool as fast as it can and prints each 1000th seq: a load generator for
/// spool benchmarks and the kill and disk-full tests.
struct SpoolWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spool", abstract: "Append records to a spool directory and report the rate.")
    @Option(help: "Spool directory.") var dir: String
    @Option(help: "Records to append.") var records: Int = 100_000
    @Option(help: "Payload bytes per record.") var size: Int = 200
    @Option(help: "Largest file size this process may write (simulates a full disk), bytes.") var fileSizeLimit: Int?
    @Flag(help: "Write valid uplink event records (a backlog an aggregator accepts) instead of filler bytes.")
    var uplinkRecords = false

    func run() throws {
        if let limit = fileSizeLimit {
            signal(SIGXFSZ, SIG_IGN)
            var rl = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
            setrlimit(Int32(RLIMIT_FSIZE.rawValue), &rl)
        }
        let spool = try Spool(directory: dir)
        let queue = SpoolQueue(spool)
        let filler = String(repeating: "x", count: max(0, size - 120))
        let payload = [UInt8](repeating: 0x42, count: size)
        let start = SystemClock.shared.now()
        var last: UInt64 = 0
        for i in 0..<records {
            do {
                if uplinkRecords {
                    last = try queue.append { seq in
                        Array(#"{"seq":\#(seq),"time":\#(Double(seq)),"type":"event","kind":"backlog","message":"\#(filler)"}"#.utf8)
                    }
                } else {
                    last = try spool.append(payload)
                }
            } catch let error as SpoolError {
                print("ERROR \(error.code) after seq \(last)")
                throw ExitCode(4)
            }
            if i % 1000 == 999 { print("SEQ \(last)") }
        }
        spool.sync()
        let seconds = (SystemClock.shared.now() - start) / .seconds(1)
        print("DONE \(records) records in \(seconds) s: \(Int(Double(records) / max(seconds, 1e-9))) records/s, \(spool.syncs) fsyncs")
    }
}

/// Plays a scenario file against the plant and a real bessd, judges it and plots it.
struct ScenarioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenario",
        abstract: "Run a HIL scenario (hil/scenarios/*.yaml): exit 0 pass, 1 fail, 2 invalid or could not run, 77 skipped.",
        discussion: "Writes NAME.csv (100 ms samples) and NAME.png (frequency, setpoint, measured power, SOC) into --output.")

    @Argument(help: "Scenario files.") var files: [String]
    @Option(help: "Where the CSV and PNG go.") var output = "hil/results/scenarios"
    @OptionGroup var programs: ScenarioPrograms

    func run() throws {
        let say: (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }
        var worst: Int32 = 0
        if RigPrograms.program("gnuplot") == nil {
            say("NOTE gnuplot is not installed (apt-get install gnuplot-nox): verdicts and CSV only, no plots")
        }
        for file in files {
            let scenario: Scenario
            do {
                scenario = try Scenario.load(file)
            } catch {
                FileHandle.standardError.write(Data("bess-hil scenario: \(error)\n".utf8))
                worst = max(worst, 2)
                continue
            }
            if scenario.requiresCAN && !FileManager.default.fileExists(atPath: "/sys/class/net/\(programs.canInterface)") {
                say("SKIP \(scenario.name): needs the CAN interface \(programs.canInterface) (scripts/can-tests.sh runs it in a VM)")
                if worst == 0 { worst = 77 }
                continue
            }
            let bessdPath = programs.bessdPath
            let aggregatorPath = programs.aggregatorPath
            if let missing = RigPrograms.missingPrograms(for: scenario, bessdPath: bessdPath, aggregatorPath: aggregatorPath) {
                say("ERROR \(scenario.name): \(missing)")
                worst = max(worst == 77 ? 0 : worst, 2)
                continue
            }
            say("RUN  \(scenario.name) (\(Int(scenario.duration)) s): \(scenario.description)")
            let run = ScenarioRun(scenario: scenario, outputDirectory: output, bessdPath: bessdPath, aggregatorPath: aggregatorPath,
                                  canInterface: programs.canInterface, say: say)
            do {
                let failures = try run.run()
                let plot = run.plotProblem ?? "plot \(output)/\(scenario.name).png"
                if failures.isEmpty {
                    say("PASS \(scenario.name): \(scenario.expectations.count) expectations met; \(plot)")
                    if worst == 77 { worst = 0 }
                } else {
                    for f in failures { say("  FAIL \(f)") }
                    say("FAIL \(scenario.name): \(failures.count) of \(scenario.expectations.count) expectations missed; \(plot), "
                        + "bessd log \(run.runDirectory)/bessd.log")
                    worst = max(worst == 77 ? 0 : worst, 1)
                }
            } catch {
                say("ERROR \(scenario.name): \(error)")
                worst = max(worst == 77 ? 0 : worst, 2)
            }
        }
        if worst != 0 { throw ExitCode(worst) }
    }
}
