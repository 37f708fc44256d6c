import Foundation
import Glibc
import TestSupport
import Testing

/// Commands in the HTTP aggregator's answers go through the command ledger the MQTT link keeps
/// (`CommandLedger`): an aggregator that hands an id out again (a lost answer, a re-queued id) has
/// it answered again, not acted on again, across a restart too. And a command's id reaches the
/// journal quoted: a line break in it forges no line.
@Suite("HTTP uplink commands", .serialized)
struct HTTPCommandLedgerTests {
    /// The refusal is journalled as one escaped line.
    @Test("a repeated command id is acted on once, even across restart; an id with a line break is refused")
    func actedOnOnce() throws {
        let stub = try AggregatorStub(seconds: 120)
        #expect(stub.port > 0)
        let state = NSTemporaryDirectory() + "bessd-http-ledger-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let yaml = daemonYAML + """

            state_directory: \(state)
            aggregator: {url: "http://127.0.0.1:\(stub.port)", interval_s: 0.2, site_id: LEDGER_SITE}
            """
        func answers(_ id: String) -> [[String: Any]] {
            ((try? stub.state()["acks"] as? [[String: Any]]) ?? []).filter { $0["id"] as? String == id }
        }
        let command: [String: Any] = ["id": "site:c-once", "kind": "mode", "unit": "D2", "mode": "standby",
                                      "expires_unix": Date().timeIntervalSince1970 + 300]
        let forged = "evil\nFORGED line"

        var daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        try stub.admin("/admin/command", command)
        #expect(waitFor(seconds: 15) { answers("site:c-once").count == 1 }, "the command was not answered")
        try stub.admin("/admin/command", command)  // the aggregator hands the same id out again
        #expect(waitFor(seconds: 15) { answers("site:c-once").count == 2 }, "the command handed out again was not answered")
        try stub.admin("/admin/command", ["id": forged, "kind": "mode", "unit": "D1", "mode": "standby",
                                          "expires_unix": Date().timeIntervalSince1970 + 300])
        #expect(waitFor(seconds: 15) { answers(forged).count == 1 }, "the command with a line break in its id was not answered")
        daemon.signal(SIGTERM)
        let first = daemon.finish()
        #expect(first.status == 0)

        // After a restart the ledger on disk still knows the id.
        daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        try stub.admin("/admin/command", command)
        #expect(waitFor(seconds: 15) { answers("site:c-once").count == 3 }, "the command handed out after the restart was not answered")
        daemon.signal(SIGTERM)
        let second = daemon.finish()
        #expect(second.status == 0)

        let lines = (first.text + second.text).split(separator: "\n")
        let applied = lines.filter { $0.contains("site:c-once") && $0.contains("applied") }
        #expect(applied.count == 1, "acted on \(applied.count) times:\n\(applied.joined(separator: "\n"))")
        // Each delivery got the first answer again.
        #expect(answers("site:c-once").allSatisfy { $0["accepted"] as? Bool == true && $0["reason"] == nil }, "\(answers("site:c-once"))")
        // The id outside the rule is refused, coded, and journalled on one line with its break escaped.
        let refusal = answers(forged).first
        #expect(refusal?["accepted"] as? Bool == false)
        #expect((refusal?["reason"] as? String)?.hasPrefix("DISPATCH_ID_INVALID") == true, "\(String(describing: refusal))")
        let mentions = lines.filter { $0.contains("FORGED") }
        #expect(!mentions.isEmpty && mentions.allSatisfy { $0.contains("dispatch \"evil\\u{a}FORGED line\" refused: DISPATCH_ID_INVALID") },
                "a peer's line break reached the log:\n\(mentions.joined(separator: "\n"))")
    }
}
