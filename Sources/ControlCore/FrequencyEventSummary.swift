/// One frequency event as assessed, as every report carries it (issue 47 §3): an entry of
/// `bessctl events --json` (ControlProtocol's `FrequencyEventReply`) and the uplink's
/// `frequency_event` record (Uplink's `FrequencyEventRecord`) are this one type, with one table of
/// JSON keys. Times are Unix seconds, powers W (+ = discharge); a quantity bessd could not know is
/// nil (null in JSON).
public struct FrequencyEventSummary: Codable, Sendable, Equatable {
    /// The event's number since bessd started (1, 2, …).
    public var sequence: UInt64
    /// When frequency left the deadband, and when it came back (confirmed after the exit delay).
    public var start: Double
    public var end: Double
    /// `under` or `over` (`FrequencyEventDirection.wireName`).
    public var direction: String
    /// The nadir (under) or zenith (over), Hz.
    public var extremeHz: Double?
    /// The largest |ROCOF| during the event, Hz/s.
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
    /// Why, where bessd knows (`FrequencyEventCause.wireName`); nil when nothing was missing or the
    /// cause is unknown.
    public var cause: String?
    /// The trip code behind an `interlock` or `unit_tripped` cause.
    public var causeCode: String?
    /// The unit the cause concerns.
    public var causeUnit: String?
    /// Delivered over required response over the event, 0…1 (1 = full).
    public var score: Double?
    /// Whether the site's powers are the connection point's meter (true) or the units' sum (false).
    /// Nil in a record from a bessd that did not say (as `max_shortfall_w`, `units` and `units_omitted`).
    public var metered: Bool?
    /// The largest shortfall of any cycle of the event, W (≥ 0).
    public var maxShortfallW: Double?
    /// Each unit's part, in configuration order (at most `FrequencyEventUnits.capacity`).
    public var units: [FrequencyEventUnitSummary]?
    /// Units of the site not itemised in `units`.
    public var unitsOmitted: Int?

    public init(sequence: UInt64, start: Double, end: Double, direction: String, extremeHz: Double?, maxRocofHzPerS: Double?,
                preEventW: Double?, requiredW: Double?, deliveredW: Double?, requiredMeanW: Double?, deliveredMeanW: Double?,
                shortfallW: Double?, cause: String?, causeCode: String?, causeUnit: String?, score: Double?,
                metered: Bool? = nil, maxShortfallW: Double? = nil, units: [FrequencyEventUnitSummary]? = nil, unitsOmitted: Int? = nil) {
        self.metered = metered
        self.maxShortfallW = maxShortfallW
        self.units = units
        self.unitsOmitted = unitsOmitted
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

    /// An assessment with its names: the direction and cause from their one table, the cause's unit
    /// by its id (`unitIDs` in configuration order), nil for what is not a number.
    public init(_ a: FrequencyEventAssessment, unitIDs: [String]) {
        func finite(_ x: Double) -> Double? { x.isFinite ? x : nil }
        self.init(
            sequence: a.sequence, start: a.start, end: a.end, direction: a.direction.wireName,
            extremeHz: finite(a.extremeHz), maxRocofHzPerS: finite(a.maxRocofHzPerSecond), preEventW: finite(a.preEventW),
            requiredW: finite(a.requiredW), deliveredW: finite(a.deliveredW), requiredMeanW: finite(a.requiredMeanW),
            deliveredMeanW: finite(a.deliveredMeanW), shortfallW: finite(a.shortfallW), cause: a.cause.wireName,
            causeCode: a.causeCode.map { "\($0.name)" },
            causeUnit: a.causeUnit >= 0 && a.causeUnit < unitIDs.count ? unitIDs[a.causeUnit] : nil, score: finite(a.score),
            metered: a.metered, maxShortfallW: finite(a.maxShortfallW),
            units: a.units.map { u in
                FrequencyEventUnitSummary(unit: u.unit >= 0 && u.unit < unitIDs.count ? unitIDs[u.unit] : "unit\(u.unit)",
                                          requiredW: finite(u.requiredW), deliveredW: finite(u.deliveredW),
                                          requiredMeanW: finite(u.requiredMeanW), deliveredMeanW: finite(u.deliveredMeanW),
                                          shortfallW: finite(u.shortfallW))
            },
            unitsOmitted: a.units.omitted)
    }

    /// The causes an event may name.
    public static let causes = Set(FrequencyEventCause.allCases.compactMap(\.wireName))
    /// The directions an event may name.
    public static let directions = Set(FrequencyEventDirection.allCases.map(\.wireName))

    /// The JSON keys: the one table.
    public enum CodingKeys: String, CodingKey {
        case cause, direction, end, score, sequence, start
        case causeCode = "cause_code", causeUnit = "cause_unit", deliveredMeanW = "delivered_mean_w", deliveredW = "delivered_w"
        case extremeHz = "extreme_hz", maxRocofHzPerS = "max_rocof_hz_per_s", preEventW = "pre_event_w"
        case requiredMeanW = "required_mean_w", requiredW = "required_w", shortfallW = "shortfall_w"
        case metered, maxShortfallW = "max_shortfall_w", units, unitsOmitted = "units_omitted"
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
                             (.deliveredMeanW, deliveredMeanW), (.shortfallW, shortfallW), (.score, score),
                             (.maxShortfallW, maxShortfallW)] {
            // JSON has no NaN: a value that is not finite is unknown.
            try c.encode(value.flatMap { $0.isFinite ? $0 : nil }, forKey: key)
        }
        try c.encode(cause, forKey: .cause)
        try c.encode(causeCode, forKey: .causeCode)
        try c.encode(causeUnit, forKey: .causeUnit)
        try c.encode(metered, forKey: .metered)
        try c.encode(units, forKey: .units)
        try c.encode(unitsOmitted, forKey: .unitsOmitted)
    }
}

/// One unit's part of a frequency event, as every report carries it: the unit by its id, powers W
/// (+ = discharge), null for what bessd could not know.
public struct FrequencyEventUnitSummary: Codable, Sendable, Equatable {
    /// The unit's id.
    public var unit: String
    /// What the droop law required of this unit, and what it delivered, at the event's response time.
    public var requiredW: Double?
    public var deliveredW: Double?
    /// The same, averaged over the event.
    public var requiredMeanW: Double?
    public var deliveredMeanW: Double?
    /// What the unit missed at the response time in its response's direction (≥ 0).
    public var shortfallW: Double?

    public init(unit: String, requiredW: Double?, deliveredW: Double?, requiredMeanW: Double?, deliveredMeanW: Double?, shortfallW: Double?) {
        self.unit = unit
        self.requiredW = requiredW
        self.deliveredW = deliveredW
        self.requiredMeanW = requiredMeanW
        self.deliveredMeanW = deliveredMeanW
        self.shortfallW = shortfallW
    }

    /// The JSON keys (the same names as the event's own).
    public enum CodingKeys: String, CodingKey {
        case unit, deliveredMeanW = "delivered_mean_w", deliveredW = "delivered_w", requiredMeanW = "required_mean_w"
        case requiredW = "required_w", shortfallW = "shortfall_w"
    }

    /// Every field, an unknown quantity as null.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(unit, forKey: .unit)
        for (key, value) in [(CodingKeys.requiredW, requiredW), (.deliveredW, deliveredW), (.requiredMeanW, requiredMeanW),
                             (.deliveredMeanW, deliveredMeanW), (.shortfallW, shortfallW)] {
            try c.encode(value.flatMap { $0.isFinite ? $0 : nil }, forKey: key)
        }
    }
}
