public import BessBase
import BessSystem
public import Config
public import ControlCore
import Cycle
import Foundation
import Logging
public import Uplink

/// What `ScheduleStore.offer` answers: taken or not, the first block that cannot be met (the
/// schedule is taken all the same), and why not, coded.
public struct ScheduleAnswer: Sendable, Equatable {
    /// True when the schedule is in force (or was already: `repeated`).
    public var accepted: Bool
    /// The first block that cannot be met, and by how much (`SCHEDULE_INFEASIBLE`).
    public var shortfall: ScheduleShortfall?
    /// Why it was not taken: `SCHEDULE_INVALID`, `SCHEDULE_HELD`, `SCHEDULE_STALE`, `SCHEDULE_DISABLED`.
    public var error: ScheduleError?
    /// True when this id and revision had been taken before: not acted on again.
    public var repeated = false
    /// `SCHEDULE_STATE_UNWRITABLE` when the schedule runs but could not be written.
    public var stateProblem: ScheduleError?

    /// `SCHEDULE_INFEASIBLE: …`, naming the block by its start (RFC 3339) and the kWh; nil when every block can be met.
    public var warning: String? { shortfall.map { "\(ScheduleStore.infeasible($0))" } }
}

/// The block schedule in force: one at a time, from the operator (`bessctl schedule load`), the
/// aggregator (command `schedule`) or the optimiser, ranked in that order: a lower source may not
/// replace a higher one's schedule that still has blocks to run (`SCHEDULE_HELD`; `bessctl schedule
/// clear` ends any). Each id and revision is acted on once; a first revision is taken as it comes
/// (blocks already begun excepted), a later one through the revision gate (`Schedule.merge`). On
/// arrival each is checked against the site (`ScheduleFeasibility`): a block that cannot be met is
/// named (`SCHEDULE_INFEASIBLE`) and the schedule taken all the same. Kept on disk before anyone is
/// answered (`ScheduleStateFile`), and handed to the cycle as a window of its next blocks at start,
/// at every change and at every block boundary (`SharedState.publishSchedule`).
///
/// Called from the control socket's thread, the uplink's sender, the optimiser's thread and the
/// service loop: everything behind one lock, the cycle never waits on it.
public final class ScheduleStore: Sendable {
    let settings: ScheduleConfiguration
    let file: ScheduleStateFile
    let logger: Logger
    /// Where the window goes (`SharedState.publishSchedule`).
    private let publish: @Sendable (ScheduleWindow?) -> Void
    /// The site as the check on arrival sees it at a Unix time; nil when it cannot be judged yet.
    private let site: @Sendable (Int64) -> ScheduleFeasibilityInput?
    /// The gateway's local offset from UTC at a Unix time, seconds (the gate counts blocks in the local day).
    private let utcOffset: @Sendable (Int64) -> Int
    private let state: PILock<State>

    struct State {
        var current: Schedule?
        var generation: UInt64 = 0
        /// Ids and revisions acted on, oldest first (bounded).
        var taken: [ScheduleKey] = []
        /// Closed blocks, oldest first (bounded).
        var reports: [ScheduleBlockReport] = []
        /// The block the window was last published in.
        var publishedBlock: Int64?
        /// What was wrong with the file at start, or at the last write.
        var stateProblem: ScheduleError?
    }

    /// Ids and revisions remembered as acted on.
    static let maximumTaken = 64
    /// Closed blocks kept for `bessctl schedule` (two days of 15-minute blocks).
    static let maximumReports = 192

    init(settings: ScheduleConfiguration, stateDirectory: String, logger: Logger,
         publish: @escaping @Sendable (ScheduleWindow?) -> Void,
         site: @escaping @Sendable (Int64) -> ScheduleFeasibilityInput?,
         utcOffset: @escaping @Sendable (Int64) -> Int = { ScheduleStore.localOffset($0) }) {
        self.settings = settings
        file = ScheduleStateFile(stateDirectory: stateDirectory)
        self.logger = logger
        self.publish = publish
        self.site = site
        self.utcOffset = utcOffset
        state = PILock(State())
    }

    /// The local time zone's offset at `unix`.
    static func localOffset(_ unix: Int64) -> Int {
        TimeZone.current.secondsFromGMT(for: Date(timeIntervalSince1970: Double(unix)))
    }

    // MARK: start

