import Foundation
import Glibc
import Testing
import Uplink

/// A real server from Debian (scripts/test-server.sh) on a loopback port the test picked; stopped by the test.
final class TestServer {
    let process = Process()
    let log: String

    init(_ arguments: [String], log: String) throws {
        self.log = log
        process.executableURL = Package.root.appendingPathComponent("scripts/test-server.sh")
        process.arguments = arguments
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
        let port = LoopbackRigTests.freePort()
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
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["timeout", "\(Int(timeout))"] + arguments
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// A command left running in the background, its output in a file.
final class Background {
    let process = Process()
    let path: String
    init(_ arguments: [String], output: String) throws {
        path = output
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        FileManager.default.createFile(atPath: output, contents: nil)
        let handle = FileHandle(forWritingAtPath: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }
    var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
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
        let brokerPort = LoopbackRigTests.freePort()
        let brokerConfig = """
            listener \(brokerPort) 127.0.0.1
            allow_anonymous true
            persistence true
            """
        let metricsPort = LoopbackRigTests.freePort()
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
        #expect(waitFor(seconds: 10) { LoopbackRigTests.listening(brokerPort) }, "mosquitto never listened")
        #expect(waitFor(seconds: 20) { LoopbackRigTests.listening(pgPort) }, "postgres never listened")
        let httpPort = LoopbackRigTests.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(httpPort)",
                                         "--database", "postgres://bess@127.0.0.1:\(pgPort)/postgres",
                                         "--mqtt", "mqtt://127.0.0.1:\(brokerPort)", "--instance", "t1"],
                                        output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        let base = "http://127.0.0.1:\(httpPort)"
        #expect(waitFor(seconds: 30) { LoopbackRigTests.listening(httpPort) }, "bess-aggregator never listened: \(aggregator.text)")
        #expect(waitFor(seconds: 20) { seqs(base, site).count >= 5 }, "\(aggregator.text)")
        #expect(seqs(base, site).first == 1, "the records spooled while the broker was away come first")
        #expect(waitFor(seconds: 10) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 1 })

        // 2. SIGKILL: the broker publishes the Last Will; the restarted bessd carries on from its spool.
        daemon.signal(SIGKILL)
        _ = daemon.finish()
        #expect(waitFor(seconds: 15) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 0 },
                "no Last Will seen")
        daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 15) { metric("\(base)/metrics", "bess_aggregator_site_online{site=\"\(site)\"}") == 1 })

        // 3. The broker restarts (persistence on): bessd sees it go, spools, reconnects, delivers.
        broker.stop()
        #expect(waitFor(seconds: 15) { uplink(daemon)["connected"] as? Bool == false })
        let before = (uplink(daemon)["acknowledged_seq"] as? NSNumber)?.intValue ?? 0
        #expect(waitFor(seconds: 10) { (uplink(daemon)["backlog_records"] as? NSNumber)?.intValue ?? 0 >= 3 })
        broker = try TestServer.mosquitto(dir, brokerConfig)
        #expect(waitFor(seconds: 30) { (uplink(daemon)["acknowledged_seq"] as? NSNumber)?.intValue ?? 0 > before + 3 })

        // 4. A command pushed by the aggregator is on the unit within the period, and answered.
        let expires = Date().timeIntervalSince1970 + 120
        let command = #"{"id":"mq-1","kind":"power","unit":"D2","power_kw":25,"expires_unix":\#(expires)}"#
        #expect(curl(["-X", "POST", "--data-binary", command, "\(base)/v1/sites/\(site)/commands"]).contains("\"transport\":\"mqtt\""))
        func d2Setpoint() -> Double { ((try? daemon.units())?.last?["setpoint_w"] as? NSNumber)?.doubleValue ?? 0 }
        #expect(waitFor(seconds: 15) { d2Setpoint() > 5_000 }, "D2 at \(d2Setpoint()) W")
        #expect(waitFor(seconds: 10) { curl(["\(base)/"]).contains("mq-1") }, "the answer never reached the aggregator")

        // 5. The same id again, with another power (a redelivery): answered again, not acted on.
        let again = #"{"id":"mq-1","kind":"power","unit":"D2","power_kw":-60,"expires_unix":\#(expires)}"#
        let commands = "bess/v1/\(site)/commands"
        try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", commands, "-m", again])
        let bessdMetrics = "http://127.0.0.1:\(metricsPort)/metrics"
        #expect(waitFor(seconds: 10) { metric(bessdMetrics, "bessd_uplink_commands_total{result=\"redelivered\"}") == 1 })
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
        #expect(end.text.components(separatedBy: "dispatch mq-1 applied").count == 2, "mq-1 acted on more than once")
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
