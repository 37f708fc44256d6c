import BessSystem
import ControlCore
import ControlProtocol
import Logging

/// Latches of unit ids the configuration no longer names (a unit renamed or removed while latched),
/// as the latch file held them at start. They act on no unit, but they are not a reset either: they
/// stay in `latches.json` through every save and restart, said at each start
/// (`LATCH_STATE_ORPHANED`), until an operator clears them with `bessctl reset --orphaned`.
///
/// The service thread writes the file (`LatchKeeper.persist`); the control socket's thread clears
/// them. One lock between the two; a clear moves `generation` on, so the next round rewrites the file.
final class OrphanedLatches: Sendable {
    private struct State {
        var latches: [String: LatchStore.UnitLatches] = [:]
        var generation: UInt64 = 0
    }
    private let state = PILock(State())

    /// The orphaned latches read at start (before the first cycle).
    func load(_ latches: [String: LatchStore.UnitLatches]) { state.withLock { $0.latches = latches } }

    /// The latches as they stand, and the generation they stand at.
    var snapshot: (latches: [String: LatchStore.UnitLatches], generation: UInt64) {
        state.withLock { ($0.latches, $0.generation) }
    }

    /// Clears every orphaned latch: what was cleared, as `UNIT:CODE` sorted, and the unit ids.
    func clear() -> (cleared: [String], units: [String]) {
        let taken = state.withLock { s in
            defer {
                s.latches = [:]
                s.generation &+= 1
            }
            return s.latches
        }
        let units = taken.keys.sorted()
        let cleared = units.flatMap { id in (taken[id] ?? [:]).keys.map { "\(id):\($0.name)" }.sorted() }
        return (cleared, units)
    }
}

extension OrphanedLatches {
    /// `bessctl reset --orphaned`: clears the latches of unit ids this configuration lacks (an
    /// operator's act, audited through `audit` as every reset is); `wakeup` has the service loop
    /// rewrite the file at once.
    func reset(wakeup: Wakeup, audit: (String, Logger.Metadata) -> Void) -> ResetReply {
        let (cleared, units) = clear()
        wakeup.signal()
        var fields: Logger.Metadata = ["MESSAGE_ID": "\(MessageID.reset)", "BESS_CODE": "LATCH_STATE_ORPHANED"]
        if !units.isEmpty { fields["BESS_UNIT"] = units.count == 1 ? "\(units[0])" : .array(units.map { "\($0)" }) }
        let named = cleared.isEmpty ? "none" : cleared.map { PeerText.quoted($0, limit: 96) }.joined(separator: ", ")
        audit("reset of orphaned latches (unit ids this configuration lacks): cleared \(named)", fields)
        return ResetReply(cleared: cleared, refused: [])
    }
}
