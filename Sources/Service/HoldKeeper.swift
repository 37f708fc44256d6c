import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Foundation
import Logging

/// The holds only their owner may lift, across restarts (`HoldStore`). Each party's path writes
/// the file itself, before it answers, so an answer that says a hold stands is never ahead of the
/// disk:
/// - `bessctl mode` (the control socket's thread): written before the request is posted to the
///   cycle, so before the reply;
/// - a SCADA write to `WMaxLimPct…` (the SCADA server's thread): written after the write is
///   committed and before the Modbus response;
/// - the aggregator's `mode` and `emergency_stop` (the uplink sender): written before the
///   command's acknowledgement is returned.
/// The cycle does no I/O for this: it takes the holds from its mailbox and the shared commands as
/// before. One lock orders the writers, so the file always ends with the latest of them.
///
/// A refresh of SCADA's limit that only restarts its reversion timer (a plant controller re-writing
/// `WMaxLimPct` every second) is written at most once per half the timer: on a restart the limit
/// then reverts up to half a timer early, never later.
final class HoldKeeper: Sendable {
    let store: HoldStore
    private let logger: Logger
    private struct State {
        /// Every hold as its owners last set it.
        var holds = StandingHolds()
        /// What the file holds now; nil when unknown (damaged at start, not yet rewritten).
        var written: StandingHolds?
        var writeFailing = false
        /// `HOLD_STATE_UNREADABLE` found at start, shown until the operator lifts the site's standby.
        var unreadable: HoldStoreError?
    }
    private let state: PILock<State>

    init(stateDirectory: String, logger: Logger) {
        store = HoldStore(stateDirectory: stateDirectory)
        self.logger = logger
        state = PILock(State())
    }

    /// What a restart brings back, by unit index, for the controller before the first cycle.
    struct Restored {
        var operatorSite = false
        var operatorUnits: [Int] = []
        /// The aggregator's holds still running: how long each has left.
        var aggregator: [(unit: Int, lasting: Duration, emergency: Bool)] = []
        /// SCADA's limit as it stands now; nil when none was written.
        var scadaLimit: ExpiringCommand?
    }

    /// The file's `HOLD_STATE_UNREADABLE` from start, until the operator lifts the site's standby.
    var unreadable: HoldStoreError? { state.withLock { $0.unreadable } }

    /// Reads the file (once, before the first cycle) and says what stands. A file that cannot be
    /// read puts the whole site in the operator's standby with `HOLD_STATE_UNREADABLE`.
    func restore(unitIDs ids: [String], maxHold: Duration) -> Restored {
        let now = SystemClock.shared.now()
        let wall = SystemClock.wallClockSeconds()
        var holds: StandingHolds
        switch store.load() {
        case .firstStart:
            return Restored()
        case .unreadable(let error):
            logger.critical("\(error); what was held is unknown, so every unit starts in the operator's standby (whole site) until an operator checks the site and runs bessctl mode auto; the damaged file is kept beside it",
                            metadata: ["BESS_CODE": "\(error.code)", "MESSAGE_ID": "\(MessageID.mode)"])
            holds = StandingHolds(operatorSite: true)
            state.withLock {
                $0.holds = holds
                $0.unreadable = error
            }
            return Restored(operatorSite: true, operatorUnits: [], aggregator: [], scadaLimit: nil)
        case .holds(let loaded):
            holds = loaded
        }
        let written = holds
        holds.aggregator = holds.aggregator.filter { $0.value.untilUnix > wall }
        var restored = Restored(operatorSite: holds.operatorSite)
        let fields: Logger.Metadata = ["BESS_EVENT": "restored", "MESSAGE_ID": "\(MessageID.mode)"]
        if holds.operatorSite {
            logger.warning("the site is in the operator's standby (whole site) from an earlier run; bessctl mode auto lifts it",
                           metadata: fields.merging(["BESS_MODE": "standby"]) { a, _ in a })
        }
        for (i, id) in ids.enumerated() {
            if holds.operatorUnits.contains(id) {
                restored.operatorUnits.append(i)
                logger.warning("\(id) is in the operator's standby from an earlier run; bessctl mode auto --unit \(id) lifts it",
                               metadata: fields.merging(["BESS_MODE": "standby", "BESS_UNIT": "\(id)"]) { a, _ in a })
            }
            if let hold = holds.aggregator[id] {
                restored.aggregator.append((i, .seconds(fromDouble: hold.untilUnix - wall), hold.emergency))
                logger.warning("\(id): the aggregator's \(hold.emergency ? "emergency stop" : "standby") from an earlier run holds until \(LatchKeeper.utc(hold.untilUnix))",
                               metadata: fields.merging(["BESS_MODE": "standby", "BESS_UNIT": "\(id)"]) { a, _ in a })
            }
        }
        for id in holds.operatorUnits.union(holds.aggregator.keys).sorted() where !ids.contains(id) {
            logger.warning("holds file names unit \(id), which this configuration lacks; its hold is kept in \(store.path)",
                           metadata: ["BESS_CODE": "HOLD_STATE_ORPHANED", "BESS_UNIT": "\(id)"])
        }
        if let limit = holds.scadaLimit {
            let command = limit.command(now: now, wall: wall, maxHold: maxHold)
            restored.scadaLimit = command
            if let percent = command.active(at: now) {
                let how = command.reverted ? "its reversion value, holds until SCADA writes again"
                    : "reverts in \(Int(command.remaining(at: now).secondsDouble.rounded(.up))) s without a write"
                logger.warning("the grid operator's SCADA limit from an earlier run stands: WMaxLimPct \(Int(percent)) % (\(how))",
                               metadata: fields.merging(["BESS_CODE": "SCADA_LIMIT_RESTORED", "BESS_LIMIT": "\(percent)"]) { a, _ in a })
            }
        }
        state.withLock {
            $0.holds = holds
            $0.written = written
        }
        return restored
    }

