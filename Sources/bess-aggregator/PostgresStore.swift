import BessSystem
import Foundation
import Logging
import PostgresNIO
import Uplink
import UplinkIngest

/// The store several aggregator instances share: PostgreSQL through postgres-nio. Every batch group
/// is one transaction; records go in with `ON CONFLICT DO NOTHING` on (site, seq), so a record
/// delivered twice, or to two instances, is stored once — by the database, not by an instance.
final class PostgresStore: RecordStore {
    let logger = Logger(label: "bess-aggregator.postgres")
    let configuration: PostgresClient.Configuration
    /// The client and the task that runs its pool; replaced by `renew()`.
    let current: PILock<(client: PostgresClient, runner: Task<Void, Never>)>
    var client: PostgresClient { current.withLock { $0.client } }

    /// `postgres://user[:password]@host[:port]/database`
    init(url: String) async throws {
        guard let parts = URLComponents(string: url), parts.scheme == "postgres" || parts.scheme == "postgresql",
              let host = parts.host, let user = parts.user
        else { throw StoreError("--database \(url): expected postgres://user[:password]@host[:port]/database") }
        let database = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        var configuration = PostgresClient.Configuration(host: host, port: parts.port ?? 5432, username: user,
                                                         password: parts.password, database: database.isEmpty ? nil : database,
                                                         tls: .disable)
        configuration.options.maximumConnections = 8
        self.configuration = configuration
        current = PILock(Self.start(configuration))
        try await migrate()
    }

    static func start(_ configuration: PostgresClient.Configuration) -> (client: PostgresClient, runner: Task<Void, Never>) {
        let client = PostgresClient(configuration: configuration)
        return (client, Task { await client.run() })
    }

    /// A fresh pool after a failure: a server restart can leave the old one waiting forever.
    func renew() {
        let fresh = Self.start(configuration)
        let old = current.withLock { value in
            defer { value = fresh }
            return value
        }
        old.runner.cancel()
    }

    deinit { current.withLock { $0.runner.cancel() } }

