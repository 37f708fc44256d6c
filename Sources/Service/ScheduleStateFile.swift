import BessBase
import BessSystem
import ControlCore
import Foundation
import Uplink

/// The schedule in force, kept in `state_directory/schedule.json` so that a restart of any kind
/// (SIGKILL, a power cut, an aggregator away meanwhile) follows it on: rewritten whole through
/// `StateFile` (temporary file, fsync, rename, fsync of the directory) before a load, a command or
/// the optimiser is answered, and read once at start.
/// - no file: no schedule, the fallback in force;
/// - a file that cannot be read or is not a schedule file: `SCHEDULE_STATE_UNREADABLE` in the journal,
///   no schedule, the fallback in force; the damaged file is moved aside as
///   `schedule.json.damaged-UNIXTIME` (the next schedule taken writes a new one).
///
/// Format (version 1), keys sorted:
/// `{"format":"bessd-schedule","schedule":{"blocks":[{"start_unix":1796000400,"target_kwh":-12.5}],`
/// `"id":"day-1","length_s":900,"revision":2,"source":"aggregator"},"taken":[{"id":"day-1","revision":1}],"version":1}`;
/// `schedule` is absent when none is in force; `taken` lists the ids and revisions last acted on.
struct ScheduleStateFile: Sendable {
    let file: StateFile
    var path: String { file.path }

    /// The most bytes the file may hold: the largest schedule many times over.
    static let maximumBytes = 1 << 20

    init(stateDirectory: String) {
        file = StateFile(stateDirectory: stateDirectory, name: "schedule.json", maximumBytes: Self.maximumBytes)
    }

    /// What the file holds.
    struct Contents: Equatable {
        var schedule: Schedule?
        var taken: [ScheduleKey]
        /// The closed blocks kept for `bessctl schedule` (a restart does not forget them).
        var reports: [ScheduleBlockReport] = []
    }

    /// The file's contents; nil when there is none. A file that cannot be read is moved aside and
    /// thrown as `SCHEDULE_STATE_UNREADABLE`.
    func load() throws(ScheduleError) -> Contents? {
        let bytes: [UInt8]
        do throws(SystemCallError) {
            guard let read = try file.read() else { return nil }
            bytes = read
        } catch {
            throw ScheduleError(.stateUnreadable, message: "cannot read \(path): \(SystemError.text(error.errno))", systemError: error.errno)
        }
        do {
            guard bytes.count <= file.maximumBytes else { throw Refusal(reason: "more than \(file.maximumBytes) bytes") }
            let stored = try JSONDecoder().decode(Stored.self, from: Data(bytes))
            guard stored.format == "bessd-schedule", stored.version == 1 else { throw Refusal(reason: "format or version is not bessd-schedule 1") }
            return Contents(schedule: try stored.schedule?.schedule(), taken: stored.taken,
                            reports: try (stored.reports ?? []).map { try $0.report() })
        } catch {
            let kept: String
            do throws(SystemCallError) {
                kept = "moved aside as \(try file.quarantine(.movedAside))"
            } catch {
                kept = "not moved aside (\(error))"
            }
            throw ScheduleError(.stateUnreadable, message: "\(path) is not a bessd schedule file (version 1): \(Self.why(error)); \(kept)")
        }
    }

    /// Writes `contents` whole (`StateFile.write`: fsynced, atomic).
    func save(_ contents: Contents) throws(ScheduleError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let stored = Stored(schedule: contents.schedule.map(StoredSchedule.init), taken: contents.taken,
                            reports: contents.reports.map(StoredReport.init))
        guard let data = try? encoder.encode(stored) else {
            throw ScheduleError(.stateUnwritable, message: "cannot encode the schedule (an energy that is not a number)")
        }
        do throws(SystemCallError) {
            try file.write(Array(data))
        } catch {
            throw ScheduleError(.stateUnwritable, message: StateFile.writeFailure(error, saving: "the schedule to \(path)"),
                                systemError: error.errno)
        }
    }

    struct Refusal: Error { var reason: String }

