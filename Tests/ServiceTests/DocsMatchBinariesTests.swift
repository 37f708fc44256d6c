import Config
import ControlCore
import Cycle
import Foundation
import Glibc
@testable import Service
import TestSupport
import Testing

/// What README.md, docs/operations.md, hil/README.md and config/bessd.yaml promise, held against the
/// binaries.
@Suite("docs match the binaries")
struct DocsMatchBinariesTests {
    static func read(_ path: String) throws -> String {
        try String(contentsOf: Package.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("config/bessd.yaml as a starting file is valid and serves, sends and pins nothing unasked")
    func referenceAsStartingFile() throws {
        let check = try Package.run("bessd", ["check-config", "config/bessd.yaml"])
        #expect(check.status == 0, "\(check.out)\(check.err)")
        let loaded = try ConfigLoader.load(path: Package.root.appendingPathComponent("config/bessd.yaml").path)
        #expect(loaded.scada == nil, "the reference file turns on a SCADA server")
        #expect(loaded.metricsListen == nil)
        #expect(loaded.aggregator == nil)
        #expect(loaded.realtime == nil)
        #expect(loaded.gridLimitInputs == nil)
        #expect(loaded.site.meter == nil && loaded.site.application == .none)
        #expect(loaded.simulation.faults.isEmpty)
        #expect(loaded.mode == .simulation, "the default mode")
        let text = try Self.read("config/bessd.yaml")
        for stale in ["arrives with a later release", "SCADA is not part of bessd", "0.0.0.0:502              # IPV4"] {
            #expect(!text.contains(stale), "config/bessd.yaml still says '\(stale)'")
        }
    }

    @Test("the stderr form of an entry carries the journal's fields, MESSAGE_ID and PRIORITY included")
    func stderrFormHasJournalFields() throws {
        let directory = NSTemporaryDirectory() + "bessd-stderr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
            mode: simulation
            period_ms: 50
            control_socket: \(directory)/control.sock
            state_directory: \(directory)/state
            bess_units:
              - {id: E1, capacity_kwh: 250, max_power_kw: 100}
            simulation: {frequency_profile: steady, base_hz: 50.0}
            """.write(toFile: directory + "/bessd.yaml", atomically: true, encoding: .utf8)
        let run = try Package.run("bessd", ["run", "--config", directory + "/bessd.yaml", "--log", "stderr", "--status-every", "0",
                                            "--duration", "3"])
        #expect(run.status == 0, "\(run.err)")
        let lines = run.err.split(separator: "\n")
        // The start and stop lines: notice (5), the lifecycle MESSAGE_ID.
        #expect(lines.contains { $0.contains("bessd stopped") && $0.contains("MESSAGE_ID=\(MessageID.lifecycle)") && $0.contains("PRIORITY=5") },
                "\(run.err)")
        #expect(lines.contains { $0.contains("E1 state running") && $0.contains("MESSAGE_ID=\(MessageID.state)") && $0.contains("BESS_UNIT=E1") },
                "\(run.err)")
        let bad = try Package.run("bessd", ["run", "--log", "syslog", "--duration", "1"])
        #expect(bad.status == 64, "\(bad.err)")
        #expect(bad.err.contains("--log must be auto, journal, stderr or stdout (got 'syslog')"), "\(bad.err)")
    }

    @Test("--log auto: the journal when it listens, and stderr as well only when stderr is a terminal")
    func logTargets() {
        #expect(LogTarget.auto.sinks(journalListening: true, stderrIsTerminal: true) == [.journal, .stderr])
        #expect(LogTarget.auto.sinks(journalListening: true, stderrIsTerminal: false) == [.journal])
        #expect(LogTarget.auto.sinks(journalListening: false, stderrIsTerminal: true) == [.stderr])
        #expect(LogTarget.auto.sinks(journalListening: false, stderrIsTerminal: false) == [.stderr])
        #expect(LogTarget.journal.sinks(journalListening: true, stderrIsTerminal: true) == [.journal])
        #expect(LogTarget.stdout.sinks(journalListening: true, stderrIsTerminal: true) == [.stdout])
    }

    @Test("every flag the docs name is in the binary's --help, and every flag asked about is in the docs")
    func documentedFlags() throws {
        let docs = try Self.read("README.md") + Self.read("docs/operations.md")
        let flags: [(String, [String], String)] = [
            ("bessd", ["run", "--help"], "--log"), ("bessd", ["run", "--help"], "--status-every"),
            ("bessd", ["run", "--help"], "--duration"), ("bessd", ["check-config", "--help"], "--quiet"),
            ("bessctl", ["diag", "--help"], "--journal-lines"), ("bessctl", ["probe", "modbus", "--help"], "--timeout-ms"),
            ("bessctl", ["codes", "--help"], "--markdown"), ("bessctl", ["ieee2030-5", "--help"], "--cert"),
            ("bess-aggregator", ["--help"], "--site-tokens"), ("bess-aggregator", ["--help"], "--operator-token-file"),
            ("bess-aggregator", ["--help"], "--ingest-concurrency"),
            ("bessctl", ["reset", "--help"], "--orphaned"),
        ]
        for (binary, arguments, flag) in flags {
            let help = try Package.run(binary, arguments)
            #expect(help.out.contains(flag), "\(binary) \(arguments.joined(separator: " ")) lacks \(flag)")
            #expect(docs.contains(flag), "README.md and docs/operations.md do not document \(flag)")
        }
        #expect(docs.contains("`bessctl reset` with no unit"))
        let hil = try Self.read("hil/README.md")
        #expect(hil.contains("A rig file is a bessd configuration in `mode: hil`"))
        let plantHelp = try Package.run("bess-hil", ["help", "plant"])
        #expect(plantHelp.out.contains("a bessd configuration in mode: hil"), "\(plantHelp.out)")
        for rig in ["hil/rigs/loopback.yaml", "hil/rigs/scenario.yaml"] {
            #expect(try Self.read(rig).contains("\nmode: hil\n"), "\(rig)")
        }
    }
}
