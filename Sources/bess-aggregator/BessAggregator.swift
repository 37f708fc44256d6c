import BessBase
import ArgumentParser
import ControlCore
import ControlProtocol
import Foundation
import Hummingbird
import Uplink
import UplinkIngest
import BessSystem

/// The reference aggregator: what HIL rigs and small sites point bessd at.
@main
struct BessAggregator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bess-aggregator",
        abstract: "Reference aggregator: stores bessd's records (deduplicated by seq), serves a status page and /metrics, queues dispatch.",
        version: BessdVersion.string)

    @Option(help: "HOST:PORT to listen on.") var listen = "127.0.0.1:8700"
    @Option(help: "SQLite database file, or postgres://user[:password]@host[:port]/database (shared by several instances).")
    var database = "bess-aggregator.sqlite"
    @Option(help: "A file with a line per site, SITE_ID TOKEN (# comments): the token that site's bessd presents, taken on that site's paths only.")
    var siteTokens: String?
    @Option(help: "A file holding the operator's token (distinct from every site's): it alone posts commands and reads every site, /metrics and, off loopback, the status page.")
    var operatorTokenFile: String?
    @Option(help: .hidden) var tokenFile: String?
    @Option(help: "Uploads (POST …/records) served at once; more are answered 503 with Retry-After.")
    var ingestConcurrency = 32
    @Option(help: "Also take records over MQTT 5 from this broker (mqtt://host:port or mqtts://…), in the shared subscription $share/bess-aggregator/bess/v1/+/records.")
    var mqtt: String?
    @Option(help: "This instance's name: its MQTT client id is bess-aggregator-NAME (keep it across restarts so the broker resends what it had in flight).")
    var instance = "1"
    @Option(help: "MQTT: consumer connections of this instance in the shared group (each stores and acknowledges on its own).")
    var consumers = 4
    @Option(help: "MQTT: CA bundle for the broker's certificate.") var mqttCaFile: String?
    @Option(help: "MQTT: client certificate (PEM).") var mqttCertFile: String?
    @Option(help: "MQTT: client key (PEM).") var mqttKeyFile: String?
    @Option(help: "MQTT: user name.") var mqttUsername: String?
    @Option(help: "MQTT: file holding the password.") var mqttPasswordFile: String?

    func run() async throws {
        let parts = listen.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw ValidationError("--listen must be HOST:PORT") }
        guard (1...4096).contains(ingestConcurrency) else { throw ValidationError("--ingest-concurrency must be 1–4096") }
        if tokenFile != nil {
            throw AggregatorAccessError(.tokenFileRetired, message: "--token-file is retired: its one token uploaded as every site and "
                                        + "commanded every site. Give each site its own token with --site-tokens FILE (a line per site: "
                                        + "SITE_ID TOKEN) and the operator one with --operator-token-file FILE (docs/uplink.md)")
        }
        let guarding = HTTPGuard(access: try AggregatorAccess.load(siteTokensFile: siteTokens, operatorTokenFile: operatorTokenFile,
                                                                   host: String(parts[0])),
                                 ingestLimit: ingestConcurrency)
        let store: any RecordStore = database.hasPrefix("postgres://") || database.hasPrefix("postgresql://")
            ? try await PostgresStore(url: database) : try SQLiteStore(path: database)
        var group: ConsumerGroup?
        if let mqtt {
            guard let url = MQTTURL(mqtt) else { throw ValidationError("--mqtt must be mqtt://host[:port] or mqtts://host[:port]") }
            guard (1...64).contains(consumers) else { throw ValidationError("--consumers must be 1–64") }
            let password = try mqttPasswordFile.map { try String(contentsOfFile: $0, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
            var options = MQTTConnection.Options(url: url, clientID: "bess-aggregator-\(instance)-commands", cleanStart: true,
                                                 sessionExpirySeconds: 0)
            options.caFile = mqttCaFile
            options.clientCertFile = mqttCertFile
            options.clientKeyFile = mqttKeyFile
            options.username = mqttUsername
            options.password = password
            let publisher = try CommandPublisher(options)
            publisher.start()
            var list: [MQTTConsumer] = []
            for k in 0..<consumers {
                // Consumer 0 keeps the instance's name as its client id (and its session across versions).
                let id = k == 0 ? "bess-aggregator-\(instance)" : "bess-aggregator-\(instance)-\(k)"
                let consumer = try MQTTConsumer(url: url, clientID: id, store: store, caFile: mqttCaFile, certFile: mqttCertFile,
                                                keyFile: mqttKeyFile, username: mqttUsername, password: password,
                                                publisher: publisher, followsStatus: k == 0)
                consumer.start()
                list.append(consumer)
            }
            group = ConsumerGroup(consumers: list, publisher: publisher)
        }
        let pusher = group
        let router = Router()
        router.post("/v1/sites/:site/records") { request, context -> Response in
            let site = context.parameters.get("site") ?? ""
            if let refusal = guarding.refusal(.records(site: site), request) { return refusal }
            if let refusal = IngestRules.check(site: site) { return Self.refused(refusal) }
            guard guarding.enterIngest() else { return HTTPGuard.busy }
            defer { guarding.leaveIngest() }
            let body: ByteBuffer
            switch try await HTTPGuard.body(request) {
            case .read(let read): body = read
            case .refused(let refusal): return refusal
            }
            guard let received = try? ReceivedBatch(payload: Array(buffer: body)), received.batch.site == site,
                  received.batch.protocolVersion == UplinkProtocol.version
            else { return Self.refused(.badRequest, "BATCH_MALFORMED", "not a protocol 1 batch for this site") }
            if let why = unstorable(received.batch) {
                return Self.refused(.badRequest, "BATCH_UNSTORABLE", why)
            }
            // Nothing of a batch is stored when any of it is refused.
            if let refusal = IngestRules.check(received.batch) { return Self.refused(refusal) }
            let result = try await store.store([(site, received)], now: Date().timeIntervalSince1970, handOutCommands: true)
            let answer = BatchResponse(ackedSeq: result.first?.highest ?? 0, commands: result.first?.commands ?? [])
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(answer))))
        }
        router.post("/v1/sites/:site/commands") { request, context -> Response in
            let site = context.parameters.get("site") ?? ""
            if let refusal = guarding.refusal(.commands(site: site), request) { return refusal }
            let body: ByteBuffer
            switch try await HTTPGuard.body(request) {
            case .read(let read): body = read
            case .refused(let refusal): return refusal
            }
            guard let command = try? JSONDecoder().decode(DispatchCommand.self, from: Data(buffer: body)) else {
                return Self.json(.badRequest, ["error": "not a DispatchCommand"])
            }
            if let refusal = IngestRules.check(site: site) { return Self.refused(refusal) }
            let now = Date().timeIntervalSince1970
            // Over MQTT the command is pushed at once; over HTTP it waits for the site's next batch.
            try await store.queue(site: site, command: command, delivered: pusher != nil, now: now)
            pusher?.publisher.push(site: site, command: command, now: now)
            return Self.json(.ok, ["queued": command.id, "transport": pusher == nil ? "http" : "mqtt"])
        }
        router.get("/v1/sites/:site/seqs") { request, context -> Response in
            let site = context.parameters.get("site") ?? ""
            if let refusal = guarding.refusal(.seqs(site: site), request) { return refusal }
            if let refusal = IngestRules.check(site: site) { return Self.refused(refusal) }
            let seqs = try await store.seqs(site: site)
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(seqs))))
        }
        router.get("/metrics") { request, _ -> Response in
            if let refusal = guarding.refusal(.metrics, request) { return refusal }
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: try await Self.metrics(store, consumer: pusher))))
        }
        router.get("/") { request, _ -> Response in
            if let refusal = guarding.refusal(.page, request) { return refusal }
            return Response(status: .ok, headers: Self.pageHeaders("text/html; charset=utf-8"),
                     body: .init(byteBuffer: ByteBuffer(string: try StatusPage.html(try await store.summaries(detail: StatusPage.detailedSites),
                                                                                    ingest: pusher?.stats.records))))
        }
        router.get(RouterPath(StatusPage.stylesheetPath)) { _, _ -> Response in
            Response(status: .ok, headers: Self.pageHeaders("text/css; charset=utf-8"), body: .init(byteBuffer: ByteBuffer(string: StatusPage.stylesheet)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname(String(parts[0]), port: port)))
        print("bess-aggregator listening on http://\(listen) (database \(database.hasPrefix("postgres") ? "PostgreSQL" : database))"
              + (mqtt.map { ", MQTT \($0) as bess-aggregator-\(instance)" } ?? "") + "; " + Self.credentials(guarding.access))
        try await app.runService()
    }

    /// The start line's word on credentials.
    static func credentials(_ access: AggregatorAccess) -> String {
        if access.open { return "no credentials: every route open (loopback only)" }
        return "tokens for \(access.siteCount) sites" + (access.hasOperator ? " and the operator" : ", no operator token (commands refused)")
    }

    /// The status page's headers: its type, its Content-Security-Policy, and no guessing at types.
    static func pageHeaders(_ type: String) -> HTTPFields {
        [.contentType: type, .contentSecurityPolicy: StatusPage.contentSecurityPolicy, .xContentTypeOptions: "nosniff"]
    }

    /// A refused message: 422 with its code (`{"code": …, "error": "CODE: …"}`), nothing stored.
    static func refused(_ refusal: IngestRefusal) -> Response {
        json(.unprocessableContent, ["error": refusal.description, "code": "\(refusal.code)"])
    }

    /// A refusal with its code, written once: `{"code": CODE, "error": "CODE: message"}`.
    static func refused(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        json(status, ["error": "\(code): \(message)", "code": code])
    }

    static func json(_ status: HTTPResponse.Status, _ object: [String: String]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func metrics(_ store: any RecordStore, consumer: ConsumerGroup?) async throws -> String {
        var lines: [String] = []
        let sites = try await store.summaries(detail: 0)
        lines.append("# HELP bess_aggregator_records Records stored, by site.")
        lines.append("# TYPE bess_aggregator_records gauge")
        for s in sites { lines.append("bess_aggregator_records{site=\"\(s.site)\"} \(s.records)") }
        lines.append("# HELP bess_aggregator_highest_seq Highest seq stored, by site.")
        lines.append("# TYPE bess_aggregator_highest_seq gauge")
        for s in sites { lines.append("bess_aggregator_highest_seq{site=\"\(s.site)\"} \(s.highestSeq)") }
        lines.append("# HELP bess_aggregator_duplicates_total Records received again and ignored.")
        lines.append("# TYPE bess_aggregator_duplicates_total counter")
        lines.append("bess_aggregator_duplicates_total \(try await store.duplicates())")
        if let consumer {
            let c = consumer.stats
            lines.append("# HELP bess_aggregator_mqtt_connected This instance's consumer connections that are up.")
            lines.append("# TYPE bess_aggregator_mqtt_connected gauge")
            lines.append("bess_aggregator_mqtt_connected \(consumer.connected)")
            lines.append("# HELP bess_aggregator_mqtt_batches_total Record batches this instance stored from MQTT (then acknowledged).")
            lines.append("# TYPE bess_aggregator_mqtt_batches_total counter")
            lines.append("bess_aggregator_mqtt_batches_total \(c.batches)")
            lines.append("# HELP bess_aggregator_mqtt_records_total Records in those batches.")
            lines.append("# TYPE bess_aggregator_mqtt_records_total counter")
            lines.append("bess_aggregator_mqtt_records_total \(c.records)")
            lines.append("# HELP bess_aggregator_mqtt_commands_published_total Commands pushed to sites.")
            lines.append("# TYPE bess_aggregator_mqtt_commands_published_total counter")
            lines.append("bess_aggregator_mqtt_commands_published_total \(consumer.publisher.published.withLock { $0 })")
            lines.append("# HELP bess_aggregator_mqtt_malformed_total Messages refused: over 1 MiB (PAYLOAD_TOO_LARGE, before decoding), not a protocol 1 batch, answer or status, not storable (a seq beyond 2^63 − 1, a NUL in a stored text), or refused at ingest (an id, unit state, trip code or status bessd would not send).")
            lines.append("# TYPE bess_aggregator_mqtt_malformed_total counter")
            lines.append("bess_aggregator_mqtt_malformed_total \(c.malformed)")
            lines.append("# HELP bess_aggregator_store_failures_total Transactions that failed and were retried (acknowledgements held).")
            lines.append("# TYPE bess_aggregator_store_failures_total counter")
            lines.append("bess_aggregator_store_failures_total \(c.storeFailures)")
        }
        let latencies = try await store.commandLatencies().sorted()
        if !latencies.isEmpty {
            lines.append("# HELP bess_aggregator_command_latency_seconds Command queued → bessd's answer stored, last 1000 commands.")
            lines.append("# TYPE bess_aggregator_command_latency_seconds summary")
            for q in [0.5, 0.99] {
                lines.append("bess_aggregator_command_latency_seconds{quantile=\"\(q)\"} \(latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))])")
            }
            lines.append("bess_aggregator_command_latency_seconds_count \(latencies.count)")
        }
        lines.append("# HELP bess_aggregator_site_online 1 while a site's birth message stands, 0 after its Last Will (MQTT).")
        lines.append("# TYPE bess_aggregator_site_online gauge")
        for s in sites { if let state = s.state { lines.append("bess_aggregator_site_online{site=\"\(s.site)\"} \(state == "online" ? 1 : 0)") } }
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

/// An instance's consumers and its command connection.
final class ConsumerGroup: Sendable {
    let consumers: [MQTTConsumer]
    let publisher: CommandPublisher
    init(consumers: [MQTTConsumer], publisher: CommandPublisher) {
        self.consumers = consumers
        self.publisher = publisher
    }
    /// The consumers' statistics summed.
    var stats: MQTTConsumer.Statistics {
        consumers.map(\.stats).reduce(into: MQTTConsumer.Statistics()) { sum, s in
            sum.batches &+= s.batches
            sum.records &+= s.records
            sum.redelivered &+= s.redelivered
            sum.malformed &+= s.malformed
            sum.storeFailures &+= s.storeFailures
        }
    }
    var connected: Int { consumers.filter { $0.stats.connected }.count }
}
