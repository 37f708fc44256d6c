import BessSystem
import Config
import ControlCore
package import ControlProtocol
import Cycle
import Foundation
import Logging

/// The control socket's verbs: who may call which (`ControlCaller.needed(verb:)`, refusals logged
/// at most 5 a second), the reading verbs answered at once, and the acting verbs (reset, mode,
/// override) posted to the cycle's mailbox and answered once the cycle has taken them, with an
/// audit line naming the caller.
struct ControlVerbs {
    let configuration: RunningConfiguration
    /// The file a reload reads (`config` names it; nil for the embedded default).
    let configPath: String?
    let shared: SharedState
    /// The operator's standby holds, on disk before the cycle takes them.
    let holds: HoldKeeper
    let orphanedLatches: OrphanedLatches
    let frequencyEvents: FrequencyEventReports
    let status: StatusReport
    let metrics: MetricsExporter
    let logger: Logger
    /// The block schedule (`schedule`, `schedule-load`, `schedule-clear`); nil without `schedule:`.
    let schedules: ScheduleStore?
    /// The optimiser (`plan`); nil unless `optimiser.enabled`.
    let optimiser: OptimiserService?
    /// Refusals for the caller's groups are logged at most 5 a second (the socket is open to every
    /// local user, and a flood must not push trips out of journald's rate limit); the rest are
    /// counted and the next line logged says how many were not. One key: the socket.
    private let refusals = PILock(PeerBudget<Int>(window: .seconds(1), lines: 5, keys: 1, report: .withNextLine))

    init(configuration: RunningConfiguration, configPath: String?, shared: SharedState, holds: HoldKeeper,
         orphanedLatches: OrphanedLatches, frequencyEvents: FrequencyEventReports, status: StatusReport,
         metrics: MetricsExporter, logger: Logger, schedules: ScheduleStore? = nil, optimiser: OptimiserService? = nil) {
        self.schedules = schedules
        self.optimiser = optimiser
        self.configuration = configuration
        self.configPath = configPath
        self.shared = shared
        self.holds = holds
        self.orphanedLatches = orphanedLatches
        self.frequencyEvents = frequencyEvents
        self.status = status
        self.metrics = metrics
        self.logger = logger
    }

    /// The unit a request names: `.site` when it names none, `.unit(i)` for a configured id. Any
    /// other value (a number, an unknown id, an empty string) is refused as UNKNOWN_UNIT: a request
    /// for a unit that does not exist never acts on every unit.
    enum Target { case site, unit(Int) }

    func target(_ request: ControlRequest, _ configuration: BessdConfiguration) -> Target? {
        guard let unit = request.unit else { return .site }
        guard case .name(let name) = unit, let index = configuration.units.firstIndex(where: { $0.id == name }) else { return nil }
        return .unit(index)
    }

    static func unknownUnit(_ request: ControlRequest) -> ControlResponse {
        let named = switch request.unit {
        case .name(let name)?: name
        case .notAName(let text)?: text
        case nil: ""
        }
        return .now(failure("UNKNOWN_UNIT", "no unit \(named) in this configuration; bessctl status lists the units"))
    }

    static func failure(_ code: String, _ message: String) -> ControlFailure { ControlFailure(code, message) }

    /// A configuration's text fit for a support ticket (`ConfigRedaction.text`: secrets found by key path).
    static func redacted(_ text: String) -> String { ConfigRedaction.text(text) }

    func audit(_ what: String, uid: UInt32, _ metadata: Logger.Metadata) {
        var fields = metadata
        fields["BESS_CALLER_UID"] = "\(uid)"
        logger.notice("bessctl (uid \(uid)): \(what)", metadata: fields)
    }

