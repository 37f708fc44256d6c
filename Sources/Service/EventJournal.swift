import BessSystem
import Config
import ControlCore
import Cycle
import Logging
import Uplink

/// The cycle's events as journal entries and uplink records. Which `MESSAGE_ID`, priority,
/// `BESS_CODE` and extra fields an event gets is one table (`entry(for:)`); the same event of the
/// same unit within 10 s is counted, not repeated (latches and resets are never held back).
final class EventJournal {
    /// How one kind of event is journalled.
    struct Entry: Equatable {
        /// `MESSAGE_ID` (journalctl's catalogue key).
        var messageID: String
        /// Syslog priority: 2 critical, 3 error, 4 warning, 5 notice, 6 info.
        var priority: Int
        /// `BESS_CODE` for an event of the site that carries no trip code.
        var code: String? = nil
        /// `BESS_POINT`: the SCADA point whose write reverted.
        var point: String? = nil
        /// `BESS_LIMIT`: which grid limit (import, export) binds or is released.
        var namesLimit = false
    }

    /// The table from an event to its journal entry.
    static func entry(for event: ControlEvent) -> Entry {
        switch event.kind {
        case .raised:
            let priority = switch event.severity { case .warn?, .derate?: 4; default: 3 }
            return Entry(messageID: MessageID.trip, priority: priority)
        case .latched: return Entry(messageID: MessageID.latch, priority: 2)
        case .cleared: return Entry(messageID: MessageID.clear, priority: 5)
        case .resetAccepted: return Entry(messageID: MessageID.reset, priority: 5)
        case .resetRefused: return Entry(messageID: MessageID.reset, priority: 4)
        case .stateChanged: return Entry(messageID: MessageID.state, priority: 6)
        case .commandRejected: return Entry(messageID: MessageID.commandRejected, priority: 4)
        case .siteShortfall: return Entry(messageID: MessageID.site, priority: 4, code: "SITE_SHORTFALL")
        case .siteShortfallCleared: return Entry(messageID: MessageID.site, priority: 5, code: "SITE_SHORTFALL")
        case .meterStale: return Entry(messageID: MessageID.site, priority: 4, code: "METER_STALE")
        case .meterFresh: return Entry(messageID: MessageID.site, priority: 5, code: "METER_STALE")
        case .gridLimitBinding, .gridLimitReleased:
            return Entry(messageID: MessageID.site, priority: 5, code: "GRID_LIMIT_BINDING", namesLimit: true)
        case .operatorLimitReverted:
            return Entry(messageID: MessageID.scadaWrite, priority: 4, code: "SCADA_LIMIT_REVERTED", point: "WMaxLimPct")
        case .siteSetpointReverted:
            return Entry(messageID: MessageID.scadaWrite, priority: 4, code: "SCADA_SETPOINT_REVERTED", point: "WSet")
        case .siteReactiveReverted:
            return Entry(messageID: MessageID.scadaWrite, priority: 4, code: "SCADA_SETPOINT_REVERTED", point: "VarSet")
        case .sitePowerFactorInjectingReverted:
            return Entry(messageID: MessageID.scadaWrite, priority: 4, code: "SCADA_SETPOINT_REVERTED", point: "PFWInj")
        case .sitePowerFactorAbsorbingReverted:
            return Entry(messageID: MessageID.scadaWrite, priority: 4, code: "SCADA_SETPOINT_REVERTED", point: "PFWAbs")
        case .agcSignalLost: return Entry(messageID: MessageID.agc, priority: 4, code: "AGC_SIGNAL_LOST")
        case .agcSignalRestored: return Entry(messageID: MessageID.agc, priority: 5, code: "AGC_SIGNAL_LOST")
        case .frequencySourceFallback: return Entry(messageID: MessageID.site, priority: 4, code: "FREQUENCY_SOURCE_FALLBACK")
        case .frequencySourceRestored: return Entry(messageID: MessageID.site, priority: 5, code: "FREQUENCY_SOURCE_FALLBACK")
        case .responseReserveReached: return Entry(messageID: MessageID.site, priority: 5, code: "RESPONSE_RESERVE_REACHED")
        case .responseReserveCleared: return Entry(messageID: MessageID.site, priority: 5, code: "RESPONSE_RESERVE_REACHED")
        case .scheduleFallback: return Entry(messageID: MessageID.site, priority: 4, code: "SCHEDULE_FALLBACK")
        case .scheduleResumed: return Entry(messageID: MessageID.site, priority: 5, code: "SCHEDULE_FALLBACK")
        }
    }

    private let logger: Logger
    /// Each unit|kind|code|state logged at most once in 10 s; the next line logged says how many
    /// were not.
    private var suppressed = PeerBudget<String>(window: .seconds(10), lines: 1, keys: 4096, report: .withNextLine)
    /// Interlock actions logged since start, per code (written here, read by /metrics).
    private let tripCounts = PILock<[String: Int]>([:])
    /// Whether each unit's response reserve holds, by `unit|direction`, from the reached and cleared
    /// events (every unit 0 each way while `sustain_s` keeps a reserve and none was reported).
    private let reserveHeld = PILock<[String: Bool]>([:])

