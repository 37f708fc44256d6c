import Foundation
import Glibc
import TestSupport
import Testing
import UplinkIngest

/// Issue 57 §3 against the real bess-aggregator: a gateway's credential is only its own, the
/// operator's alone commands; sizes are bounded over HTTP and over MQTT.
@Suite("bess-aggregator: per-site tokens, the operator token, bounded bodies", .serialized)
struct AggregatorCredentialsTests {
    static let tokenA = "site-a-0123456789abcdef0123"
    static let tokenB = "site-b-0123456789abcdef0123"
    static let operatorToken = "operator-0123456789abcdef0123"

    /// A directory with the two sites' tokens and the operator's.
    static func credentials(_ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "bess-aggregator-\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "# SITE_ID TOKEN\nSITE_A \(tokenA)\n\nSITE_B \(tokenB)  # the second gateway\n".write(toFile: dir + "/sites", atomically: true, encoding: .utf8)
        try "\(operatorToken)\n".write(toFile: dir + "/operator", atomically: true, encoding: .utf8)
        return dir
    }

    static func start(_ dir: String, listen: String, _ extra: [String] = []) throws -> Background {
        try Background([Package.executable("bess-aggregator")!.path, "--listen", listen, "--database", dir + "/agg.sqlite"] + extra,
                       output: dir + "/aggregator.log")
    }

    /// The HTTP status of a request (curl), with `token` as the bearer when given.
    static func status(_ url: String, token: String? = nil, _ arguments: [String] = []) -> String {
        let auth = token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []
        return (try? shell(["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}"] + auth + arguments + [url]).out) ?? ""
    }

    static func batch(_ site: String, seq: Int) -> String {
        #"{"protocol_version":1,"site":"\#(site)","acks":[],"records":[{"seq":\#(seq),"time":0,"type":"spool_drop","count":0}]}"#
    }

