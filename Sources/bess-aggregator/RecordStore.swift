import Foundation
import Uplink
import UplinkIngest

/// What one stored batch came to.
struct StoreResult: Sendable {
    var new: Int
    var duplicates: Int
    /// The highest seq in the batch (all of it is held now).
    var highest: UInt64
    /// Commands handed out with the answer (HTTP); empty over MQTT, where commands are pushed.
    var commands: [DispatchCommand]
}

/// One site at a glance, for the status page and /metrics.
struct SiteSummary: Sendable {
    var site: String
    var records: Int
    var highestSeq: Int64
    var lastTime: Double
    var units: [UnitLatest]
    var blocks: [Block]
    var acks: [Ack]
    /// `online` / `offline` from the site's birth message and Last Will (MQTT), nil over HTTP.
    var state: String?
    /// Telemetry records of the last hour, oldest first, as stored (JSON).
    var telemetry: [String]
    /// The last 20 frequency-event records, newest first, as stored (JSON).
    var frequencyEvents: [String] = []
    /// The last 20 utility-control records (IEEE 2030.5 controls taken, refused, ended), newest first, as stored (JSON).
    var utilityControls: [String] = []
    /// The last `scheduleBlocksShown` schedule-block records, newest first, as stored (JSON).
    var scheduleBlocks: [String] = []
    /// Schedule blocks drawn per site: a day of 15-minute blocks.
    static let scheduleBlocksShown = 96

    struct UnitLatest: Sendable {
        var unit: String
        var time: Double
        var telemetry: UnitTelemetry?
    }
    struct Block: Sendable {
        var unit: String
        var start: Int64
        var charged: Double
        var discharged: Double
        var covered: Double
        var length: Int64
    }
    struct Ack: Sendable {
        var id: String
        var accepted: Bool
        var reason: String?
    }
}

/// Where the aggregator keeps what sites send: SQLite for one instance, PostgreSQL for several.
/// Storing is idempotent on (site, seq) in the database itself, so a record delivered twice, or to
/// two instances, is stored once.
protocol RecordStore: Sendable {
    /// Stores batches in one transaction: each record's text as it came (`ReceivedBatch`), and the
    /// latest telemetry per unit as its unit's text.
    func store(_ batches: [(site: String, received: ReceivedBatch)], now: Double, handOutCommands: Bool) async throws -> [StoreResult]
    func queue(site: String, command: DispatchCommand, delivered: Bool, now: Double) async throws
    /// Commands of these sites not yet answered and not expired (pushed again when a site comes
    /// online), by site (compared byte for byte, as the database does) and in the order they were
    /// queued, so that a site gets an older setpoint before a newer one; in one query: when a broker
    /// restarts, thousands of sites come online in one store window.
    func unanswered(sites: [String], now: Double) async throws -> [ExactText: [DispatchCommand]]
    func record(acks: [(site: String, ack: CommandAck)], now: Double) async throws
    /// Each site's status as its last message in `statuses` says (in arrival order), in one statement.
    func setStatuses(_ statuses: [(site: String, message: SiteStatusMessage)], now: Double) async throws
    /// Queued → first answer, seconds, most recent first.
    func commandLatencies() async throws -> [Double]
    /// Every site, with its latest unit telemetry; the first `detail` sites (by name) also with their
    /// last hour of telemetry, energy blocks and answers (the status page), the rest without.
    func summaries(detail: Int) async throws -> [SiteSummary]
    func seqs(site: String) async throws -> [Int64]
    func duplicates() async throws -> Int
    /// After a failure: make the database connections anew (PostgreSQL); nothing for SQLite.
    func renew()
}

/// The `type` of a record, as stored.
func recordType(_ body: RecordBody) -> String {
    switch body {
    case .telemetry: "telemetry"
    case .availability: "availability"
    case .energyBlock: "energy_block"
    case .gridEnergyBlock: "grid_energy_block"
    case .event: "event"
    case .spoolDrop: "spool_drop"
    case .frequencyEvent: "frequency_event"
    case .utilityControl: "utility_control"
    case .scheduleBlock: "schedule_block"
    }
}

/// Why a decoded batch cannot be stored, or nil. A seq beyond BIGINT and a NUL in a text the store
/// keeps in a column (PostgreSQL's text cannot hold one) would fail every store attempt, and a
/// consumer retries a failed store with its PUBACKs held: such a batch is refused as malformed
/// instead, so it never wedges an instance (nor, redelivered, the next).
func unstorable(_ batch: RecordBatch) -> String? {
    func hasNUL(_ text: String) -> Bool { text.utf8.contains(0) }
    if hasNUL(batch.site) { return "the site holds NUL" }
    for record in batch.records {
        if record.seq > UInt64(Int64.max) { return "seq \(record.seq) beyond 2^63 − 1" }
        switch record.body {
        case .telemetry(_, _, _, let units, _):
            if units.contains(where: { hasNUL($0.id) }) { return "a unit id holds NUL" }
        case .energyBlock(let unit, _, _, _, _, _):
            if hasNUL(unit) { return "an energy block's unit holds NUL" }
        default:
            break
        }
    }
    if batch.acks.contains(where: { hasNUL($0.id) || hasNUL($0.reason ?? "") }) { return "an answer holds NUL" }
    return nil
}

/// The last status message of each site, in site order (a fixed order, so that instances storing
/// overlapping sets lock the rows in one order).
/// Sites are told apart byte for byte: by Swift's `==`, "SITE-\u{212A}1" (a Kelvin sign) is the site
/// "SITE-K1", and a gateway allowed that topic would overwrite the other's status.
func lastStatuses(_ statuses: [(site: String, message: SiteStatusMessage)]) -> [(site: String, message: SiteStatusMessage)] {
    var last: [ExactText: SiteStatusMessage] = [:]
    for (site, message) in statuses { last[ExactText(site)] = message }
    return last.keys.sorted { $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) }.map { ($0.text, last[$0]!) }
}

/// A string compared and hashed byte for byte, as PostgreSQL and SQLite compare text: Swift's `==`
/// takes two canonically equivalent spellings (é as one scalar or as e and an accent) for one string.
struct ExactText: Hashable, Sendable {
    let text: String
    init(_ text: String) { self.text = text }
    static func == (a: Self, b: Self) -> Bool { a.text.utf8.elementsEqual(b.text.utf8) }
    func hash(into hasher: inout Hasher) {
        for byte in text.utf8 { hasher.combine(byte) }
        hasher.combine(0xFF as UInt8)
    }
}
