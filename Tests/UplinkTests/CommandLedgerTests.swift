import Foundation
import Testing
@testable import Uplink

/// The MQTT command ledger across restarts and power cuts. A power cut keeps what was flushed to the
/// disk and loses the rest; the ledger flushes an id before the command is acted on and its answer
/// before the answer leaves, so each test below loads the file as the cut would leave it.
@Suite("The MQTT command ledger")
struct CommandLedgerTests {
    static let now = 1_800_000_000.0

    static func file() -> String {
        let dir = NSTemporaryDirectory() + "bessd-ledger-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + "/mqtt-commands.json"
    }

    /// The file as it is on disk now, read by a fresh decoder (what a restart reads).
    static func onDisk(_ path: String) -> CommandLedger.Stored? {
        FileManager.default.contents(atPath: path).flatMap { try? JSONDecoder().decode(CommandLedger.Stored.self, from: $0) }
    }

    @Test("command id on disk before acting, answer before sending; a redelivery gets the same answer")
    func durableOrder() throws {
        let path = Self.file()
        var ledger = CommandLedger(file: path, now: Self.now)
        #expect(ledger.verdict("c1", now: Self.now) == .new)
        try ledger.begin("c1", until: Self.now + 60, now: Self.now)
        // What a power cut right now (while acting) leaves: the id, without an answer.
        #expect(Self.onDisk(path)?.entries["c1"] == CommandLedger.Entry(ack: nil, until: Self.now + 60))
        let ack = CommandAck(id: "c1", accepted: true)
        try ledger.finish(ack, until: Self.now + 60, now: Self.now)
        #expect(Self.onDisk(path)?.entries["c1"]?.ack == ack)
        let restarted = CommandLedger(file: path, now: Self.now + 5)
        #expect(restarted.verdict("c1", now: Self.now + 5) == .answered(ack))
        #expect(restarted.verdict("c2", now: Self.now + 5) == .new)
        // Expired entries leave at the next write.
        var later = restarted
        try later.begin("c3", until: Self.now + 200, now: Self.now + 100)
        #expect(Self.onDisk(path)?.entries["c1"] == nil)
    }

    @Test("power cut after acting, before the answer was kept: the redelivery is refused as uncertain")
    func cutWhileActing() throws {
        let path = Self.file()
        var ledger = CommandLedger(file: path, now: Self.now)
        try ledger.begin("dispatch-7", until: Self.now + 900, now: Self.now)
        // The cut: the process and its memory are gone; the disk has what was flushed.
        let afterCut = CommandLedger(file: path, now: Self.now + 30)
        guard case .refused(let answer) = afterCut.verdict("dispatch-7", now: Self.now + 30) else {
            Issue.record("a command perhaps acted on before the cut would be acted on again")
            return
        }
        #expect(!answer.accepted)
        #expect(answer.reason?.hasPrefix("MQTT_COMMAND_UNCERTAIN") == true)
    }

    /// Empty, torn or garbage after a power cut.
    @Test("an unreadable command ledger refuses every command for 24 h, across restart, and is kept",
          arguments: ["", "{\"format\":\"bessd-mqtt-commands\",\"version\":2,\"entr", "\u{0}\u{0}\u{0}\u{0}"])
    func unreadable(content: String) throws {
        let path = Self.file()
        try content.write(toFile: path, atomically: false, encoding: .utf8)
        let ledger = CommandLedger(file: path, now: Self.now)
        #expect(ledger.loadProblem?.hasPrefix("MQTT_LEDGER_UNREADABLE") == true)
        guard case .refused(let answer) = ledger.verdict("anything", now: Self.now + 1) else {
            Issue.record("an id that cannot be proven new was accepted")
            return
        }
        #expect(answer.reason?.hasPrefix("MQTT_LEDGER_UNREADABLE") == true)
        let directory = (path as NSString).deletingLastPathComponent
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).contains { $0.hasPrefix("mqtt-commands.json.damaged-") })
        // A restart does not forget the window; after it, ids are new again.
        let restarted = CommandLedger(file: path, now: Self.now + 3600)
        #expect(restarted.loadProblem == nil)
        #expect(restarted.verdict("anything", now: Self.now + 3600) != .new)
        #expect(restarted.verdict("anything", now: Self.now + 86_401) == .new)
    }

    @Test("a ledger written by an earlier bessd (version 1: id → answer) is read")
    func versionOne() throws {
        let path = Self.file()
        let old = ["c9": CommandLedger.Entry(ack: CommandAck(id: "c9", accepted: false, reason: "x"), until: Self.now + 60)]
        try JSONEncoder().encode(old).write(to: URL(fileURLWithPath: path))
        let ledger = CommandLedger(file: path, now: Self.now)
        #expect(ledger.loadProblem == nil)
        #expect(ledger.verdict("c9", now: Self.now) == .answered(CommandAck(id: "c9", accepted: false, reason: "x")))
    }

    @Test("an unwritable ledger: begin throws, so the link refuses the command rather than act unrecorded")
    func unwritable() {
        var ledger = CommandLedger(file: "/proc/bessd-no-such-dir/mqtt-commands.json", now: Self.now)
        #expect(throws: (any Error).self) { try ledger.begin("c1", until: Self.now + 60, now: Self.now) }
    }
}
