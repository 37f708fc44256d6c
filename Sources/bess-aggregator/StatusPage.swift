import BessBase
import ControlCore
import Foundation
import Uplink

/// The status page: every site at a glance — online/offline from its Last Will, units, the last
/// hour as charts drawn here as inline SVG (no script, no font fetched from elsewhere), energy
/// blocks and command answers.
///
/// Every text a gateway sent is escaped where it is written into the page, and the page is served
/// with `contentSecurityPolicy`: no script runs and no inline style applies, whatever a stored text
/// holds; the page's one stylesheet is `stylesheet`, served from `/status.css`.
enum StatusPage {
    /// A text as HTML (element content or a quoted attribute value).
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    }

    /// Sent with the page: nothing but the page's own stylesheet is fetched or applied; no script,
    /// no inline style or event handler, no frame, no form, no base URL.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Where the page's stylesheet is served.
    static let stylesheetPath = "/status.css"

    /// The page's stylesheet (served from `stylesheetPath`: the policy admits no inline style).
    static let stylesheet = """
        body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}
        td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}th{background:#eee}td.l{text-align:left}
        .trip{color:#b00;font-weight:bold}.online{color:#080;font-weight:bold}.offline{color:#b00;font-weight:bold}
        .charts{display:flex;flex-wrap:wrap;gap:1em}.chart text{font-size:11px;fill:#444}.chart .title{font-size:12px;font-weight:bold;fill:#222}
        .chart .grid{stroke:#e4e4e4}.legend{font-size:12px;margin:-.2em 0 .8em 56px}.legend span{margin-right:1em}
        .legend i{display:inline-block;width:18px;margin-right:4px;vertical-align:middle;border-top:2px solid}.legend i.dashed{border-top-style:dashed}

        """ + palette.enumerated().map { ".legend i.c\($0.offset){border-top-color:\($0.element)}" }.joined(separator: "\n") + "\n"

    /// Sites drawn in full (charts, units, blocks, answers); a fleet beyond them is one table.
    static let detailedSites = 20

    static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]

    /// One series of a chart: its name and (time, value) points.
    struct Series {
        var name: String
        var points: [(Double, Double)]
        var dashed = false
    }

    /// The last hour of a site's telemetry as series: grid power, unit power and setpoints (kW), SOC (%), frequency (Hz).
    static func series(_ telemetry: [String]) -> (power: [Series], soc: [Series], frequency: [Series]) {
        let decoder = JSONDecoder()
        var grid = Series(name: "grid", points: [])
        var power: [String: Series] = [:], setpoint: [String: Series] = [:], soc: [String: Series] = [:]
        var frequency = Series(name: "frequency", points: [])
        var order: [String] = []
        for body in telemetry {
            guard let record = try? decoder.decode(UplinkRecord.self, from: Data(body.utf8)),
                  case .telemetry(let f, _, _, let units, let site) = record.body else { continue }
            let t = record.time
            if let f { frequency.points.append((t, f)) }
            if let g = site?.gridPowerW { grid.points.append((t, g / 1000)) }
            for u in units {
                if power[u.id] == nil {
                    order.append(u.id)
                    power[u.id] = Series(name: "\(u.id) power", points: [])
                    setpoint[u.id] = Series(name: "\(u.id) setpoint", points: [], dashed: true)
                    soc[u.id] = Series(name: "\(u.id) SOC", points: [])
                }
                if let p = u.powerW { power[u.id]!.points.append((t, p / 1000)) }
                setpoint[u.id]!.points.append((t, u.setpointW / 1000))
                if let s = u.socPercent { soc[u.id]!.points.append((t, s)) }
            }
        }
        var powerSeries = grid.points.isEmpty ? [] : [grid]
        for id in order { powerSeries += [power[id]!, setpoint[id]!] }
        return (powerSeries, order.map { soc[$0]! }, frequency.points.isEmpty ? [] : [frequency])
    }

    /// A line chart as inline SVG. Every series carries its values in `data-values` (time,value pairs),
    /// so what is drawn can be checked against what is stored.
    static func chart(title: String, unit: String, _ series: [Series], width: Double = 620, height: Double = 180) -> String {
        let all = series.flatMap(\.points)
        guard let t0 = all.map(\.0).min(), let t1 = all.map(\.0).max(), var lo = all.map(\.1).min(), var hi = all.map(\.1).max() else {
            return "<p class=\"nodata\">\(escape(title)): no data in the last hour</p>"
        }
        if hi - lo < 1e-9 { hi += 1; lo -= 1 }
        let pad = (hi - lo) * 0.08
        hi += pad
        lo -= pad
        let left = 56.0, right = 10.0, top = 22.0, bottom = 24.0
        let w = width - left - right, h = height - top - bottom
        let x = { (t: Double) in left + (t1 > t0 ? (t - t0) / (t1 - t0) * w : w / 2) }
        let y = { (v: Double) in top + (hi - v) / (hi - lo) * h }
        let f = { (v: Double) in String(format: "%.1f", v) }
        var svg = "<svg class=\"chart\" role=\"img\" aria-label=\"\(escape(title))\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">"
        svg += "<text x=\"\(f(left))\" y=\"14\" class=\"title\">\(escape(title)) (\(escape(unit)))</text>"
        for i in 0...4 {
            let v = lo + (hi - lo) * Double(i) / 4
            svg += "<line x1=\"\(f(left))\" x2=\"\(f(left + w))\" y1=\"\(f(y(v)))\" y2=\"\(f(y(v)))\" class=\"grid\"/>"
            svg += "<text x=\"\(f(left - 4))\" y=\"\(f(y(v) + 4))\" class=\"axis\" text-anchor=\"end\">\(String(format: abs(hi - lo) < 2 ? "%.3f" : "%.1f", v))</text>"
        }
        let clock = DateFormatter()
        clock.dateFormat = "HH:mm"
        clock.timeZone = TimeZone(identifier: "UTC")
        for i in 0...3 {
            let t = t0 + (t1 - t0) * Double(i) / 3
            let anchor = i == 0 ? "start" : i == 3 ? "end" : "middle"
            svg += "<text x=\"\(f(x(t)))\" y=\"\(f(height - 6))\" class=\"axis\" text-anchor=\"\(anchor)\">\(clock.string(from: Date(timeIntervalSince1970: t)))</text>"
        }
        for (i, s) in series.enumerated() where !s.points.isEmpty {
            let colour = palette[(s.dashed ? i - 1 : i) % palette.count]
            let path = s.points.map { "\(f(x($0.0))),\(f(y($0.1)))" }.joined(separator: " ")
            let values = s.points.map { String(format: "%.3f,%.4f", $0.0, $0.1) }.joined(separator: " ")
            svg += "<polyline class=\"series\" data-name=\"\(escape(s.name))\" data-values=\"\(values)\" points=\"\(path)\" fill=\"none\" "
                + "stroke=\"\(colour)\" stroke-width=\"1.6\"\(s.dashed ? " stroke-dasharray=\"5 3\"" : "")/>"
        }
        svg += "</svg><div class=legend>"
        for (i, s) in series.enumerated() where !s.points.isEmpty {
            let colourIndex = (s.dashed ? i - 1 : i) % palette.count
            svg += "<span><i class=\"c\(colourIndex)\(s.dashed ? " dashed" : "")\"></i>\(escape(s.name))</span>"
        }
        return svg + "</div>"
    }

    /// The site's frequency events (issue 47 §3), newest first: when, which way and how far, what was
    /// required and delivered at the response time (the site's and each unit's), the shortfall, the score and its cause. Every
    /// text of the record is escaped; a stored record that does not decode is left out.
    static func frequencyEvents(_ records: [String]) -> String {
        let decoder = JSONDecoder()
        let events = records.compactMap { text -> FrequencyEventRecord? in
            guard let record = try? decoder.decode(UplinkRecord.self, from: Data(text.utf8)),
                  case .frequencyEvent(let event) = record.body else { return nil }
            return event
        }
        guard !events.isEmpty else { return "" }
        let f = { (v: Double?, d: Int) -> String in v.map { String(format: "%.\(d)f", $0) } ?? "–" }
        let kW = { (w: Double?) -> String in f(w.map { $0 / 1000 }, 1) }
        let clock = ISO8601DateFormatter()
        var h = "<h3>Frequency events</h3><table><tr><th>#</th><th>start (UTC)</th><th>length</th><th>direction</th><th>extreme Hz</th>"
            + "<th>required kW</th><th>delivered kW</th><th>shortfall kW</th><th>mean required / delivered kW</th><th>max shortfall kW</th>"
            + "<th>score</th><th>cause</th><th>units: required / delivered kW</th></tr>"
        for e in events {
            let start = e.start.isFinite ? clock.string(from: Date(timeIntervalSince1970: e.start)) : "–"
            let cause = [e.cause, e.causeCode, e.causeUnit].compactMap { $0 }.joined(separator: " ")
            let short = (e.shortfallW ?? 0) > 0
            h += "<tr><td>\(e.sequence)</td><td class=l>\(start)</td><td>\(f(e.end - e.start, 0)) s</td><td class=l>\(escape(e.direction))</td>"
                + "<td>\(f(e.extremeHz, 3))</td><td>\(kW(e.requiredW))</td><td>\(kW(e.deliveredW))</td>"
                + "<td\(short ? " class=trip" : "")>\(kW(e.shortfallW))</td><td>\(kW(e.requiredMeanW)) / \(kW(e.deliveredMeanW))</td>"
                + "<td>\(kW(e.maxShortfallW))</td><td>\(f(e.score, 2))</td><td class=l>\(escape(cause.isEmpty ? "–" : cause))</td>"
                + "<td class=l>\(escape((e.units ?? []).map { "\($0.unit) \(kW($0.requiredW)) / \(kW($0.deliveredW))" }.joined(separator: ", ")))</td></tr>"
        }
        return h + "</table>"
    }

    /// The site's IEEE 2030.5 controls taken, refused and ended (issue 48 §3), newest first: when
    /// (bessd's clock), the outcome, the control and its program, its window on the server's time, the W
    /// it sets, a refusal's status, code and reason. Every text of the record is escaped; a stored record
    /// that does not decode is left out.
    static func utilityControls(_ records: [String]) -> String {
        let decoder = JSONDecoder()
        let controls = records.compactMap { text -> (Double, UtilityControlRecord)? in
            guard let record = try? decoder.decode(UplinkRecord.self, from: Data(text.utf8)),
                  case .utilityControl(let control, _) = record.body else { return nil }
            return (record.time, control)
        }
        guard !controls.isEmpty else { return "" }
        let clock = ISO8601DateFormatter()
        let unix = { (t: Int64?) -> String in t.map { clock.string(from: Date(timeIntervalSince1970: Double($0))) } ?? "–" }
        var h = "<h3>Utility controls (IEEE 2030.5)</h3><table><tr><th>time (UTC)</th><th>outcome</th><th>control</th><th>program</th>"
            + "<th>window (server time, UTC)</th><th>sets</th><th>refusal</th></tr>"
        for (time, c) in controls {
            let at = time.isFinite ? clock.string(from: Date(timeIntervalSince1970: time)) : "–"
            let sets = c.limits.named.map { "\($0.name) \(String(format: "%.0f", $0.watts)) W" }.joined(separator: ", ")
            let refusal = [c.responseStatus.map { "\($0)" }, c.code, c.reason].compactMap { $0 }.joined(separator: " ")
            h += "<tr><td class=l>\(at)</td><td class=\(c.outcome == "refused" ? "\"l trip\"" : "l")>\(escape(c.outcome))</td>"
                + "<td class=l>\(escape(c.mRID ?? "–"))</td><td class=l>\(escape(c.program ?? "–"))</td>"
                + "<td class=l>\(unix(c.start)) – \(unix(c.end))</td><td class=l>\(escape(sets.isEmpty ? "–" : sets))</td>"
                + "<td class=l>\(escape(refusal.isEmpty ? "–" : refusal))</td></tr>"
        }
        return h + "</table>"
    }

    /// The site's block schedule (issue 60): each closed block's target and what it delivered, kWh, as
    /// a chart (target dashed, per block start), and the last blocks with their deviation and what bound
    /// them. `records` newest first, as stored; a record that does not decode is left out; every text
    /// of it is escaped.
    static func scheduleBlocks(_ records: [String]) -> String {
        let decoder = JSONDecoder()
        let blocks = records.compactMap { text -> ScheduleBlockRecord? in
            guard let record = try? decoder.decode(UplinkRecord.self, from: Data(text.utf8)),
                  case .scheduleBlock(let block) = record.body else { return nil }
            return block
        }.sorted { $0.startUnix < $1.startUnix }
        guard !blocks.isEmpty else { return "" }
        let delivered = Series(name: "delivered", points: blocks.map { (Double($0.startUnix), $0.deliveredKWh) })
        let target = Series(name: "target", points: blocks.map { (Double($0.startUnix), $0.targetKWh) }, dashed: true)
        var h = "<h3>Schedule blocks</h3><div class=charts><div>"
            + chart(title: "Schedule: target vs delivered per block", unit: "kWh, + = export; target dashed", [delivered, target])
            + "</div></div><table><tr><th>start (UTC)</th><th>revision</th><th>target kWh</th><th>delivered kWh</th><th>droop kWh</th>"
            + "<th>deviation kWh</th><th>deviation %</th><th>bound by</th></tr>"
        let f = { (v: Double) in String(format: "%.2f", v) }
        for b in blocks.suffix(8).reversed() {
            let start = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(b.startUnix)))
            h += "<tr><td class=l>\(start)</td><td>\(b.revision)</td><td>\(f(b.targetKWh))</td><td>\(f(b.deliveredKWh))</td>"
                + "<td>\(f(b.droopKWh))</td><td>\(f(b.deviationKWh))</td><td>\(f(b.deviationPct))</td><td class=l>\(escape(b.boundBy))</td></tr>"
        }
        return h + "</table>"
    }

    static func html(_ sites: [SiteSummary], ingest: UInt64? = nil) throws -> String {
        var h = """
            <!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
            <title>bess-aggregator</title><link rel="stylesheet" href="\(stylesheetPath)"></head><body><h1>bess-aggregator</h1>
            """
        let total = sites.reduce(0) { $0 + $1.records }
        h += "<p>\(sites.count) sites, \(total) records stored"
        if let ingest { h += "; this instance stored \(ingest) records from MQTT" }
        h += "</p>"
        if sites.isEmpty { h += "<p>No site has reported yet.</p>" }
        let f = { (v: Double?, d: Int) -> String in v.map { String(format: "%.\(d)f", $0) } ?? "–" }
        if sites.count > detailedSites {
            h += "<h2>Fleet</h2><p>The first \(detailedSites) sites by name are drawn below.</p><table><tr><th>site</th><th>state</th>"
                + "<th>records</th><th>highest seq</th><th>last seen</th></tr>"
            let now = Date().timeIntervalSince1970
            for site in sites {
                h += "<tr><td class=l>\(escape(site.site))</td><td class=l>\(escape(site.state ?? "–"))</td><td>\(site.records)</td>"
                    + "<td>\(site.highestSeq)</td><td>\(f(now - site.lastTime, 0)) s ago</td></tr>"
            }
            h += "</table>"
        }
        for site in sites.prefix(detailedSites) {
            let age = Date().timeIntervalSince1970 - site.lastTime
            // Ingest takes only online and offline; a state stored before that is shown escaped, as offline.
            let state = site.state.map { " <span class=\($0 == "online" ? "online" : "offline")>\(escape($0))</span>" } ?? ""
            h += "<h2>\(escape(site.site))\(state)</h2><p>\(site.records) records, highest seq \(site.highestSeq), last \(f(age, 0)) s ago</p>"
            let charts = series(site.telemetry)
            h += "<div class=charts><div>" + chart(title: "Power, last hour", unit: "kW; setpoints dashed", charts.power) + "</div>"
            h += "<div>" + chart(title: "State of charge", unit: "%", charts.soc) + "</div>"
            h += "<div>" + chart(title: "Frequency", unit: "Hz", charts.frequency) + "</div></div>"
            h += "<table><tr><th>unit</th><th>state</th><th>SOC %</th><th>power kW</th><th>setpoint kW</th><th>allowed ± kW</th><th>trips</th></tr>"
            for u in site.units {
                let t = u.telemetry
                let trips = (t?.trips ?? []).joined(separator: ", ")
                h += "<tr><td class=l>\(escape(u.unit))</td><td class=l>\(escape(t?.state ?? "?"))</td><td>\(f(t?.socPercent, 1))</td>"
                    + "<td>\(f(t?.powerW.map { $0 / 1000 }, 1))</td><td>\(f(t.map { $0.setpointW / 1000 }, 1))</td>"
                    + "<td>\(f(t.map { $0.allowedChargeW / 1000 }, 0)) / \(f(t.map { $0.allowedDischargeW / 1000 }, 0))</td>"
                    + "<td class='l\(trips.isEmpty ? "" : " trip")'>\(escape(trips.isEmpty ? "–" : trips))</td></tr>"
            }
            h += "</table><h3>Energy blocks</h3><table><tr><th>unit</th><th>start (UTC)</th><th>charged kWh</th><th>discharged kWh</th><th>covered</th></tr>"
            for b in site.blocks {
                let start = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(b.start)))
                h += "<tr><td class=l>\(escape(b.unit))</td><td class=l>\(start)</td><td>\(f(b.charged, 3))</td><td>\(f(b.discharged, 3))</td>"
                    + "<td>\(f(b.covered, 0)) / \(b.length) s</td></tr>"
            }
            h += "</table>"
            h += frequencyEvents(site.frequencyEvents)
            h += utilityControls(site.utilityControls)
            h += scheduleBlocks(site.scheduleBlocks)
            if !site.acks.isEmpty {
                h += "<h3>Command acknowledgements</h3><table><tr><th>id</th><th>accepted</th><th>reason</th></tr>"
                for a in site.acks { h += "<tr><td class=l>\(escape(a.id))</td><td>\(a.accepted ? "yes" : "no")</td><td class=l>\(escape(a.reason ?? ""))</td></tr>" }
                h += "</table>"
            }
        }
        return h + "</body></html>"
    }
}
