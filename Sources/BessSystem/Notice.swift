public import BessBase
import ControlCore

/// What a component tells the operator, on its way to the journal: a line for a person with, where
/// there is one, its stable code (`BESS_CODE`), how serious it is (`PRIORITY`), which catalogue entry
/// it belongs to (`MESSAGE_ID`, by its topic), the battery units it concerns (`BESS_UNIT`, one field
/// per unit) and typed fields (`BESS_PEER`…). Every component builds these; the service writes them,
/// all through one function, so `journalctl BESS_CODE=… -p warning` finds what the docs promise.
public struct Notice: Sendable, Equatable, CustomStringConvertible {
    public typealias Severity = NoticeSeverity

    /// A stable code (`MODBUS_CONNECT_FAILED`, `SCADA_WRITE`…), or nil for a plain notice.
    public var code: String?
    public var severity: NoticeSeverity
    /// The journal catalogue entry (`MESSAGE_ID`) the notice belongs to.
    public var topic: NoticeTopic
    /// The line for a person.
    public var message: String
    /// The configured unit ids (`bess_units[].id`, or `site`) the notice concerns; empty when it
    /// concerns none in particular.
    public var units: [String]
    /// Further journal fields (`BESS_PEER`, `BESS_POINT`…).
    public var fields: [NoticeField: String]

    /// A notice of a typed code: its code, severity and topic from the code's table, unless
    /// `severity` says otherwise (a code raised and cleared at two levels).
    public init(_ code: some NoticeCode, _ message: String, _ fields: [NoticeField: String] = [:], units: [String] = [],
                severity: NoticeSeverity? = nil) {
        self.init(message, topic: code.topic, severity: severity ?? code.severity, code: code.code, units: units, fields: fields)
    }

    /// A notice whose line opens with its code, as a failure's description does: `CODE: message`.
    public init(_ code: some NoticeCode, titled message: String, _ fields: [NoticeField: String] = [:], units: [String] = [],
                severity: NoticeSeverity? = nil) {
        self.init(code, "\(code.code): \(message)", fields, units: units, severity: severity)
    }

    /// A code's condition cleared, at notice unless `severity` says otherwise: `CODE cleared: message`.
    public init(cleared code: some NoticeCode, _ message: String, _ fields: [NoticeField: String] = [:], units: [String] = [],
                severity: NoticeSeverity = .notice) {
        self.init(code, "\(code.code) cleared: \(message)", fields, units: units, severity: severity)
    }

    /// A notice whose code is not in a typed table (an error's own `code`), or that has none.
    public init(_ message: String, topic: NoticeTopic, severity: NoticeSeverity = .notice, code: String? = nil,
                units: [String] = [], fields: [NoticeField: String] = [:]) {
        self.message = message
        self.severity = severity
        self.topic = topic
        self.code = code
        self.units = units
        self.fields = fields
    }

    /// A failure's notice: the error's own code (`MODBUS_TIMEOUT`, `CAN_BUS_OFF`…), at warning
    /// unless `severity` says otherwise.
    public init<Code>(_ message: String, failure error: CodedError<Code>, topic: NoticeTopic, severity: NoticeSeverity = .warning,
                      units: [String] = [], fields: [NoticeField: String] = [:]) {
        self.init(message, topic: topic, severity: severity, code: "\(error.code)", units: units, fields: fields)
    }

    public var description: String { message }
}

/// How serious a notice is: the journal's `PRIORITY` (syslog levels).
public enum NoticeSeverity: Int, Sendable, Comparable, CaseIterable {
    case critical = 2
    case error = 3
    /// A device, link or peer failed or misbehaved.
    case warning = 4
    /// Something worth knowing: a device discovered, a link answering again, a write accepted.
    case notice = 5
    case info = 6

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue > rhs.rawValue }
}

/// Which catalogue entry of the journal (`MESSAGE_ID`, docs/operations.md's event table) a notice
/// belongs to; the service maps each to its id.
public enum NoticeTopic: Sendable, Hashable, CaseIterable {
    /// A bus device or link, the PMU, the relay contacts' module.
    case device
    /// The SCADA server: its clients.
    case scada
    /// A SCADA write accepted or refused, a limit reverted, the relay contacts' limit.
    case scadaWrite
    /// The IEC 104 outstation: connections, protocol errors, negative answers.
    case iec104
    /// An IEC 104 command and its outcome.
    case iec104Command
    /// The IEEE 2030.5 client.
    case ieee2030_5
    /// The aggregator uplink.
    case uplink
    /// bessd starting, reloading, stopping.
    case lifecycle
    /// The system clock: its synchronisation, its steps.
    case clock
    /// A frequency event assessed, or assessments dropped.
    case frequencyEvent
}

/// A module's table of codes: each case names its `BESS_CODE`, its severity and its topic, so a
/// code is written once (`Notice(ScadaCode.writeRefused, "…")`), never as a bare string twice.
public protocol NoticeCode: Sendable {
    /// The stable `BESS_CODE`.
    var code: String { get }
    /// The level the code is journalled at.
    var severity: NoticeSeverity { get }
    /// Its catalogue entry.
    var topic: NoticeTopic { get }
}

extension NoticeCode where Self: RawRepresentable, Self.RawValue == String {
    public var code: String { rawValue }
}

/// A journal field a notice carries beside its message: a typed key for `BESS_…` names, so a field
/// is named once. Modules add their own (`extension NoticeField { static let … }`).
public struct NoticeField: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `BESS_` followed by `name` (upper case, digits and `_`).
    public init(_ name: String) { rawValue = "BESS_" + name }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `BESS_PEER`: the remote end (`host:port`).
    public static let peer = NoticeField("PEER")
    /// `BESS_POINT`: a SCADA point.
    public static let point = NoticeField("POINT")
    /// `BESS_OLD`, `BESS_NEW`: a written value before and after.
    public static let old = NoticeField("OLD")
    public static let new = NoticeField("NEW")
    /// `BESS_EXPIRES_S`: seconds until a write reverts.
    public static let expiresS = NoticeField("EXPIRES_S")
    /// `BESS_SUPPRESSED`: lines held back by a journal budget.
    public static let suppressed = NoticeField("SUPPRESSED")
    /// `BESS_EXCEPTION`: a Modbus exception code.
    public static let exception = NoticeField("EXCEPTION")
    /// `BESS_REGISTER`: a Modbus register address.
    public static let register = NoticeField("REGISTER")
    /// `BESS_REASON`: why something was refused.
    public static let reason = NoticeField("REASON")
    /// `BESS_COUNT`: how many.
    public static let count = NoticeField("COUNT")
    /// `BESS_GROUP`: a redundancy group.
    public static let group = NoticeField("GROUP")
    /// `BESS_TLS_ERROR`: the TLS library's reason.
    public static let tlsError = NoticeField("TLS_ERROR")
}
