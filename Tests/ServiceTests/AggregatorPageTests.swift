import Foundation
import Glibc
import Testing

/// bess-aggregator's status page in a real browser (headless Chromium from Debian).
@Suite("bess-aggregator's status page in Chromium", .serialized)
struct AggregatorPageTests {
    /// A batch of telemetry records for a site: `count` records 10 s apart ending now, SOC and power
    /// from the closures, the site's grid power and a frequency.
    static func batch(site: String, count: Int, soc: (Int) -> Double, power: (Int) -> Double, now: Double) -> String {
        let records = (0..<count).map { i -> String in
            let t = now - Double(count - 1 - i) * 10
            let unit = "{\"id\":\"U1\",\"state\":\"running\",\"soc_percent\":\(soc(i)),\"soh_percent\":100,\"power_w\":\(power(i)),"
                + "\"setpoint_w\":\(power(i)),\"allowed_charge_w\":100000,\"allowed_discharge_w\":100000,\"trips\":[],\"latched\":[],"
                + "\"bms_online\":true,\"inverter_online\":true}"
            return "{\"seq\":\(i + 1),\"time\":\(t),\"mode\":\"simulation\",\"type\":\"telemetry\",\"frequency_hz\":\(50 + Double(i % 7 - 3) * 0.01),"
                + "\"cycle_p99_us\":100,\"overruns\":0,\"units\":[\(unit)],"
                + "\"site\":{\"grid_power_w\":\(20_000 - power(i)),\"binding_limit\":null,\"shortfall_w\":0,\"meter_stale\":false}}"
        }
        return "{\"protocol_version\":1,\"site\":\"\(site)\",\"acks\":[],\"records\":[\(records.joined(separator: ","))]}"
    }

    @Test("two sites with an hour's data: the charts carry the stored values; a screenshot is taken")
    func charts() throws {
        let dir = NSTemporaryDirectory() + "bess-aggregator-page-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = LoopbackRigTests.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(port)",
                                         "--database", dir + "/agg.sqlite"], output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { LoopbackRigTests.listening(port) })
        let base = "http://127.0.0.1:\(port)"
        let now = Date().timeIntervalSince1970
        let siteA = Self.batch(site: "PAGE_A", count: 120, soc: { 40 + Double($0) * 0.25 }, power: { Double($0 % 40) * 1000 - 20_000 }, now: now)
        let siteB = Self.batch(site: "PAGE_B", count: 120, soc: { 80 - Double($0) * 0.2 }, power: { 30_000 - Double($0) * 250 }, now: now)
        for (site, body) in [("PAGE_A", siteA), ("PAGE_B", siteB)] {
            try body.write(toFile: dir + "/\(site).json", atomically: true, encoding: .utf8)
            let answer = try shell(["curl", "-s", "-m", "10", "-X", "POST", "--data-binary", "@\(dir)/\(site).json",
                                    "\(base)/v1/sites/\(site)/records"])
            #expect(answer.out.contains("\"acked_seq\":120"), "\(answer.out)")
        }
        let chromium = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1600",
                        "--user-data-dir=\(dir)/chromium"]
        let dom = try shell(chromium + ["--dump-dom", "\(base)/"], timeout: 60)
        #expect(dom.out.contains("<h2>PAGE_A") && dom.out.contains("<h2>PAGE_B"), "\(dom.out.prefix(500))")
        // The SOC series of each site carries the stored values, first to last, in time order.
        for (site, first, last) in [("PAGE_A", 40.0, 40 + 119 * 0.25), ("PAGE_B", 80.0, 80 - 119 * 0.2)] {
            let section = dom.out.components(separatedBy: "<h2>\(site)").dropFirst().first ?? ""
            let marker = "data-name=\"U1 SOC\" data-values=\""
            let values = section.components(separatedBy: marker).dropFirst().first?.prefix { $0 != "\"" } ?? ""
            let points = values.split(separator: " ").compactMap { pair -> Double? in Double(pair.split(separator: ",").last ?? "") }
            #expect(points.count == 120, "\(site): \(points.count) SOC points drawn")
            #expect(abs((points.first ?? 0) - first) < 1e-3 && abs((points.last ?? 0) - last) < 1e-3, "\(site): \(points.prefix(2)) … \(points.suffix(2))")
        }
        #expect(dom.out.components(separatedBy: "<svg class=\"chart\"").count - 1 == 6 || dom.out.components(separatedBy: "class=\"chart\"").count - 1 >= 6,
                "three charts per site")
        let png = dir + "/status-page.png"
        let shot = try shell(chromium + ["--screenshot=\(png)", "\(base)/"], timeout: 60)
        let size = (try? FileManager.default.attributesOfItem(atPath: png)[.size] as? Int) ?? 0
        #expect(size > 20_000, "screenshot \(size) bytes: \(shot.out.suffix(300))")
        // The lines are drawn, not only their legends: the first series colour (grid power, SOC,
        // frequency) and the second (unit power) cover whole traces across the picture.
        let colours = try shell(["python3", Package.root.appendingPathComponent("hil/peers/png_colours.py").path, png, "1f77b4", "d62728"],
                                timeout: 120)
        let counts = Dictionary(uniqueKeysWithValues: colours.out.split(separator: "\n").compactMap { line -> (String, Int)? in
            let parts = line.split(separator: " ")
            return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? 0) : nil
        })
        #expect((counts["1f77b4"] ?? 0) > 3_000 && (counts["d62728"] ?? 0) > 1_000, "traces not drawn: \(colours.out)")
        // BESS_PAGE_SCREENSHOT=path keeps it (hil/results/aggregator-status.png is made this way).
        if let keep = ProcessInfo.processInfo.environment["BESS_PAGE_SCREENSHOT"] {
            try? FileManager.default.removeItem(atPath: keep)
            try FileManager.default.copyItem(atPath: png, toPath: keep)
        }
    }
}
