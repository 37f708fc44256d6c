import ArgumentParser
import ControlCore
import ControlProtocol
import Foundation
import BessSystem
import Logging
import Config
import Cycle
import Simulation
import Service

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
        abstract: "Validate a configuration file, or a device profile; print every error as FILE:LINE: key.path: problem (got X).")

    @Argument(help: "The configuration file to check, or a device profile (a file starting bessd_profile:).")
    var file: String

    @Flag(help: "Print nothing when the file is valid.")
    var quiet = false

    func run() throws {
        if ProfileReader.isProfile(path: file) { return try checkProfile() }
        guard let loaded = ConfigLoader.loadReporting(path: file) else { throw ExitCode(ExitStatus.invalidConfiguration) }
        // The files it names too (the outstation's TLS files), which `run` leaves to the outstation.
        let fileErrors = loaded.fileDiagnostics(file: file)
        for error in fileErrors { FileHandle.standardError.write(Data("\(error)\n".utf8)) }
        if !fileErrors.isEmpty { throw ExitCode(ExitStatus.invalidConfiguration) }
        for notice in loaded.notices { print("notice: \(notice)") }
        if !quiet {
            print("\(file): OK (\(loaded.mode.rawValue), \(loaded.units.count) unit\(loaded.units.count == 1 ? "" : "s"), period \(loaded.periodMs) ms)")
            for line in loaded.profileLines { print("  \(line)") }
        }
    }

    /// A device profile (`bessd_profile:` at the top) checked on its own, with the same diagnostics
    /// and exit codes as a configuration.
    func checkProfile() throws {
        let (profile, diagnostics) = ProfileReader.read(path: file)
        for error in diagnostics where error.severity == .error { FileHandle.standardError.write(Data("\(error)\n".utf8)) }
        guard let profile else { throw ExitCode(ExitStatus.invalidConfiguration) }
        for notice in diagnostics where notice.severity == .notice { print("notice: \(notice)") }
        if !quiet {
            print("\(file): OK (\(ProfileReader.summary(of: profile)))")
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

    @Option(name: .long, help: "Seconds between live status lines on stdout; 0 for none (as under systemd).")
    var statusEvery: Double = 1

    @Option(name: .long, help: ArgumentHelp(
        "Where log entries go: auto, journal, stderr or stdout.",
        discussion: "auto: the journal when journald listens, else stderr; and stderr as well when it is a terminal, "
            + "so trips, clears and state changes show as they happen."))
    var log: String = "auto"

    func validate() throws {
        guard LogTarget(rawValue: log) != nil else {
            throw ValidationError("--log must be auto, journal, stderr or stdout (got '\(log)')")
        }
    }

    func run() throws {
        // Two malloc arenas, set before any thread starts: with one per thread (glibc's default)
        // freed memory stays in whichever thread's arena held it. bessd's threads allocate little
        // (the cycle nothing at all), so two cost no contention that matters.
        Memory.limitMallocArenas(2)
        guard let loaded = ConfigLoader.loadReporting(path: config) else { throw ExitCode(ExitStatus.invalidConfiguration) }
        let target = LogTarget(rawValue: log) ?? .auto
        let sinks = target.sinks(journalListening: target == .auto && JournalLogHandler.isAvailable,
                                 stderrIsTerminal: isatty(STDERR_FILENO) == 1)
        let logger = Logger(label: "bessd") { _ in
            LogTarget.handler(for: sinks, identifier: "bessd", stdout: say, stderr: sayError)
        }
        let daemon: Daemon
        do {
            // The composition root: the simulated site only when the configuration simulates
            // something (modes simulation and hil); mode hardware gets real devices only.
            daemon = try Daemon(configuration: loaded, configPath: config.map(absolute), logger: logger, say: say) {
                started, output throws(RunError) in
                loaded.usesSimulation
                    ? try SiteRunner.make(configuration: loaded, startedAt: started, output: output)
                    : try SiteRunner.hardware(configuration: loaded, startedAt: started, output: output)
            }
        } catch {
            FileHandle.standardError.write(Data("bessd: \(error)\n".utf8))
            throw ExitCode(ExitStatus.cannotRun)
        }
        if statusEvery > 0 {
            say("bessd \(BessdVersion.string): \(loaded.mode.rawValue) site, \(loaded.units.count) unit(s), period \(loaded.periodMs) ms; Ctrl-C stops")
        }
        let status = daemon.run(duration: duration, statusEvery: statusEvery)
        if status != 0 { throw ExitCode(status) }
    }

    func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

/// Writes a line to standard output at once (no buffering, so `make sim | tee` shows it live).
@Sendable func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes a line to standard error at once.
@Sendable func sayError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
