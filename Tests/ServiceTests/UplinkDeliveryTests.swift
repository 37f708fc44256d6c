import ControlProtocol
import Foundation
import Glibc
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
import Testing
import Uplink

/// The aggregator stub (hil/peers/aggregator_stub.py) as a child process.
final class AggregatorStub {
    let process = Process()
    let out = Pipe()
    var port = 0
    var scheme = "http"

    init(seconds: Int, tls: (cert: String, key: String)? = nil) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Package.root.appendingPathComponent("hil/peers/aggregator_stub.py").path, String(seconds)]
            + (tls.map { [$0.cert, $0.key] } ?? [])
        if tls != nil { scheme = "https" }
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        port = Int(text.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    func admin(_ path: String, _ body: [String: Any]) throws {
        _ = try Self.fetch("\(scheme)://127.0.0.1:\(port)\(path)", body: try JSONSerialization.data(withJSONObject: body))
    }

    func state() throws -> [String: Any] {
        let data = try Self.fetch("\(scheme)://127.0.0.1:\(port)/admin/state", body: nil)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// curl keeps the test free of Foundation's networking stack.
    static func fetch(_ url: String, body: Data?) throws -> Data {
        var arguments = ["curl", "-s", "-k", "-m", "5", url]
        if let body {
            arguments += ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", String(decoding: body, as: UTF8.self)]
        }
        return Data(try Package.capture(URL(fileURLWithPath: "/usr/bin/env"), arguments, directory: nil).out.utf8)
    }

    /// Batches posted to the stub while it was in `mode`.
    func posts(_ mode: String) -> Int {
        (((try? state())?["posts"] as? [String: Any])?[mode] as? NSNumber)?.intValue ?? 0
    }

    /// Switches the stub to `mode` and waits until bessd has posted a batch into it (its back-off
    /// doubles, so this can take several seconds).
    func fault(_ mode: String) throws -> Bool {
        let before = posts(mode)
        try admin("/admin/mode", ["mode": mode])
        return waitFor(seconds: 40) { posts(mode) > before }
    }

    func seqs(site: String) throws -> [UInt64] {
        ((try state()["seqs"] as? [String: Any])?[site] as? [NSNumber] ?? []).map(\.uint64Value)
    }
}

/// One sample of bessd's /metrics on `port` (nil until it answers with that metric).
func metric(_ port: Int, _ name: String) -> Double? {
    guard let data = try? AggregatorStub.fetch("http://127.0.0.1:\(port)/metrics", body: nil) else { return nil }
    let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }
    return line.flatMap { Double($0.split(separator: " ").last ?? "") }
}

