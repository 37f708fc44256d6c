/// `events`: the frequency events bessd assessed since it started (issue 47 §3), the most recent
/// kept (oldest first, newest last), and how many there were in all.
public struct EventsReply: ControlReply, Equatable {
    public var events: [FrequencyEventReply]
    /// Events assessed since bessd started (the list keeps the last `kept`).
    public var total: UInt64
    /// How many the list keeps.
    public var kept: Int

    public init(events: [FrequencyEventReply], total: UInt64, kept: Int) {
        self.events = events
        self.total = total
        self.kept = kept
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.events, events)
        json.field(CodingKeys.kept, kept)
        json.field(okKey, true)
        json.field(CodingKeys.total, total)
        json.endObject()
    }
}

/// One frequency event as assessed: Unix seconds, W (+ = discharge), null for what bessd could not
/// know. The uplink's `frequency_event` record carries the same fields by the same names.
public struct FrequencyEventReply: Codable, Sendable, Equatable, JSONWritable {
    /// Why the response fell short, where bessd knows (`soc_limit`, `interlock`,
    /// `grid_operator_limit`, `unit_tripped`, `communication`, `capacity`); nil when nothing was
    /// missing or the cause is unknown.
    public var cause: String?
    /// The trip code behind an `interlock` or `unit_tripped` cause.
    public var causeCode: String?
    /// The unit the cause concerns.
    public var causeUnit: String?
    /// Delivered power averaged over the event, and at the response time.
    public var deliveredMeanW: Double?
    public var deliveredW: Double?
    /// `under` or `over`.
    public var direction: String
    /// When frequency came back (confirmed after the exit delay).
    public var end: Double
    /// The nadir (under) or zenith (over), Hz.
    public var extremeHz: Double?
    /// The largest |ROCOF| during the event, Hz/s.
    public var maxRocofHzPerS: Double?
    /// Site power before the event.
    public var preEventW: Double?
    /// Required power averaged over the event, and at the response time.
    public var requiredMeanW: Double?
    public var requiredW: Double?
    /// Delivered over required response over the event, 0…1 (1 = full).
    public var score: Double?
    /// The event's number since bessd started.
    public var sequence: UInt64
    /// What was missing at the response time in the response's direction (≥ 0).
    public var shortfallW: Double?
    /// When frequency left the deadband.
    public var start: Double

    public init(sequence: UInt64, start: Double, end: Double, direction: String, extremeHz: Double?, maxRocofHzPerS: Double?,
                preEventW: Double?, requiredW: Double?, deliveredW: Double?, requiredMeanW: Double?, deliveredMeanW: Double?,
                shortfallW: Double?, cause: String?, causeCode: String?, causeUnit: String?, score: Double?) {
        self.sequence = sequence
        self.start = start
        self.end = end
        self.direction = direction
        self.extremeHz = extremeHz
        self.maxRocofHzPerS = maxRocofHzPerS
        self.preEventW = preEventW
        self.requiredW = requiredW
        self.deliveredW = deliveredW
        self.requiredMeanW = requiredMeanW
        self.deliveredMeanW = deliveredMeanW
        self.shortfallW = shortfallW
        self.cause = cause
        self.causeCode = causeCode
        self.causeUnit = causeUnit
        self.score = score
    }

    enum CodingKeys: String, CodingKey {
        case cause, direction, end, score, sequence, start
        case causeCode = "cause_code", causeUnit = "cause_unit", deliveredMeanW = "delivered_mean_w", deliveredW = "delivered_w"
        case extremeHz = "extreme_hz", maxRocofHzPerS = "max_rocof_hz_per_s", preEventW = "pre_event_w"
        case requiredMeanW = "required_mean_w", requiredW = "required_w", shortfallW = "shortfall_w"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.cause, cause)
        json.field(CodingKeys.causeCode, causeCode)
        json.field(CodingKeys.causeUnit, causeUnit)
        json.field(CodingKeys.deliveredMeanW, deliveredMeanW)
        json.field(CodingKeys.deliveredW, deliveredW)
        json.field(CodingKeys.direction, direction)
        json.field(CodingKeys.end, end)
        json.field(CodingKeys.extremeHz, extremeHz)
        json.field(CodingKeys.maxRocofHzPerS, maxRocofHzPerS)
        json.field(CodingKeys.preEventW, preEventW)
        json.field(CodingKeys.requiredMeanW, requiredMeanW)
        json.field(CodingKeys.requiredW, requiredW)
        json.field(CodingKeys.score, score)
        json.field(CodingKeys.sequence, sequence)
        json.field(CodingKeys.shortfallW, shortfallW)
        json.field(CodingKeys.start, start)
        json.endObject()
    }
}
