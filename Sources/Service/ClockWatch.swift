import BessSystem
import ControlCore
import Cycle
import Foundation
import Logging

/// The system clock as settlement needs it: reads its synchronisation (at start and every 5 s on
/// the service loop), hands it to the cycle and the recorder, and says in the journal when it
/// changes and when the cycle saw the wall clock step (`CLOCK_UNSYNCED`, `CLOCK_STEPPED`).
final class ClockWatch {
    private let journal: Journal
    /// As last read; the server thread reads it for status and /metrics.
    private let state = PILock(ClockSync.unknown)
    /// Wall-clock steps already logged.
    private var reportedSteps = 0

    init(logger: Logger) { journal = Journal(logger) }

    /// The synchronisation as last read.
    var sync: ClockSync { state.withLock { $0 } }

    /// Reads the synchronisation and the cycle's step count; logs what changed.
    func check(_ shared: SharedState, recorder: UplinkRecorder?) {
        let sync = ClockSync.read()
        let previous = state.withLock { current in
            defer { current = sync }
            return current
        }
        let synchronized = sync.isSynchronized ?? true
        shared.setClockSynchronized(synchronized)
        recorder?.clockSynchronized = synchronized
        if sync != previous {
            switch sync {
            case .unsynchronized(let source):
                journal.write(Notice(ClockCode.unsynced, titled: "the system clock is not synchronised (\(source)); records and energy blocks are flagged until it is"))
            case .synchronized(let source):
                journal.write(Notice(ClockCode.synced, "the system clock is synchronised (\(source))"))
            case .unknown:
                journal.write(Notice(ClockCode.syncUnknown, "the system clock's synchronisation cannot be read (no adjtimex, no systemd-timesyncd); records are not flagged"))
            }
        }
        let stats = shared.statistics
        if stats.clockSteps > reportedSteps {
            let size = String(format: "%+.1f", stats.lastClockStep.secondsDouble)
            journal.write(Notice(ClockCode.stepped,
                                 titled: "the wall clock stepped by \(size) s (\(stats.clockSteps) steps since start); open energy blocks are flagged and none is reopened"))
            reportedSteps = stats.clockSteps
        }
    }

    /// `bessd_clock_synchronized` and `bessd_clock_steps_total`.
    func metrics(into m: inout MetricsText, stats: CycleStatistics) {
        let sync = self.sync
        m.metric("bessd_clock_synchronized", "gauge",
                 "1 while the system clock is synchronised, 0 while it is not (CLOCK_UNSYNCED: records and energy blocks are flagged), -1 unknown.",
                 [("source=\"\(sync.source)\"", sync.isSynchronized.map { $0 ? 1 : 0 } ?? -1)])
        m.metric("bessd_clock_steps_total", "counter", "Steps of the wall clock against the monotonic clock (CLOCK_STEPPED).",
                 [("", Double(stats.clockSteps))])
    }
}

/// The clock watch's codes (`MESSAGE_ID` of the system clock).
enum ClockCode: String, NoticeCode, CaseIterable {
    case unsynced = "CLOCK_UNSYNCED"
    case synced = "CLOCK_SYNCED"
    case syncUnknown = "CLOCK_SYNC_UNKNOWN"
    case stepped = "CLOCK_STEPPED"

    var severity: NoticeSeverity { self == .unsynced || self == .stepped ? .warning : .notice }
    var topic: NoticeTopic { .clock }
}
