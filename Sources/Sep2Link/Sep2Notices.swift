public import BessBase
public import BessSystem
import ControlCore

/// What the 2030.5 worker tells the journal beside its errors' own codes (`SEP2Error`,
/// `ScheduleStoreError`, `HTTPClientError`): each code once, with its severity; all under the 2030.5
/// catalogue entry and the site.
public enum Sep2NoticeCode: String, NoticeCode, CaseIterable {
    /// A control or default now in force for a type.
    case controlTaken = "SEP2_CONTROL_TAKEN"
    /// A control document refused, with the reason.
    case controlRefused = "SEP2_CONTROL_REFUSED"
    /// A control taken without an element bessd does not apply, with the reason.
    case controlNotApplied = "SEP2_CONTROL_NOT_APPLIED"
    /// The server does not answer (once per outage).
    case serverUnreachable = "SEP2_SERVER_UNREACHABLE"
    /// A certificate presented that is not the pinned server's (once per certificate).
    case serverMismatch = "SEP2_SERVER_MISMATCH"
    /// The server answers again.
    case serverRestored = "SEP2_SERVER_RESTORED"
    /// The schedule rebuilt from the store at start.
    case scheduleCached = "SEP2_SCHEDULE_CACHED"
    /// DERControlResponses dropped: the outbox full, or one given up.
    case responseDropped = "SEP2_RESPONSE_DROPPED"
    /// The server refused a DERControlResponse.
    case responseRefused = "SEP2_RESPONSE_REFUSED"
    /// The client built at start: its server and its device's identity.
    case client = "SEP2_CLIENT"

    public var severity: NoticeSeverity {
        switch self {
        case .controlTaken, .serverRestored, .scheduleCached, .client: .notice
        default: .warning
        }
    }

    public var topic: NoticeTopic { .ieee2030_5 }
}

extension Notice {
    /// A 2030.5 line of `code`, its message opening with the code: `SEP2_…: message`.
    public static func sep2(_ code: Sep2NoticeCode, _ message: String) -> Notice {
        Notice(code, "\(code.rawValue): \(message)", units: ["site"])
    }

    /// A 2030.5 line of `code` whose message does not repeat the code.
    public static func sep2(_ code: Sep2NoticeCode, plain message: String) -> Notice { Notice(code, message, units: ["site"]) }

    /// A 2030.5 worker's failure under its error's own code (a warning); the message is the error's
    /// description and what follows.
    public static func sep2<Code>(failure error: CodedError<Code>, _ message: String) -> Notice where Code: Hashable & Sendable & CustomStringConvertible {
        Notice(message, topic: .ieee2030_5, severity: .warning, code: "\(error.code)", units: ["site"])
    }
}