    /// Answers one control request (on the server thread). Requests that change something go
    /// through the cycle's mailbox and are answered once the cycle has taken them. `answerCosts`
    /// are the server's own lines of the metrics.
    func handle(_ request: ControlRequest, caller: ControlCaller, answerCosts: AnswerCosts?) -> ControlResponse {
        let configuration = self.configuration.current
        let verb = request.verb.name
        let uid = caller.uid
        let needed = ControlCaller.needed(request.verb)
        guard caller.role >= needed else {
            let what = needed == .reader ? "reading needs membership of \(ControlCaller.readerGroup) or \(ControlCaller.operatorGroup)"
                : "acting needs membership of \(ControlCaller.operatorGroup)"
            let name = verb.isEmpty ? "(no verb)" : String(verb.prefix(32))
            let now = SystemClock.shared.now()
            let admission = refusals.withLock { $0.admit(0, at: now) }
            if admission.written {
                let skipped = admission.heldBack
                let more = skipped > 0 ? "; \(skipped) more refused and not logged before this one" : ""
                logger.warning("bessctl (uid \(uid), pid \(caller.pid)): \(name) refused: PERMISSION_DENIED (\(what))\(more)",
                               metadata: ["MESSAGE_ID": "\(MessageID.permission)", "BESS_CODE": "PERMISSION_DENIED",
                                          "BESS_CALLER_UID": "\(uid)", "BESS_VERB": "\(name)"])
            }
            return .now(Self.failure("PERMISSION_DENIED", "uid \(uid) may not \(name): \(what)"))
        }
        switch request.verb {
        case .status: return .now(status.statusReply(configuration))
        case .metrics: return .now(MetricsReply(text: metrics.text(answerCosts: answerCosts)))
        case .config:
            // The file as loaded (for `bessctl diag`), with secrets redacted.
            let text = self.configuration.text ?? "(not readable)"
            return .now(ConfigReply(path: configPath ?? "(embedded default)", text: Self.redacted(text)))
        case .faults: return .now(status.faultsReply(configuration))
        case .site: return .now(status.siteReply(configuration))
        case .events: return .now(frequencyEvents.reply())
        case .reset:
            if request.orphaned {
                guard request.unit == nil else {
                    return .now(Self.failure("BAD_REQUEST", "reset --orphaned names no unit: it clears every unit id this configuration lacks"))
                }
                return .now(orphanedLatches.reset(wakeup: shared.serviceWakeup) { audit($0, uid: uid, $1) })
            }
            guard let target = target(request, configuration) else { return Self.unknownUnit(request) }
            let indices: [Int]
            let name: String
            switch target {
            case .site: (indices, name) = (Array(configuration.units.indices), "all units")
            case .unit(let i): (indices, name) = ([i], configuration.units[i].id)
            }
            let generation = shared.post { mailbox in for i in indices { mailbox.reset[i] = true } }
            return .afterCycle(generation: generation) { [self] in
                var cleared: [String] = []
                var refused: [String] = []
                for i in indices {
                    let outcome = shared.resetOutcome(i)
                    cleared += outcome.cleared.map { "\(configuration.units[i].id):\($0.name)" }
                    refused += outcome.refused.map { "\(configuration.units[i].id):\($0.name)" }
                }
                audit("reset \(name): cleared \(cleared), refused \(refused)", uid: uid,
                      ["MESSAGE_ID": "\(MessageID.reset)",
                       "BESS_UNIT": indices.count == 1 ? "\(name)" : .array(indices.map { "\(configuration.units[$0].id)" })])
                return ResetReply(cleared: cleared, refused: refused)
            }
        case .mode:
            guard let text = request.mode, let mode = OperatingMode(rawValue: text) else {
                return .now(Self.failure("BAD_REQUEST", "mode must be auto or standby"))
            }
            guard let target = target(request, configuration) else { return Self.unknownUnit(request) }
            // On disk before the cycle takes it, so before the reply says it holds (HoldKeeper).
            let unsaved = holds.operatorMode(mode, unit: { if case .unit(let i) = target { configuration.units[i].id } else { nil } }())
            let generation: UInt64
            let name: String
            switch target {
            case .site:
                generation = shared.post { $0.siteMode = mode }
                name = "the site"
            case .unit(let i):
                generation = shared.post { $0.mode[i] = mode }
                name = configuration.units[i].id
            }
            let indices: [Int] = if case .unit(let i) = target { [i] } else { Array(configuration.units.indices) }
            return .afterCycle(generation: generation) { [self] in
                // What the cycle made of it: `auto` lifts only the hold it names, so a unit another
                // hold keeps in standby (its own operator standby, the site's, the aggregator's) is named.
                let units = shared.units
                let held: [StandbyHold] = mode == .standby ? [] : indices.compactMap { i in
                    guard i < units.count, units[i].mode == .standby, let by = StatusReport.heldBy(units[i]) else { return nil }
                    return StandbyHold(unit: configuration.units[i].id, heldBy: by.who)
                }
                let ids = indices.map { configuration.units[$0].id }
                audit("mode \(mode.rawValue) for \(name) (operator)"
                        + (held.isEmpty ? "" : "; still in standby: " + held.map { "\($0.unit) (\($0.heldBy))" }.joined(separator: ", ")),
                      uid: uid, ["MESSAGE_ID": "\(MessageID.mode)", "BESS_MODE": "\(mode.rawValue)",
                                 "BESS_UNIT": ids.count == 1 ? "\(ids[0])" : .array(ids.map { "\($0)" })])
                var reply = ModeReply(mode: mode.rawValue, units: ids, stillStandby: held)
                reply.holdState = unsaved.map { "\($0); the mode holds while bessd runs but would not survive a restart" }
                return reply
            }
        case .override:
            guard case .unit(let index)? = target(request, configuration), request.unit != nil else {
                return request.unit == nil
                    ? .now(Self.failure("UNKNOWN_UNIT", "override needs --unit with a configured unit id")) : Self.unknownUnit(request)
            }
            let unitName = configuration.units[index].id
            if request.clear {
                return .afterCycle(generation: shared.post { $0.clearOverride[index] = true }) { [self] in
                    audit("override cleared on \(unitName)", uid: uid, ["MESSAGE_ID": "\(MessageID.override)", "BESS_UNIT": "\(unitName)"])
                    return OverrideReply()
                }
            }
            guard let kw = request.powerKW, kw.isFinite else {
                return .now(Self.failure("BAD_REQUEST", "power_kw must be a number"))
            }
            let rating = configuration.units[index].maxPowerKW
            guard abs(kw) <= rating else {
                return .now(Self.failure("BAD_REQUEST", "power_kw \(kw) is beyond the unit's rating ±\(rating) kW"))
            }
            guard let seconds = request.forSeconds, seconds >= 1, seconds <= 86_400 else {
                return .now(Self.failure("BAD_REQUEST", "an override needs an expiry: for_s from 1 to 86400 seconds"))
            }
            return .afterCycle(generation: shared.post { $0.override[index] = (Watts.kilowatts(kw), .seconds(fromDouble: seconds)) }) { [self] in
                audit("override \(unitName) to \(kw) kW for \(Int(seconds)) s (still inside every interlock)", uid: uid,
                      ["MESSAGE_ID": "\(MessageID.override)", "BESS_UNIT": "\(unitName)", "BESS_SETPOINT_W": "\(kw * 1000)"])
                return OverrideReply(unit: unitName, powerKW: kw, forS: seconds)
            }
        case .schedule, .scheduleLoad, .scheduleClear:
            return .now(schedule(request, uid: uid))
        case .plan:
            guard let optimiser else {
                return .now(Self.failure("OPTIMISER_DISABLED", "this configuration's optimiser is not enabled (optimiser.enabled, config/bessd.yaml)"))
            }
            return .now(optimiser.reply())
        case .unknown:
            let verbs = ControlVerb.known.map(\.name).joined(separator: ", ")
            return .now(Self.failure("BAD_REQUEST", "unknown verb '\(verb)'; verbs: \(verbs)"))
        }
    }
}

