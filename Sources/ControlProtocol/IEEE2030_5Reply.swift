/// The utility's IEEE 2030.5 server as bessd follows it (`ieee2030_5` of `status`, `bessctl
/// ieee2030-5`): the device's identity as installers enter it in the utility's portal, the server's
/// last answer, where the schedule comes from and the controls in force with their source and expiry.
public struct IEEE2030_5Reply: Codable, Sendable, Equatable, JSONWritable {
    /// The controls in force, one per type.
    public var controls: [IEEE2030_5ControlReply]
    /// What the last exchange failed with (coded), nil when it went well.
    public var lastError: String?
    /// When the server last answered (Unix seconds).
    public var lastAnswerUnix: Double?
    /// Its HTTP status.
    public var lastStatus: Int?
    /// The LFDI: 40 hex digits; nil (null) when unknown (the certificate cannot be read, no device stored).
    public var lfdi: String?
    /// The programs of the schedule in force (mRIDs).
    public var programs: [String]
    /// Whether the last exchange got an answer; nil before the first.
    public var reachable: Bool?
    /// `host:port`.
    public var server: String
    /// The server's time at the last publication (Unix seconds).
    public var serverTimeUnix: Double?
    /// The SFDI; nil (null) when unknown.
    public var sfdi: UInt64?
    /// Where the schedule comes from: `live`, `cached` (the state directory's copy) or `none`.
    public var source: String
    /// Why all traffic stopped (`SEP2_PIN_MISMATCH: …`), nil while it runs.
    public var stopped: String?
    /// The units asked to open (`opModConnect` or `opModEnergize` false) whose inverter cannot be
    /// (no usable SunSpec 123 `Conn`: absent, no `Conn_RvrtTms`, or refused): held at 0 W,
    /// `CONTACTOR_UNAVAILABLE`; nil (left out) when none.
    public var cannotOpen: [String]?

    /// A reply.
    public init(lfdi: String?, sfdi: UInt64?, server: String, source: String, controls: [IEEE2030_5ControlReply] = [], programs: [String] = [],
                reachable: Bool? = nil, lastStatus: Int? = nil, lastAnswerUnix: Double? = nil, lastError: String? = nil,
                stopped: String? = nil, serverTimeUnix: Double? = nil) {
        self.lfdi = lfdi
        self.sfdi = sfdi
        self.server = server
        self.source = source
        self.controls = controls
        self.programs = programs
        self.reachable = reachable
        self.lastStatus = lastStatus
        self.lastAnswerUnix = lastAnswerUnix
        self.lastError = lastError
        self.stopped = stopped
        self.serverTimeUnix = serverTimeUnix
    }

    enum CodingKeys: String, CodingKey {
        case controls, lfdi, programs, reachable, server, sfdi, source, stopped
        case cannotOpen = "cannot_open"
        case lastError = "last_error", lastAnswerUnix = "last_answer_unix", lastStatus = "last_status", serverTimeUnix = "server_time_unix"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        if let cannotOpen { json.field(CodingKeys.cannotOpen, cannotOpen) }
        json.field(CodingKeys.controls, controls)
        json.field(CodingKeys.lastAnswerUnix, lastAnswerUnix)
        json.field(CodingKeys.lastError, lastError)
        if let lastStatus { json.field(CodingKeys.lastStatus, lastStatus) } else { json.field(CodingKeys.lastStatus, nil as Double?) }
        json.field(CodingKeys.lfdi, lfdi)
        json.field(CodingKeys.programs, programs)
        json.field(CodingKeys.reachable, reachable)
        json.field(CodingKeys.server, server)
        json.field(CodingKeys.serverTimeUnix, serverTimeUnix)
        if let sfdi { json.field(CodingKeys.sfdi, sfdi) } else { json.field(CodingKeys.sfdi, nil as Double?) }
        json.field(CodingKeys.source, source)
        json.field(CodingKeys.stopped, stopped)
        json.endObject()
    }
}

/// One control type in force: `{"type": "opModExpLimW", "value": "1500 W", "program": "B1", "control": "A1", "until_unix": 1795000160}`;
/// `control` and `until_unix` null for a program's default.
public struct IEEE2030_5ControlReply: Codable, Sendable, Equatable, JSONWritable {
    /// The DERControl's mRID; nil for the DefaultDERControl.
    public var control: String?
    /// The program's mRID.
    public var program: String
    /// The element (`opModExpLimW`).
    public var type: String
    /// When it ends (server time, Unix seconds); nil for a default.
    public var untilUnix: Int64?
    /// The value as the site applies it.
    public var value: String

    /// A control.
    public init(type: String, value: String, program: String, control: String?, untilUnix: Int64?) {
        self.type = type
        self.value = value
        self.program = program
        self.control = control
        self.untilUnix = untilUnix
    }

    enum CodingKeys: String, CodingKey { case control, program, type, value, untilUnix = "until_unix" }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.control, control)
        json.field(CodingKeys.program, program)
        json.field(CodingKeys.type, type)
        if let untilUnix { json.field(CodingKeys.untilUnix, untilUnix) } else { json.field(CodingKeys.untilUnix, nil as Double?) }
        json.field(CodingKeys.value, value)
        json.endObject()
    }
}