    func migrate() async throws {
        let statements: [PostgresQuery] = [
            """
            CREATE TABLE IF NOT EXISTS records (site TEXT NOT NULL, seq BIGINT NOT NULL, type TEXT NOT NULL,
                time DOUBLE PRECISION NOT NULL, body TEXT NOT NULL,
                stored_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch from clock_timestamp()), PRIMARY KEY (site, seq))
            """,
            """
            CREATE TABLE IF NOT EXISTS latest (site TEXT NOT NULL, unit TEXT NOT NULL, time DOUBLE PRECISION NOT NULL,
                body TEXT NOT NULL, PRIMARY KEY (site, unit))
            """,
            """
            CREATE TABLE IF NOT EXISTS energy_blocks (site TEXT NOT NULL, unit TEXT NOT NULL, start_unix BIGINT NOT NULL,
                length_s BIGINT NOT NULL, charged_kwh DOUBLE PRECISION NOT NULL, discharged_kwh DOUBLE PRECISION NOT NULL,
                covered_s DOUBLE PRECISION NOT NULL, PRIMARY KEY (site, unit, start_unix))
            """,
            """
            CREATE TABLE IF NOT EXISTS grid_energy_blocks (site TEXT NOT NULL, start_unix BIGINT NOT NULL, length_s BIGINT NOT NULL,
                imported_kwh DOUBLE PRECISION NOT NULL, exported_kwh DOUBLE PRECISION NOT NULL, covered_s DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (site, start_unix))
            """,
            """
            CREATE TABLE IF NOT EXISTS commands (id TEXT PRIMARY KEY, site TEXT NOT NULL, body TEXT NOT NULL,
                delivered BOOLEAN NOT NULL DEFAULT false, queued_at DOUBLE PRECISION)
            """,
            """
            CREATE TABLE IF NOT EXISTS acks (site TEXT NOT NULL, id TEXT NOT NULL, accepted BOOLEAN NOT NULL, reason TEXT,
                time DOUBLE PRECISION NOT NULL)
            """,
            "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
            """
            CREATE TABLE IF NOT EXISTS site_stats (site TEXT PRIMARY KEY, records BIGINT NOT NULL, highest_seq BIGINT NOT NULL,
                last_time DOUBLE PRECISION NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS site_status (site TEXT PRIMARY KEY, state TEXT NOT NULL, session TEXT NOT NULL,
                time DOUBLE PRECISION NOT NULL)
            """,
        ]
        // A site's unanswered commands are looked up each time it comes online: without these the
        // lookup reads every command and answer ever stored. Built CONCURRENTLY: the first start of
        // a version that adds one to a store with millions of rows does not hold the other
        // instances' writes to that table while it builds. A build cut short (the instance killed
        // meanwhile) leaves the index INVALID, which IF NOT EXISTS would keep for good: such an
        // index is dropped and built again.
        let indexes = [
            ("commands_by_site", "commands (site)"),
            ("acks_by_command", "acks (site, id)"),
        ]
        let logger = self.logger
        // Instances starting together create the schema one at a time.
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(72501)", logger: logger)
            do {
                for statement in statements { try await connection.query(statement, logger: logger) }
                for (name, columns) in indexes {
                    let invalid = try await connection.query(
                        """
                        SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                        WHERE c.relname = \(name) AND pg_table_is_visible(c.oid) AND NOT i.indisvalid
                        """, logger: logger)
                    var rebuild = false
                    for try await _ in invalid { rebuild = true }
                    if rebuild {
                        logger.warning("index \(name) is invalid (a build was cut short): building it again")
                        try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(name)"), logger: logger)
                    }
                    try await connection.query(PostgresQuery(unsafeSQL: "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(name) ON \(columns)"),
                                               logger: logger)
                }
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(72501)", logger: logger)
                throw error
            }
            try await connection.query("SELECT pg_advisory_unlock(72501)", logger: logger)
        }
    }

    func store(_ batches: [(site: String, received: ReceivedBatch)], now: Double, handOutCommands: Bool) async throws -> [StoreResult] {
        var sites: [String] = [], seqs: [Int64] = [], types: [String] = [], times: [Double] = [], bodies: [String] = []
        var records: [ExactText: [Int64: Received]] = [:]
        // A (site, seq) that comes twice in one window is stored once, as it came first (as SQLite
        // does): its text, its columns and what is derived from it are then all one record's.
        var items: [(String, Received, String)] = []
        var seen = Set<SiteSeq>()
        var repeated = 0
        for item in batches {
            for index in item.received.batch.records.indices {
                let record = item.received.batch.records[index]
                guard seen.insert(SiteSeq(site: ExactText(item.site), seq: record.seq)).inserted else {
                    repeated += 1
                    continue
                }
                items.append((item.site, Received(record: record, units: item.received.unitTexts[index]), item.received.recordTexts[index]))
            }
        }
        // Rows in (site, seq) order: instances storing overlapping batches lock them in one order (no deadlock).
        let ordered = items.sorted { ($0.0, $0.1.record.seq) < ($1.0, $1.1.record.seq) }
        for (site, received, text) in ordered {
            sites.append(site)
            seqs.append(Int64(received.record.seq))
            types.append(recordType(received.record.body))
            times.append(received.record.time)
            bodies.append(text)
            records[ExactText(site), default: [:]][Int64(received.record.seq)] = received
        }
        let acks = batches.flatMap { item in item.received.batch.acks.map { (site: item.site, ack: $0) } }
        let logger = self.logger
        let handOut = handOutCommands
        let outcome = try await client.withTransaction(logger: logger) { connection -> ([ExactText: Int], [String: [DispatchCommand]]) in
            var newBySite: [ExactText: Int] = [:]
            var highestBySite: [ExactText: (seq: Int64, time: Double)] = [:]
            var fresh: [(String, Received)] = []
            if !sites.isEmpty {
                let rows = try await connection.query("""
                    INSERT INTO records (site, seq, type, time, body)
                    SELECT * FROM UNNEST(\(sites)::text[], \(seqs)::int8[], \(types)::text[], \(times)::float8[], \(bodies)::text[])
                    ON CONFLICT DO NOTHING RETURNING site, seq
                    """, logger: logger)
                for try await (site, seq) in rows.decode((String, Int64).self) {
                    let key = ExactText(site)
                    newBySite[key, default: 0] += 1
                    if let received = records[key]?[seq] {
                        fresh.append((site, received))
                        let h = highestBySite[key] ?? (0, 0)
                        highestBySite[key] = (max(h.seq, seq), max(h.time, received.record.time))
                    }
                }
            }
            if !newBySite.isEmpty {
                let statKeys = newBySite.keys.sorted { $0.text < $1.text }
                let statSites = statKeys.map(\.text)
                let counts = statKeys.map { Int64(newBySite[$0] ?? 0) }
                let highs = statKeys.map { highestBySite[$0]?.seq ?? 0 }, lasts = statKeys.map { highestBySite[$0]?.time ?? 0 }
                try await connection.query("""
                    INSERT INTO site_stats (site, records, highest_seq, last_time)
                    SELECT * FROM UNNEST(\(statSites)::text[], \(counts)::int8[], \(highs)::int8[], \(lasts)::float8[])
                    ON CONFLICT (site) DO UPDATE SET records = site_stats.records + excluded.records,
                        highest_seq = GREATEST(site_stats.highest_seq, excluded.highest_seq),
                        last_time = GREATEST(site_stats.last_time, excluded.last_time)
                    """, logger: logger)
            }
            try await Self.derive(fresh, connection: connection, logger: logger)
            if !acks.isEmpty { try await Self.record(acks: acks, now: now, connection: connection, logger: logger) }
            let duplicates = sites.count - newBySite.values.reduce(0, +) + repeated
            if duplicates > 0 {
                try await connection.query("""
                    INSERT INTO counters (name, value) VALUES ('duplicates', \(Int64(duplicates)))
                    ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value
                    """, logger: logger)
            }
            var commands: [String: [DispatchCommand]] = [:]
            if handOut {
                for site in Set(batches.map(\.site)) {
                    let rows = try await connection.query("""
                        UPDATE commands SET delivered = true WHERE site = \(site) AND NOT delivered RETURNING body
                        """, logger: logger)
                    for try await body in rows.decode(String.self) {
                        if let c = try? JSONDecoder().decode(DispatchCommand.self, from: Data(body.utf8)) { commands[site, default: []].append(c) }
                    }
                }
            }
            return (newBySite, commands)
        }
        var told = Set<String>()
        return batches.map { site, received in
            let batch = received.batch
            // New records and handed-out commands are told per site: the first batch of a site in the
            // group carries them, so no command goes out twice.
            let first = told.insert(site).inserted
            let new = first ? outcome.0[ExactText(site)] ?? 0 : 0
            return StoreResult(new: new, duplicates: max(0, batch.records.count - new), highest: batch.records.map(\.seq).max() ?? 0,
                               commands: first ? outcome.1[site] ?? [] : [])
        }
    }

    /// A record and its units' texts as they came.
    struct Received {
        var record: UplinkRecord
        var units: [String]
    }

    /// The latest telemetry per unit and the energy blocks, from records stored for the first time.
    static func derive(_ fresh: [(String, Received)], connection: PostgresConnection, logger: Logger) async throws {
        // Keyed by the texts themselves, byte for byte (a key joined with "|" would make site "S|a",
        // unit "1" and site "S", unit "a|1" one row).
        var latest: [[ExactText]: (site: String, unit: String, time: Double, body: String)] = [:]
        var blocks: [BlockKey: (String, String, Int64, Int64, Double, Double, Double)] = [:]
        var grid: [SiteSeq: (String, Int64, Int64, Double, Double, Double)] = [:]
        for (site, received) in fresh {
            let record = received.record
            switch record.body {
            case .telemetry(_, _, _, let units, _):
                for (unit, text) in zip(units, received.units) {
                    let key = [ExactText(site), ExactText(unit.id)]
                    if (latest[key]?.time ?? -.infinity) <= record.time { latest[key] = (site, unit.id, record.time, text) }
                }
            case .energyBlock(let unit, let start, let length, let charged, let discharged, let covered):
                blocks[BlockKey(site: ExactText(site), unit: ExactText(unit), start: start)] = (site, unit, start, length, charged, discharged, covered)
            case .gridEnergyBlock(let start, let length, let imported, let exported, let covered):
                grid[SiteSeq(site: ExactText(site), seq: UInt64(bitPattern: start))] = (site, start, length, imported, exported, covered)
            default:
                break
            }
        }
        if !latest.isEmpty {
            let rows = latest.values.sorted { ($0.site, $0.unit) < ($1.site, $1.unit) }
            try await connection.query("""
                INSERT INTO latest (site, unit, time, body)
                SELECT * FROM UNNEST(\(rows.map(\.site))::text[], \(rows.map(\.unit))::text[], \(rows.map(\.time))::float8[], \(rows.map(\.body))::text[])
                ON CONFLICT (site, unit) DO UPDATE SET time = excluded.time, body = excluded.body WHERE excluded.time >= latest.time
                """, logger: logger)
        }
        for b in blocks.values.sorted(by: { ($0.0, $0.1, $0.2) < ($1.0, $1.1, $1.2) }) {
            try await connection.query("""
                INSERT INTO energy_blocks (site, unit, start_unix, length_s, charged_kwh, discharged_kwh, covered_s)
                VALUES (\(b.0), \(b.1), \(b.2), \(b.3), \(b.4), \(b.5), \(b.6))
                ON CONFLICT (site, unit, start_unix) DO UPDATE SET length_s = excluded.length_s, charged_kwh = excluded.charged_kwh,
                    discharged_kwh = excluded.discharged_kwh, covered_s = excluded.covered_s
                """, logger: logger)
        }
        for g in grid.values.sorted(by: { ($0.0, $0.1) < ($1.0, $1.1) }) {
            try await connection.query("""
                INSERT INTO grid_energy_blocks (site, start_unix, length_s, imported_kwh, exported_kwh, covered_s)
                VALUES (\(g.0), \(g.1), \(g.2), \(g.3), \(g.4), \(g.5))
                ON CONFLICT (site, start_unix) DO UPDATE SET length_s = excluded.length_s, imported_kwh = excluded.imported_kwh,
                    exported_kwh = excluded.exported_kwh, covered_s = excluded.covered_s
                """, logger: logger)
        }
    }

    func queue(site: String, command: DispatchCommand, delivered: Bool, now: Double) async throws {
        let body = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        try await client.query("""
            INSERT INTO commands (id, site, body, delivered, queued_at) VALUES (\(command.id), \(site), \(body), \(delivered), \(now))
            ON CONFLICT (id) DO UPDATE SET site = excluded.site, body = excluded.body, delivered = excluded.delivered,
                queued_at = excluded.queued_at
            """, logger: logger)
    }

    func unanswered(sites: [String], now: Double) async throws -> [ExactText: [DispatchCommand]] {
        guard !sites.isEmpty else { return [:] }
        let rows = try await client.query("""
            SELECT site, body FROM commands c WHERE site = ANY(\(sites)::text[])
                AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.site = c.site AND a.id = c.id)
                ORDER BY queued_at NULLS FIRST, id
            """, logger: logger)
        var bySite: [ExactText: [DispatchCommand]] = [:]
        for try await (site, body) in rows.decode((String, String).self) {
            if let c = try? JSONDecoder().decode(DispatchCommand.self, from: Data(body.utf8)), c.expiresUnix > now {
                bySite[ExactText(site), default: []].append(c)
            }
        }
        return bySite
    }

    func record(acks: [(site: String, ack: CommandAck)], now: Double) async throws {
        guard !acks.isEmpty else { return }
        let logger = self.logger
        try await client.withConnection { connection in try await Self.record(acks: acks, now: now, connection: connection, logger: logger) }
    }

    static func record(acks: [(site: String, ack: CommandAck)], now: Double, connection: PostgresConnection, logger: Logger) async throws {
        let sites = acks.map(\.site), ids = acks.map(\.ack.id), accepted = acks.map(\.ack.accepted)
        let reasons = acks.map { $0.ack.reason ?? "" }
        try await connection.query("""
            INSERT INTO acks (site, id, accepted, reason, time)
            SELECT s, i, a, NULLIF(r, ''), \(now) FROM UNNEST(\(sites)::text[], \(ids)::text[], \(accepted)::bool[], \(reasons)::text[]) AS t(s, i, a, r)
            """, logger: logger)
    }

    func setStatuses(_ statuses: [(site: String, message: SiteStatusMessage)], now: Double) async throws {
        let rows = lastStatuses(statuses)
        guard !rows.isEmpty else { return }
        try await client.query("""
            INSERT INTO site_status (site, state, session, time)
            SELECT s, st, se, \(now) FROM UNNEST(\(rows.map(\.site))::text[], \(rows.map(\.message.state))::text[],
                \(rows.map(\.message.session))::text[]) AS t(s, st, se)
            ON CONFLICT (site) DO UPDATE SET state = excluded.state, session = excluded.session, time = excluded.time
            """, logger: logger)
    }

    func commandLatencies() async throws -> [Double] {
        let rows = try await client.query("""
            SELECT MIN(a.time) - c.queued_at FROM commands c JOIN acks a ON a.site = c.site AND a.id = c.id
            WHERE c.queued_at IS NOT NULL GROUP BY c.site, c.id, c.queued_at ORDER BY MIN(a.time) DESC LIMIT 1000
            """, logger: logger)
        var list: [Double] = []
        for try await value in rows.decode(Double.self) { list.append(value) }
        return list
    }

    func summaries(detail: Int) async throws -> [SiteSummary] {
        let decoder = JSONDecoder()
        var list: [SiteSummary] = []
        let rows = try await client.query("""
            SELECT s.site, s.records, s.highest_seq, s.last_time, st.state FROM site_stats s LEFT JOIN site_status st ON st.site = s.site
            ORDER BY s.site
            """, logger: logger)
        var index: [String: Int] = [:]
        for try await (site, count, high, last, state) in rows.decode((String, Int64, Int64, Double, String?).self) {
            index[site] = list.count
            list.append(SiteSummary(site: site, records: Int(count), highestSeq: high, lastTime: last, units: [], blocks: [], acks: [],
                                    state: state, telemetry: []))
        }
        for try await (site, unit, time, body) in try await client.query("""
            SELECT site, unit, time, body FROM latest ORDER BY site, unit
            """, logger: logger).decode((String, String, Double, String).self) {
            guard let i = index[site] else { continue }
            list[i].units.append(.init(unit: unit, time: time, telemetry: try? decoder.decode(UnitTelemetry.self, from: Data(body.utf8))))
        }
        for i in list.indices.prefix(detail) {
            let site = list[i].site
            for try await (unit, start, charged, discharged, covered, length) in try await client.query("""
                SELECT unit, start_unix, charged_kwh, discharged_kwh, covered_s, length_s FROM energy_blocks
                WHERE site = \(site) ORDER BY start_unix DESC, unit LIMIT 20
                """, logger: logger).decode((String, Int64, Double, Double, Double, Int64).self) {
                list[i].blocks.append(.init(unit: unit, start: start, charged: charged, discharged: discharged, covered: covered, length: length))
            }
            for try await (id, accepted, reason) in try await client.query("""
                SELECT id, accepted, reason FROM acks WHERE site = \(site) ORDER BY time DESC LIMIT 20
                """, logger: logger).decode((String, Bool, String?).self) {
                list[i].acks.append(.init(id: id, accepted: accepted, reason: reason))
            }
            let since = list[i].lastTime - 3600
            for try await body in try await client.query("""
                SELECT body FROM records WHERE site = \(site) AND type = 'telemetry' AND time >= \(since) ORDER BY seq
                """, logger: logger).decode(String.self) {
                list[i].telemetry.append(body)
            }
            for try await body in try await client.query("""
                SELECT body FROM records WHERE site = \(site) AND type = 'frequency_event' ORDER BY seq DESC LIMIT 20
                """, logger: logger).decode(String.self) {
                list[i].frequencyEvents.append(body)
            }
            for try await body in try await client.query("""
                SELECT body FROM records WHERE site = \(site) AND type = 'utility_control' ORDER BY seq DESC LIMIT 20
                """, logger: logger).decode(String.self) {
                list[i].utilityControls.append(body)
            }
            for try await body in try await client.query("""
                SELECT body FROM records WHERE site = \(site) AND type = 'schedule_block' ORDER BY seq DESC LIMIT \(SiteSummary.scheduleBlocksShown)
                """, logger: logger).decode(String.self) {
                list[i].scheduleBlocks.append(body)
            }
        }
        return list
    }

    func seqs(site: String) async throws -> [Int64] {
        var list: [Int64] = []
        for try await seq in try await client.query("SELECT seq FROM records WHERE site = \(site) ORDER BY seq", logger: logger)
            .decode(Int64.self) { list.append(seq) }
        return list
    }

    func duplicates() async throws -> Int {
        for try await value in try await client.query("SELECT value FROM counters WHERE name = 'duplicates'", logger: logger)
            .decode(Int64.self) { return Int(value) }
        return 0
    }
}

struct StoreError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct SiteSeq: Hashable, Sendable {
    let site: ExactText
    let seq: UInt64
}

struct BlockKey: Hashable, Sendable {
    let site: ExactText
    let unit: ExactText
    let start: Int64
}
