import BessSystem
import Logging

/// The one path from a component's `Notice` to the journal: its topic's `MESSAGE_ID`, its code in
/// `BESS_CODE`, the units it concerns in `BESS_UNIT` (one field per unit), its typed fields, and its
/// severity as the level. Every worker, server and client hands its notices here.
struct Journal: Sendable {
    let logger: Logger

    init(_ logger: Logger) { self.logger = logger }

    /// Writes `notice` as one journal entry.
    func write(_ notice: Notice) {
        let metadata = Self.metadata(notice)
        switch notice.severity {
        case .critical: logger.critical("\(notice.message)", metadata: metadata)
        case .error: logger.error("\(notice.message)", metadata: metadata)
        case .warning: logger.warning("\(notice.message)", metadata: metadata)
        case .notice: logger.notice("\(notice.message)", metadata: metadata)
        case .info: logger.info("\(notice.message)", metadata: metadata)
        }
    }

    /// The entry's fields beside MESSAGE and PRIORITY.
    static func metadata(_ notice: Notice) -> Logger.Metadata {
        var metadata: Logger.Metadata = [:]
        if let id = messageID(notice.topic) { metadata["MESSAGE_ID"] = "\(id)" }
        for (field, value) in notice.fields { metadata[field.rawValue] = "\(value)" }
        if let code = notice.code { metadata["BESS_CODE"] = "\(code)" }
        let units = notice.units.filter { !$0.isEmpty }
        if units.count == 1 { metadata["BESS_UNIT"] = "\(units[0])" }
        if units.count > 1 { metadata["BESS_UNIT"] = .array(units.map { "\($0)" }) }
        return metadata
    }

    /// The catalogue entry of a topic (docs/operations.md's event table); the uplink's lines have none.
    static func messageID(_ topic: NoticeTopic) -> String? {
        switch topic {
        case .device: MessageID.device
        case .scada: MessageID.scada
        case .scadaWrite: MessageID.scadaWrite
        case .iec104: MessageID.iec104
        case .iec104Command: MessageID.iec104Command
        case .ieee2030_5: MessageID.ieee2030_5
        case .uplink: nil
        case .lifecycle: MessageID.lifecycle
        case .clock: MessageID.clock
        case .frequencyEvent: MessageID.frequencyEvent
        }
    }
}

/// The service's own codes about the threads it watches and the notices it carries.
enum ServiceCode: String, NoticeCode, CaseIterable {
    /// Worker notices dropped at the queue's bound before the journal took them.
    case noticesDropped = "NOTICES_DROPPED"
    /// The service loop did not turn for longer than it may (said once it turns again).
    case serviceStalled = "SERVICE_STALLED"
    /// A bus or CAN worker has not turned for longer than it may; cleared at notice.
    case workerStalled = "WORKER_STALLED"
    /// Frequency-event assessments dropped at the bound before the service took them.
    case frequencyEventsDropped = "FREQUENCY_EVENTS_DROPPED"
    /// Records posted for the uplink dropped at the inbox's bound (said once per episode).
    case uplinkInboxDropped = "UPLINK_INBOX_DROPPED"

    var severity: NoticeSeverity { self == .noticesDropped ? .warning : .error }
    var topic: NoticeTopic {
        switch self {
        case .serviceStalled: .lifecycle
        case .noticesDropped, .workerStalled: .device
        case .frequencyEventsDropped: .frequencyEvent
        case .uplinkInboxDropped: .uplink
        }
    }
}
