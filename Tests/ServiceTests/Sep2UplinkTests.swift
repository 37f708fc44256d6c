import BessBase
import ControlCore
import Foundation
import Glibc
import TestSupport
import Testing
import Uplink

/// Issue 48 §3 end to end: bessd follows sep2_server.py (TLS CCM8) with an uplink to bess-aggregator;
/// the control it takes and the one it refuses reach the aggregator as `utility_control` records.
@Suite("2030.5 controls through bessd's uplink", .serialized)
struct Sep2UplinkTests {
    /// B2 is an export limit beyond its type.
    @Test("bessd takes A1 and refuses B2: two utility_control records stored by the aggregator, journalled")
    func takenAndRefusedStored() throws {
        let dir = NSTemporaryDirectory() + "bessd-sep2-uplink-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let aggregatorPort = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(aggregatorPort)",
                                         "--database", dir + "/agg.sqlite"], output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(aggregatorPort) }, "bess-aggregator never listened: \(aggregator.text)")

        let fixture = try TLSFixture()
        let identity = try Sep2DaemonTests.offlineIdentity(fixture.path("client.pem"))
        let now = Int(Date().timeIntervalSince1970)
        let server = try Sep2DaemonTests.startServer(fixture, identity, now: now, ["--control", "B2:\(now - 5):3600:99999"])
        defer { server.stop() }
        #expect(server.port > 0, "sep2_server.py printed no port")
        let yaml = Sep2DaemonTests.yaml(fixture, port: server.port) + """

            aggregator: {url: "http://127.0.0.1:\(aggregatorPort)", interval_s: 0.2, site_id: SEP2_SITE}
            """
        let daemon = try RunningDaemon(yaml: yaml)
        var stored: [UplinkRecord] = []
        let arrived = waitFor(seconds: 60) {
            guard let rows = try? shell(["sqlite3", dir + "/agg.sqlite",
                                         "SELECT body FROM records WHERE site = 'SEP2_SITE' AND type = 'utility_control' ORDER BY seq"]),
                  rows.status == 0 else { return false }
            stored = rows.out.split(separator: "\n").compactMap { try? JSONDecoder().decode(UplinkRecord.self, from: Data($0.utf8)) }
            return stored.count >= 2
        }
        daemon.signal(SIGTERM)
        let (status, journal) = daemon.finish()
        #expect(arrived, "\(stored) \(server.all.suffix(10)) \(journal.suffix(2000))")
        #expect(status == 0)
        let controls = stored.compactMap { record -> UtilityControlRecord? in
            guard case .utilityControl(let control, _) = record.body else { return nil }
            return control
        }
        #expect(controls.count == 2, "\(stored)")
        let taken = try #require(controls.first { $0.outcome == "taken" }, "\(controls)")
        let start = Int64(now - 5)
        #expect(taken.mRID == "A1" && taken.program == "B1" && taken.limits.exportLimitW == 1500, "\(taken)")
        #expect(taken.start == start && taken.end == start + 3600, "\(taken)")
        let refused = try #require(controls.first { $0.outcome == "refused" }, "\(controls)")
        #expect(refused.mRID == "B2" && refused.responseStatus == 253 && refused.code == "SEP2_VALUE_INVALID", "\(refused)")
        #expect(stored.allSatisfy { $0.mode != nil }, "bessd's records carry the run mode")
        // The journal says both, as before.
        #expect(journal.contains("SEP2_CONTROL_TAKEN: opModExpLimW 1500 W from control \"A1\"") && journal.contains("SEP2_CONTROL_REFUSED: control \"B2\""),
                "\(journal.suffix(3000))")
    }
}
