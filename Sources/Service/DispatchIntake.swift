import BessBase
import BessSystem
public import Config
public import Cycle
import ControlCore
import Foundation
package import Logging
import Synchronization
package import Uplink

/// Validates and applies the aggregator's commands through the cycle's mailbox — and so through the
/// same arbitration and interlocks as everything else — and returns their acknowledgements. Called on
/// the sender's task; everything it touches is behind a lock.
package final class DispatchIntake: Sendable {
    let shared: SharedState
    let logger: Logger
    /// Each unit's `max_power_kw` and apparent rating (`max_apparent_power_kva`, else `max_power_kw`).
    let units: PILock<[Rated]>
    /// Where the aggregator's standby and emergency stop are kept across restarts (nil: not kept).
    let holds: HoldKeeper?
    /// The block schedule the `schedule` command offers to (nil: no `schedule:` section).
    let schedules: ScheduleStore?
    /// The optimiser the `prices` and `forecast` commands feed (nil: not enabled).
    let optimiser: OptimiserService?

    typealias Rated = (id: String, ratingKW: Double, apparentKVA: Double)

    /// `units`: id and `max_power_kw`; `apparent`: id → `max_apparent_power_kva` where it is set.
    init(shared: SharedState, logger: Logger, units: [(String, Double)], apparent: [String: Double] = [:], holds: HoldKeeper?,
         schedules: ScheduleStore? = nil, optimiser: OptimiserService? = nil) {
        self.shared = shared
        self.logger = logger
        self.holds = holds
        self.schedules = schedules
        self.optimiser = optimiser
        self.units = PILock(Self.rated(units, apparent: apparent))
    }

    package convenience init(shared: SharedState, logger: Logger, units: [(String, Double)], apparent: [String: Double] = [:]) {
        self.init(shared: shared, logger: logger, units: units, apparent: apparent, holds: nil)
    }

    /// The units as the configuration rates them.
    convenience init(shared: SharedState, logger: Logger, configured: [UnitConfiguration], holds: HoldKeeper?,
                     schedules: ScheduleStore? = nil, optimiser: OptimiserService? = nil) {
        self.init(shared: shared, logger: logger, units: configured.map { ($0.id, $0.maxPowerKW) },
                  apparent: Self.apparent(configured), holds: holds, schedules: schedules, optimiser: optimiser)
    }

    func update(configured new: [UnitConfiguration]) {
        let rated = Self.rated(new.map { ($0.id, $0.maxPowerKW) }, apparent: Self.apparent(new))
        units.withLock { $0 = rated }
    }

    static func apparent(_ units: [UnitConfiguration]) -> [String: Double] {
        var kva: [String: Double] = [:]
        for unit in units { kva[unit.id] = unit.maxApparentPowerKVA }
        return kva
    }

    static func rated(_ units: [(String, Double)], apparent: [String: Double]) -> [Rated] {
        units.map { (id: $0.0, ratingKW: $0.1, apparentKVA: apparent[$0.0] ?? $0.1) }
    }

    package func apply(_ commands: [DispatchCommand]) -> [CommandAck] {
        let now = SystemClock.wallClockSeconds()
        let site = units.withLock { $0 }
        var ratings: [String: Double] = [:], apparent: [String: Double] = [:]
        for unit in site {
            ratings[unit.id] = unit.ratingKW
            apparent[unit.id] = unit.apparentKVA
        }
        var acks: [CommandAck] = []
        // The aggregator's holds these commands set or lift, kept on disk before any ack says so.
        var held: [(unit: String, hold: AggregatorHold?)] = []
        for command in commands {
            // The id and every name in a line are the peer's text: quoted, so none can forge a line.
            let id = PeerText.quoted(command.id, limit: 128)
            if let refusal = DispatchValidator.refusal(command, ratings: ratings, apparent: apparent, now: now) {
                acks.append(CommandAck(id: command.id, accepted: false, reason: refusal.reason))
                logger.warning("dispatch \(id) refused: \(refusal.reason)",
                               metadata: ["BESS_CODE": "\(refusal.code)", "MESSAGE_ID": "\(MessageID.override)"])
                continue
            }
            if command.kind == "schedule" {
                acks.append(schedule(command, now: now))
                continue
            }
            if command.kind == "prices" || command.kind == "forecast" {
                acks.append(planInputs(command))
                continue
            }
            // The command's wall-clock expiry becomes a span on the cycle's monotonic clock here.
            let lasting = Duration.seconds(fromDouble: command.expiresUnix - now)
            let targets = command.unit.flatMap { id in site.firstIndex { $0.id == id } }.map { [$0] } ?? Array(site.indices)
            switch command.kind {
            case "power":
                let total = targets.reduce(0.0) { $0 + site[$1].ratingKW }
                let totalKVA = targets.reduce(0.0) { $0 + site[$1].apparentKVA }
                // A site-wide power is entered as each unit's part by rating; the cycle pools those
                // parts and shares them again by headroom and SOC. A power for one unit holds that
                // unit at it (pinned), outside the pool. Its kvar is split here once by apparent
                // rating, so each part is inside its unit's bound, and each part is that unit's Q in
                // the cycle (not shared again: a stopped unit's part is not moved to the others).
                let pinned = command.unit != nil
                shared.post { mailbox in
                    for i in targets {
                        let share = (command.powerKW ?? 0) * site[i].ratingKW / max(total, 1e-9)
                        let vars = command.reactiveKVar.map { $0 * 1000 * site[i].apparentKVA / max(totalKVA, 1e-9) }
                        mailbox.dispatch[i] = (Watts.kilowatts(share), vars, lasting, pinned)
                    }
                }
            case "mode":
                // The aggregator's own hold: it never lifts a local operator's standby, and it ends
                // by itself at the command's expiry (the cycle lets it lapse).
                let mode = OperatingMode(rawValue: command.mode ?? "auto") ?? .auto
                shared.post { mailbox in for i in targets { mailbox.remoteMode[i] = (mode, lasting, false) } }
                let hold = mode == .standby ? AggregatorHold(untilUnix: command.expiresUnix, emergency: false) : nil
                held += targets.map { (site[$0].id, hold) }
            default:  // emergency_stop: standby at once, dispatch dropped, until the command ends
                shared.post { mailbox in
                    for i in targets {
                        mailbox.remoteMode[i] = (.standby, lasting, true)
                        mailbox.clearDispatch[i] = true
                    }
                }
                held += targets.map { (site[$0].id, AggregatorHold(untilUnix: command.expiresUnix, emergency: true)) }
            }
            acks.append(CommandAck(id: command.id, accepted: true))
            // Kind, unit and mode are the site's own words by now: the validator took no others.
            let what = "\(command.kind) \(command.unit ?? "site") \(command.powerKW.map { "\($0) kW " } ?? "")"
                + "\(command.reactiveKVar.map { "\($0) kvar " } ?? "")\(command.mode ?? "")"
            logger.notice("dispatch \(id) applied: \(what) until \(Int(command.expiresUnix))",
                          metadata: ["MESSAGE_ID": "\(MessageID.override)", "BESS_DISPATCH_ID": "\(command.id)"])
        }
        // A hold that cannot be written still stands while bessd runs (HOLD_STATE_UNWRITABLE, logged).
        if !held.isEmpty { _ = holds?.aggregator(held) }
        return acks
    }

}
