/// One IEEE 2030.5 control taken or refused, or the end of one taken (issue 48 §3): what bessd's
/// 2030.5 worker sends up in a `utility_control` record (docs/uplink.md "Record kinds added later").
/// Texts are as the server wrote them, cut to their bound; times are the server's (Unix seconds).
public struct UtilityControlRecord: Codable, Sendable, Equatable {
    /// The control's `mRID` as written (at most `maxIDBytes`); nil when a refused control's was unreadable
    /// or a whole document was refused.
    public var mRID: String?
    /// The mRID of its program (DERProgram), nil when bessd does not know it (a refusal).
    public var program: String?
    /// One of `outcomes`.
    public var outcome: String
    /// A refusal's code (`SEP2_VALUE_INVALID`, …); nil for the other outcomes.
    public var code: String?
    /// A refusal's DERControlResponse status: 252 (not applicable) or 253 (invalid); nil for a document
    /// refused whole and for the other outcomes.
    public var responseStatus: Int?
    /// Why, for a refusal (at most `maxReasonBytes`); nil for the other outcomes.
    public var reason: String?
    /// The control's window on the server's time, randomization applied; nil where unknown (a refusal)
    /// and for a DefaultDERControl (it has none).
    public var start: Int64?
    public var end: Int64?
    /// The limits it sets, W.
    public var limits: UtilityControlLimits
    /// The keys of the limits left out of `limits` because they lie beyond ±`maxLimitW` (a control may
    /// say 32767 × 10^9 W; ingest refuses such a record). Not a key of its own on the wire: the
    /// sentence says it, and a record read back has none.
    public var beyondRange: [String] = []

    public init(mRID: String?, program: String?, outcome: String, code: String? = nil, responseStatus: Int? = nil,
                reason: String? = nil, start: Int64? = nil, end: Int64? = nil, limits: UtilityControlLimits = UtilityControlLimits()) {
        self.mRID = mRID
        self.program = program
        self.outcome = outcome
        self.code = code
        self.responseStatus = responseStatus
        self.reason = reason
        self.start = start
        self.end = end
        self.limits = limits
    }

    /// The event kind the record rides under (`RecordBody.utilityControl`).
    public static let kind = "utility_control"
    public static let taken = "taken", refused = "refused", superseded = "superseded", cancelled = "cancelled", completed = "completed"
    /// Every outcome bessd writes.
    public static let outcomes: Set<String> = [taken, refused, superseded, cancelled, completed]
    /// The most UTF-8 bytes of an mRID (the control's, the program's); bessd cuts longer ones, ingest refuses them.
    public static let maxIDBytes = 64
    /// The most UTF-8 bytes of a reason.
    public static let maxReasonBytes = 256
    /// The most a limit may be, W (either sign).
    public static let maxLimitW = 1e12

    enum CodingKeys: String, CodingKey {
        case mRID = "mrid", program, outcome, code, responseStatus = "response_status", reason, start, end, limits
    }

    /// Every key written, null where absent: a reader sees "not known", not "missing".
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(mRID, forKey: .mRID)
        try c.encode(program, forKey: .program)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(code, forKey: .code)
        try c.encode(responseStatus, forKey: .responseStatus)
        try c.encode(reason, forKey: .reason)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(limits, forKey: .limits)
    }

    /// Leaves out (null) each limit beyond ±`maxLimitW`, naming it in `beyondRange`.
    public mutating func leaveOutBeyondRange() {
        let within = { (value: Double?) -> Double? in value.flatMap { abs($0) <= Self.maxLimitW ? $0 : nil } }
        beyondRange = limits.named.filter { !(abs($0.watts) <= Self.maxLimitW) }.map(\.name)
        guard !beyondRange.isEmpty else { return }
        limits = UtilityControlLimits(exportLimitW: within(limits.exportLimitW), importLimitW: within(limits.importLimitW),
                                      generationLimitW: within(limits.generationLimitW), loadLimitW: within(limits.loadLimitW),
                                      fixedW: within(limits.fixedW), maxLimW: within(limits.maxLimW), targetW: within(limits.targetW),
                                      storageTargetW: within(limits.storageTargetW))
    }

    /// `text` cut to at most `bytes` UTF-8 bytes, at a scalar's edge.
    public static func cut(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            count += String(scalar).utf8.count
            guard count <= bytes else { break }
            out.append(scalar)
        }
        return String(out)
    }

    /// The record's sentence, every text of the server's escaped: `UTILITY_CONTROL taken: control "A1"
    /// of program "P1", 1800000100–1800000160 (server time), opModExpLimW 1500 W`.
    public var sentence: String {
        var text = "UTILITY_CONTROL \(outcome): control " + (mRID.map { TextQuoting.quoted($0, limit: 64) } ?? "without a readable mRID")
        if let program { text += " of program \(TextQuoting.quoted(program, limit: 64))" }
        if let start, let end { text += ", \(start)–\(end) (server time)" }
        let set = limits.named.map { "\($0.name) \($0.watts) W" }
        if !set.isEmpty { text += ", " + set.joined(separator: ", ") }
        if !beyondRange.isEmpty { text += ", " + beyondRange.joined(separator: ", ") + " beyond ±10^12 W (left out)" }
        if let responseStatus { text += ", answered \(responseStatus)" }
        if let code { text += ": \(TextQuoting.quoted(code, limit: 48))" }
        if let reason { text += " \(TextQuoting.quoted(reason, limit: 256))" }
        return text
    }
}

/// The active-power limits and targets a utility control sets, W (absent: not set).
public struct UtilityControlLimits: Codable, Sendable, Equatable {
    public var exportLimitW: Double?
    public var importLimitW: Double?
    public var generationLimitW: Double?
    public var loadLimitW: Double?
    /// `opModFixedW` and `opModMaxLimW` in W of the site's rating.
    public var fixedW: Double?
    public var maxLimW: Double?
    public var targetW: Double?
    public var storageTargetW: Double?

    public init(exportLimitW: Double? = nil, importLimitW: Double? = nil, generationLimitW: Double? = nil, loadLimitW: Double? = nil,
                fixedW: Double? = nil, maxLimW: Double? = nil, targetW: Double? = nil, storageTargetW: Double? = nil) {
        self.exportLimitW = exportLimitW
        self.importLimitW = importLimitW
        self.generationLimitW = generationLimitW
        self.loadLimitW = loadLimitW
        self.fixedW = fixedW
        self.maxLimW = maxLimW
        self.targetW = targetW
        self.storageTargetW = storageTargetW
    }

    enum CodingKeys: String, CodingKey {
        case exportLimitW = "export_limit_w", importLimitW = "import_limit_w", generationLimitW = "generation_limit_w"
        case loadLimitW = "load_limit_w", fixedW = "fixed_w", maxLimW = "max_lim_w", targetW = "target_w"
        case storageTargetW = "storage_target_w"
    }

    /// Each limit set, by its key, in the keys' order.
    public var named: [(name: String, watts: Double)] {
        let all: [(String, Double?)] = [("export_limit_w", exportLimitW), ("import_limit_w", importLimitW),
                                        ("generation_limit_w", generationLimitW), ("load_limit_w", loadLimitW), ("fixed_w", fixedW),
                                        ("max_lim_w", maxLimW), ("target_w", targetW), ("storage_target_w", storageTargetW)]
        return all.compactMap { name, value in value.map { (name, $0) } }
    }

    /// A value as bessd writes it: finite, else not written (JSON has no infinity).
    public static func finite(_ value: Double?) -> Double? {
        guard let value, value.isFinite else { return nil }
        return value
    }
}
