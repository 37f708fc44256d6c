public import BessBase
public import ControlCore
import Foundation

/// A block schedule as an operator's file and the aggregator's `schedule` command carry it (one
/// payload for both; docs/optimiser.md, docs/uplink.md):
/// `{"id": "day-2026-11-30", "revision": 1, "blocks": [{"start": "2026-11-30T00:00:00+05:30", "energy_kwh": -12.5}]}`.
/// `start` is RFC 3339 with its offset and on a block boundary; `energy_kwh` is the block's energy at
/// the connection point (with a meter; the units' sum without one), + = export.
public struct ScheduleDocument: Codable, Sendable, Equatable {
    public struct Block: Codable, Sendable, Equatable {
        public var start: String
        public var energyKWh: Double
        public init(start: String, energyKWh: Double) {
            self.start = start
            self.energyKWh = energyKWh
        }
        enum CodingKeys: String, CodingKey { case start, energyKWh = "energy_kwh" }
    }

    public var id: String
    public var revision: Int
    public var blocks: [Block]

    public init(id: String, revision: Int, blocks: [Block]) {
        self.id = id
        self.revision = revision
        self.blocks = blocks
    }

    /// The most blocks a schedule holds: a week of 15-minute blocks (and its JSON inside the control
    /// socket's and the command topic's 64 KiB).
    public static let maximumBlocks = 672
    /// The largest energy a block may name, kWh: far beyond any site, small enough to stay exact.
    public static let maximumKWh = 1e6
    /// The furthest ahead a schedule may start: a week.
    public static let maximumLeadSeconds: Int64 = 7 * 86_400

