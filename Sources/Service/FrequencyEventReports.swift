import BessSystem
import ControlCore
import ControlProtocol
import Cycle
import Glibc
import Logging
import Uplink

/// Every frequency event the cycle assessed (issue 47 §3; docs/frequency-events.md "Where
/// assessments go"), reported where each reader looks: a journal entry (`MESSAGE_ID`
/// `MessageID.frequencyEvent`, `BESS_*` fields), an uplink `frequency_event` record, the recent
/// list `bessctl events` reads, and /metrics. The service thread records; the server thread reads
/// the list and the metrics. (The IEC 104 outstation reads its points from `SharedState` itself.)
final class FrequencyEventReports: Sendable {
    /// How many events `bessctl events` lists (the most recent).
    static let kept = 100

    private struct State {
        var recent: [FrequencyEventReply] = []
        /// Assessed since start, those the bound between cycle and service dropped included.
        var total: UInt64 = 0
    }

    private let state = PILock(State())
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Records what the service took from the cycle this round: each assessment journalled, into the
    /// uplink and into the list, oldest first; assessments the bound dropped are logged and counted.
    func record(_ taken: (assessments: [FrequencyEventAssessment], dropped: UInt64), unitIDs: [String], recorder: UplinkRecorder?) {
        if taken.dropped > 0 {
            state.withLock { $0.total &+= taken.dropped }
            Journal(logger).write(Notice(ServiceCode.frequencyEventsDropped, titled: "\(taken.dropped) frequency-event assessments were dropped before "
                                         + "the service took them (it stalled); they are counted but not reported", [.count: "\(taken.dropped)"]))
        }
        for assessment in taken.assessments {
            let event = FrequencyEventReply(assessment, unitIDs: unitIDs)
            state.withLock { s in
                s.total &+= 1
                s.recent.append(event)
                if s.recent.count > Self.kept { s.recent.removeFirst(s.recent.count - Self.kept) }
            }
            journal(event)
            // The record is the control socket's entry itself: one type (ControlCore's FrequencyEventSummary).
            recorder?.record(.frequencyEvent(event))
        }
    }

    /// `events`: the recent list, oldest first, and the count since start.
    func reply() -> EventsReply {
        state.withLock { EventsReply(events: $0.recent, total: $0.total, kept: Self.kept) }
    }

    /// `bessd_frequency_events_total`, and the last event's score and shortfall (absent before one).
    func metrics(into m: inout MetricsText) {
        let (total, last) = state.withLock { ($0.total, $0.recent.last) }
        m.metric("bessd_frequency_events_total", "counter", "Frequency events assessed since start.", [("", Double(total))])
        m.metric("bessd_frequency_event_score", "gauge",
                 "The last frequency event's score: delivered over required response over the event, 0 to 1 (1 = full).",
                 [("", last?.score ?? .nan)])
        m.metric("bessd_frequency_event_shortfall_watts", "gauge",
                 "The last frequency event's shortfall at the response time, W (in the response's direction).",
                 [("", last?.shortfallW ?? .nan)])
        m.metric("bessd_frequency_event_max_shortfall_watts", "gauge",
                 "The last frequency event's largest shortfall in any cycle, W.", [("", last?.maxShortfallW ?? .nan)])
        m.metric("bessd_frequency_event_unit_shortfall_watts", "gauge",
                 "The last frequency event's shortfall of each unit at the response time, W (in its response's direction).",
                 (last?.units ?? []).map { ("unit=\"\($0.unit)\"", $0.shortfallW ?? .nan) })
    }

    /// The journal entry: a warning when the site fell short, a notice when it delivered.
    func journal(_ e: FrequencyEventReply) {
        var metadata: Logger.Metadata = [
            "MESSAGE_ID": "\(MessageID.frequencyEvent)", "BESS_CODE": "FREQUENCY_EVENT", "BESS_UNIT": "site",
            "BESS_EVENT": "frequency_event", "BESS_SEQUENCE": "\(e.sequence)", "BESS_DIRECTION": "\(e.direction)",
            "BESS_START": "\(e.start)", "BESS_END": "\(e.end)",
        ]
        let quantities: [(String, Double?)] = [
            ("BESS_EXTREME_HZ", e.extremeHz), ("BESS_ROCOF_HZ_PER_S", e.maxRocofHzPerS), ("BESS_PRE_EVENT_W", e.preEventW),
            ("BESS_REQUIRED_W", e.requiredW), ("BESS_DELIVERED_W", e.deliveredW), ("BESS_REQUIRED_MEAN_W", e.requiredMeanW),
            ("BESS_DELIVERED_MEAN_W", e.deliveredMeanW), ("BESS_SHORTFALL_W", e.shortfallW), ("BESS_SCORE", e.score),
        ]
        for (key, value) in quantities + [("BESS_MAX_SHORTFALL_W", e.maxShortfallW)] { if let value { metadata[key] = "\(value)" } }
        if let metered = e.metered { metadata["BESS_METERED"] = "\(metered)" }
        // One repeated field, one value per itemised unit (at most FrequencyEventUnits.capacity).
        if let units = e.units, !units.isEmpty { metadata["BESS_UNIT_RESPONSE"] = .array(units.map { .string(Self.unitFields($0)) }) }
        if let omitted = e.unitsOmitted, omitted > 0 { metadata["BESS_UNITS_OMITTED"] = "\(omitted)" }
        if let cause = e.cause { metadata["BESS_CAUSE"] = "\(cause)" }
        if let code = e.causeCode { metadata["BESS_CAUSE_CODE"] = "\(code)" }
        if let unit = e.causeUnit { metadata["BESS_CAUSE_UNIT"] = "\(unit)" }
        let text = Self.line(e)
        if (e.shortfallW ?? 0) > 0 { logger.warning("\(text)", metadata: metadata) } else { logger.notice("\(text)", metadata: metadata) }
    }

