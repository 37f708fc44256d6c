import BessSystem
import Foundation
import Glibc
import TestSupport
import Testing

/// The block schedule against a running bessd (issue 60 §1): bessctl's verbs through the control
/// socket, a SIGKILL with the schedule kept, and the aggregator's `schedule` command over HTTP and MQTT.
@Suite("Block schedule against a running bessd", .serialized)
struct ScheduleDaemonTests {
    /// One-minute blocks, as a rig runs them.
    static let yaml = daemonYAML + "\nschedule: {block_s: 60}\n"

    /// A schedule file of `count` one-minute blocks from the next minute on.
    static func file(_ directory: String, id: String = "day-1", revision: Int = 1, kWh: Double, count: Int = 4) throws -> (path: String, first: Int64) {
        let first = (Int64(Date().timeIntervalSince1970) / 60 + 1) * 60
        let blocks = (0..<count).map { "{\"start\": \"\(rfc3339(first + Int64($0) * 60))\", \"energy_kwh\": \(kWh)}" }
        let path = directory + "/schedule-\(id)-\(revision).json"
        try "{\"id\": \"\(id)\", \"revision\": \(revision), \"blocks\": [\(blocks.joined(separator: ", "))]}"
            .write(toFile: path, atomically: true, encoding: .utf8)
        return (path, first)
    }