    /// `bessctl mode` from the local operator: for one unit, or (`unit` nil) the whole site.
    func operatorMode(_ mode: OperatingMode, unit: String?) -> HoldStoreError? {
        update { holds, s in
            if let unit {
                if mode == .standby { holds.operatorUnits.insert(unit) } else { holds.operatorUnits.remove(unit) }
            } else {
                holds.operatorSite = mode == .standby
                // The operator has checked the site: the damaged file's notice ends with its standby.
                if mode == .auto { s.unreadable = nil }
            }
        }
    }

    /// The aggregator's holds: a standby or emergency stop per unit (nil lifts that unit's).
    func aggregator(_ changes: [(unit: String, hold: AggregatorHold?)]) -> HoldStoreError? {
        let wall = SystemClock.wallClockSeconds()
        return update { holds, _ in
            for change in changes { holds.aggregator[change.unit] = change.hold }
            holds.aggregator = holds.aggregator.filter { $0.value.untilUnix > wall }
        }
    }

    /// SCADA's limit as `commands` (read under the keeper's lock, so two SCADA servers writing at
    /// once leave the file with the later) has it now. A refresh that only moves the reversion
    /// time is written once it has moved by half the timer.
    func scadaLimit(_ commands: () -> SiteCommands) -> HoldStoreError? {
        let now = SystemClock.shared.now()
        let wall = SystemClock.wallClockSeconds()
        return update { holds, _ in
            let current = commands()
            let limit = ScadaLimitHold(current.limit.settled(at: now, holdAfterRevert: nil), now: now, wall: wall)
            if let old = holds.scadaLimit, old.sameSettings(as: limit), let was = old.revertsUnix, let next = limit.revertsUnix,
               abs(next - was) < current.hold(forTimeout: limit.timeoutSeconds).secondsDouble / 2
            {
                return
            }
            holds.scadaLimit = limit
        }
    }

    /// Applies `change` and writes the file when the holds differ from it (or the last write
    /// failed). A failure is logged once, and again when a write succeeds.
    private func update(_ change: (inout StandingHolds, inout State) -> Void) -> HoldStoreError? {
        state.withLock { s -> HoldStoreError? in
            var holds = s.holds
            change(&holds, &s)
            s.holds = holds
            guard holds != s.written || s.writeFailing else { return nil }
            do throws(HoldStoreError) {
                try store.save(holds)
                s.written = holds
                if s.writeFailing {
                    logger.notice("holds written again to \(store.path)", metadata: ["BESS_CODE": "HOLD_STATE_WRITTEN"])
                }
                s.writeFailing = false
                return nil
            } catch {
                if !s.writeFailing {
                    logger.critical("\(error); the holds stand while bessd runs but would not survive a restart",
                                    metadata: ["BESS_CODE": "\(error.code)", "MESSAGE_ID": "\(MessageID.mode)"])
                }
                s.writeFailing = true
                return error
            }
        }
    }
}

extension HoldKeeper {
    /// Brings back the holds of an earlier run before the first cycle (after the latches): the
    /// operator's standby into `controller`, the aggregator's holds with the time they have left,
    /// SCADA's limit as it stands into the shared commands the cycle takes in its first period (and
    /// the SCADA server serves in model 704).
    func restore(_ configuration: BessdConfiguration, into controller: SiteController, shared: SharedState) {
        let maxHold = configuration.scada?.maxHold ?? SiteCommands().maxHold
        let restored = restore(unitIDs: configuration.units.map(\.id), maxHold: maxHold)
        if restored.operatorSite { controller.setOperatorMode(.standby) }
        for i in restored.operatorUnits { controller.setOperatorMode(.standby, unit: i) }
        let now = SystemClock.shared.now()
        for hold in restored.aggregator {
            controller.setRemoteMode(.standby, until: now + hold.lasting, emergency: hold.emergency, unit: hold.unit)
        }
        if let limit = restored.scadaLimit {
            var generation: UInt64 = 0
            var commands = shared.commands(generation: &generation)
            commands.maxHold = maxHold
            commands.limit = limit
            _ = shared.commit(commands, ifGeneration: generation)
        }
    }
}