    /// Reads the file (once, at start) and publishes what stands. An unreadable file: no schedule,
    /// `SCHEDULE_STATE_UNREADABLE` in the journal, the fallback in force.
    func restore(now: Int64) {
        var loaded: ScheduleStateFile.Contents?
        var problem: ScheduleError?
        do throws(ScheduleError) {
            loaded = try file.load()
        } catch {
            problem = error
        }
        if let schedule = loaded?.schedule, schedule.lengthSeconds != settings.blockSeconds {
            warn(ScheduleError(.invalid, message: "the schedule kept in \(file.path) (\(Self.describe(schedule))) has "
                               + "\(schedule.lengthSeconds) s blocks, schedule.block_s is now \(settings.blockSeconds): not followed"))
            loaded?.schedule = nil
        }
        if let problem { warn(problem, suffix: "; no schedule, the fallback (\(Self.name(settings.fallback))) in force") }
        state.withLock { s in
            s.current = loaded?.schedule
            s.taken = loaded?.taken ?? []
            s.reports = loaded?.reports ?? []
            s.stateProblem = problem
            s.generation &+= 1
            republish(&s, now: now)
        }
        if let schedule = loaded?.schedule {
            logger.notice("schedule \(Self.describe(schedule)) restored from \(file.path)",
                          metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_SCHEDULE_ID": "\(schedule.id)"])
        }
    }

    // MARK: taking a schedule

    /// Takes `schedule` arriving at `now` (Unix seconds), or says why not: the optimiser's entry, and
    /// the path of the operator's load and the aggregator's command.
    public func offer(_ schedule: Schedule, now: Int64) -> ScheduleAnswer {
        state.withLock { s -> ScheduleAnswer in
            let key = ScheduleKey(id: schedule.id, revision: schedule.revision)
            if let current = s.current, current.id == schedule.id, schedule.revision < current.revision {
                return refused(ScheduleError(.stale, message: "revision \(schedule.revision) of \(quoted(schedule.id)) is older than "
                                             + "revision \(current.revision) in force"))
            }
            if s.taken.contains(key) || s.current.map({ $0.id == key.id && $0.revision == key.revision }) == true {
                return ScheduleAnswer(accepted: true, repeated: true)
            }
            if let current = s.current, current.source > schedule.source, Self.hasBlocksToRun(current, now: now) {
                return refused(ScheduleError(.held, message: "the \(Self.name(current.source))'s schedule \(Self.describe(current)) "
                                             + "runs until \(ScheduleDocument.rfc3339(Self.end(current))); the \(Self.name(schedule.source)) "
                                             + "may not replace it (bessctl schedule clear ends it)"))
            }
            let offset = utcOffset(now)
            let merged = Schedule.merge(current: s.current, incoming: schedule, arrivalUnix: now, gate: settings.gate(utcOffsetSeconds: offset))
            guard Self.hasBlocksToRun(merged, now: now) else {
                return refused(ScheduleError(.invalid, message: "every block of \(Self.describe(schedule)) has begun or ended"))
            }
            let shortfall = site(now).flatMap { ScheduleFeasibility.check(merged, from: now, $0) }
            s.current = merged
            s.generation &+= 1
            s.taken.removeAll { $0 == key }
            s.taken.append(key)
            if s.taken.count > Self.maximumTaken { s.taken.removeFirst(s.taken.count - Self.maximumTaken) }
            let unwritable = save(&s)
            republish(&s, now: now)
            let first = merged.blocks.first { $0.startUnixSeconds + merged.lengthSeconds > now }
            let line = "schedule \(Self.describe(merged)) taken from the \(Self.name(merged.source)): \(merged.blocks.count) blocks"
                + (first.map { " from \(ScheduleDocument.rfc3339($0.startUnixSeconds))" } ?? "")
                + " to \(ScheduleDocument.rfc3339(Self.end(merged)))"
            logger.notice("\(line)",
                          metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "SCHEDULE_TAKEN", "BESS_SCHEDULE_ID": "\(merged.id)"])
            if let shortfall { warn(Self.infeasible(shortfall), suffix: " (\(Self.describe(merged)) taken; that block runs as far as it can)") }
            return ScheduleAnswer(accepted: true, shortfall: shortfall, stateProblem: unwritable)
        }
    }

    /// Takes a schedule document (a file, the aggregator's command) from `source`.
    public func offer(_ document: ScheduleDocument, source: ScheduleSource, now: Int64) -> ScheduleAnswer {
        do throws(ScheduleError) {
            return offer(try document.schedule(source: source, lengthSeconds: settings.blockSeconds, nowUnix: now), now: now)
        } catch {
            return refused(error)
        }
    }

