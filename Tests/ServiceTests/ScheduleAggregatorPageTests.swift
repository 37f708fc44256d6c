import ControlCore
import Foundation
import Glibc
import TestSupport
import Testing
import Uplink

/// bess-aggregator's page plots a site's schedule blocks, target against delivered (issue 60 §1).
@Suite("bess-aggregator's schedule plot in Chromium", .serialized)
struct ScheduleAggregatorPageTests {
    @Test("six closed blocks: the plot carries each block's target and delivered kWh as stored, and the table names what bound them")
    func plot() throws {
        let dir = NSTemporaryDirectory() + "bess-aggregator-schedule-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(port)",
                                         "--database", dir + "/agg.sqlite"], output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) })
        let base = "http://127.0.0.1:\(port)"
        let start = (Int64(Date().timeIntervalSince1970) / 900 - 6) * 900
        let targets = [-10.0, -5, 0, 5, 10, 15]
        let delivered = [-9.5, -5.25, 0.5, 4, 10, 12.5]
        let bindings: [ScheduleBinding] = [.none, .unitLimit, .none, .importLimit, .none, .exportLimit]
        var records: [UplinkRecord] = []
        for i in 0..<6 {
            let blockStart: Int64 = start + Int64(i) * 900
            let report = ScheduleBlockReport(startUnixSeconds: blockStart, lengthSeconds: 900, targetKWh: targets[i], deliveredKWh: delivered[i],
                                             droopKWh: 0.25, ratedKWh: 50, boundBy: bindings[i], revision: 1)
            records.append(UplinkRecord(seq: UInt64(i + 1), time: Double(blockStart + 900), body: .scheduleBlock(ScheduleBlockRecord(report)),
                                        mode: "simulation"))
        }
        try JSONEncoder().encode(RecordBatch(site: "PLAN_SITE", records: records, acks: [])).write(to: URL(fileURLWithPath: dir + "/batch.json"))
        let answer = try shell(["curl", "-s", "-m", "10", "-X", "POST", "--data-binary", "@\(dir)/batch.json", "\(base)/v1/sites/PLAN_SITE/records"])
        #expect(answer.out.contains("\"acked_seq\":6"), "\(answer.out)")
        let chromium = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1600",
                        "--user-data-dir=\(dir)/chromium"]
        let dom = try shell(chromium + ["--dump-dom", "\(base)/"], timeout: 60).out
        #expect(dom.contains("<h3>Schedule blocks</h3>"), "\(dom.prefix(800))")
        #expect(dom.contains("aria-label=\"Schedule: target vs delivered per block\""))
        func series(_ name: String) -> [(Double, Double)] {
            let values = dom.components(separatedBy: "data-name=\"\(name)\" data-values=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
            return values.split(separator: " ").compactMap { pair in
                let parts = pair.split(separator: ",").compactMap { Double($0) }
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }
        }
        let drawnTarget = series("target"), drawnDelivered = series("delivered")
        #expect(drawnTarget.map(\.1) == targets && drawnDelivered.map(\.1) == delivered, "\(drawnTarget) \(drawnDelivered)")
        #expect(drawnTarget.map(\.0) == (0..<6).map { Double(start + Int64($0) * 900) }, "one point per block, at its start")
        #expect(dom.contains("<td class=\"l\">export_limit</td>") || dom.contains("<td class=l>export_limit</td>"), "the bound in the table")
        let png = dir + "/schedule.png"
        _ = try shell(chromium + ["--screenshot=\(png)", "\(base)/"], timeout: 60)
        let size = (try? FileManager.default.attributesOfItem(atPath: png)[.size] as? Int) ?? 0
        #expect(size > 10_000, "screenshot \(size) bytes")
    }
}
