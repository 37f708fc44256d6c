import ControlProtocol
import Foundation
import Glibc
@testable import Service
@testable import Cycle
@testable import Config
import Testing

/// A systemd-journald for the test: the one already listening, or one started standalone (as root)
/// and stopped afterwards.
final class TestJournal {
    var started: Process?

    init() throws {
        if JournalLogHandler.isAvailable { return }
        let journald = Process()
        journald.executableURL = URL(fileURLWithPath: "/lib/systemd/systemd-journald")
        journald.standardOutput = FileHandle.nullDevice
        journald.standardError = FileHandle.nullDevice
        try journald.run()
        started = journald
        _ = waitFor(seconds: 5) { JournalLogHandler.isAvailable }
    }

    deinit {
        if let started {
            started.terminate()
            started.waitUntilExit()
        }
    }

    /// Runs journalctl with `arguments` and returns its output.
    func query(_ arguments: [String]) throws -> String {
        try Package.capture(URL(fileURLWithPath: "/usr/bin/journalctl"), ["--no-pager"] + arguments, directory: nil).out
    }
}

@Suite("journald", .serialized, .enabled(if: getuid() == 0, "starting systemd-journald needs root"))
struct JournaldTests {
    @Test("trips, latches, resets and audits arrive as structured entries; the docs' recipes find them")
    func recipes() throws {
        let journal = try TestJournal()
        #expect(JournalLogHandler.isAvailable)
        let unit = "JRN\(getpid())"
        let yaml = """
            mode: simulation
            period_ms: 50
            control_socket: @SOCKET@
            bess_units:
              - {id: \(unit), capacity_kwh: 250, max_power_kw: 100}
            simulation:
              frequency_profile: steady
              base_hz: 50.0
              faults:
                - {kind: bms_silence, at_s: 0.5, duration_s: 4}
                - {kind: thermal_runaway, at_s: 5}
            """
        let daemon = try RunningDaemon(yaml: yaml, extra: [])
        // RunningDaemon logs to stdout; this test wants the journal: run a second process instead.
        daemon.signal(SIGKILL)
        _ = daemon.finish()
        let process = Process()
        process.executableURL = Package.executable("bessd")
        process.arguments = ["run", "--config", daemon.configPath, "--status-every", "0", "--log", "journal", "--duration", "20"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Wait for the latch, then reset through bessctl (refused: the pack is still heating).
        let latched = waitFor(seconds: 18) {
            let status = try? ControlClient.request(["verb": "status"], socket: daemon.socket)
            let units = status?["units"] as? [[String: Any]]
            return (units?.first?["latched"] as? [String])?.contains("THERMAL_RUNAWAY") == true
        }
        #expect(latched)
        let reset = try Package.run("bessctl", ["reset", unit, "--socket", daemon.socket])
        #expect(reset.status == 1)
        process.waitUntilExit()
        // Until journald has the run's last line (bessd's stop line, written after every event).
        #expect(waitFor(seconds: 10) {
            (try? journal.query(["-t", "bessd", "MESSAGE_ID=\(MessageID.lifecycle)", "-o", "cat"]))?.contains("bessd stopped") == true
        })

        // journalctl -t bessd BESS_CODE=BMS_COMM_LOST: the trip, its clear, with unit, severity and priority.
        let commLost = try journal.query(["-t", "bessd", "BESS_CODE=BMS_COMM_LOST", "BESS_UNIT=\(unit)", "-o", "json"])
        let entries = commLost.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(entries.contains { $0["BESS_EVENT"] as? String == "raised" && $0["PRIORITY"] as? String == "3"
                && $0["BESS_SEVERITY"] as? String == "trip" && $0["MESSAGE_ID"] as? String == MessageID.trip })
        #expect(entries.contains { $0["BESS_EVENT"] as? String == "cleared" })
        // journalctl -t bessd BESS_CODE=THERMAL_RUNAWAY: critical priority, latched.
        let thermal = try journal.query(["-t", "bessd", "BESS_CODE=THERMAL_RUNAWAY", "BESS_UNIT=\(unit)", "-o", "cat"])
        #expect(thermal.contains("\(unit) THERMAL_RUNAWAY LATCHED"))
        let latchedEntries = try journal.query(["-t", "bessd", "MESSAGE_ID=\(MessageID.latch)", "BESS_UNIT=\(unit)", "-p", "crit",
                                                "-o", "cat"])
        #expect(latchedEntries.contains("THERMAL_RUNAWAY"))
        // Following one unit; the reset audit with the caller's uid.
        let unitEntries = try journal.query(["-t", "bessd", "BESS_UNIT=\(unit)", "-o", "cat"])
        #expect(unitEntries.contains("\(unit) state running"))
        let resets = try journal.query(["-t", "bessd", "MESSAGE_ID=\(MessageID.reset)", "BESS_CALLER_UID=\(getuid())", "-o", "cat"])
        #expect(resets.contains("bessctl (uid \(getuid())): reset \(unit)"))
        #expect(resets.contains("refused [\"\(unit):THERMAL_RUNAWAY\"]"))
        withExtendedLifetime(journal) {}
    }
}
