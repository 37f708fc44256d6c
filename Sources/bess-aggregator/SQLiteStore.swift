import Foundation
import GRDB
import Uplink
import UplinkIngest

/// The aggregator's SQLite store (GRDB), the default for one instance: records deduplicated by
/// (site, seq), the latest telemetry per unit, energy blocks for settlement, queued commands and the
/// acknowledgements bessd sent back.
final class SQLiteStore: RecordStore {
    let db: DatabaseQueue

    init(path: String) throws {
        db = try DatabaseQueue(path: path)
        try db.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS records (site TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
                    time REAL NOT NULL, body TEXT NOT NULL, PRIMARY KEY (site, seq));
                CREATE TABLE IF NOT EXISTS latest (site TEXT NOT NULL, unit TEXT NOT NULL, time REAL NOT NULL,
                    body TEXT NOT NULL, PRIMARY KEY (site, unit));
                CREATE TABLE IF NOT EXISTS energy_blocks (site TEXT NOT NULL, unit TEXT NOT NULL, start_unix INTEGER NOT NULL,
                    length_s INTEGER NOT NULL, charged_kwh REAL NOT NULL, discharged_kwh REAL NOT NULL, covered_s REAL NOT NULL,
                    PRIMARY KEY (site, unit, start_unix));
                CREATE TABLE IF NOT EXISTS grid_energy_blocks (site TEXT NOT NULL, start_unix INTEGER NOT NULL,
                    length_s INTEGER NOT NULL, imported_kwh REAL NOT NULL, exported_kwh REAL NOT NULL, covered_s REAL NOT NULL,
                    PRIMARY KEY (site, start_unix));
                CREATE TABLE IF NOT EXISTS commands (id TEXT PRIMARY KEY, site TEXT NOT NULL, body TEXT NOT NULL,
                    delivered INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE IF NOT EXISTS acks (site TEXT NOT NULL, id TEXT NOT NULL, accepted INTEGER NOT NULL,
                    reason TEXT, time REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS site_status (site TEXT PRIMARY KEY, state TEXT NOT NULL, session TEXT NOT NULL,
                    time REAL NOT NULL);
                CREATE INDEX IF NOT EXISTS commands_by_site ON commands (site);
                CREATE INDEX IF NOT EXISTS acks_by_command ON acks (site, id);
                """)
            if try !Row.fetchAll(db, sql: "PRAGMA table_info(commands)").contains(where: { ($0["name"] as String) == "queued_at" }) {
                try db.execute(sql: "ALTER TABLE commands ADD COLUMN queued_at REAL")
            }
        }
    }

    func store(_ batches: [(site: String, received: ReceivedBatch)], now: Double, handOutCommands: Bool) async throws -> [StoreResult] {
        try batches.map { item in
            let (new, duplicates, highest, commands) = try store(site: item.site, received: item.received, now: now, handOut: handOutCommands)
            return StoreResult(new: new, duplicates: duplicates, highest: highest, commands: commands)
        }
    }

    /// Stores a batch; returns (records new, duplicates, highest seq in the batch, commands to hand out).
    func store(site: String, received: ReceivedBatch, now: Double, handOut: Bool) throws -> (Int, Int, UInt64, [DispatchCommand]) {
        let batch = received.batch
        return try db.write { db in
            var new = 0
            var duplicates = 0
            for (index, record) in batch.records.enumerated() {
                let body = received.recordTexts[index]
                try db.execute(sql: "INSERT OR IGNORE INTO records (site, seq, type, time, body) VALUES (?, ?, ?, ?, ?)",
                               arguments: [site, Int64(record.seq), recordType(record.body), record.time, body])
                if db.changesCount == 0 {
                    duplicates += 1
                    continue
                }
                new += 1
                switch record.body {
                case .telemetry(_, _, _, let units, _):
                    for (unit, unitBody) in zip(units, received.unitTexts[index]) {
                        try db.execute(sql: """
                            INSERT INTO latest (site, unit, time, body) VALUES (?, ?, ?, ?)
                            ON CONFLICT (site, unit) DO UPDATE SET time = excluded.time, body = excluded.body
                            WHERE excluded.time >= latest.time
                            """, arguments: [site, unit.id, record.time, unitBody])
                    }
                case .energyBlock(let unit, let start, let length, let charged, let discharged, let covered):
                    try db.execute(sql: """
                        INSERT OR REPLACE INTO energy_blocks (site, unit, start_unix, length_s, charged_kwh, discharged_kwh, covered_s)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [site, unit, start, length, charged, discharged, covered])
                case .gridEnergyBlock(let start, let length, let imported, let exported, let covered):
                    try db.execute(sql: """
                        INSERT OR REPLACE INTO grid_energy_blocks (site, start_unix, length_s, imported_kwh, exported_kwh, covered_s)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """, arguments: [site, start, length, imported, exported, covered])
                default:
                    break
                }
            }
            for ack in batch.acks {
                try db.execute(sql: "INSERT INTO acks (site, id, accepted, reason, time) VALUES (?, ?, ?, ?, ?)",
                               arguments: [site, ack.id, ack.accepted ? 1 : 0, ack.reason, now])
            }
            try db.execute(sql: """
                INSERT INTO counters (name, value) VALUES ('duplicates', ?)
                ON CONFLICT (name) DO UPDATE SET value = value + excluded.value
                """, arguments: [duplicates])
            let highest = batch.records.map(\.seq).max() ?? 0
            guard handOut else { return (new, duplicates, highest, []) }
            let rows = try Row.fetchAll(db, sql: "SELECT id, body FROM commands WHERE site = ? AND delivered = 0", arguments: [site])
            let decoder = JSONDecoder()
            let commands = rows.compactMap { row -> DispatchCommand? in
                try? decoder.decode(DispatchCommand.self, from: Data((row["body"] as String).utf8))
            }
            try db.execute(sql: "UPDATE commands SET delivered = 1 WHERE site = ? AND delivered = 0", arguments: [site])
            return (new, duplicates, highest, commands)
        }
    }

    func queue(site: String, command: DispatchCommand, delivered: Bool, now: Double) async throws {
        let body = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        try await db.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO commands (id, site, body, delivered, queued_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [command.id, site, body, delivered ? 1 : 0, now])
        }
    }

    func unanswered(sites: [String], now: Double) async throws -> [ExactText: [DispatchCommand]] {
        try await db.read { db in
            var bySite: [ExactText: [DispatchCommand]] = [:]
            for site in Set(sites.map(ExactText.init)) {
                let list = try String.fetchAll(db, sql: """
                    SELECT body FROM commands c WHERE site = ? AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.site = c.site AND a.id = c.id)
                    ORDER BY queued_at, rowid
                    """, arguments: [site.text])
                    .compactMap { try? JSONDecoder().decode(DispatchCommand.self, from: Data($0.utf8)) }
                    .filter { $0.expiresUnix > now }
                if !list.isEmpty { bySite[site] = list }
            }
            return bySite
        }
    }

    func record(acks: [(site: String, ack: CommandAck)], now: Double) async throws {
        try await db.write { db in
            for (site, ack) in acks {
                try db.execute(sql: "INSERT INTO acks (site, id, accepted, reason, time) VALUES (?, ?, ?, ?, ?)",
                               arguments: [site, ack.id, ack.accepted ? 1 : 0, ack.reason, now])
            }
        }
    }

    func setStatuses(_ statuses: [(site: String, message: SiteStatusMessage)], now: Double) async throws {
        let rows = lastStatuses(statuses)
        guard !rows.isEmpty else { return }
        try await db.write { db in
            for (site, message) in rows {
                try db.execute(sql: """
                    INSERT INTO site_status (site, state, session, time) VALUES (?, ?, ?, ?)
                    ON CONFLICT (site) DO UPDATE SET state = excluded.state, session = excluded.session, time = excluded.time
                    """, arguments: [site, message.state, message.session, now])
            }
        }
    }

    func commandLatencies() async throws -> [Double] {
        try await db.read { db in
            try Double.fetchAll(db, sql: """
                SELECT MIN(a.time) - c.queued_at FROM commands c JOIN acks a ON a.site = c.site AND a.id = c.id
                WHERE c.queued_at IS NOT NULL GROUP BY c.site, c.id ORDER BY MIN(a.time) DESC LIMIT 1000
                """)
        }
    }

    func summaries(detail: Int) async throws -> [SiteSummary] {
        try await db.read { db in
            let decoder = JSONDecoder()
            return try Row.fetchAll(db, sql: "SELECT site, COUNT(*) AS n, MAX(seq) AS high, MAX(time) AS last FROM records GROUP BY site ORDER BY site")
                .enumerated().map { index, row in
                    let site: String = row["site"]
                    let detailed = index < detail
                    let units = try Row.fetchAll(db, sql: "SELECT unit, time, body FROM latest WHERE site = ? ORDER BY unit", arguments: [site])
                        .map { r in SiteSummary.UnitLatest(unit: r["unit"], time: r["time"],
                                     telemetry: try? decoder.decode(UnitTelemetry.self, from: Data((r["body"] as String).utf8))) }
                    let blocks = !detailed ? [] : try Row.fetchAll(db, sql: """
                        SELECT unit, start_unix, charged_kwh, discharged_kwh, covered_s, length_s FROM energy_blocks
                        WHERE site = ? ORDER BY start_unix DESC, unit LIMIT 20
                        """, arguments: [site])
                        .map { r in SiteSummary.Block(unit: r["unit"], start: r["start_unix"], charged: r["charged_kwh"],
                                     discharged: r["discharged_kwh"], covered: r["covered_s"], length: r["length_s"]) }
                    let acks = !detailed ? [] : try Row.fetchAll(db, sql: "SELECT id, accepted, reason FROM acks WHERE site = ? ORDER BY time DESC LIMIT 20",
                                                arguments: [site])
                        .map { r in SiteSummary.Ack(id: r["id"], accepted: (r["accepted"] as Int) == 1, reason: r["reason"]) }
                    let state = try String.fetchOne(db, sql: "SELECT state FROM site_status WHERE site = ?", arguments: [site])
                    let series = !detailed ? [] : try String.fetchAll(db, sql: """
                        SELECT body FROM records WHERE site = ? AND type = 'telemetry' AND time >= ? ORDER BY seq
                        """, arguments: [site, (row["last"] as Double) - 3600])
                    let events = !detailed ? [] : try String.fetchAll(db, sql: """
                        SELECT body FROM records WHERE site = ? AND type = 'frequency_event' ORDER BY seq DESC LIMIT 20
                        """, arguments: [site])
                    let controls = !detailed ? [] : try String.fetchAll(db, sql: """
                        SELECT body FROM records WHERE site = ? AND type = 'utility_control' ORDER BY seq DESC LIMIT 20
                        """, arguments: [site])
                    let schedule = !detailed ? [] : try String.fetchAll(db, sql: """
                        SELECT body FROM records WHERE site = ? AND type = 'schedule_block' ORDER BY seq DESC LIMIT ?
                        """, arguments: [site, SiteSummary.scheduleBlocksShown])
                    return SiteSummary(site: site, records: row["n"], highestSeq: row["high"], lastTime: row["last"], units: units,
                                       blocks: blocks, acks: acks, state: state, telemetry: series, frequencyEvents: events,
                                       utilityControls: controls, scheduleBlocks: schedule)
                }
        }
    }

    func seqs(site: String) async throws -> [Int64] {
        try await db.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM records WHERE site = ? ORDER BY seq", arguments: [site]) }
    }

    func renew() {}

    func duplicates() async throws -> Int {
        try await db.read { db in try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = 'duplicates'") ?? 0 }
    }
}
