public import ControlCore

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

/// One frequency event as assessed: the same type, fields and JSON keys as the uplink's
/// `frequency_event` record (ControlCore's `FrequencyEventSummary`).
public typealias FrequencyEventReply = FrequencyEventSummary

extension FrequencyEventSummary: JSONWritable {
    /// The socket's entry: keys in order, an unknown quantity as null.
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
        json.field(CodingKeys.maxShortfallW, maxShortfallW)
        json.field(CodingKeys.metered, metered)
        json.field(CodingKeys.preEventW, preEventW)
        json.field(CodingKeys.requiredMeanW, requiredMeanW)
        json.field(CodingKeys.requiredW, requiredW)
        json.field(CodingKeys.score, score)
        json.field(CodingKeys.sequence, sequence)
        json.field(CodingKeys.shortfallW, shortfallW)
        json.field(CodingKeys.start, start)
        json.field(CodingKeys.units, units)
        json.field(CodingKeys.unitsOmitted, unitsOmitted)
        json.endObject()
    }
}

extension FrequencyEventUnitSummary: JSONWritable {
    /// One unit's part: keys in order, an unknown quantity as null.
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.deliveredMeanW, deliveredMeanW)
        json.field(CodingKeys.deliveredW, deliveredW)
        json.field(CodingKeys.requiredMeanW, requiredMeanW)
        json.field(CodingKeys.requiredW, requiredW)
        json.field(CodingKeys.shortfallW, shortfallW)
        json.field(CodingKeys.unit, unit)
        json.endObject()
    }
}
