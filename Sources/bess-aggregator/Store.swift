import Foundation
import GRDB
import Uplink

/// The aggregator's SQLite store (GRDB): records deduplicated by (site, seq), the latest telemetry per
/// unit, energy blocks for settlement, queued commands and the acknowledgements bessd sent back.
final class Store: Sendable {
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
                """)
        }
    }

    /// Stores a batch; returns (records new, duplicates, highest seq in the batch, commands to hand out).
    func store(site: String, batch: RecordBatch, now: Double) throws -> (Int, Int, UInt64, [DispatchCommand]) {
        let encoder = JSONEncoder()
        return try db.write { db in
            var new = 0
            var duplicates = 0
            for record in batch.records {
                let body = String(decoding: try encoder.encode(record), as: UTF8.self)
                try db.execute(sql: "INSERT OR IGNORE INTO records (site, seq, type, time, body) VALUES (?, ?, ?, ?, ?)",
                               arguments: [site, Int64(record.seq), Self.type(record.body), record.time, body])
                if db.changesCount == 0 {
                    duplicates += 1
                    continue
                }
                new += 1
                switch record.body {
                case .telemetry(_, _, _, let units, _):
                    for unit in units {
                        let unitBody = String(decoding: try encoder.encode(unit), as: UTF8.self)
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
            let rows = try Row.fetchAll(db, sql: "SELECT id, body FROM commands WHERE site = ? AND delivered = 0", arguments: [site])
            let decoder = JSONDecoder()
            let commands = rows.compactMap { row -> DispatchCommand? in
                try? decoder.decode(DispatchCommand.self, from: Data((row["body"] as String).utf8))
            }
            try db.execute(sql: "UPDATE commands SET delivered = 1 WHERE site = ? AND delivered = 0", arguments: [site])
            let highest = batch.records.map(\.seq).max() ?? 0
            return (new, duplicates, highest, commands)
        }
    }

    func queue(site: String, command: DispatchCommand) throws {
        let body = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        try db.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO commands (id, site, body, delivered) VALUES (?, ?, ?, 0)",
                           arguments: [command.id, site, body])
        }
    }

    struct SiteSummary {
        var site: String
        var records: Int
        var highestSeq: Int64
        var lastTime: Double
        var units: [(unit: String, time: Double, telemetry: UnitTelemetry?)]
        var blocks: [(unit: String, start: Int64, charged: Double, discharged: Double, covered: Double, length: Int64)]
        var acks: [(id: String, accepted: Bool, reason: String?)]
    }

    func summaries() throws -> [SiteSummary] {
        try db.read { db in
            let decoder = JSONDecoder()
            return try Row.fetchAll(db, sql: "SELECT site, COUNT(*) AS n, MAX(seq) AS high, MAX(time) AS last FROM records GROUP BY site ORDER BY site")
                .map { row in
                    let site: String = row["site"]
                    let units = try Row.fetchAll(db, sql: "SELECT unit, time, body FROM latest WHERE site = ? ORDER BY unit", arguments: [site])
                        .map { r in (unit: r["unit"] as String, time: r["time"] as Double,
                                     telemetry: try? decoder.decode(UnitTelemetry.self, from: Data((r["body"] as String).utf8))) }
                    let blocks = try Row.fetchAll(db, sql: """
                        SELECT unit, start_unix, charged_kwh, discharged_kwh, covered_s, length_s FROM energy_blocks
                        WHERE site = ? ORDER BY start_unix DESC, unit LIMIT 20
                        """, arguments: [site])
                        .map { r in (unit: r["unit"] as String, start: r["start_unix"] as Int64, charged: r["charged_kwh"] as Double,
                                     discharged: r["discharged_kwh"] as Double, covered: r["covered_s"] as Double,
                                     length: r["length_s"] as Int64) }
                    let acks = try Row.fetchAll(db, sql: "SELECT id, accepted, reason FROM acks WHERE site = ? ORDER BY time DESC LIMIT 20",
                                                arguments: [site])
                        .map { r in (id: r["id"] as String, accepted: (r["accepted"] as Int) == 1, reason: r["reason"] as String?) }
                    return SiteSummary(site: site, records: row["n"], highestSeq: row["high"], lastTime: row["last"], units: units,
                                       blocks: blocks, acks: acks)
                }
        }
    }

    func seqs(site: String) throws -> [Int64] {
        try db.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM records WHERE site = ? ORDER BY seq", arguments: [site]) }
    }

    func duplicates() throws -> Int {
        try db.read { db in try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = 'duplicates'") ?? 0 }
    }

    static func type(_ body: RecordBody) -> String {
        switch body {
        case .telemetry: "telemetry"
        case .availability: "availability"
        case .energyBlock: "energy_block"
        case .gridEnergyBlock: "grid_energy_block"
        case .event: "event"
        case .spoolDrop: "spool_drop"
        }
    }
}