@Suite("Uplink delivery", .serialized)
struct UplinkDeliveryTests {
    @Test("through 500s, garbage, a dropped connection and SIGKILL every record arrives once, in order")
    func outages() throws {
        let stub = try AggregatorStub(seconds: 120)
        #expect(stub.port > 0)
        let state = NSTemporaryDirectory() + "bessd-uplink-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: state) }
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try "secret-token-1\n".write(toFile: state + "/token", atomically: true, encoding: .utf8)
        chmod(state + "/token", 0o600)  // bessd refuses a token others may read (KEY_PERMISSIONS)
        let yaml = daemonYAML.replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.0") + """

            state_directory: \(state)
            aggregator: {url: "http://127.0.0.1:\(stub.port)", token_file: \(state)/token, interval_s: 0.2, site_id: HIL_SITE}
            """
        var daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 15) { ((try? stub.seqs(site: "HIL_SITE")) ?? []).count > 3 })
        // Each fault until bessd has met it at least once.
        for mode in ["error", "garbage", "drop", "error"] { #expect(try stub.fault(mode), "no batch posted while \(mode)") }
        // A SIGKILL in the middle of the outage: nothing it spooled may be lost.
        daemon.signal(SIGKILL)
        _ = daemon.finish()
        try stub.admin("/admin/mode", ["mode": "ok"])
        daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // Dispatch: one good command, one hostile.
        let expires = Date().timeIntervalSince1970 + 60
        try stub.admin("/admin/command", ["id": "c-good", "kind": "power", "unit": "D1", "power_kw": -30, "expires_unix": expires])
        try stub.admin("/admin/command", ["id": "c-bad", "kind": "power", "unit": "D1", "power_kw": 1e9, "expires_unix": expires])
        // The good command arrives with a batch's answer: D1 heads to −30 kW at the ramp.
        func d1Setpoint() -> Double {
            let units = (try? daemon.request(["verb": "status"])["units"] as? [[String: Any]]) ?? nil
            return (units?.first?["setpoint_w"] as? NSNumber)?.doubleValue ?? 0
        }
        #expect(waitFor(seconds: 15) { d1Setpoint() < -5_000 }, "D1 at \(d1Setpoint()) W")
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
        // Every record is either at the aggregator or still in the spool: the stub holds 1…K with no gap
        // and nothing extra, and the spool still holds K+1…N (the last few, written while stopping,
        // go with the next start).
        let spool = try Spool(directory: state + "/spool")
        let last = spool.nextSeq - 1
        let held = try stub.seqs(site: "HIL_SITE")
        let k = held.last ?? 0
        #expect(held == Array(1...k), "a gap in what the aggregator holds")
        #expect(k > 20 && k <= last && last - k <= 10, "delivered \(k) of \(last)")
        if k < last { #expect(try spool.records(after: k, limit: 100).map(\.seq) == Array((k + 1)...last)) }
        let info = try stub.state()
        #expect((info["auth"] as? [String])?.allSatisfy { $0 == "Bearer secret-token-1" } == true)
        let acks = info["acks"] as? [[String: Any]] ?? []
        #expect(acks.contains { $0["id"] as? String == "c-good" && $0["accepted"] as? Bool == true })
        #expect(acks.contains { $0["id"] as? String == "c-bad" && $0["accepted"] as? Bool == false
                && ($0["reason"] as? String)?.contains("beyond the rating") == true })
        #expect((info["bad_batches"] as? Int) == 0)
    }
}

@Suite("Uplink under TLS, slow answers and a full disk", .serialized)
struct UplinkHardTests {
    /// A CA and a server certificate for 127.0.0.1 signed by it, made with openssl.
    static func makeCertificates(in dir: String, name: String) throws -> (ca: String, cert: String, key: String) {
        func openssl(_ arguments: [String]) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            p.arguments = arguments
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
        }
        let ca = "\(dir)/\(name)-ca", server = "\(dir)/\(name)-server"
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=\(name) test CA",
                     "-keyout", ca + ".key", "-out", ca + ".pem"])
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", server + ".key", "-out", server + ".csr"])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: server + ".ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", server + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key", "-CAcreateserial",
                     "-days", "2", "-extfile", server + ".ext", "-out", server + ".pem"])
        return (ca + ".pem", server + ".pem", server + ".key")
    }

    @Test("HTTPS with the configured CA delivers; a certificate from another CA is refused and nothing is lost")
    func tls() throws {
        let dir = NSTemporaryDirectory() + "bessd-tls-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = try Self.makeCertificates(in: dir, name: "good")
        let other = try Self.makeCertificates(in: dir, name: "other")
        // The aggregator presents a certificate from "other"; bessd trusts only "good" at first.
        let stub = try AggregatorStub(seconds: 60, tls: (other.cert, other.key))
        let port = Loopback.freePort()
        let yaml = { (ca: String) in daemonYAML + """

            metrics_listen: 127.0.0.1:\(port)
            state_directory: \(dir)/state
            aggregator: {url: "https://127.0.0.1:\(stub.port)", ca_file: \(ca), interval_s: 0.2, site_id: TLS_SITE}
            """ }
        var daemon = try RunningDaemon(yaml: yaml(good.ca))
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // Two failed deliveries (the client gives up on a connection within its 10 s request deadline).
        #expect(waitFor(seconds: 40) { (metric(port, "bessd_uplink_failures_total") ?? 0) >= 2 })
        #expect(try stub.seqs(site: "TLS_SITE").isEmpty)  // nothing accepted over an untrusted certificate
        daemon.signal(SIGTERM)
        let refused = daemon.finish()
        #expect(refused.text.contains("uplink:") && refused.text.contains("retrying with back-off"), "\(refused.text)")
        // Trusting the right CA, the same spool is delivered from seq 1.
        daemon = try RunningDaemon(yaml: yaml(other.ca))
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 20) { ((try? stub.seqs(site: "TLS_SITE")) ?? []).count > 10 })
        daemon.signal(SIGTERM)
        _ = daemon.finish()
        let held = try stub.seqs(site: "TLS_SITE")
        #expect(held.first == 1 && held == Array(1...(held.last ?? 1)) && held.count > 10)
    }

    @Test("10 s answers: the sender times out and retries; the cycle keeps time throughout")
    func slow() throws {
        let stub = try AggregatorStub(seconds: 60)
        let state = NSTemporaryDirectory() + "bessd-slow-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: state) }
        try stub.admin("/admin/mode", ["mode": "slow"])
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: daemonYAML + """

            metrics_listen: 127.0.0.1:\(port)
            state_directory: \(state)
            aggregator: {url: "http://127.0.0.1:\(stub.port)", interval_s: 0.2, site_id: SLOW_SITE}
            """)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // The first batch waits out its 10 s deadline and fails; the cycle keeps time meanwhile.
        #expect(waitFor(seconds: 30) { (metric(port, "bessd_uplink_failures_total") ?? 0) >= 1 })
        let stats = try #require(try daemon.request(["verb": "status"])["cycle"] as? [String: Any])
        try stub.admin("/admin/mode", ["mode": "ok"])
        // A request sent just before the switch still waits out its 10 s deadline; then the next goes through.
        #expect(waitFor(seconds: 30) { ((try? stub.seqs(site: "SLOW_SITE")) ?? []).count > 20 })
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect((stats["overruns"] as? NSNumber)?.intValue == 0)
        #expect(((stats["cycles"] as? NSNumber)?.intValue ?? 0) > 180)  // 50 ms period over the 10 s deadline
        #expect(text.contains("UPLINK_UNREACHABLE") || text.contains("retrying with back-off"))
        let held = try stub.seqs(site: "SLOW_SITE")
        #expect(held.count > 20 && held == Array(1...(held.last ?? 1)))
    }

    @Test("a full disk costs records, coded SPOOL_FULL, never the daemon or the cycle")
    func diskFull() throws {
        let state = NSTemporaryDirectory() + "bessd-full-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: daemonYAML + """

            state_directory: \(state)
            metrics_listen: 127.0.0.1:\(port)
            aggregator: {url: "http://127.0.0.1:9", interval_s: 0.1}
            """, prefix: ["/usr/bin/prlimit", "--fsize=30000", "--"])
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // Until the spool refuses (the 30 kB file-size limit is reached), then a second more of cycles.
        func metrics() -> String {
            (try? AggregatorStub.fetch("http://127.0.0.1:\(port)/metrics", body: nil)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
        #expect(waitFor(seconds: 30) { metrics().contains("bessd_spool_refusing{code=\"SPOOL_FULL\"} 1") }, "\(metrics())")
        let refusedAt = (try daemon.request(["verb": "status"])["cycle"] as? [String: Any])?["cycles"] as? Int ?? 0
        #expect(waitFor(seconds: 10) {
            ((try? daemon.request(["verb": "status"]))?["cycle"] as? [String: Any])?["cycles"] as? Int ?? 0 >= refusedAt + 20
        })
        let status = try daemon.request(["verb": "status"])
        let cycle = try #require(status["cycle"] as? [String: Any])
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        #expect(text.contains("SPOOL_FULL"))
        #expect((cycle["overruns"] as? NSNumber)?.intValue == 0)
        let spool = try Spool(directory: state + "/spool")
        #expect(spool.recovery.tornBytes == 0)  // no half record left behind
    }
}

@Suite("Prometheus metrics", .serialized)
struct MetricsTests {
    @Test("GET /metrics answers well-formed Prometheus text with cycle, unit and spool metrics")
    func scrape() throws {
        let port = Loopback.freePort()
        let state = NSTemporaryDirectory() + "bessd-metrics-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let yaml = daemonYAML + """

            metrics_listen: 127.0.0.1:\(port)
            state_directory: \(state)
            aggregator: {url: "http://127.0.0.1:9", interval_s: 0.5}
            """
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 10) { metric(port, "bessd_spool_pending_records") != nil })
        let text = String(decoding: try AggregatorStub.fetch("http://127.0.0.1:\(port)/metrics", body: nil), as: UTF8.self)
        let notFound = String(decoding: try AggregatorStub.fetch("http://127.0.0.1:\(port)/other", body: nil), as: UTF8.self)
        daemon.signal(SIGTERM)
        _ = daemon.finish()
        #expect(notFound.contains("not found"))
        let samples = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(!samples.isEmpty)
        // Every sample: name{labels} value.
        let pattern = #/^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+$/#
        for sample in samples { #expect(sample.wholeMatch(of: pattern) != nil, "\(sample)") }
        for name in ["bessd_cycles_total", "bessd_cycle_lateness_seconds{quantile=\"0.99\"}", "bessd_unit_setpoint_watts{unit=\"D1\"}",
                     "bessd_unit_state{unit=\"D2\",state=\"running\"} 1", "bessd_spool_pending_records", "bessd_uplink_failures_total"] {
            #expect(text.contains(name), "\(name)")
        }
        #expect(text.contains("bessd_info{version=\"\(BessdVersion.string)\",mode=\"simulation\"} 1"))
    }

    @Test("mode hil is named everywhere: the start line, status, /metrics and every uplink record")
    func hilNamed() throws {
        let port = Loopback.freePort()
        let yaml = daemonYAML.replacingOccurrences(of: "mode: simulation", with: "mode: hil")
            .replacingOccurrences(of: "max_power_kw: 100}", with: "max_power_kw: 100, inverter: {simulated: true}, bms: {simulated: true}}") + """

            grid_integration: {frequency_source: simulated}
            metrics_listen: 127.0.0.1:\(port)
            aggregator: {url: "http://127.0.0.1:9", interval_s: 0.2}
            """
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let status = try daemon.request(["verb": "status"])
        #expect(status["mode"] as? String == "hil")
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("mode hil"))
        let metrics = String(decoding: try AggregatorStub.fetch("http://127.0.0.1:\(port)/metrics", body: nil), as: UTF8.self)
        #expect(metrics.contains("mode=\"hil\"} 1"))
        let spoolDirectory = daemon.stateDirectory + "/spool"
        // Three records spooled (the spool itself is opened only after bessd stops: opening recovers it).
        #expect(waitFor(seconds: 10) { (metric(port, "bessd_spool_pending_records") ?? 0) >= 3 })
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        #expect(text.contains("started: mode hil") && text.contains("HIL: real and simulated devices mixed"))
        let records = try Spool(directory: spoolDirectory).records(after: 0, limit: 1000)
        let decoded = try records.map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        #expect(!decoded.isEmpty)
        #expect(decoded.allSatisfy { $0.mode == "hil" })
    }
}