    init(logger: Logger) { self.logger = logger }

    /// Logs `events` (taken from the cycle this round) and records them for the uplink.
    func log(_ events: [ControlEvent], now: MonotonicInstant, configuration: BessdConfiguration, recorder: UplinkRecorder?) {
        noteReserves(events, configuration: configuration)
        for event in events {
            let id = event.unit < 0 ? "site"
                : event.unit < configuration.units.count ? configuration.units[event.unit].id : "unit\(event.unit)"
            let key = "\(id)|\(event.kind)|\(event.code.map { "\($0.name)" } ?? "")|\(event.state.map { "\($0)" } ?? "")"
            let mayRepeat = event.kind == .latched || event.kind == .resetAccepted || event.kind == .resetRefused
            let admission = suppressed.admit(key, at: now, force: mayRepeat)
            guard admission.written else { continue }
            let repeats = admission.heldBack
            let entry = Self.entry(for: event)
            var metadata: Logger.Metadata = ["BESS_UNIT": "\(id)", "BESS_EVENT": "\(event.kind)", "MESSAGE_ID": "\(entry.messageID)"]
            if let code = entry.code ?? event.code.map({ "\($0.name)" }) { metadata["BESS_CODE"] = "\(code)" }
            if let point = entry.point { metadata["BESS_POINT"] = "\(point)" }
            if entry.namesLimit { metadata["BESS_LIMIT"] = "\(event.limit)" }
            if let severity = event.severity { metadata["BESS_SEVERITY"] = "\(severity.name)" }
            if event.value.isFinite { metadata["BESS_VALUE"] = "\(event.value)" }
            if event.threshold.isFinite { metadata["BESS_THRESHOLD"] = "\(event.threshold)" }
            if let state = event.state { metadata["BESS_STATE"] = "\(state)" }
            if let reserve = event.reserve { metadata["BESS_DIRECTION"] = "\(reserve.name)" }
            if repeats > 0 { metadata["BESS_SUPPRESSED"] = "\(repeats)" }
            if event.kind == .raised || event.kind == .latched, let code = event.code {
                tripCounts.withLock { $0["\(code.name)", default: 0] += 1 }
            }
            let text = EventText.line(event, unitID: id) + (repeats > 0 ? " (\(repeats) repeats suppressed)" : "")
            // Up: the trip code, else the entry's code where the aggregator takes it (AGC_SIGNAL_LOST).
            let uplinkCode = event.code.map { "\($0.name)" } ?? entry.code.flatMap { UplinkEventCode.names.contains($0) ? $0 : nil }
            recorder?.record(.event(unit: id, kind: "\(event.kind)", code: uplinkCode, message: text))
            switch entry.priority {
            case 2: logger.critical("\(text)", metadata: metadata)
            case 3: logger.error("\(text)", metadata: metadata)
            case 4: logger.warning("\(text)", metadata: metadata)
            case 5: logger.notice("\(text)", metadata: metadata)
            default: logger.info("\(text)", metadata: metadata)
            }
        }
    }

    /// `bessd_interlock_actions_total`: interlock actions logged since start, by code; and
    /// `bessd_response_reserve_held` by unit and direction.
    func metrics(into m: inout MetricsText) {
        let counts = tripCounts.withLock { $0 }
        m.metric("bessd_interlock_actions_total", "counter", "Interlock actions logged since start, by code.",
                 counts.sorted { $0.key < $1.key }.map { ("code=\"\($0.key)\"", Double($0.value)) })
        let held = reserveHeld.withLock { $0 }
        m.metric("bessd_response_reserve_held", "gauge",
                 "1 while the unit's SOC is at its frequency-response reserve in that direction (dispatch stops on it that way).",
                 held.sorted { $0.key < $1.key }.map { key, value in
                     let parts = key.split(separator: "|", maxSplits: 1)
                     return ("unit=\"\(MetricsText.label(String(parts[0])))\",direction=\"\(parts.count > 1 ? parts[1] : "")\"", value ? 1 : 0)
                 })
    }

    /// Keeps `reserveHeld` by the reached and cleared events, each unit starting at 0 both ways
    /// while the configuration keeps a reserve.
    private func noteReserves(_ events: [ControlEvent], configuration: BessdConfiguration) {
        let units = configuration.units
        let keeps = configuration.grid.droop.sustain > .zero
        reserveHeld.withLock { held in
            if keeps, held.count != units.count * 2 || units.contains(where: { held["\($0.id)|discharge"] == nil }) {
                held = Dictionary(uniqueKeysWithValues: units.flatMap { u in ReserveDirection.allCases.map { ("\(u.id)|\($0.name)", held["\(u.id)|\($0.name)"] ?? false) } })
            }
            if !keeps, !held.isEmpty { held = [:] }
            for event in events {
                guard let direction = event.reserve, event.unit >= 0, event.unit < units.count else { continue }
                held["\(units[event.unit].id)|\(direction.name)"] = event.kind == .responseReserveReached
            }
        }
    }
}
