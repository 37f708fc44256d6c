import ControlProtocol
import Foundation
import Glibc
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
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

/// A pseudo-terminal to give a child as its stderr: the test reads what a person at a terminal sees.
final class PseudoTerminal: @unchecked Sendable {
    let master: Int32
    private let terminal: Int32
    private let lock = NSLock()
    private var received = Data()
    private let ended = DispatchSemaphore(value: 0)

    /// glibc's pseudo-terminal calls, which Swift's Glibc module leaves out (they need _XOPEN_SOURCE).
    private static func libc<Function>(_ name: String, _ type: Function.Type) throws -> Function {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { throw Package.RunFailure(message: "no \(name) in libc") }
        return unsafeBitCast(symbol, to: type)
    }

    init() throws {
        let openpt = try Self.libc("posix_openpt", (@convention(c) (Int32) -> Int32).self)
        let grantpt = try Self.libc("grantpt", (@convention(c) (Int32) -> Int32).self)
        let unlockpt = try Self.libc("unlockpt", (@convention(c) (Int32) -> Int32).self)
        let ptsname = try Self.libc("ptsname_r", (@convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32).self)
        master = openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        var name = [CChar](repeating: 0, count: 128)
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, ptsname(master, &name, name.count) == 0 else {
            throw Package.RunFailure(message: "no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec, so no other child started meanwhile keeps the terminal open; the child
        // gets it as its stderr through dup2, which clears the flag.
        terminal = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else {
            throw Package.RunFailure(message: "cannot open \(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(master, &buffer, buffer.count)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }  // EIO once no process holds the terminal's end
                lock.withLock { received.append(contentsOf: buffer[..<n]) }
            }
            ended.signal()
        }
    }

    /// The terminal's end, for `Process.standardError`.
    var handle: FileHandle { FileHandle(fileDescriptor: terminal, closeOnDealloc: false) }

    /// Everything written to the terminal so far.
    var text: String { lock.withLock { String(decoding: received, as: UTF8.self) } }

    /// Closes the test's copy of the terminal's end (after the child started) and, once the child
    /// has exited too, waits for the reader to see the end.
    func finish() {
        close(terminal)
        _ = ended.wait(timeout: .now() + 10)
        close(master)
    }
}

@Suite("journald", .serialized, .enabled(if: getuid() == 0, "starting systemd-journald needs root"))
struct JournaldTests {
    /// A one-unit simulated site at a steady 50 Hz, its control socket `@SOCKET@`, with these faults.
    static func site(_ unit: String, faults: [String]) -> String {
        """
        mode: simulation
        period_ms: 50
        control_socket: @SOCKET@
        bess_units:
          - {id: \(unit), capacity_kwh: 250, max_power_kw: 100}
        simulation:
          frequency_profile: steady
          base_hz: 50.0
          faults:

        """ + faults.map { "    - \($0)\n" }.joined()
    }

    @Test("trips, latches, resets and audits arrive as structured entries; the docs' recipes find them")
    func recipes() throws {
        let journal = try TestJournal()
        #expect(JournalLogHandler.isAvailable)
        let unit = "JRN\(getpid())"
        let yaml = Self.site(unit, faults: ["{kind: bms_silence, at_s: 0.5, duration_s: 4}", "{kind: thermal_runaway, at_s: 5}"])
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

    @Test("on a terminal trips and state changes print as well as journal; off a terminal, journal only")
    func terminalGetsEventLines() throws {
        let journal = try TestJournal()
        #expect(JournalLogHandler.isAvailable)
        let directory = NSTemporaryDirectory() + "bessd-tty-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func configuration(_ unit: String) throws -> String {
            let path = "\(directory)/\(unit).yaml"
            try (Self.site(unit, faults: ["{kind: bms_silence, at_s: 0.5, duration_s: 60}"])
                .replacingOccurrences(of: "@SOCKET@", with: "\(directory)/\(unit).sock")
                + "state_directory: \(directory)/\(unit)-state\n").write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        // On a terminal (as `make sim`): the unit's state change and the BMS_COMM_LOST trip, as lines.
        let onTerminal = "TTY\(getpid())"
        let terminal = try PseudoTerminal()
        let process = Process()
        process.executableURL = Package.executable("bessd")
        process.arguments = ["run", "--config", try configuration(onTerminal), "--status-every", "0"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = terminal.handle
        try process.run()
        let tripLine = { (text: String) in
            text.split(separator: "\n").contains {
                $0.contains("\(onTerminal) BMS_COMM_LOST") && $0.contains("MESSAGE_ID=\(MessageID.trip)") && $0.contains("PRIORITY=3")
            }
        }
        let sawTrip = waitFor(seconds: 20) { tripLine(terminal.text) }
        process.terminate()
        process.waitUntilExit()
        terminal.finish()
        #expect(sawTrip, "\(terminal.text)")
        #expect(terminal.text.contains("\(onTerminal) state running"), "\(terminal.text)")
        // The journal has them as well.
        #expect(waitFor(seconds: 10) {
            (try? journal.query(["-t", "bessd", "BESS_UNIT=\(onTerminal)", "BESS_CODE=BMS_COMM_LOST", "-o", "cat"]))?
                .contains("\(onTerminal) BMS_COMM_LOST") == true
        })

        // Off a terminal (as under systemd, where stderr is the journal's stream): the journal only.
        let offTerminal = "PIPE\(getpid())"
        let piped = try Package.run("bessd", ["run", "--config", try configuration(offTerminal), "--status-every", "0",
                                              "--duration", "3"])
        #expect(piped.status == 0, "\(piped.err)")
        #expect(!piped.err.contains("\(offTerminal) state running"), "\(piped.err)")
        #expect(waitFor(seconds: 10) {
            (try? journal.query(["-t", "bessd", "BESS_UNIT=\(offTerminal)", "-o", "cat"]))?.contains("\(offTerminal) state running") == true
        })
        withExtendedLifetime(journal) {}
    }
}
