import ArgumentParser
import ControlCore
import Foundation
import Runtime

@main
struct Bessd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bessd",
        abstract: "Real-time edge controller for battery energy storage systems.",
        version: BessdVersion.string,
        subcommands: [Run.self, CheckConfig.self],
        defaultSubcommand: Run.self)
}

/// Exit codes: 0 ok, 1 invalid configuration, 2 usage, 3 cannot run.
enum ExitStatus {
    static let invalidConfiguration: Int32 = 1
    static let cannotRun: Int32 = 3
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration file; print every error as FILE:LINE: key.path: problem (got X).")

    @Argument(help: "The configuration file to check.")
    var file: String

    @Flag(help: "Print nothing when the file is valid.")
    var quiet = false

    func run() throws {
        do {
            let loaded = try ConfigLoader.load(path: file)
            for notice in loaded.notices { print("notice: \(notice)") }
            if !quiet {
                print("\(file): OK (\(loaded.mode.rawValue), \(loaded.units.count) unit\(loaded.units.count == 1 ? "" : "s"), period \(loaded.periodMs) ms)")
            }
        } catch {
            for diagnostic in error.diagnostics { FileHandle.standardError.write(Data("\(diagnostic)\n".utf8)) }
            throw ExitCode(ExitStatus.invalidConfiguration)
        }
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the control loop (default: the embedded simulated site).")

    @Option(name: .long, help: "Configuration file (default: the embedded simulated site, config/simulation.yaml).")
    var config: String?

    @Option(name: .long, help: "Stop after this many seconds (default: run until SIGINT/SIGTERM).")
    var duration: Double?

    @Option(name: .long, help: "Seconds between status lines.")
    var statusEvery: Double = 1

    func run() throws {
        let loaded: BessdConfiguration
        do {
            if let config {
                loaded = try ConfigLoader.load(path: config)
            } else {
                loaded = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "<embedded simulation.yaml>")
            }
        } catch {
            for diagnostic in error.diagnostics { FileHandle.standardError.write(Data("\(diagnostic)\n".utf8)) }
            throw ExitCode(ExitStatus.invalidConfiguration)
        }
        for notice in loaded.notices { say("notice: \(notice)") }
        let runner: SiteRunner
        do {
            runner = try SiteRunner(configuration: loaded, startedAt: MonotonicClock.now(), output: say)
        } catch {
            FileHandle.standardError.write(Data("bessd: \(error)\n".utf8))
            throw ExitCode(ExitStatus.cannotRun)
        }
        installStopHandlers()
        runner.startWorkers()
        say("bessd \(BessdVersion.string): \(loaded.mode.rawValue) site, \(loaded.units.count) unit(s), period \(loaded.periodMs) ms; Ctrl-C stops")
        let summary = runner.run(duration: duration, statusEvery: statusEvery)
        runner.commandSafeSetpoints()
        say("bessd stopped: \(summary.cycles) cycles, \(summary.overruns) overruns, max lateness \(summary.maxLatenessMicroseconds) µs; setpoints zeroed")
    }
}

/// Writes a line to standard output at once (no buffering, so `make sim | tee` shows it live).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
