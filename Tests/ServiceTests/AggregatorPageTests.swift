import Foundation
import Glibc
import TestSupport
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
        let port = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(port)",
                                         "--database", dir + "/agg.sqlite"], output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) })
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

    /// A batch with one telemetry record whose unit has these id, state and trips (JSON-quoted here).
    static func unitBatch(site: String, seq: Int, unit: String, state: String = "running", trips: [String] = []) -> String {
        func quoted(_ text: String) -> String { String(decoding: try! JSONEncoder().encode(text), as: UTF8.self) }
        let record = "{\"seq\":\(seq),\"time\":\(Date().timeIntervalSince1970),\"type\":\"telemetry\",\"cycle_p99_us\":100,\"overruns\":0,"
            + "\"units\":[{\"id\":\(quoted(unit)),\"state\":\(quoted(state)),\"setpoint_w\":0,\"allowed_charge_w\":1,\"allowed_discharge_w\":1,"
            + "\"trips\":[\(trips.map(quoted).joined(separator: ","))],\"latched\":[],\"bms_online\":true,\"inverter_online\":true}]}"
        return "{\"protocol_version\":1,\"site\":\(quoted(site)),\"acks\":[],\"records\":[\(record)]}"
    }

    /// Markup in state, session, site, unit ids, trips and codes, over MQTT and HTTP; checked in Chromium's DOM.
    @Test("a hostile gateway's markup is refused or escaped: the DOM holds none of it and no inline script runs")
    func hostileGateway() throws {
        let dir = NSTemporaryDirectory() + "bess-aggregator-hostile-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let brokerPort = Loopback.freePort()
        let broker = try TestServer.mosquitto(dir, "listener \(brokerPort) 127.0.0.1\nallow_anonymous true\npersistence false")
        defer { broker.stop() }
        #expect(waitFor(seconds: 10) { Loopback.listening(brokerPort) }, "mosquitto never listened")
        let port = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(port)",
                                         "--database", dir + "/agg.sqlite", "--mqtt", "mqtt://127.0.0.1:\(brokerPort)", "--consumers", "1"],
                                        output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) }, "\(aggregator.text)")
        #expect(waitFor(seconds: 20) { metric(port, "bess_aggregator_mqtt_connected") == 1 }, "\(aggregator.text)")
        let base = "http://127.0.0.1:\(port)"
        func publish(_ topic: String, _ payload: String) throws {
            #expect(try shell(["mosquitto_pub", "-p", "\(brokerPort)", "-V", "mqttv5", "-q", "1", "-t", topic, "-m", payload]).status == 0)
        }
        func post(_ site: String, _ body: String) throws -> (status: String, body: String) {
            try body.write(toFile: dir + "/body.json", atomically: true, encoding: .utf8)
            let out = try shell(["curl", "-s", "-m", "10", "-w", "\n%{http_code}", "-X", "POST", "--data-binary", "@\(dir)/body.json",
                                 "\(base)/v1/sites/\(site)/records"]).out
            let lines = out.split(separator: "\n", omittingEmptySubsequences: false)
            return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
        }
        // Each planted element has an id of its own, so the DOM says which one got through.
        func img(_ id: String) -> String { "<img id=planted-\(id) src=x onerror=\"document.title='pwned'\">" }

        // The gateway's honest part: telemetry over HTTP, then its birth over MQTT; and an honest
        // neighbour, whose Last Will comes last and shows when everything before it has been handled.
        let site = "GW_HOSTILE", neighbour = "GW_HONEST"
        for name in [site, neighbour] {
            #expect(try post(name, Self.batch(site: name, count: 30, soc: { 50 + Double($0) }, power: { Double($0) * 100 },
                                             now: Date().timeIntervalSince1970)).status == "200")
        }
        try publish("bess/v1/\(site)/status", #"{"state":"online","session":"s-1"}"#)

        // Over HTTP: each refused with 422 and its code, nothing of the batch stored.
        let seqsBefore = try shell(["curl", "-s", "-m", "5", "\(base)/v1/sites/\(site)/seqs"]).out
        for (body, code) in [
            (Self.unitBatch(site: site, seq: 100, unit: img("http-unit")), "UNIT_ID_INVALID"),
            (Self.unitBatch(site: site, seq: 101, unit: "U1", state: img("http-state")), "UNIT_STATE_INVALID"),
            (Self.unitBatch(site: site, seq: 102, unit: "U1", trips: [img("http-trip")]), "TRIP_CODE_INVALID"),
            (#"{"protocol_version":1,"site":"GW_HOSTILE","acks":[],"records":[{"seq":103,"time":1,"type":"event","unit":"U1","kind":"raised","#
                + #""code":"<img id=planted-http-code src=x>","message":"m"}]}"#, "TRIP_CODE_INVALID"),
        ] {
            let answer = try post(site, body)
            #expect(answer.status == "422" && answer.body.contains("\"code\":\"\(code)\""), "\(code): \(answer)")
        }
        let hostileSite = "%3Cimg%20id%3Dplanted-http-site%20src%3Dx%3E"
        let siteAnswer = try post(hostileSite, Self.unitBatch(site: "<img id=planted-http-site src=x>", seq: 1, unit: "U1"))
        #expect(siteAnswer.status == "422" && siteAnswer.body.contains("SITE_ID_INVALID"), "\(siteAnswer)")
        #expect(try shell(["curl", "-s", "-m", "5", "\(base)/v1/sites/\(site)/seqs"]).out == seqsBefore, "a refused batch was stored")

        // Over MQTT: refused (counted, and logged with the code and the text escaped), nothing stored.
        try publish("bess/v1/\(site)/status", "{\"state\":\"\(img("mqtt-state").replacingOccurrences(of: "\"", with: "\\\""))\",\"session\":\"s\"}")
        try publish("bess/v1/GW_OTHER/status", "{\"state\":\"offline\",\"session\":\"<b id=planted-mqtt-session>\"}")
        try publish("bess/v1/<img id=planted-mqtt-site src=x>/status", #"{"state":"online","session":"s"}"#)
        try publish("bess/v1/\(site)/records", Self.unitBatch(site: site, seq: 200, unit: img("mqtt-unit")))
        try publish("bess/v1/\(site)/records", Self.unitBatch(site: site, seq: 201, unit: "U1", trips: ["<b id=planted-mqtt-trip>"]))
        #expect(waitFor(seconds: 20) { metric(port, "bess_aggregator_mqtt_malformed_total") == 5 },
                "refused: \(String(describing: metric(port, "bess_aggregator_mqtt_malformed_total"))); \(aggregator.text)")
        // Free texts are kept and shown escaped: an answer's id and reason.
        try publish("bess/v1/\(site)/acks", "{\"id\":\"<b id=planted-ack-id>\",\"accepted\":false,\"reason\":\"<img id=planted-ack-reason src=x>\"}")
        // The last word is the neighbour's honest Last Will.
        try publish("bess/v1/\(neighbour)/status", #"{"state":"offline","session":"s-2"}"#)
        let offline = "<h2>\(neighbour) <span class=\"offline\">offline</span></h2>"
        #expect(waitFor(seconds: 20) {
            let page = (try? shell(["curl", "-s", "-m", "5", "\(base)/"]).out) ?? ""
            return page.contains(offline.replacingOccurrences(of: "\"", with: "")) && page.contains("planted-ack-reason")
        }, "\(aggregator.text)")
        // The first refusal is logged with its code (the others within the second are counted, not logged).
        #expect(aggregator.text.contains("refused \"status\" from site GW_HOSTILE: STATUS_STATE_INVALID: status state \"<img"),
                "\(aggregator.text)")
        #expect(!aggregator.text.contains("<img id=planted-mqtt-state src=x onerror=\"") && !aggregator.text.contains("\u{1b}"),
                "a refusal's log line quotes the gateway's text escaped and cut short: \(aggregator.text)")

        let chromium = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1200",
                        "--user-data-dir=\(dir)/chromium"]
        let dom = try shell(chromium + ["--dump-dom", "\(base)/"], timeout: 60).out
        // The hostile site's status is still its honest birth: every status after it was refused.
        #expect(dom.contains(offline) && dom.contains("<h2>\(site) <span class=\"online\">online</span></h2>"), "\(dom.prefix(3000))")
        // Nothing planted became an element; the answer's texts are there, as text.
        #expect(!dom.contains("<img") && !dom.contains("id=\"planted") && !dom.contains("<b id"), "\(dom)")
        #expect(dom.contains("<title>bess-aggregator</title>"), "a planted handler ran: \(dom.prefix(300))")
        #expect(dom.contains("&lt;img id=planted-ack-reason src=x&gt;") && dom.contains("&lt;b id=planted-ack-id&gt;"), "\(dom)")
        #expect(dom.contains("<svg class=\"chart\""), "the charts are drawn")

        // The page's policy: no script at all, no inline script or style.
        let headers = try shell(["curl", "-s", "-m", "5", "-D", "-", "-o", "/dev/null", "\(base)/"]).out.lowercased()
        let policy = headers.split(separator: "\r\n").first { $0.hasPrefix("content-security-policy:") }.map(String.init) ?? ""
        #expect(policy.contains("script-src 'none'") && policy.contains("default-src 'none'") && !policy.contains("unsafe-inline"), "\(headers)")
        // The stylesheet it allows is the page's own, and Chromium applies it: "offline" is drawn in the page's red.
        let css = try shell(["curl", "-s", "-m", "5", "-w", "\n%{http_code} %{content_type}", "\(base)/status.css"]).out
        #expect(css.contains(".offline{color:#b00") && css.hasSuffix("200 text/css; charset=utf-8"), "\(css.suffix(200))")
        let png = dir + "/hostile.png"
        _ = try shell(chromium + ["--screenshot=\(png)", "\(base)/"], timeout: 60)
        let red = try shell(["python3", Package.root.appendingPathComponent("hil/peers/png_colours.py").path, png, "bb0000"], timeout: 120).out
        let redPixels = Int(red.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(redPixels > 20, "the stylesheet was not applied: \(red)")
    }
}