    /// One line a person reads at 3 a.m.: `FREQUENCY_EVENT 3: under-frequency to 49.712 Hz …, short by
    /// 70.0 kW: a unit at its SOC limit (D1) …`.
    static func line(_ e: FrequencyEventReply) -> String {
        let way = e.direction == "under" ? "under-frequency to" : "over-frequency to"
        var text = "FREQUENCY_EVENT \(e.sequence): \(way) \(number(e.extremeHz, digits: 3)) Hz"
        if let rocof = e.maxRocofHzPerS { text += " (ROCOF up to \(number(rocof, digits: 3)) Hz/s)" }
        text += ", \(utc(e.start))–\(utc(e.end)) UTC (\(number(e.end - e.start, digits: 0)) s): required "
            + "\(kW(e.requiredW)) kW at the response time, delivered \(kW(e.deliveredW)) kW"
        let short = (e.shortfallW ?? 0) > 0
        text += short ? ", short by \(kW(e.shortfallW)) kW: \(reason(e))" : ": full response"
        text += "; over the event \(kW(e.requiredMeanW)) kW required and \(kW(e.deliveredMeanW)) kW delivered on average"
        text += ", score \(number(e.score, digits: 2))"
        if let worst = e.maxShortfallW, worst > 0 { text += ", worst cycle short by \(kW(worst)) kW" }
        if let metered = e.metered { text += metered ? "; measured at the connection point" : "; measured as the units' sum" }
        if let units = e.units, !units.isEmpty {
            text += "; per unit, required/delivered kW at the response time: "
                + units.map { "\($0.unit) \(kW($0.requiredW))/\(kW($0.deliveredW))" }.joined(separator: ", ")
            if let omitted = e.unitsOmitted, omitted > 0 { text += " (\(omitted) more not itemised)" }
        }
        return text
    }

    /// One unit's part as one journal value: `D1 required_w=16000.0 delivered_w=15800.0 …` (unit ids
    /// keep the id rule: no spaces).
    static func unitFields(_ u: FrequencyEventUnitSummary) -> String {
        let values: [(String, Double?)] = [("required_w", u.requiredW), ("delivered_w", u.deliveredW), ("required_mean_w", u.requiredMeanW),
                                           ("delivered_mean_w", u.deliveredMeanW), ("shortfall_w", u.shortfallW)]
        return ([u.unit] + values.map { "\($0.0)=\($0.1.map { "\($0)" } ?? "null")" }).joined(separator: " ")
    }

    /// Why the site fell short, in words.
    static func reason(_ e: FrequencyEventReply) -> String {
        let unit = e.causeUnit.map { " \($0)" } ?? ""
        let code = e.causeCode.map { " \($0)" } ?? ""
        switch e.cause ?? "" {
        case "soc_limit": return "a unit at its SOC limit" + (e.causeUnit.map { " (\($0))" } ?? "")
        case "interlock": return "interlock\(code)" + (e.causeUnit.map { " on \($0)" } ?? "") + " limited the units"
        case "grid_operator_limit": return "the grid operator's limit capped the site"
        case "unit_tripped": return "unit\(unit) tripped" + (e.causeCode.map { " (\($0))" } ?? "")
        case "communication": return "communication lost with" + (e.causeUnit.map { " \($0)" } ?? " a unit")
        case "capacity": return "beyond the site's rated power"
        default: return "cause unknown"
        }
    }

    static func kW(_ watts: Double?) -> String { number(watts.map { $0 / 1000 }, digits: 1) }

    static func number(_ value: Double?, digits: Int) -> String {
        guard let value, value.isFinite else { return "?" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        return digits == 0 ? "\(Int64(rounded))" : "\(rounded)"
    }

    /// HH:MM:SS UTC of a Unix time.
    static func utc(_ unix: Double) -> String {
        guard unix.isFinite else { return "?" }
        var t = time_t(unix.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}
