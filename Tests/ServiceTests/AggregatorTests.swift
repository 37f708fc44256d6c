import Foundation
import Glibc
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
import Testing
import Uplink

@Suite("bess-aggregator with bessd", .serialized)
struct AggregatorTests {
    /// Both the site's and the operator's tokens.
    @Test("continuous seq across SIGKILL, duplicates ignored, tokens checked, dispatch queued and acknowledged")
    func endToEnd() throws {
        let dir = NSTemporaryDirectory() + "bess-aggregator-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // bessd holds its site's token; the operator's token, another, commands and reads.
        let siteToken = "agg-site-0123456789abcdef", operatorToken = "agg-operator-0123456789abcdef"
        try "\(siteToken)\n".write(toFile: dir + "/token", atomically: true, encoding: .utf8)
        try "AGG_SITE \(siteToken)\n".write(toFile: dir + "/sites", atomically: true, encoding: .utf8)
        try "\(operatorToken)\n".write(toFile: dir + "/operator", atomically: true, encoding: .utf8)
        chmod(dir + "/token", 0o600)  // bessd refuses a token others may read (KEY_PERMISSIONS)
        let port = Loopback.freePort()
        let aggregator = Process()
        aggregator.executableURL = Package.executable("bess-aggregator")
        aggregator.arguments = ["--listen", "127.0.0.1:\(port)", "--database", dir + "/agg.sqlite", "--site-tokens", dir + "/sites",
                                "--operator-token-file", dir + "/operator"]
        aggregator.standardOutput = FileHandle.nullDevice
        aggregator.standardError = FileHandle.nullDevice
        try aggregator.run()
        defer {
            kill(aggregator.processIdentifier, SIGTERM)
            aggregator.waitUntilExit()
        }
        #expect(waitFor(seconds: 10) { Loopback.listening(port) }, "bess-aggregator never listened")
        let base = "http://127.0.0.1:\(port)"
        let yaml = daemonYAML.replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.0") + """

            state_directory: \(dir)/state
            aggregator: {url: "\(base)", token_file: \(dir)/token, interval_s: 0.2, site_id: AGG_SITE}
            """
        var daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // Killed once the aggregator has stored some of its records (the rest replay after the restart).
        func stored() -> [UInt64] {
            (try? JSONDecoder().decode([UInt64].self, from: curl(["-H", "Authorization: Bearer \(operatorToken)", "\(base)/v1/sites/AGG_SITE/seqs"]))) ?? []
        }
        #expect(waitFor(seconds: 15) { stored().count >= 3 })
        daemon.signal(SIGKILL)
        _ = daemon.finish()
        daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // With reactive power: bess-aggregator stores and hands out the command whole.
        let command = #"{"id":"agg-1","kind":"power","unit":"D2","power_kw":25,"reactive_kvar":-7.5,"expires_unix":\#(Date().timeIntervalSince1970 + 120)}"#
        _ = try curl(["-X", "POST", "-H", "Authorization: Bearer \(operatorToken)", "--data-binary", command, "\(base)/v1/sites/AGG_SITE/commands"])
        // The command arrives with the next batch's answer; D2 heads to +25 kW at the ramp.
        func d2Setpoint() -> Double {
            let units = (try? daemon.request(["verb": "status"])["units"] as? [[String: Any]]) ?? nil
            return (units?.last?["setpoint_w"] as? NSNumber)?.doubleValue ?? 0
        }
        #expect(waitFor(seconds: 15) { d2Setpoint() > 5_000 }, "D2 at \(d2Setpoint()) W")
        daemon.signal(SIGTERM)
        // The uplink stops last: it flushes after the workers' zero and the journal.
        let end = daemon.finish()
        #expect(end.text.contains(#"dispatch "agg-1" applied: power D2 25.0 kW -7.5 kvar"#), "\(end.text.suffix(400))")
        let order = "stopped in order: operator server → cycle → bus workers → journal → uplink"
        #expect(end.text.contains(order + "\n") || end.text.contains(order + "  ["), "\(end.text.suffix(400))")

        let seqs = try JSONDecoder().decode([UInt64].self, from: curl(["-H", "Authorization: Bearer \(siteToken)", "\(base)/v1/sites/AGG_SITE/seqs"]))
        #expect(!seqs.isEmpty)
        #expect(seqs == Array(1...(seqs.last ?? 1)), "the aggregator's seq has a gap")
        // A replayed batch is ignored; a wrong token is refused.
        let batch = #"{"protocol_version":1,"site":"AGG_SITE","acks":[],"records":[{"seq":1,"time":0,"type":"spool_drop","count":0}]}"#
        let replay = String(decoding: try curl(["-X", "POST", "-H", "Authorization: Bearer \(siteToken)", "--data-binary", batch,
                                                "\(base)/v1/sites/AGG_SITE/records"]), as: UTF8.self)
        #expect(replay.contains("\"acked_seq\":1"))
        let metrics = String(decoding: try curl(["-H", "Authorization: Bearer \(operatorToken)", "\(base)/metrics"]), as: UTF8.self)
        #expect(metrics.contains("bess_aggregator_duplicates_total") && !metrics.contains("bess_aggregator_duplicates_total 0\n"))
        let refused = String(decoding: try curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Authorization: Bearer wrong",
                                                 "--data-binary", batch, "\(base)/v1/sites/AGG_SITE/records"]), as: UTF8.self)
        #expect(refused == "401")
        let page = String(decoding: try curl(["\(base)/"]), as: UTF8.self)
        #expect(page.contains("AGG_SITE") && page.contains("D1") && page.contains("agg-1"))
    }

    func curl(_ arguments: [String]) throws -> Data {
        Data(try Package.capture(URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-s", "-m", "5"] + arguments, directory: nil).out.utf8)
    }
}
