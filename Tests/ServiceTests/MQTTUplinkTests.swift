import Foundation
import Glibc
import TestSupport
import Testing
import Uplink
@testable import bess_hil
import UplinkIngest

/// The test runner's worker threads block SIGTERM and a child inherits that mask: a server or
/// client started by a test runs with it cleared, so SIGTERM stops it cleanly.
let withSignalsUnblocked = ["/usr/bin/python3", "-c",
                            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"]

/// A real server from Debian (scripts/test-server.sh) on a loopback port the test picked; stopped by the test.
final class TestServer {
    let process = Process()
    let log: String

    init(_ arguments: [String], log: String) throws {
        self.log = log
        process.executableURL = URL(fileURLWithPath: withSignalsUnblocked[0])
        process.arguments = Array(withSignalsUnblocked.dropFirst()) + [Package.root.appendingPathComponent("scripts/test-server.sh").path] + arguments
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = FileHandle(forWritingAtPath: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    /// Stops it (SIGTERM: a clean stop that saves what it persists) and waits; SIGKILL after 15 s.
    func stop(_ signal: Int32 = SIGTERM) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        if !waitFor(seconds: 15, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }

    static func postgres(_ directory: String) throws -> (TestServer, Int) {
        let port = Loopback.freePort()
        let server = try TestServer(["postgres", directory + "/pg", "\(port)"], log: directory + "/postgres.log")
        return (server, port)
    }

    /// Mosquitto with `configuration` (its listener line included) written to `directory`.
    /// Mosquitto with `configuration` (its listener line included) written to `directory`; its
    /// persistence goes to `directory`/`name`-data/.
    static func mosquitto(_ directory: String, _ configuration: String, name: String = "mosquitto") throws -> TestServer {
        let path = directory + "/\(name).conf"
        let data = directory + "/\(name)-data/"
        try (configuration + "\npersistence_location \(data)\n").write(toFile: path, atomically: true, encoding: .utf8)
        return try TestServer(["mosquitto", path, data], log: directory + "/\(name).log")
    }
}

/// Runs a command to its end; returns its exit status and output.
@discardableResult
func shell(_ arguments: [String], timeout: Double = 20) throws -> (status: Int32, out: String) {
    let result = try Package.capture(URL(fileURLWithPath: "/usr/bin/env"), ["timeout", "\(Int(timeout))"] + arguments,
                                     directory: nil, merged: true)
    return (result.status, result.out)
}

/// A command left running in the background, its output in a file.
final class Background {
    let process = Process()
    let path: String
    init(_ arguments: [String], output: String) throws {
        path = output
        process.executableURL = URL(fileURLWithPath: withSignalsUnblocked[0])
        // Line-buffered, so what it printed can be waited for.
        process.arguments = Array(withSignalsUnblocked.dropFirst()) + ["stdbuf", "-oL"] + arguments
        FileManager.default.createFile(atPath: output, contents: nil)
        let handle = FileHandle(forWritingAtPath: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }
    var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        if !waitFor(seconds: 15, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
    deinit { stop() }
}

@Suite("MQTT 5 uplink against Mosquitto, PostgreSQL and bess-aggregator", .serialized)
struct MQTTUplinkTests {
    func curl(_ arguments: [String]) -> String {
        (try? shell(["curl", "-s", "-m", "5"] + arguments).out) ?? ""
    }

    func seqs(_ base: String, _ site: String) -> [UInt64] {
        (try? JSONDecoder().decode([UInt64].self, from: Data(curl(["\(base)/v1/sites/\(site)/seqs"]).utf8))) ?? []
    }

    /// A value of bessd's or the aggregator's /metrics (first line that starts with `name`).
    func metric(_ url: String, _ name: String) -> Double? {
        for line in curl([url]).split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    func uplink(_ daemon: RunningDaemon) -> [String: Any] {
        ((try? daemon.request(["verb": "status"]))?["uplink"] as? [String: Any]) ?? [:]
    }

    @Test("""
        broker down at the start, bessd SIGKILLed, broker restarted: every record arrives once and in order (seq 1…n, \
        none invented); birth and Last Will tracked; commands pushed and acted on once per id; expired and garbage \
        commands refused with a code; the cycle never late
        """)
    func deliveryAcrossFailures() throws {
        let dir = NSTemporaryDirectory() + "bess-mqtt-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (postgres, pgPort) = try TestServer.postgres(dir)
        defer { postgres.stop() }
        let brokerPort = Loopback.freePort()
        let brokerConfig = """
            listener \(brokerPort) 127.0.0.1
            allow_anonymous true
            persistence true
            """
        let metricsPort = Loopback.freePort()
        let site = "MQ_SITE"
        let yaml = daemonYAML.replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.0") + """

            state_directory: \(dir)/state
            metrics_listen: 127.0.0.1:\(metricsPort)
            aggregator: {transport: mqtt, url: "mqtt://127.0.0.1:\(brokerPort)", interval_s: 0.2, site_id: \(site), keepalive_s: 5}
            """
        // 1. The broker is not there yet: bessd runs, records wait in the spool, the cycle is never late.
        var daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 10) { (uplink(daemon)["backlog_records"] as? NSNumber)?.intValue ?? 0 >= 3 })
        #expect(uplink(daemon)["connected"] as? Bool == false)
        #expect(uplink(daemon)["last_error"] as? String == "MQTT_UNREACHABLE", "\(uplink(daemon))")

        var broker = try TestServer.mosquitto(dir, brokerConfig)
        #expect(waitFor(seconds: 10) { Loopback.listening(brokerPort) }, "mosquitto never listened")
        #expect(waitFor(seconds: 20) { Loopback.listening(pgPort) }, "postgres never listened")
        let httpPort = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(httpPort)",
                                         "--database", "postgres://bess@127.0.0.1:\(pgPort)/postgres",
                                         "--mqtt", "mqtt://127.0.0.1:\(brokerPort)", "--instance", "t1"],
                                        output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        let base = "http://127.0.0.1:\(httpPort)"
        #expect(waitFor(seconds: 30) { Loopback.listening(httpPort) }, "bess-aggregator never listened: \(aggregator.text)")
        #expect(waitFor(seconds: 20) { seqs(base, site).count >= 5 }, "\(aggregator.text)")
        #expect(seqs(base, site).first == 1, "the records spooled while the broker was away come first")
        #expect(waitFor(seconds: 10) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 1 })

        // 2. SIGKILL: the broker publishes the Last Will; the restarted bessd carries on from its spool.
        daemon.signal(SIGKILL)
        _ = daemon.finish()
        #expect(waitFor(seconds: 15) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 0 },
                "no Last Will seen")
        // While it is away: a command waits in its session at the broker; one whose MQTT 5 message
        // expiry passes first is dropped by the broker and never acted on.
        let commandTopic = "bess/v1/\(site)/commands"
        let waiting = #"{"id":"mq-offline","kind":"power","unit":"D1","power_kw":15,"expires_unix":\#(Date().timeIntervalSince1970 + 120)}"#
        let lapsing = #"{"id":"mq-lapsed","kind":"power","unit":"D1","power_kw":-15,"expires_unix":\#(Date().timeIntervalSince1970 + 120)}"#
        #expect(try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", commandTopic, "-m", waiting]).status == 0)
        #expect(try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", commandTopic,
                           "-D", "publish", "message-expiry-interval", "1", "-m", lapsing]).status == 0)
        // Mosquitto keeps time in whole seconds and drops a message once its clock is past the expiry:
        // 1 s of expiry is certainly over 3.5 s later.
        let lapsedAt = Date().addingTimeInterval(3.5)
        #expect(waitFor(seconds: 8) { Date() > lapsedAt })
        daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 15) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 1 })
        func d1Setpoint() -> Double { ((try? daemon.units())?.first?["setpoint_w"] as? NSNumber)?.doubleValue ?? 0 }
        #expect(waitFor(seconds: 15) { d1Setpoint() > 5_000 }, "the command sent while bessd was away never arrived: D1 at \(d1Setpoint()) W")

        // 3. The broker restarts (persistence on): bessd sees it go, spools, reconnects, delivers.
        broker.stop()
        #expect(waitFor(seconds: 15) { uplink(daemon)["connected"] as? Bool == false })
        let before = (uplink(daemon)["acknowledged_seq"] as? NSNumber)?.intValue ?? 0
        #expect(waitFor(seconds: 10) { (uplink(daemon)["backlog_records"] as? NSNumber)?.intValue ?? 0 >= 3 })
        broker = try TestServer.mosquitto(dir, brokerConfig)
        #expect(waitFor(seconds: 30) { (uplink(daemon)["acknowledged_seq"] as? NSNumber)?.intValue ?? 0 > before + 3 })

        // 4. A command pushed by the aggregator is on the unit within the period, and answered.
        let expires = Date().timeIntervalSince1970 + 120
        let command = #"{"id":"mq-1","kind":"power","unit":"D2","power_kw":25,"reactive_kvar":4,"expires_unix":\#(expires)}"#
        #expect(curl(["-X", "POST", "--data-binary", command, "\(base)/v1/sites/\(site)/commands"]).contains("\"transport\":\"mqtt\""))
        func d2Setpoint() -> Double { ((try? daemon.units())?.last?["setpoint_w"] as? NSNumber)?.doubleValue ?? 0 }
        #expect(waitFor(seconds: 15) { d2Setpoint() > 5_000 }, "D2 at \(d2Setpoint()) W")
        #expect(waitFor(seconds: 10) { curl(["\(base)/"]).contains("mq-1") }, "the answer never reached the aggregator")

        // 5. The same id again, with another power (a redelivery): answered again, not acted on.
        let again = #"{"id":"mq-1","kind":"power","unit":"D2","power_kw":-60,"expires_unix":\#(expires)}"#
        let commands = "bess/v1/\(site)/commands"
        // The aggregator may itself have pushed mq-1 once more (it pushes a site's unanswered commands
        // when the site's birth is stored, and that can land just after step 4 queued it): count from here.
        let bessdMetrics = "http://127.0.0.1:\(metricsPort)/metrics"
        let redelivered = metric(bessdMetrics, "bessd_uplink_commands_total{result=\"redelivered\"}") ?? 0
        try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", commands, "-m", again])
        #expect(waitFor(seconds: 10) { metric(bessdMetrics, "bessd_uplink_commands_total{result=\"redelivered\"}") ?? 0 >= redelivered + 1 })
        // 6. Garbage and an expired command: refused with a code, nothing acted on.
        try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", commands, "-m", "{\"id\": 12, garbage"])
        let stale = #"{"id":"mq-old","kind":"power","power_kw":10,"expires_unix":1000}"#
        try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", commands, "-m", stale])
        #expect(waitFor(seconds: 10) { metric(bessdMetrics, "bessd_uplink_commands_total{result=\"malformed\"}") == 1 })
        #expect(waitFor(seconds: 10) { metric(bessdMetrics, "bessd_uplink_commands_total{result=\"refused\"}") == 1 })
        #expect(waitFor(seconds: 10) { curl(["\(base)/"]).contains("mq-old") }, "the refusal never reached the aggregator")
        #expect(d2Setpoint() > 0, "the redelivered -60 kW was acted on: D2 at \(d2Setpoint()) W")

        let status = try daemon.request(["verb": "status"])
        let cycle = status["cycle"] as? [String: Any] ?? [:]
        #expect((cycle["overruns"] as? NSNumber)?.intValue == 0)
        let made = try #require((uplink(daemon)["acknowledged_seq"] as? NSNumber)?.uint64Value)
        daemon.signal(SIGTERM)
        let end = daemon.finish()
        #expect(end.status == 0)
        #expect(end.text.components(separatedBy: "dispatch \"mq-1\" applied").count == 2, "mq-1 acted on more than once")
        #expect(end.text.contains("dispatch \"mq-1\" applied: power D2 25.0 kW 4.0 kvar"), "the command's reactive_kvar was lost on the way")
        #expect(!end.text.contains("mq-lapsed"), "a command whose MQTT message expiry had passed reached bessd")
        #expect(end.text.contains("MQTT_COMMAND_MALFORMED"))
        // A clean stop says offline at once (no Last Will needed).
        #expect(waitFor(seconds: 10) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 0 })

        // Every record once, none missing, none invented.
        #expect(waitFor(seconds: 10) { (seqs(base, site).last ?? 0) >= made })
        let stored = seqs(base, site)
        #expect(stored == Array(1...(stored.last ?? 1)), "a gap or a repeat in \(stored.count) records")
        broker.stop()
    }
}

/// PostgreSQL, a Mosquitto with persistence, and bess-aggregator (one instance, one consumer)
/// started against them on demand; `stop` stops both and removes the directory.
final class AggregatorRig {
    let dir: String
    var postgres: TestServer
    let broker: TestServer
    let pgPort: Int, brokerPort: Int, httpPort: Int
    let instance: String
    var base: String { "http://127.0.0.1:\(httpPort)" }

    init(_ instance: String) throws {
        self.instance = instance
        dir = NSTemporaryDirectory() + "bess-mqtt-\(instance)-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        (postgres, pgPort) = try TestServer.postgres(dir)
        brokerPort = Loopback.freePort()
        broker = try TestServer.mosquitto(dir, "listener \(brokerPort) 127.0.0.1\nallow_anonymous true\npersistence true")
        httpPort = Loopback.freePort()
        #expect(waitFor(seconds: 10) { Loopback.listening(self.brokerPort) }, "mosquitto never listened")
        #expect(waitFor(seconds: 20) { Loopback.listening(self.pgPort) }, "postgres never listened")
    }

    func startAggregator(_ log: String) throws -> Background {
        try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(httpPort)",
                        "--database", "postgres://bess@127.0.0.1:\(pgPort)/postgres",
                        "--mqtt", "mqtt://127.0.0.1:\(brokerPort)", "--instance", instance, "--consumers", "1"],
                       output: dir + "/" + log)
    }

    func stop() {
        broker.stop()
        postgres.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

extension MQTTUplinkTests {
    @Test("a record written after the last batch goes as soon as it is written, not a send interval later")
    func publishedWhenWritten() throws {
        let dir = NSTemporaryDirectory() + "bess-mqtt-paced-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let broker = try TestServer.mosquitto(dir, "listener \(port) 127.0.0.1\nallow_anonymous true")
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(port) }, "mosquitto never listened")
        // A subscriber stands in for the aggregator (without one, the broker answers "no matching subscribers").
        let subscriber = try Background(["mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-V", "mqttv5", "-d",
                                         "-t", "bess/v1/PACE/records"], output: dir + "/sub.txt")
        defer { subscriber.stop() }
        #expect(waitFor(seconds: 20) { subscriber.text.contains("SUBACK") })
        let spool = try Spool(directory: dir + "/spool")
        let queue = SpoolQueue(spool)
        func record(_ seq: UInt64) -> [UInt8] {
            Array("{\"seq\":\(seq),\"time\":1,\"mode\":\"simulation\",\"type\":\"event\",\"event\":\"paced-\(seq)\"}".utf8)
        }
        try queue.append(record)
        // An interval no test would wait for: before the rate budget, the sender's next batch was due an
        // interval after the last one (and after every look at an empty spool).
        let settings = MQTTUplinkSender.Settings(url: MQTTURL("mqtt://127.0.0.1:\(port)")!, site: "PACE", interval: .seconds(3600),
                                                 version: "test", mode: "simulation", units: ["U1"])
        let sender = MQTTUplinkSender(settings: settings, queue: queue, log: { _ in }, handleCommands: { _ in [] })
        try sender.start()
        defer { sender.stop() }
        #expect(waitFor(seconds: 20) { sender.stats.acknowledged == 1 })
        // The PUBACK can reach the sender before the subscriber has printed what the broker forwarded.
        #expect(waitFor(seconds: 20) { subscriber.text.contains("paced-1") })
        try queue.append(record)
        #expect(waitFor(seconds: 20) { sender.stats.acknowledged == 2 })
        #expect(waitFor(seconds: 20) { subscriber.text.contains("paced-2") })
        #expect(sender.stats.batchesPublished == 2)
    }

    @Test("a reconnect storm of thirty sites: every status stored, each unanswered command pushed again")
    func reconnectStorm() throws {
        let rig = try AggregatorRig("storm")
        defer { rig.stop() }
        let base = rig.base
        var aggregator = try rig.startAggregator("aggregator-1.log")
        #expect(waitFor(seconds: 30) { Loopback.listening(rig.httpPort) }, "bess-aggregator never listened: \(aggregator.text)")
        #expect(waitFor(seconds: 10) { metric("\(base)/metrics", "bess_aggregator_mqtt_connected") == 1 })

        // A command for each of thirty sites that are offline: the push goes to no one. The first
        // three get a second one, queued after it, which must reach them after it.
        let sites = (0..<30).map { String(format: "STORM-%02d", $0) }
        let expires = Int(Date().timeIntervalSince1970) + 600
        func queue(_ id: String, _ site: String, kw: Int) throws {
            let command = #"{"id":"\#(id)","kind":"power","unit":"U1","power_kw":\#(kw),"expires_unix":\#(expires)}"#
            let answer = try shell(["curl", "-s", "-m", "10", "-X", "POST", "--data-binary", command, "\(base)/v1/sites/\(site)/commands"])
            #expect(answer.out.contains(id), "\(answer.out)")
        }
        for site in sites { try queue("storm-\(site)", site, kw: 5) }
        for site in sites.prefix(3) { try queue("later-\(site)", site, kw: 7) }
        // A site whose name is another's by Swift's `==` but not byte for byte (a Kelvin sign for the
        // K) is a site of its own: its own status row, and none of the other's commands.
        let real = "STORM-K1", lookalike = "STORM-\u{212A}1"
        try queue("storm-\(real)", real, kw: 5)
        aggregator.stop()
        // The sites come back while the aggregator is away: their births are retained, so the next
        // instance gets all of them the moment it subscribes.
        for site in sites + [real, lookalike] {
            #expect(try shell(["mosquitto_pub", "-p", "\(rig.brokerPort)", "-V", "mqttv5", "-q", "1", "-r", "-t", "bess/v1/\(site)/status",
                               "-m", #"{"state":"online","session":"s-\#(site)"}"#]).status == 0)
        }
        let subscriber = try Background(["mosquitto_sub", "-h", "127.0.0.1", "-p", "\(rig.brokerPort)", "-V", "mqttv5", "-d", "-v",
                                         "-t", "bess/v1/+/commands"], output: rig.dir + "/sub.txt")
        defer { subscriber.stop() }
        #expect(waitFor(seconds: 20) { subscriber.text.contains("SUBACK") })
        // An index build cut short leaves it INVALID (the planner does not use it): the next start
        // builds it again rather than keep it because it exists.
        func psql(_ sql: String) throws -> String {
            try shell(["psql", "-h", "127.0.0.1", "-p", "\(rig.pgPort)", "-U", "bess", "-d", "postgres", "-Atc", sql]).out
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let validity = "SELECT indisvalid FROM pg_index WHERE indexrelid = 'commands_by_site'::regclass"
        #expect(try psql(validity) == "t")
        _ = try psql("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'commands_by_site'::regclass")
        #expect(try psql(validity) == "f")
        aggregator = try rig.startAggregator("aggregator-2.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { (try? psql(validity)) == "t" }, "the invalid index was kept: \(aggregator.text)")
        #expect(waitFor(seconds: 30) { sites.allSatisfy { subscriber.text.contains("\"storm-\($0)\"") } },
                "pushed again: \(sites.filter { subscriber.text.contains("\"storm-\($0)\"") }.count) of 30; \(aggregator.text)")
        #expect(waitFor(seconds: 30) { sites.prefix(3).allSatisfy { subscriber.text.contains("\"later-\($0)\"") } && subscriber.text.contains("\"storm-\(real)\"") })
        // In the order queued: an older setpoint never lands after a newer one.
        for site in sites.prefix(3) {
            let text = subscriber.text
            let first = try #require(text.range(of: "\"storm-\(site)\"")), second = try #require(text.range(of: "\"later-\(site)\""))
            #expect(first.lowerBound < second.lowerBound, "\(site): \(text)")
        }
        let lines = subscriber.text.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("bess/v1/\(real)/commands ") && $0.contains("storm-\(real)") })
        #expect(!lines.contains { $0.utf8.starts(with: "bess/v1/\(lookalike)/".utf8) }, "the look-alike site got a command: \(subscriber.text)")
        let online = try shell(["psql", "-h", "127.0.0.1", "-p", "\(rig.pgPort)", "-U", "bess", "-d", "postgres", "-Atc",
                                "SELECT count(*) FROM site_status WHERE site LIKE 'STORM-%' AND state = 'online'"]).out
        // The look-alike's birth is refused at ingest (SITE_ID_INVALID: not an id bessd's configuration allows).
        #expect(online.trimmingCharacters(in: .whitespacesAndNewlines) == "31", "30 sites and the real one: \(online)")
        #expect(aggregator.text.contains("SITE_ID_INVALID"), "\(aggregator.text)")
    }

    @Test("an aggregator SIGKILLed without its database loses nothing read: no PUBACK before the commit")
    func noAcknowledgementBeforeTheCommit() throws {
        let rig = try AggregatorRig("commit")
        defer { rig.stop() }
        let (base, brokerPort, httpPort, pgPort) = (rig.base, rig.brokerPort, rig.httpPort, rig.pgPort)
        var aggregator = try rig.startAggregator("aggregator-1.log")
        #expect(waitFor(seconds: 30) { Loopback.listening(httpPort) }, "bess-aggregator never listened: \(aggregator.text)")
        #expect(waitFor(seconds: 10) { metric("\(base)/metrics", "bess_aggregator_mqtt_connected") == 1 })

        // The database goes away; twenty batches arrive and are read, and their store fails.
        rig.postgres.stop()
        let site = "COMMIT_SITE"
        for seq in UInt64(1)...20 {
            let batch = RecordBatch(site: site, records: [UplinkRecord(seq: seq, time: Date().timeIntervalSince1970,
                                                                       body: .spoolDrop(count: 0))], acks: [])
            let payload = String(decoding: try JSONEncoder().encode(batch), as: UTF8.self)
            #expect(try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", "bess/v1/\(site)/records",
                               "-m", payload]).status == 0)
        }
        #expect(waitFor(seconds: 60) { aggregator.text.contains("storing failed") }, "\(aggregator.text)")
        kill(aggregator.process.processIdentifier, SIGKILL)
        aggregator.stop()

        // Back with the database and the same session: the broker sends again what was never acknowledged.
        rig.postgres = try TestServer(["postgres", rig.dir + "/pg", "\(pgPort)"], log: rig.dir + "/postgres-2.log")
        #expect(waitFor(seconds: 20) { Loopback.listening(pgPort) }, "postgres never listened again")
        aggregator = try rig.startAggregator("aggregator-2.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(httpPort) }, "bess-aggregator never listened: \(aggregator.text)")
        #expect(waitFor(seconds: 30) { seqs(base, site).count == 20 }, "stored: \(seqs(base, site))")
        #expect(seqs(base, site) == Array(1...20))

        // Batches no store can take (a seq beyond BIGINT, a NUL in a unit id) are refused as
        // malformed, not retried forever with their PUBACKs held; the instance goes on storing.
        func publish(_ payload: String) throws {
            #expect(try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", "bess/v1/\(site)/records",
                               "-m", payload]).status == 0)
        }
        let malformed = metric("\(base)/metrics", "bess_aggregator_mqtt_malformed_total") ?? 0
        let head = #"{"protocol_version":1,"site":"COMMIT_SITE","acks":[],"records":["#
        try publish(head + #"{"seq":9223372036854775808,"time":1,"type":"spool_drop","count":0}]}"#)
        try publish(head + #"{"seq":30,"time":1,"type":"telemetry","cycle_p99_us":0,"overruns":0,"units":[{"id":"U\u0000","state":"s","#
                    + #""setpoint_w":0,"allowed_charge_w":1,"allowed_discharge_w":1,"trips":[],"latched":[],"bms_online":true,"inverter_online":true}]}]}"#)
        #expect(waitFor(seconds: 10) { metric("\(base)/metrics", "bess_aggregator_mqtt_malformed_total") == malformed + 2 })
        // One seq twice in a batch: stored once, as it came first, its type column and text alike.
        try publish(head + #"{"seq":21,"time":1,"type":"event","kind":"first","message":"a"},{"seq":21,"time":2,"type":"spool_drop","count":5}]}"#)
        #expect(waitFor(seconds: 10) { seqs(base, site) == Array(1...21) }, "stored: \(seqs(base, site))")
        let row = try shell(["psql", "-h", "127.0.0.1", "-p", "\(pgPort)", "-U", "bess", "-d", "postgres", "-Atc",
                             "SELECT type || ' ' || body FROM records WHERE site = '\(site)' AND seq = 21"]).out
        #expect(row.hasPrefix("event {") && row.contains("\"first\""), "\(row)")
    }

    /// paho-mqtt; payloads validated against the uplink OpenAPI schemas.
    @Test("an independent MQTT 5 peer sees retained birth, schema-valid payloads and its command answered")
    func independentPeer() throws {
        let dir = NSTemporaryDirectory() + "bess-mqtt-peer-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let broker = try TestServer.mosquitto(dir, "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false")
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(port) })
        let daemon = try RunningDaemon(yaml: daemonYAML + """

            state_directory: \(dir)/state
            aggregator: {transport: mqtt, url: "mqtt://127.0.0.1:\(port)", interval_s: 0.2, site_id: PEER_SITE}
            """)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // bessd has published its retained status before the peer subscribes.
        #expect(waitFor(seconds: 10) { ((try? daemon.request(["verb": "status"]))?["uplink"] as? [String: Any])?["connected"] as? Bool == true })
        let peer = try shell(["python3", Package.root.appendingPathComponent("hil/peers/mqtt_peer.py").path,
                              Package.root.appendingPathComponent("docs/uplink-openapi.yaml").path, "127.0.0.1", "\(port)", "PEER_SITE"],
                             timeout: 60)
        #expect(peer.status == 0, "\(peer.out)")
        #expect(peer.out.contains("\"accepted\": true"), "\(peer.out)")
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
    }
}

@Suite("MQTT uplink: many links on a few threads (bess-hil fleet)", .serialized)
struct MQTTGroupTests {
    @Test("60 links on 2 threads deliver every record, and follow new sockets after a broker restart")
    func groupAcrossRestart() throws {
        let dir = NSTemporaryDirectory() + "bess-mqtt-group-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let conf = "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false"
        var broker = try TestServer.mosquitto(dir, conf)
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(port) })
        // An independent subscriber (mosquitto_sub), so the broker has someone to hand batches to; it
        // subscribes again after the restart by itself.
        let subscriber = try Background(["mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-V", "mqttv5", "-q", "1",
                                         "-t", "bess/v1/+/records", "-F", "%t %p"], output: dir + "/sub.out")
        defer { subscriber.stop() }
        let url = try #require(MQTTURL("mqtt://127.0.0.1:\(port)"))
        let count = 60
        var queues: [SpoolQueue] = []
        var senders: [MQTTUplinkSender] = []
        for i in 0..<count {
            let queue = SpoolQueue(try Spool(directory: "\(dir)/G\(i)", maxBytes: 1 << 20, segmentBytes: 64 << 10))
            var settings = MQTTUplinkSender.Settings(url: url, site: "G\(i)", interval: .milliseconds(100), version: "test",
                                                     mode: "simulation", units: ["U1"])
            settings.minBackoff = .milliseconds(100)
            settings.maxBackoff = .milliseconds(500)
            queues.append(queue)
            senders.append(MQTTUplinkSender(settings: settings, queue: queue, log: { _ in }, handleCommands: { _ in [] }))
        }
        func append(_ n: Int) {
            for queue in queues {
                for _ in 0..<n {
                    _ = try? queue.append { seq in Array("{\"seq\":\(seq),\"time\":1,\"mode\":\"simulation\",\"type\":\"telemetry\",\"frequency_hz\":50,\"cycle_p99_us\":0,\"overruns\":0,\"units\":[]}".utf8) }
                }
            }
        }
        // The subscriber is there before the first batch.
        #expect(waitFor(seconds: 10) { (try? shell(["mosquitto_pub", "-h", "127.0.0.1", "-p", "\(port)", "-V", "mqttv5", "-q", "1",
                                                     "-t", "bess/v1/PROBE/records", "-m", "{}"]))?.status == 0 && subscriber.text.contains("PROBE") })
        let group = try MQTTUplinkSender.startGroup(senders, threads: 2)
        append(5)
        let first = waitFor(seconds: 30) { senders.allSatisfy { $0.stats.recordsAcknowledged >= 5 } }
        #expect(first, "acknowledged: \(senders.map(\.stats.recordsAcknowledged))")
        broker.stop()
        #expect(waitFor(seconds: 10) { senders.allSatisfy { !$0.stats.connected } })
        append(5)
        broker = try TestServer.mosquitto(dir, conf)
        let second = waitFor(seconds: 60) { senders.allSatisfy { $0.stats.recordsAcknowledged >= 10 } }
        #expect(second, "acknowledged: \(senders.map(\.stats.recordsAcknowledged))")
        #expect(senders.allSatisfy { $0.stats.connects >= 2 })
        group.stop()
        // What the subscriber received: every site's seq 1…10 at least once (a batch whose PUBACK was
        // lost with the broker goes again).
        var seen: [String: Set<UInt64>] = [:]
        for line in subscriber.text.split(separator: "\n") {
            guard let space = line.firstIndex(of: " "), let site = UplinkTopics.parse(String(line[..<space]))?.site,
                  let received = try? ReceivedBatch(payload: Array(line[line.index(after: space)...].utf8)) else { continue }
            seen[site, default: []].formUnion(received.batch.records.map(\.seq))
        }
        for i in 0..<count {
            #expect(seen["G\(i)"] == Set(1...10), "G\(i): \(seen["G\(i)"].map { $0.sorted() } ?? [])")
        }
    }
}

@Suite("The shipped broker configuration: TLS, client certificates, the ACL", .serialized)
struct MQTTBrokerACLTests {
    /// A CA, the broker's certificate (for 127.0.0.1) and client certificates by Common Name.
    static func certificates(_ dir: String, clients: [String]) throws {
        func openssl(_ arguments: [String]) throws {
            let r = try shell(["openssl"] + arguments)
            guard r.status == 0 else { throw Package.RunFailure(message: "openssl \(arguments.first ?? ""): \(r.out)") }
        }
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                     "-subj", "/CN=bess test fleet CA", "-keyout", dir + "/ca.key", "-out", dir + "/ca.pem"])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: dir + "/san.ext", atomically: true, encoding: .utf8)
        for name in ["broker"] + clients {
            try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-subj", "/CN=\(name == "broker" ? "127.0.0.1" : name)", "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr"])
            try openssl(["x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key", "-CAcreateserial",
                         "-days", "2", "-out", "\(dir)/\(name).pem"] + (name == "broker" ? ["-extfile", dir + "/san.ext"] : []))
        }
        // The broker reads them after dropping to its own user; a gateway's key stays its own
        // (bessd refuses a key others can read: KEY_PERMISSIONS).
        try shell(["chmod", "-R", "a+rX", dir])
        for name in ["ca"] + clients.filter({ $0 != "bess-aggregator" }) {
            try shell(["chmod", "0600", "\(dir)/\(name).key"])
        }
    }

    @Test("a gateway with SITE_A's certificate publishes as SITE_A only and cannot read SITE_B's commands")
    func siteIsolation() throws {
        let dir = NSTemporaryDirectory() + "bess-mqtt-acl-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.certificates(dir, clients: ["SITE_A", "SITE_B", "bess-aggregator"])
        // The shipped configuration, with this test's port and files.
        let port = Loopback.freePort()
        var conf = try String(contentsOf: Package.root.appendingPathComponent("config/mosquitto/bess.conf"), encoding: .utf8)
        conf = conf.replacingOccurrences(of: "listener 8883", with: "listener \(port) 127.0.0.1")
            .replacingOccurrences(of: "/etc/mosquitto/ca_certificates/bess-fleet-ca.pem", with: dir + "/ca.pem")
            .replacingOccurrences(of: "/etc/mosquitto/certs/broker.pem", with: dir + "/broker.pem")
            .replacingOccurrences(of: "/etc/mosquitto/certs/broker.key", with: dir + "/broker.key")
            .replacingOccurrences(of: "/etc/mosquitto/bess.acl", with: dir + "/bess.acl")
            .split(separator: "\n").filter { !$0.hasPrefix("persistence_location") }.joined(separator: "\n")
        try FileManager.default.copyItem(atPath: Package.root.appendingPathComponent("config/mosquitto/bess.acl").path, toPath: dir + "/bess.acl")
        try shell(["chmod", "a+r", dir + "/bess.acl"])
        let broker = try TestServer.mosquitto(dir, conf)
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(port) }, "mosquitto never listened")

        let httpPort = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(httpPort)",
                                         "--database", dir + "/agg.sqlite", "--mqtt", "mqtts://127.0.0.1:\(port)",
                                         "--mqtt-ca-file", dir + "/ca.pem", "--mqtt-cert-file", dir + "/bess-aggregator.pem",
                                         "--mqtt-key-file", dir + "/bess-aggregator.key"], output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        let base = "http://127.0.0.1:\(httpPort)"
        #expect(waitFor(seconds: 30) { Loopback.listening(httpPort) })
        func seqs(_ site: String) -> [UInt64] {
            let out = (try? shell(["curl", "-s", "-m", "5", "\(base)/v1/sites/\(site)/seqs"]).out) ?? ""
            return (try? JSONDecoder().decode([UInt64].self, from: Data(out.utf8))) ?? []
        }
        func gateway(_ site: String, certificate: String) -> String {
            daemonYAML + """

                state_directory: @DIR@/state
                aggregator: {transport: mqtt, url: "mqtts://127.0.0.1:\(port)", interval_s: 0.2, site_id: \(site),
                             ca_file: \(dir)/ca.pem, client_cert_file: \(dir)/\(certificate).pem, client_key_file: \(dir)/\(certificate).key}
                """
        }
        let siteA = try RunningDaemon(yaml: gateway("SITE_A", certificate: "SITE_A").replacingOccurrences(of: "@DIR@", with: dir + "/a"))
        _ = siteA.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 20) { seqs("SITE_A").count >= 3 }, "SITE_A's records never arrived: \(aggregator.text)")

        // SITE_A's certificate, configured as SITE_B: the broker refuses its records and its subscription.
        let impostor = try RunningDaemon(yaml: gateway("SITE_B", certificate: "SITE_A").replacingOccurrences(of: "@DIR@", with: dir + "/b"))
        _ = impostor.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func impostorError() -> String {
            (((try? impostor.request(["verb": "status"]))?["uplink"] as? [String: Any])?["last_error"] as? String) ?? ""
        }
        #expect(waitFor(seconds: 20) { impostorError() == "MQTT_PUBLISH_REFUSED" }, "last error \(impostorError())")
        #expect(seqs("SITE_B").isEmpty, "a gateway published as another site")

        // SITE_A's certificate cannot read SITE_B's commands; SITE_B's can.
        let topic = "bess/v1/SITE_B/commands"
        func subscriber(_ name: String) throws -> Background {
            try Background(["mosquitto_sub", "-d", "-V", "mqttv5", "-h", "127.0.0.1", "-p", "\(port)", "--cafile", dir + "/ca.pem",
                            "--cert", "\(dir)/\(name).pem", "--key", "\(dir)/\(name).key", "-i", "test-\(name)-reader", "-q", "1", "-t", topic],
                           output: "\(dir)/sub-\(name).log")
        }
        let asA = try subscriber("SITE_A"), asB = try subscriber("SITE_B")
        defer { asA.stop(); asB.stop() }
        #expect(waitFor(seconds: 10) { asA.text.contains("SUBACK") && asB.text.contains("SUBACK") })
        let command = #"{"id":"acl-1","kind":"mode","mode":"standby","expires_unix":\#(Date().timeIntervalSince1970 + 60)}"#
        _ = try shell(["curl", "-s", "-m", "5", "-X", "POST", "--data-binary", command, "\(base)/v1/sites/SITE_B/commands"])
        #expect(waitFor(seconds: 10) { asB.text.contains("acl-1") }, "SITE_B never got its command: \(asB.text)")
        asA.stop()
        #expect(!asA.text.contains("acl-1"), "SITE_A's certificate read SITE_B's command")
        siteA.signal(SIGTERM)
        impostor.signal(SIGTERM)
        #expect(siteA.finish().status == 0)
        _ = impostor.finish()
    }
}