    /// Ends the schedule in force, whoever set it: the fallback runs. Returns what was ended (nil:
    /// none) and the file's problem, if it could not be written.
    func clear(now: Int64) -> (ended: Schedule?, stateProblem: ScheduleError?) {
        state.withLock { s in
            let ended = s.current
            s.current = nil
            s.generation &+= 1
            let problem = save(&s)
            republish(&s, now: now)
            return (ended, problem)
        }
    }

    // MARK: each service round

    /// The closed blocks `reports` kept (the latest `maximumReports`), and the window published again
    /// when a block boundary was crossed. Returns them, for the journal and the uplink.
    func tick(now: Int64, reports: [ScheduleBlockReport]) {
        state.withLock { s in
            s.reports += reports
            if s.reports.count > Self.maximumReports { s.reports.removeFirst(s.reports.count - Self.maximumReports) }
            // Kept on disk as they close: a restart does not forget what the blocks delivered.
            if !reports.isEmpty { _ = save(&s) }
            if s.publishedBlock != Self.blockStart(now, settings.blockSeconds) { republish(&s, now: now) }
        }
    }

    /// The schedule in force, the closed blocks kept, and what was wrong with the file.
    var snapshot: (current: Schedule?, reports: [ScheduleBlockReport], stateProblem: ScheduleError?) {
        state.withLock { ($0.current, $0.reports, $0.stateProblem) }
    }

    // MARK: helpers (under the lock)

    private func save(_ s: inout State) -> ScheduleError? {
        do throws(ScheduleError) {
            try file.save(ScheduleStateFile.Contents(schedule: s.current, taken: s.taken, reports: s.reports))
            if s.stateProblem?.code == .stateUnwritable { s.stateProblem = nil }
            return nil
        } catch {
            s.stateProblem = error
            warn(error, suffix: "; the schedule runs while bessd runs but would not survive a restart")
            return error
        }
    }

    /// Hands the cycle the next blocks from the one `now` is in.
    private func republish(_ s: inout State, now: Int64) {
        s.publishedBlock = Self.blockStart(now, settings.blockSeconds)
        publish(s.current.flatMap { Self.window($0, now: now, generation: s.generation) })
    }

    private func refused(_ error: ScheduleError) -> ScheduleAnswer {
        logger.warning("schedule refused: \(error)", metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "\(error.code)"])
        return ScheduleAnswer(accepted: false, error: error)
    }

    private func warn(_ error: ScheduleError, suffix: String = "") {
        logger.warning("\(error)\(suffix)", metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "\(error.code)"])
    }

    private func quoted(_ text: String) -> String { PeerText.quoted(text, limit: 128) }
}

extension ScheduleStore {
    /// The window of `schedule` from the block `now` is in: up to `ScheduleWindow.capacity` blocks;
    /// nil when none is left to run.
    static func window(_ schedule: Schedule, now: Int64, generation: UInt64) -> ScheduleWindow? {
        let window = ScheduleWindow(schedule, from: now, generation: generation)
        return window.count > 0 ? window : nil
    }

    /// The start of the block `unix` is in.
    static func blockStart(_ unix: Int64, _ length: Int64) -> Int64 {
        (unix >= 0 ? unix / length : (unix - length + 1) / length) * length
    }

    /// When the schedule's last block ends.
    static func end(_ schedule: Schedule) -> Int64 { (schedule.blocks.last?.startUnixSeconds ?? 0) + schedule.lengthSeconds }

    static func hasBlocksToRun(_ schedule: Schedule, now: Int64) -> Bool { end(schedule) > now && !schedule.blocks.isEmpty }

    /// `"ID" revision N`, the id quoted (it may be a peer's).
    static func describe(_ schedule: Schedule) -> String { "\(PeerText.quoted(schedule.id, limit: 128)) revision \(schedule.revision)" }

    static func name(_ source: ScheduleSource) -> String { ScheduleSourceName.name(source) }

    static func name(_ fallback: ScheduleFallback) -> String {
        switch fallback {
        case .application: "application"
        case .zero: "zero"
        }
    }

    /// `SCHEDULE_INFEASIBLE`: the block by its start (RFC 3339) and the kWh it falls short by.
    static func infeasible(_ shortfall: ScheduleShortfall) -> ScheduleError {
        ScheduleError(.infeasible, message: "the block from \(ScheduleDocument.rfc3339(shortfall.blockStartUnixSeconds)) cannot be met "
                      + "by \(String(format: "%.2f", shortfall.shortKWh)) kWh (SOC, reserve, power or grid limits on the forecast in use)")
    }
}
