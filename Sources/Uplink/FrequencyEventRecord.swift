import Foundation

/// One frequency event as bessd assessed it (issue 47 §3), in a `frequency_event` record: the same
/// fields, by the same names, as an entry of `bessctl events --json`. Times are Unix seconds, powers
/// W (+ = discharge); a quantity bessd could not know (NaN in the assessment) is written as null.
public struct FrequencyEventRecord: Codable, Sendable, Equatable {
    /// The event's number since bessd started (1, 2, …).
    public var sequence: UInt64
    /// When frequency left the deadband, and when it came back.
    public var start: Double
    public var end: Double
    /// `under` or `over`.
    public var direction: String
    /// The nadir (under) or zenith (over), Hz.
    public var extremeHz: Double?
    /// The largest |ROCOF| during the event, Hz/s; null when unknown.
    public var maxRocofHzPerS: Double?
    /// Site power before the event.
    public var preEventW: Double?
    /// What the response settings required, and what the site delivered, at the response time.
    public var requiredW: Double?
    public var deliveredW: Double?
    /// The same, averaged over the event.
    public var requiredMeanW: Double?
    public var deliveredMeanW: Double?
    /// What was missing at the response time in the response's direction (≥ 0).
    public var shortfallW: Double?
    /// Why, where bessd knows: `soc_limit`, `interlock`, `grid_operator_limit`, `unit_tripped`,
    /// `communication`, `capacity`; null when nothing was missing or the cause is unknown.
    public var cause: String?
    /// The trip code behind an `interlock` or `unit_tripped` cause.
    public var causeCode: String?
    /// The unit the cause concerns.
    public var causeUnit: String?
    /// Delivered response over required response over the event, 0…1 (1 = full).
    public var score: Double?

    /// The causes a record may name.
    public static let causes: Set<String> = ["soc_limit", "interlock", "grid_operator_limit", "unit_tripped", "communication", "capacity"]
    /// The directions a record may name.
    public static let directions: Set<String> = ["under", "over"]

    /// The event from its JSON object (what `bessctl events --json` lists for it): bessd makes the
    /// record from the control socket's own entry, so the two carry the same fields by construction.
    public init(json: [UInt8]) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(json))
    }

    enum CodingKeys: String, CodingKey {
        case sequence, start, end, direction, cause, score
        case extremeHz = "extreme_hz", maxRocofHzPerS = "max_rocof_hz_per_s", preEventW = "pre_event_w"
        case requiredW = "required_w", deliveredW = "delivered_w", requiredMeanW = "required_mean_w"
        case deliveredMeanW = "delivered_mean_w", shortfallW = "shortfall_w", causeCode = "cause_code", causeUnit = "cause_unit"
    }

    /// Every field, an unknown quantity as null (not left out: a reader sees "unknown", not "missing").
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(direction, forKey: .direction)
        for (key, value) in [(CodingKeys.extremeHz, extremeHz), (.maxRocofHzPerS, maxRocofHzPerS), (.preEventW, preEventW),
                             (.requiredW, requiredW), (.deliveredW, deliveredW), (.requiredMeanW, requiredMeanW),
                             (.deliveredMeanW, deliveredMeanW), (.shortfallW, shortfallW), (.score, score)] {
            // JSON has no NaN: a value that is not finite is unknown.
            try c.encode(value.flatMap { $0.isFinite ? $0 : nil }, forKey: key)
        }
        try c.encode(cause, forKey: .cause)
        try c.encode(causeCode, forKey: .causeCode)
        try c.encode(causeUnit, forKey: .causeUnit)
    }
}
