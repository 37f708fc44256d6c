import BessSystem
import ControlCore
import Cycle
import Foundation
import Logging

/// The system clock as settlement needs it: reads its synchronisation (at start and every 5 s on
/// the service loop), hands it to the cycle and the recorder, and says in the journal when it
/// changes and when the cycle saw the wall clock step (`CLOCK_UNSYNCED`, `CLOCK_STEPPED`).
final class ClockWatch {
    private let logger: Logger
    /// As last read; the server thread reads it for status and /metrics.
    private let state = PILock(ClockSync.unknown)
    /// Wall-clock steps already logged.
    private var reportedSteps = 0

    init(logger: Logger) { self.logger = logger }

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
                logger.warning("CLOCK_UNSYNCED: the system clock is not synchronised (\(source)); records and energy blocks are flagged until it is",
                               metadata: ["BESS_CODE": "CLOCK_UNSYNCED", "MESSAGE_ID": "\(MessageID.clock)"])
            case .synchronized(let source):
                logger.notice("the system clock is synchronised (\(source))", metadata: ["BESS_CODE": "CLOCK_SYNCED", "MESSAGE_ID": "\(MessageID.clock)"])
            case .unknown:
                logger.notice("the system clock's synchronisation cannot be read (no adjtimex, no systemd-timesyncd); records are not flagged",
                              metadata: ["BESS_CODE": "CLOCK_SYNC_UNKNOWN", "MESSAGE_ID": "\(MessageID.clock)"])
            }
        }
        let stats = shared.statistics
        if stats.clockSteps > reportedSteps {
            let size = String(format: "%+.1f", stats.lastClockStep.secondsDouble)
            logger.warning("CLOCK_STEPPED: the wall clock stepped by \(size) s (\(stats.clockSteps) steps since start); open energy blocks are flagged and none is reopened",
                           metadata: ["BESS_CODE": "CLOCK_STEPPED", "MESSAGE_ID": "\(MessageID.clock)"])
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