    /// 403 on another site's records and seqs and on commands (its own site's too); no token 401; operator reads every site and /metrics.
    @Test("a site token reads only its own records, commands nothing; the operator token does everything")
    func perSiteTokens() throws {
        let dir = try Self.credentials("tokens")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let aggregator = try Self.start(dir, listen: "127.0.0.1:\(port)", ["--site-tokens", dir + "/sites", "--operator-token-file", dir + "/operator"])
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) }, "bess-aggregator never listened: \(aggregator.text)")
        let base = "http://127.0.0.1:\(port)"
        let command = #"{"id":"c-1","kind":"mode","mode":"standby","expires_unix":\#(Date().timeIntervalSince1970 + 120)}"#
        func post(_ path: String, _ body: String, token: String?) -> String {
            Self.status(base + path, token: token, ["-X", "POST", "--data-binary", body])
        }
        // Each gateway on its own site.
        #expect(post("/v1/sites/SITE_A/records", Self.batch("SITE_A", seq: 1), token: Self.tokenA) == "200")
        #expect(post("/v1/sites/SITE_B/records", Self.batch("SITE_B", seq: 1), token: Self.tokenB) == "200")
        // SITE_A's token on SITE_B's paths, on commands, on /metrics: 403.
        #expect(post("/v1/sites/SITE_B/records", Self.batch("SITE_B", seq: 2), token: Self.tokenA) == "403")
        #expect(Self.status(base + "/v1/sites/SITE_B/seqs", token: Self.tokenA) == "403")
        #expect(post("/v1/sites/SITE_B/commands", command, token: Self.tokenA) == "403")
        #expect(post("/v1/sites/SITE_A/commands", command, token: Self.tokenA) == "403")
        #expect(Self.status(base + "/metrics", token: Self.tokenA) == "403")
        // No token, or no one's: 401.
        #expect(post("/v1/sites/SITE_A/records", Self.batch("SITE_A", seq: 2), token: nil) == "401")
        #expect(post("/v1/sites/SITE_A/records", Self.batch("SITE_A", seq: 2), token: "wrong-0123456789abcdef0123") == "401")
        #expect(post("/v1/sites/SITE_A/commands", command, token: nil) == "401")
        #expect(Self.status(base + "/v1/sites/SITE_A/seqs") == "401")
        #expect(Self.status(base + "/metrics") == "401")
        // The operator: commands to any site, every site's seqs, /metrics; not a gateway's upload.
        #expect(post("/v1/sites/SITE_A/commands", command, token: Self.operatorToken) == "200")
        #expect(post("/v1/sites/SITE_B/commands", command.replacingOccurrences(of: "c-1", with: "c-2"), token: Self.operatorToken) == "200")
        #expect(post("/v1/sites/SITE_A/records", Self.batch("SITE_A", seq: 3), token: Self.operatorToken) == "403")
        for site in ["SITE_A", "SITE_B"] {
            let out = try shell(["curl", "-s", "-m", "5", "-H", "Authorization: Bearer \(Self.operatorToken)", "\(base)/v1/sites/\(site)/seqs"]).out
            #expect(try JSONDecoder().decode([UInt64].self, from: Data(out.utf8)) == [1], "\(site): \(out)")
        }
        #expect(Self.status(base + "/metrics", token: Self.operatorToken) == "200")
        // On loopback the status page needs no credential.
        #expect(Self.status(base + "/") == "200")
    }

    @Test("bodies over 1 MiB are 413 before they are read whole, with a Content-Length and streamed without one")
    func bodyBound() throws {
        let dir = try Self.credentials("bodies")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        // On loopback without credentials (make sim's way): every route open, the bound still there.
        let aggregator = try Self.start(dir, listen: "127.0.0.1:\(port)")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) }, "bess-aggregator never listened: \(aggregator.text)")
        let base = "http://127.0.0.1:\(port)"
        // 2 MiB: a batch padded with spaces (valid JSON, were it read).
        let big = Self.batch("SITE_A", seq: 1).replacingOccurrences(of: "\"acks\"", with: String(repeating: " ", count: 2 << 20) + "\"acks\"")
        try big.write(toFile: dir + "/big.json", atomically: true, encoding: .utf8)
        let records = base + "/v1/sites/SITE_A/records"
        #expect(Self.status(records, token: Self.tokenA, ["-X", "POST", "--data-binary", "@\(dir)/big.json"]) == "413")
        #expect(Self.status(records, token: Self.tokenA, ["-X", "POST", "-H", "Transfer-Encoding: chunked", "--data-binary", "@\(dir)/big.json"]) == "413")
        #expect(Self.status(base + "/v1/sites/SITE_A/commands", token: Self.operatorToken,
                            ["-X", "POST", "--data-binary", "@\(dir)/big.json"]) == "413")
        let answer = try shell(["curl", "-s", "-m", "10", "-H", "Authorization: Bearer \(Self.tokenA)", "-X", "POST", "--data-binary", "@\(dir)/big.json", records]).out
        #expect(answer.contains("PAYLOAD_TOO_LARGE"), "\(answer)")
        // Nothing of it stored; the next batch goes in.
        #expect(Self.status(records, token: Self.tokenA, ["-X", "POST", "--data-binary", Self.batch("SITE_A", seq: 1)]) == "200")
    }

    @Test("uploads at once are bounded: one held open mid-body, another is answered 503 until it ends")
    func ingestBound() throws {
        let dir = try Self.credentials("busy")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let aggregator = try Self.start(dir, listen: "127.0.0.1:\(port)", ["--ingest-concurrency", "1"])
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) }, "bess-aggregator never listened: \(aggregator.text)")
        let records = "http://127.0.0.1:\(port)/v1/sites/SITE_A/records"
        let held = try #require(Loopback.connect(port))
        let head = "POST /v1/sites/SITE_A/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{\"protocol_version\":1"
        #expect(head.withCString { write(held, $0, strlen($0)) } > 0)
        let next = ["-X", "POST", "--data-binary", Self.batch("SITE_A", seq: 2)]
        #expect(waitFor(seconds: 10) { Self.status(records, token: nil, next) == "503" })
        close(held)
        #expect(waitFor(seconds: 10) { Self.status(records, token: nil, next) == "200" })
    }

    /// Refused: off loopback without credentials or --token-file, a bad line (named), the operator's token equal to a site's.
    @Test("aggregator start: off loopback needs credentials; bad token files refused; page takes the operator's")
    func refusedAtStart() throws {
        let dir = try Self.credentials("start")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let binary = Package.executable("bess-aggregator")!.path
        let port = Loopback.freePort()
        func run(_ arguments: [String]) throws -> (status: Int32, out: String) {
            try shell([binary, "--database", dir + "/agg.sqlite"] + arguments, timeout: 15)
        }
        let open = try run(["--listen", "0.0.0.0:\(port)"])
        #expect(open.status != 0 && open.status != 124, "it ran: \(open.out)")
        #expect(open.out.contains("CREDENTIALS_REQUIRED") && open.out.contains("0.0.0.0") && open.out.contains("--site-tokens"), "\(open.out)")
        let retired = try run(["--listen", "127.0.0.1:\(port)", "--token-file", dir + "/operator"])
        #expect(retired.status != 0 && retired.out.contains("TOKEN_FILE_RETIRED") && retired.out.contains("--operator-token-file"), "\(retired.out)")
        try "SITE_A \(Self.tokenA)\n# fine\nSITE_B\n".write(toFile: dir + "/bad", atomically: true, encoding: .utf8)
        let bad = try run(["--listen", "127.0.0.1:\(port)", "--site-tokens", dir + "/bad"])
        #expect(bad.status != 0 && bad.out.contains("SITE_TOKENS_INVALID: \(dir)/bad line 3"), "\(bad.out)")
        try "\(Self.tokenB)\n".write(toFile: dir + "/same", atomically: true, encoding: .utf8)
        let same = try run(["--listen", "127.0.0.1:\(port)", "--site-tokens", dir + "/sites", "--operator-token-file", dir + "/same"])
        #expect(same.status != 0 && same.out.contains("OPERATOR_TOKEN_INVALID") && same.out.contains("SITE_B"), "\(same.out)")
        #expect(!Loopback.listening(port))

        // Off loopback with credentials it starts; its page then takes the operator token, not a site's.
        let aggregator = try Self.start(dir, listen: "0.0.0.0:\(port)", ["--site-tokens", dir + "/sites", "--operator-token-file", dir + "/operator"])
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) }, "bess-aggregator never listened: \(aggregator.text)")
        let page = "http://127.0.0.1:\(port)/"
        #expect(Self.status(page) == "401")
        #expect(Self.status(page, token: Self.tokenA) == "403")
        #expect(Self.status(page, token: Self.operatorToken) == "200")
        #expect(Self.status(page, token: nil, ["-u", "operator:\(Self.operatorToken)"]) == "200")
        #expect(Self.status("http://127.0.0.1:\(port)/status.css") == "200")
    }

    /// PAYLOAD_TOO_LARGE, counted; the next payload is stored; the shipped broker's max_packet_size.
    @Test("MQTT payloads over 1 MiB are refused before decoding; the broker stops a 2 MiB publish")
    func oversizedMQTTPayload() throws {
        let dir = try Self.credentials("mqtt-size")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let brokerPort = Loopback.freePort()
        // A broker without a packet bound: the consumer's own check is what stands.
        let broker = try TestServer.mosquitto(dir, "listener \(brokerPort) 127.0.0.1\nallow_anonymous true\npersistence false")
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(brokerPort) }, "mosquitto never listened")
        let port = Loopback.freePort()
        let aggregator = try Self.start(dir, listen: "127.0.0.1:\(port)", ["--mqtt", "mqtt://127.0.0.1:\(brokerPort)", "--consumers", "1"])
        defer { aggregator.stop() }
        let base = "http://127.0.0.1:\(port)"
        func metric(_ name: String) -> String {
            let text = (try? shell(["curl", "-s", "-m", "5", base + "/metrics"]).out) ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) } ?? ""
        }
        #expect(waitFor(seconds: 30) { metric("bess_aggregator_mqtt_connected") == "1" }, "never connected: \(aggregator.text)")
        func publish(_ file: String, port: Int) throws -> Int32 {
            try shell(["mosquitto_pub", "-V", "mqttv5", "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", "bess/v1/SITE_M/records", "-f", file]).status
        }
        let big = Self.batch("SITE_M", seq: 1).replacingOccurrences(of: "\"acks\"", with: String(repeating: " ", count: (1 << 20) + 512) + "\"acks\"")
        try big.write(toFile: dir + "/big.json", atomically: true, encoding: .utf8)
        try Self.batch("SITE_M", seq: 2).write(toFile: dir + "/small.json", atomically: true, encoding: .utf8)
        #expect(try publish(dir + "/big.json", port: brokerPort) == 0)
        #expect(try publish(dir + "/small.json", port: brokerPort) == 0)
        func seqs() -> [UInt64] {
            let out = (try? shell(["curl", "-s", "-m", "5", base + "/v1/sites/SITE_M/seqs"]).out) ?? ""
            return (try? JSONDecoder().decode([UInt64].self, from: Data(out.utf8))) ?? []
        }
        #expect(waitFor(seconds: 15) { seqs() == [2] }, "stored \(seqs()): \(aggregator.text)")
        #expect(metric("bess_aggregator_mqtt_malformed_total") == "1")
        #expect(aggregator.text.contains("PAYLOAD_TOO_LARGE"), "\(aggregator.text)")

        // The shipped configuration's bound, on a broker of its own: a 2 MiB publish does not get through.
        let conf = try String(contentsOf: Package.root.appendingPathComponent("config/mosquitto/bess.conf"), encoding: .utf8)
        let bound = try #require(conf.split(separator: "\n").first { $0.hasPrefix("max_packet_size ") }, "bess.conf sets no max_packet_size")
        #expect(bound == "max_packet_size 1048576")
        let boundedPort = Loopback.freePort()
        let bounded = try TestServer.mosquitto(dir, "listener \(boundedPort) 127.0.0.1\nallow_anonymous true\npersistence false\n\(bound)", name: "bounded")
        defer { bounded.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(boundedPort) }, "mosquitto never listened")
        let reader = try Background(["mosquitto_sub", "-d", "-V", "mqttv5", "-h", "127.0.0.1", "-p", "\(boundedPort)", "-t", "bess/v1/+/records"],
                                    output: dir + "/sub.log")
        defer { reader.stop() }
        #expect(waitFor(seconds: 10) { reader.text.contains("SUBACK") }, "\(reader.text)")
        let twoMiB = Self.batch("SITE_M", seq: 3).replacingOccurrences(of: "\"acks\"", with: String(repeating: " ", count: 2 << 20) + "\"acks\"")
        try twoMiB.write(toFile: dir + "/two.json", atomically: true, encoding: .utf8)
        // (mosquitto_pub exits 0 either way: the broker's CONNACK bound makes its library drop the message.)
        _ = try publish(dir + "/two.json", port: boundedPort)
        #expect(try publish(dir + "/small.json", port: boundedPort) == 0)
        // The small one arrives; the big one never did.
        let small = Self.batch("SITE_M", seq: 2).utf8.count
        #expect(waitFor(seconds: 10) { reader.text.contains("(\(small) bytes)") }, "\(reader.text)")
        #expect(reader.text.components(separatedBy: "received PUBLISH").count == 2, "\(reader.text)")
    }
}
