import ArgumentParser
import Foundation
import Hummingbird
import Uplink

/// The reference aggregator: what HIL rigs and small sites point bessd at.
@main
struct BessAggregator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bess-aggregator",
        abstract: "Reference aggregator: stores bessd's records (deduplicated by seq), serves a status page and /metrics, queues dispatch.")

    @Option(help: "HOST:PORT to listen on.") var listen = "127.0.0.1:8700"
    @Option(help: "SQLite database file.") var database = "bess-aggregator.sqlite"
    @Option(help: "A file holding the bearer token bessd must present (none: no check).") var tokenFile: String?

    func run() async throws {
        let parts = listen.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw ValidationError("--listen must be HOST:PORT") }
        let store = try Store(path: database)
        let token = try tokenFile.map { try String(contentsOfFile: $0, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
        let router = Router()
        let authorized: @Sendable (Request) -> Bool = { request in
            guard let token else { return true }
            return request.headers[.authorization] == "Bearer \(token)"
        }
        router.post("/v1/sites/:site/records") { request, context -> Response in
            guard authorized(request) else { return Self.json(.unauthorized, ["error": "bad or missing token"]) }
            let site = context.parameters.get("site") ?? ""
            let body = try await request.body.collect(upTo: 32 << 20)
            guard let batch = try? JSONDecoder().decode(RecordBatch.self, from: Data(buffer: body)), batch.site == site,
                  batch.protocolVersion == UplinkProtocol.version
            else { return Self.json(.badRequest, ["error": "not a protocol 1 batch for this site"]) }
            let (_, _, highest, commands) = try store.store(site: site, batch: batch, now: Date().timeIntervalSince1970)
            let answer = BatchResponse(ackedSeq: highest, commands: commands)
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(answer))))
        }
        router.post("/v1/sites/:site/commands") { request, context -> Response in
            guard authorized(request) else { return Self.json(.unauthorized, ["error": "bad or missing token"]) }
            let body = try await request.body.collect(upTo: 1 << 20)
            guard let command = try? JSONDecoder().decode(DispatchCommand.self, from: Data(buffer: body)) else {
                return Self.json(.badRequest, ["error": "not a DispatchCommand"])
            }
            try store.queue(site: context.parameters.get("site") ?? "", command: command)
            return Self.json(.ok, ["queued": command.id])
        }
        router.get("/v1/sites/:site/seqs") { _, context -> Response in
            let seqs = try store.seqs(site: context.parameters.get("site") ?? "")
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(seqs))))
        }
        router.get("/metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: try Self.metrics(store))))
        }
        router.get("/") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: try StatusPage.html(try store.summaries()))))
        }
        let app = Application(router: router, configuration: .init(address: .hostname(String(parts[0]), port: port)))
        print("bess-aggregator listening on http://\(listen) (database \(database))")
        try await app.runService()
    }

    static func json(_ status: HTTPResponse.Status, _ object: [String: String]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func metrics(_ store: Store) throws -> String {
        var lines: [String] = []
        let sites = try store.summaries()
        lines.append("# HELP bess_aggregator_records Records stored, by site.")
        lines.append("# TYPE bess_aggregator_records gauge")
        for s in sites { lines.append("bess_aggregator_records{site=\"\(s.site)\"} \(s.records)") }
        lines.append("# HELP bess_aggregator_highest_seq Highest seq stored, by site.")
        lines.append("# TYPE bess_aggregator_highest_seq gauge")
        for s in sites { lines.append("bess_aggregator_highest_seq{site=\"\(s.site)\"} \(s.highestSeq)") }
        lines.append("# HELP bess_aggregator_duplicates_total Records received again and ignored.")
        lines.append("# TYPE bess_aggregator_duplicates_total counter")
        lines.append("bess_aggregator_duplicates_total \(try store.duplicates())")
        lines.append("# HELP bess_aggregator_unit_soc_percent Latest state of charge.")
        lines.append("# TYPE bess_aggregator_unit_soc_percent gauge")
        for s in sites {
            for u in s.units { if let soc = u.telemetry?.socPercent { lines.append("bess_aggregator_unit_soc_percent{site=\"\(s.site)\",unit=\"\(u.unit)\"} \(soc)") } }
        }
        lines.append("# HELP bess_aggregator_unit_power_watts Latest measured power, + = discharge.")
        lines.append("# TYPE bess_aggregator_unit_power_watts gauge")
        for s in sites {
            for u in s.units { if let p = u.telemetry?.powerW { lines.append("bess_aggregator_unit_power_watts{site=\"\(s.site)\",unit=\"\(u.unit)\"} \(p)") } }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension Data {
    init(buffer: ByteBuffer) {
        var copy = buffer
        self.init(copy.readBytes(length: copy.readableBytes) ?? [])
    }
}

/// The small status page: every site and unit at a glance.
enum StatusPage {
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    static func html(_ sites: [Store.SiteSummary]) throws -> String {
        var h = """
            <!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
            <title>bess-aggregator</title><style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0 1.5em}
            td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}th{background:#eee}td.l{text-align:left}
            .trip{color:#b00;font-weight:bold}</style></head><body><h1>bess-aggregator</h1>
            """
        if sites.isEmpty { h += "<p>No site has reported yet.</p>" }
        let f = { (v: Double?, d: Int) -> String in v.map { String(format: "%.\(d)f", $0) } ?? "–" }
        for site in sites {
            let age = Date().timeIntervalSince1970 - site.lastTime
            h += "<h2>\(escape(site.site))</h2><p>\(site.records) records, highest seq \(site.highestSeq), last \(f(age, 0)) s ago</p>"
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
            if !site.acks.isEmpty {
                h += "<h3>Command acknowledgements</h3><table><tr><th>id</th><th>accepted</th><th>reason</th></tr>"
                for a in site.acks { h += "<tr><td class=l>\(escape(a.id))</td><td>\(a.accepted ? "yes" : "no")</td><td class=l>\(escape(a.reason ?? ""))</td></tr>" }
                h += "</table>"
            }
        }
        return h + "</body></html>"
    }
}