    static func why(_ error: any Error) -> String {
        switch error {
        case let refusal as Refusal: refusal.reason
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case DecodingError.dataCorrupted: "not JSON"
        default: "\(error)"
        }
    }

    struct Stored: Codable {
        var format = "bessd-schedule"
        var version = 1
        var schedule: StoredSchedule?
        var taken: [ScheduleKey]
        /// Absent in files written before closed blocks were kept.
        var reports: [StoredReport]?
    }

    /// A closed block as the file keeps it.
    struct StoredReport: Codable {
        var startUnix: Int64
        var lengthS: Int64
        var targetKWh, deliveredKWh, droopKWh, ratedKWh: Double
        var boundBy: String
        var revision: Int
        enum CodingKeys: String, CodingKey {
            case revision
            case startUnix = "start_unix", lengthS = "length_s", targetKWh = "target_kwh", deliveredKWh = "delivered_kwh"
            case droopKWh = "droop_kwh", ratedKWh = "rated_kwh", boundBy = "bound_by"
        }

        init(_ r: ScheduleBlockReport) {
            startUnix = r.startUnixSeconds
            lengthS = r.lengthSeconds
            targetKWh = r.targetKWh
            deliveredKWh = r.deliveredKWh
            droopKWh = r.droopKWh
            ratedKWh = r.ratedKWh
            boundBy = "\(r.boundBy)"
            revision = r.revision
        }

        func report() throws -> ScheduleBlockReport {
            guard let binding = ScheduleBinding.allCases.first(where: { "\($0)" == boundBy }),
                  [targetKWh, deliveredKWh, droopKWh, ratedKWh].allSatisfy(\.isFinite), lengthS > 0 else {
                throw Refusal(reason: "a closed block's bound_by or energy is not one bessd writes")
            }
            return ScheduleBlockReport(startUnixSeconds: startUnix, lengthSeconds: lengthS, targetKWh: targetKWh, deliveredKWh: deliveredKWh,
                                       droopKWh: droopKWh, ratedKWh: ratedKWh, boundBy: binding, revision: revision)
        }
    }

    struct StoredSchedule: Codable {
        struct Block: Codable {
            var startUnix: Int64
            var targetKWh: Double
            enum CodingKeys: String, CodingKey { case startUnix = "start_unix", targetKWh = "target_kwh" }
        }
        var id: String
        var revision: Int
        var source: String
        var lengthS: Int64
        var blocks: [Block]
        enum CodingKeys: String, CodingKey { case id, revision, source, blocks, lengthS = "length_s" }

        init(_ s: Schedule) {
            id = s.id
            revision = s.revision
            source = ScheduleSourceName.name(s.source)
            lengthS = s.lengthSeconds
            blocks = s.blocks.map { Block(startUnix: $0.startUnixSeconds, targetKWh: $0.targetKWh) }
        }

        func schedule() throws -> Schedule {
            guard let source = ScheduleSourceName.source(source) else { throw Refusal(reason: "source is not operator, aggregator or optimiser") }
            guard lengthS > 0, blocks.allSatisfy({ $0.startUnix % lengthS == 0 && $0.targetKWh.isFinite }) else {
                throw Refusal(reason: "a block is off its boundary or its target is not a number")
            }
            return Schedule(id: id, revision: revision, source: source, lengthSeconds: lengthS,
                            blocks: blocks.map { ScheduleBlock(startUnixSeconds: $0.startUnix, targetKWh: $0.targetKWh) })
        }
    }
}

/// A schedule's id and revision: what is acted on once.
struct ScheduleKey: Codable, Hashable, Sendable {
    var id: String
    var revision: Int
}

/// A source's name as bessctl, the journal and the file write it.
enum ScheduleSourceName {
    static func name(_ source: ScheduleSource) -> String {
        switch source {
        case .operator: "operator"
        case .aggregator: "aggregator"
        case .optimiser: "optimiser"
        }
    }

    static func source(_ name: String) -> ScheduleSource? {
        [ScheduleSource.operator, .aggregator, .optimiser].first { Self.name($0) == name }
    }
}