    /// The document in `text` (a file, the control socket's `schedule`), or `SCHEDULE_INVALID` saying
    /// where it is not one. Nothing of the text is quoted unescaped.
    public static func decode(_ bytes: [UInt8]) throws(ScheduleError) -> ScheduleDocument {
        do {
            return try JSONDecoder().decode(ScheduleDocument.self, from: Data(bytes))
        } catch let DecodingError.keyNotFound(key, context) {
            throw invalid("\(path(context.codingPath + [key])) is missing")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw invalid("\(path(context.codingPath)) has the wrong type")
        } catch {
            throw invalid("not a JSON object {\"id\", \"revision\", \"blocks\": [{\"start\", \"energy_kwh\"}]}")
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        var text = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        if text.hasPrefix(".") { text.removeFirst() }
        return text.isEmpty ? "the document" : text
    }

    static func invalid(_ message: String) -> ScheduleError { ScheduleError(.invalid, message: message) }

    /// The schedule this document states, from `source`, in blocks of `lengthSeconds`; refused
    /// `SCHEDULE_INVALID` when its id breaks `IdentifierRule.commandIDText`, its revision is negative,
    /// it has no block or more than `maximumBlocks`, a start is not RFC 3339, not on a block boundary,
    /// not after the one before or more than a week after `nowUnix`, or an energy is not a finite
    /// number within ±`maximumKWh`.
    public func schedule(source: ScheduleSource, lengthSeconds: Int64, nowUnix: Int64) throws(ScheduleError) -> Schedule {
        guard IdentifierRule.acceptsCommandID(id) else {
            throw Self.invalid("id must be \(IdentifierRule.commandIDText) (got \(TextQuoting.quoted(id, limit: 128)))")
        }
        guard revision >= 0, revision <= Int(Int32.max) else { throw Self.invalid("revision must be a whole number from 0 to 2147483647") }
        guard !blocks.isEmpty else { throw Self.invalid("it has no block") }
        guard blocks.count <= Self.maximumBlocks else {
            throw Self.invalid("\(blocks.count) blocks, more than \(Self.maximumBlocks)")
        }
        var out: [ScheduleBlock] = []
        out.reserveCapacity(blocks.count)
        for (index, block) in blocks.enumerated() {
            guard let start = Self.unixSeconds(rfc3339: block.start) else {
                throw Self.invalid("blocks[\(index)].start \(TextQuoting.quoted(block.start, limit: 48)) is not an RFC 3339 time with its offset")
            }
            guard start % lengthSeconds == 0 else {
                throw Self.invalid("blocks[\(index)].start \(Self.rfc3339(start)) is not on a \(lengthSeconds) s block boundary")
            }
            if let last = out.last, start <= last.startUnixSeconds {
                throw Self.invalid("blocks[\(index)].start \(Self.rfc3339(start)) is not after the block before it")
            }
            guard start <= nowUnix + Self.maximumLeadSeconds else {
                throw Self.invalid("blocks[\(index)].start \(Self.rfc3339(start)) is more than a week ahead")
            }
            guard block.energyKWh.isFinite, abs(block.energyKWh) <= Self.maximumKWh else {
                throw Self.invalid("blocks[\(index)].energy_kwh must be a finite number within ±\(Int(Self.maximumKWh)) kWh")
            }
            out.append(ScheduleBlock(startUnixSeconds: start, targetKWh: block.energyKWh))
        }
        guard let last = out.last, last.startUnixSeconds + lengthSeconds > nowUnix else {
            throw Self.invalid("every block has ended (the last at \(Self.rfc3339((out.last?.startUnixSeconds ?? 0) + lengthSeconds)))")
        }
        return Schedule(id: id, revision: revision, source: source, lengthSeconds: lengthSeconds, blocks: out)
    }

    /// The document of `schedule`, starts in UTC.
    public init(_ schedule: Schedule) {
        self.init(id: schedule.id, revision: schedule.revision,
                  blocks: schedule.blocks.map { Block(start: Self.rfc3339($0.startUnixSeconds), energyKWh: $0.targetKWh) })
    }

    // MARK: RFC 3339

    /// Unix seconds of an RFC 3339 time (`2026-11-30T00:00:00+05:30`, `…Z`, with or without a
    /// fraction: a fraction that is not zero is not a whole second, and is refused); nil otherwise.
    public static func unixSeconds(rfc3339 text: String) -> Int64? { RFC3339.unixSeconds(text, fraction: .zeroOnly) }

    /// `unix` as RFC 3339 in UTC: `2026-11-29T18:30:00Z`.
    public static func rfc3339(_ unix: Int64) -> String { RFC3339.text(unix) }
}

/// A schedule refused, held back or warned about: `CODE: message`.
public typealias ScheduleError = CodedError<ScheduleErrorCode>

/// The stable codes of the block schedule (docs/optimiser.md): a struct over a private enum,
/// matched by value.
public struct ScheduleErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable { case invalid, held, stale, infeasible, disabled, stateUnreadable, stateUnwritable }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SCHEDULE_INVALID`: not a schedule bessd can follow (its id, revision, blocks, starts, energies).
    public static let invalid = Self(.invalid)
    /// `SCHEDULE_HELD`: a schedule of a higher source (operator > aggregator > optimiser) still has
    /// blocks to run; a lower source may not replace it.
    public static let held = Self(.held)
    /// `SCHEDULE_STALE`: an older revision of the schedule in force.
    public static let stale = Self(.stale)
    /// `SCHEDULE_INFEASIBLE`: a warning, the schedule taken: the first block that cannot be met, by
    /// its start and by how much.
    public static let infeasible = Self(.infeasible)
    /// `SCHEDULE_DISABLED`: the configuration has no `schedule:` section.
    public static let disabled = Self(.disabled)
    /// `SCHEDULE_STATE_UNREADABLE`: the schedule file could not be read at start (set aside; no
    /// schedule, the fallback in force).
    public static let stateUnreadable = Self(.stateUnreadable)
    /// `SCHEDULE_STATE_UNWRITABLE`: the schedule could not be written: it runs, but would not survive
    /// a restart.
    public static let stateUnwritable = Self(.stateUnwritable)

    public var description: String {
        switch value {
        case .invalid: "SCHEDULE_INVALID"
        case .held: "SCHEDULE_HELD"
        case .stale: "SCHEDULE_STALE"
        case .infeasible: "SCHEDULE_INFEASIBLE"
        case .disabled: "SCHEDULE_DISABLED"
        case .stateUnreadable: "SCHEDULE_STATE_UNREADABLE"
        case .stateUnwritable: "SCHEDULE_STATE_UNWRITABLE"
        }
    }
}
