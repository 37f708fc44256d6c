import BessBase
import BessSystem
import ControlCore
import Cycle
import Foundation
import Glibc
import Logging

/// Latched trips across restarts: restores the latch file into the controller before the first
/// cycle, and writes it again whenever a unit's latched codes change (on the service thread, after
/// the cycle has published). A file that cannot be read latches every unit it concerns with
/// `LATCH_STATE_CORRUPT`; a file that cannot be written is said once, and again when it can.
/// Latches of unit ids the configuration lacks are kept in the file (`OrphanedLatches`).
struct LatchKeeper {
    let store: LatchStore
    /// Latches of unit ids this configuration lacks, kept until `bessctl reset --orphaned`.
    let orphans = OrphanedLatches()
    /// The generation of `orphans` the file holds.
    private var orphansWritten: UInt64 = 0
    private let logger: Logger
    /// What the latch file holds now, per unit.
    private var persisted: [TripCodeSet]
    /// When each latched code latched (Unix time), per unit.
    private var since: [[TripCode: Double]]
    private var writeFailing = false

    init(stateDirectory: String, units: Int, logger: Logger) {
        store = LatchStore(stateDirectory: stateDirectory)
        self.logger = logger
        persisted = [TripCodeSet](repeating: TripCodeSet(), count: units)
        since = [[TripCode: Double]](repeating: [:], count: units)
    }

    /// Reads the latch file and hands each unit's latches to `restore` (before the first cycle).
    mutating func restore(unitIDs ids: [String], into restore: (TripCodeSet, Int) -> Void) {
        switch store.load() {
        case .firstStart:
            return
        case .corrupt(let reason):
            logger.critical("latch state unreadable (\(reason)); every unit starts latched with LATCH_STATE_CORRUPT until an operator checks it and runs bessctl reset",
                            metadata: ["BESS_CODE": "LATCH_STATE_CORRUPT", "MESSAGE_ID": "\(MessageID.latch)"])
            for i in ids.indices { take([.latchStateCorrupt: SystemClock.wallClockSeconds()], unit: i, restore) }
        case .latches(let latches, let damaged):
            for (i, id) in ids.enumerated() {
                var codes = latches[id] ?? [:]
                if damaged.contains(id) {
                    codes[.latchStateCorrupt] = SystemClock.wallClockSeconds()
                    logger.critical("latch state of \(id) unreadable; it starts latched with LATCH_STATE_CORRUPT",
                                    metadata: ["BESS_CODE": "LATCH_STATE_CORRUPT", "BESS_UNIT": "\(id)", "MESSAGE_ID": "\(MessageID.latch)"])
                }
                guard !codes.isEmpty else { continue }
                take(codes, unit: i, restore)
                for (code, since) in codes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where code != .latchStateCorrupt {
                    logger.warning("\(id) \(code.name) still latched from an earlier run (since \(Self.utc(since))); bessctl reset \(id) once the cause is cleared",
                                   metadata: ["BESS_CODE": "\(code.name)", "BESS_UNIT": "\(id)", "BESS_EVENT": "restored",
                                              "MESSAGE_ID": "\(MessageID.latch)"])
                }
            }
            keepOrphans(latches, damaged: damaged, unitIDs: ids)
        }
    }

    /// Keeps the latches of unit ids the configuration lacks (an entry that could not be read as
    /// `LATCH_STATE_CORRUPT`), each said at start.
    private func keepOrphans(_ latches: [String: LatchStore.UnitLatches], damaged: [String], unitIDs ids: [String]) {
        var orphaned: [String: LatchStore.UnitLatches] = [:]
        for (id, codes) in latches where !ids.contains(id) && !codes.isEmpty { orphaned[id] = codes }
        for id in damaged where !ids.contains(id) { orphaned[id, default: [:]][.latchStateCorrupt] = SystemClock.wallClockSeconds() }
        for (id, codes) in orphaned.sorted(by: { $0.key < $1.key }) {
            let names = codes.keys.map { "\($0.name)" }.sorted().joined(separator: ", ")
            let line = "latch file names unit \(PeerText.quoted(id)), which this configuration lacks: \(names) kept in the file, "
                + "acting on no unit, until bessctl reset --orphaned (a renamed unit's latch does not follow it)"
            logger.warning("\(line)",
                           metadata: ["BESS_CODE": "LATCH_STATE_ORPHANED", "BESS_UNIT": "\(id)", "MESSAGE_ID": "\(MessageID.latch)"])
        }
        orphans.load(orphaned)
    }

    private mutating func take(_ codes: [TripCode: Double], unit i: Int, _ restore: (TripCodeSet, Int) -> Void) {
        var set = TripCodeSet()
        for code in codes.keys { set.insert(code) }
        restore(set, i)
        persisted[i] = set
        since[i] = codes
    }

    /// Writes the latch file when any unit's latched codes changed since the last write. Runs on the
    /// main thread after every cycle has published (never before the first one, which would read
    /// the empty start-up status as "nothing latched").
    mutating func persist(_ shared: SharedState, unitIDs: () -> [String]) {
        guard shared.statistics.cycles > 0 else { return }
        let units = shared.units
        var changed = false
        for i in units.indices where i < persisted.count && units[i].latched != persisted[i] {
            changed = true
        }
        let (orphaned, generation) = orphans.snapshot
        guard changed || writeFailing || generation != orphansWritten else { return }
        let ids = unitIDs()
        let now = SystemClock.wallClockSeconds()
        var next = since
        for i in units.indices where i < next.count {
            var codes: [TripCode: Double] = [:]
            for code in units[i].latched { codes[code] = since[i][code] ?? now }
            next[i] = codes
        }
        var file = orphaned
        for (i, id) in ids.enumerated() where i < next.count { file[id] = next[i] }
        do {
            try store.save(file)
            since = next
            orphansWritten = generation
            for i in units.indices where i < persisted.count { persisted[i] = units[i].latched }
            if writeFailing {
                logger.notice("latch state written again to \(store.path)", metadata: ["BESS_CODE": "LATCH_STATE_WRITTEN"])
            }
            writeFailing = false
        } catch {
            if !writeFailing {
                logger.critical("\(error); latches hold while bessd runs but would not survive a restart",
                                metadata: ["BESS_CODE": "\(error.code)"])
            }
            writeFailing = true
        }
    }

    /// `2026-11-27T08:00:00Z` for a Unix time.
    static func utc(_ unix: Double) -> String {
        var t = time_t(unix)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