    static func rfc3339(_ unix: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(unix)))
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test("""
        bessctl schedule load/show/clear: the operator's file taken, an infeasible block named with exit 0, a bad file refused \
        with its code, blocks[] in --json, and the schedule kept through a SIGKILL
        """)
    func bessctlRoundTrip() throws {
        // A directory of the test's own: the daemon restarted below keeps the same state.
        let directory = NSTemporaryDirectory() + "bessd-schedule-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var daemon = try RunningDaemon(yaml: Self.yaml, directory: directory)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let empty = try Package.run("bessctl", ["schedule", "--json", "--socket", daemon.socket])
        #expect(empty.status == 0)
        let none = Self.json(empty.out)
        #expect(none["id"] is NSNull && none["fallback_active"] as? Bool == true && none["fallback"] as? String == "application", "\(empty.out)")

        // 0.5 kWh a minute is 30 kW: within the site's 200 kW and its stored energy.
        let (path, first) = try Self.file(directory, kWh: 0.5)
        let load = try Package.run("bessctl", ["schedule", "load", path, "--socket", daemon.socket])
        #expect(load.status == 0, "\(load.err)")
        #expect(load.out.contains("schedule loaded: day-1 revision 1 (operator)") && !load.out.contains("warning"), "\(load.out)")
        let shown = Self.json(try Package.run("bessctl", ["schedule", "--json", "--socket", daemon.socket]).out)
        #expect(shown["id"] as? String == "day-1" && shown["revision"] as? Int == 1 && shown["source"] as? String == "operator")
        let blocks = shown["blocks"] as? [[String: Any]] ?? []
        #expect(blocks.count == 4 && blocks.first?["start"] as? String == Self.rfc3339(first), "\(shown)")
        for key in ["start", "target_kwh", "delivered_kwh", "deviation_kwh", "droop_kwh", "bound_by", "state"] {
            #expect(blocks.first?.keys.contains(key) == true, "\(key)")
        }
        #expect(blocks.first?["target_kwh"] as? Double == 0.5)
        let table = try Package.run("bessctl", ["schedule", "--socket", daemon.socket])
        #expect(table.out.contains("schedule day-1 revision 1 from the operator, 60 s blocks") && table.out.contains("TARGET kWh"), "\(table.out)")

        // 100 kWh in a minute (6 MW): named by its start and kWh, exit 0, taken all the same.
        let (big, bigFirst) = try Self.file(directory, revision: 2, kWh: 100)
        let infeasible = try Package.run("bessctl", ["--socket", daemon.socket, "schedule", "load", big])
        #expect(infeasible.status == 0, "\(infeasible.err)")
        #expect(infeasible.out.contains("warning: SCHEDULE_INFEASIBLE: the block from "), "\(infeasible.out)")
        #expect(infeasible.out.contains("cannot be met by "), "\(infeasible.out)")
        _ = bigFirst

        // A bad file: a start off the boundary, non-zero with its code; the schedule in force stays.
        let bad = directory + "/bad.json"
        try #"{"id": "bad", "revision": 1, "blocks": [{"start": "2030-01-01T00:00:30Z", "energy_kwh": 1}]}"#
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try Package.run("bessctl", ["schedule", "load", bad, "--socket", daemon.socket])
        #expect(refused.status == 2 && refused.err.contains("SCHEDULE_INVALID") && refused.err.contains("block boundary"), "\(refused.err)")
        let garbage = directory + "/garbage.json"
        try "{\"id\": 12}".write(toFile: garbage, atomically: true, encoding: .utf8)
        let notJSON = try Package.run("bessctl", ["schedule", "load", garbage, "--socket", daemon.socket])
        #expect(notJSON.status == 2 && notJSON.err.contains("SCHEDULE_INVALID"), "\(notJSON.err)")

        // SIGKILL: the schedule is on disk and followed again after the restart.
        daemon.signal(SIGKILL)
        _ = daemon.finish()
        daemon = try RunningDaemon(yaml: Self.yaml, directory: directory)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let kept = Self.json(try Package.run("bessctl", ["schedule", "--json", "--socket", daemon.socket]).out)
        #expect(kept["id"] as? String == "day-1" && kept["revision"] as? Int == 2, "\(kept)")

        let clear = try Package.run("bessctl", ["schedule", "clear", "--socket", daemon.socket])
        #expect(clear.status == 0 && clear.out.contains("schedule cleared; the fallback (application) runs"), "\(clear.out)\(clear.err)")
        let cleared = Self.json(try Package.run("bessctl", ["schedule", "--json", "--socket", daemon.socket]).out)
        #expect(cleared["id"] is NSNull && cleared["fallback_active"] as? Bool == true)
        daemon.signal(SIGTERM)
        let (status, text) = daemon.finish()
        #expect(status == 0)
        #expect(text.contains("bessctl (uid \(getuid())): schedule clear: \"day-1\" revision 2 ended"), "\(text.suffix(2000))")
        #expect(text.contains("schedule \"day-1\" revision 2 restored from"))
    }

    @Test("a site without schedule: refuses each verb SCHEDULE_DISABLED")
    func disabled() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let show = try Package.run("bessctl", ["schedule", "--socket", daemon.socket])
        #expect(show.status == 2 && show.err.contains("SCHEDULE_DISABLED"), "\(show.err)")
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
    }

    /// The command's schedule object, from `ScheduleDaemonTests.file`'s text.
    static func command(_ id: String, file: String) throws -> [String: Any] {
        let schedule = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
        return ["id": id, "kind": "schedule", "expires_unix": Date().timeIntervalSince1970 + 300, "schedule": schedule]
    }

    @Test("HTTP: the aggregator's schedule command is taken once per id and revision; the operator's outranks it (SCHEDULE_HELD)")
    func http() throws {
        let stub = try AggregatorStub(seconds: 120)
        let state = NSTemporaryDirectory() + "bessd-schedule-http-\(getpid())"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try RunningDaemon(yaml: Self.yaml + """
            state_directory: \(state)
            aggregator: {url: "http://127.0.0.1:\(stub.port)", interval_s: 0.2, site_id: SCHEDULE_SITE}
            """)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func answers(_ id: String) -> [[String: Any]] {
            ((try? stub.state()["acks"] as? [[String: Any]]) ?? []).filter { $0["id"] as? String == id }
        }
        let (file, _) = try Self.file(state, id: "agg-day", kWh: 0.25)
        try stub.admin("/admin/command", try Self.command("s-1", file: file))
        #expect(waitFor(seconds: 15) { answers("s-1").count == 1 }, "not answered")
        #expect(answers("s-1").first?["accepted"] as? Bool == true && answers("s-1").first?["reason"] == nil, "\(answers("s-1"))")
        let shown = try daemon.request(["verb": "schedule"])
        #expect(shown["id"] as? String == "agg-day" && shown["source"] as? String == "aggregator", "\(shown)")
        // The same schedule under another command id: answered, not acted on again.
        try stub.admin("/admin/command", try Self.command("s-2", file: file))
        #expect(waitFor(seconds: 15) { answers("s-2").count == 1 })
        #expect((answers("s-2").first?["reason"] as? String)?.hasPrefix("SCHEDULE_REPEATED") == true, "\(answers("s-2"))")
        // The operator's schedule outranks the aggregator's next revision.
        let (operatorFile, _) = try Self.file(state, id: "op-day", kWh: 0.1)
        #expect(try Package.run("bessctl", ["schedule", "load", operatorFile, "--socket", daemon.socket]).status == 0)
        let (revision, _) = try Self.file(state, id: "agg-day", revision: 2, kWh: 0.3)
        try stub.admin("/admin/command", try Self.command("s-3", file: revision))
        #expect(waitFor(seconds: 15) { answers("s-3").count == 1 })
        #expect(answers("s-3").first?["accepted"] as? Bool == false, "\(answers("s-3"))")
        #expect((answers("s-3").first?["reason"] as? String)?.hasPrefix("SCHEDULE_HELD: the operator's schedule") == true, "\(answers("s-3"))")
        daemon.signal(SIGTERM)
        let (status, text) = daemon.finish()
        #expect(status == 0)
        #expect(text.components(separatedBy: "dispatch \"s-1\" applied: schedule \"agg-day\" revision 1").count == 2, "acted on once")
    }

    @Test("MQTT: the schedule command pushed on the command topic is taken as the aggregator's, an infeasible block in its answer")
    func mqtt() throws {
        let dir = NSTemporaryDirectory() + "bessd-schedule-mqtt-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let broker = try TestServer.mosquitto(dir, "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false")
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(port) })
        let daemon = try RunningDaemon(yaml: Self.yaml + """
            state_directory: \(dir)/state
            aggregator: {transport: mqtt, url: "mqtt://127.0.0.1:\(port)", interval_s: 0.2, site_id: SCHEDULE_MQ}
            """)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 10) { ((try? daemon.request(["verb": "status"]))?["uplink"] as? [String: Any])?["connected"] as? Bool == true })
        let (file, _) = try Self.file(dir, id: "mq-day", kWh: 100)
        let payload = String(decoding: try JSONSerialization.data(withJSONObject: try Self.command("mq-s-1", file: file)), as: UTF8.self)
        #expect(try shell(["mosquitto_pub", "-p", "\(port)", "-V", "mqttv5", "-q", "1", "-t", "bess/v1/SCHEDULE_MQ/commands", "-m", payload]).status == 0)
        #expect(waitFor(seconds: 15) { (try? daemon.request(["verb": "schedule"]))?["id"] as? String == "mq-day" })
        let shown = try daemon.request(["verb": "schedule"])
        #expect(shown["source"] as? String == "aggregator" && shown["revision"] as? Int == 1, "\(shown)")
        daemon.signal(SIGTERM)
        let (status, text) = daemon.finish()
        #expect(status == 0)
        // 100 kWh a minute cannot be met: taken, and the answer names the block.
        #expect(text.contains("dispatch \"mq-s-1\" applied: schedule \"mq-day\" revision 1 (SCHEDULE_INFEASIBLE: the block from "),
                "\(text.suffix(3000))")
    }
}
