import BessSystem
import Outstation
import Synchronization
import Uplink

extension OutstationServer {
    /// The IEC 104 outstation's counters on /metrics (docs/iec104.md).
    func metrics(into m: inout MetricsText) {
        func value(_ counter: borrowing Atomic<UInt64>) -> Double { Double(counter.load(ordering: .relaxed)) }
        m.metric("bessd_iec104_commands_total", "counter", "IEC 104 commands (selects and executes), by result.",
                 [("result=\"accepted\"", value(counters.commandsAccepted)), ("result=\"refused\"", value(counters.commandsRefused))])
        m.metric("bessd_iec104_interrogations_total", "counter", "IEC 104 station and group interrogations answered.", [("", value(counters.interrogations))])
        m.metric("bessd_iec104_negative_answers_total", "counter", "ASDUs answered with COT 44–47 and P/N = 1.", [("", value(counters.negativeAnswers))])
        m.metric("bessd_iec104_protocol_errors_total", "counter", "IEC 104 connections closed for a malformed frame or a link error.",
                 [("", value(counters.protocolErrors))])
        m.metric("bessd_iec104_connections_refused_total", "counter", "IEC 104 connections closed at accept (groups' allow_from, max_connections).",
                 [("", value(counters.connectionsRefused))])
        m.metric("bessd_iec104_events_total", "counter", "Spontaneous events queued, and dropped from a full group queue (oldest first).",
                 [("outcome=\"queued\"", value(counters.eventsQueued)), ("outcome=\"dropped\"", value(counters.eventsDropped))])
        m.metric("bessd_iec104_connections", "gauge", "IEC 104 connections open now.", [("", Double(counters.connected.load(ordering: .relaxed)))])
    }
}

/// Every IEC 104 command outcome beyond its journal line (issue 46 §3): each counted by result and
/// code for /metrics, whether or not the journal's budget wrote its line; posted to the uplink as
/// an event of kind `iec104_command` whose code is the journal's `BESS_CODE` and whose message is
/// the journal's sentence, escaped and bounded, when the line was written, and per address and
/// window one event with the count of refusals the budget held back (so a hostile peer costs the
/// uplink what it costs the journal). Called on the outstation's thread (its audit hook), never
/// the cycle's; the spool is written by the service loop's next round, which the post wakes.
final class OutstationAudit: Sendable {
    /// The uplink event's kind.
    static let kind = "iec104_command"
    /// The longest message sent up, in Unicode scalars (the journal keeps the whole line).
    static let messageLimit = 400
    /// Commands by result and code: `IEC104_COMMAND` for the accepted, the refusal's code for the
    /// refused (`BESS_REASON`: `AGC_OUTSIDE_BAND`, `COMMAND_NOT_ALLOWED`, …).
    private let outcomes = PILock<[Outcome: UInt64]>([:])
    private let inbox: RecordInbox?
    private let wakeup: Wakeup?

    struct Outcome: Hashable {
        var accepted: Bool
        var code: String
    }

    /// - Parameters:
    ///   - inbox: the uplink recorder's inbox; nil without `aggregator:`.
    ///   - wakeup: the service loop's wakeup, so the event is spooled at once.
    init(inbox: RecordInbox?, wakeup: Wakeup?) {
        self.inbox = inbox
        self.wakeup = wakeup
    }

    /// Takes one entry of the outstation's audit hook.
    func record(_ entry: OutstationAuditEntry) {
        switch entry {
        case let .outcome(code, message, fields, journalled):
            note(code, message, fields, journalled: journalled)
        case let .refusalsSuppressed(_, _, message):
            post(code: OutstationLogCode.commandRefused.rawValue, message: message)
        }
    }

    /// Counts one outcome and, when its journal line was written, sends it up; anything the
    /// outstation logs that is not a command passes.
    func note(_ code: OutstationLogCode, _ message: String, _ fields: [NoticeField: String], journalled: Bool = true) {
        guard code.isCommand else { return }
        let accepted = code == .command
        let outcome = Outcome(accepted: accepted, code: accepted ? code.rawValue : Self.reasonCode(fields[.reason]))
        outcomes.withLock { $0[outcome, default: 0] += 1 }
        if journalled { post(code: code.rawValue, message: message) }
    }

    private func post(code: String, message: String) {
        guard let inbox else { return }
        inbox.post(.event(unit: "site", kind: Self.kind, code: code, message: Self.uplinkText(message)))
        wakeup?.signal()
    }

    /// A refusal's code as a label: upper-case letters, digits and `_`, at most 48; else `OTHER`.
    static func reasonCode(_ reason: String?) -> String {
        guard let reason, (1...48).contains(reason.utf8.count),
              reason.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") })
        else { return "OTHER" }
        return reason
    }

    /// The journal's sentence for the uplink: printable ASCII kept, everything else (a TLS subject's
    /// line breaks, escapes, non-ASCII) as `\u{hex}`, cut with `…` after `messageLimit` scalars.
    static func uplinkText(_ message: String) -> String {
        String(PeerText.quoted(message, limit: messageLimit).dropFirst().dropLast())
    }

    /// `bessd_iec104_command_outcomes_total{result,code}`.
    func metrics(into m: inout MetricsText) {
        let counts = outcomes.withLock { $0 }.sorted { ($0.key.accepted ? 0 : 1, $0.key.code) < ($1.key.accepted ? 0 : 1, $1.key.code) }
        m.metric("bessd_iec104_command_outcomes_total", "counter",
                 "IEC 104 commands by result and code: IEC104_COMMAND when accepted, the refusal's code (BESS_REASON) when refused.",
                 counts.map { ("result=\"\($0.key.accepted ? "accepted" : "refused")\",code=\"\(MetricsText.label($0.key.code))\"", Double($0.value)) })
    }
}
