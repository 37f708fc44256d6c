/// Frequency events and their assessment (issue 47 §3, docs/frequency-events.md): plain values, no
/// `String`, so the cycle that fills them never allocates.

/// Why a frequency event's response fell short, where bessd knows it.
public enum FrequencyEventCause: UInt8, Sendable, CaseIterable {
    /// Delivered in full (within the tolerance), or no cause known.
    case none
    /// A unit at its state-of-charge bound (`SOC_LOW` / `SOC_HIGH`).
    case socLimit
    /// An interlock derate or trip in the response's direction (`causeCode`).
    case interlock
    /// The grid operator's limit (`WMaxLimPct`, the relay contacts) or a connection-point limit bound.
    case gridOperatorLimit
    /// A unit tripped or faulted in both directions (`causeCode`).
    case unitTripped
    /// Stale data: the grid frequency, a unit's BMS or inverter, or the meter that measures delivery.
    case communication
    /// The units in service could not deliver what the droop law asked (rating, BMS current limits,
    /// units in standby) and nothing above explains it.
    case capacity

    /// The cause as the control socket, the uplink, the journal and the aggregator name it; nil for
    /// `none`. The one table of these names: never rename one, only add.
    public var wireName: String? {
        switch self {
        case .none: nil
        case .socLimit: "soc_limit"
        case .interlock: "interlock"
        case .gridOperatorLimit: "grid_operator_limit"
        case .unitTripped: "unit_tripped"
        case .communication: "communication"
        case .capacity: "capacity"
        }
    }
}

/// Which way frequency left the deadband first.
public enum FrequencyEventDirection: UInt8, Sendable, CaseIterable {
    /// Below the deadband: the response is more discharge.
    case under
    /// Above the deadband: the response is more charge.
    case over

    /// `under` or `over`, as every report names it.
    public var wireName: String { self == .under ? "under" : "over" }
}

/// One frequency event, assessed: what the droop settings required against what the site delivered.
///
/// Powers are W, + = discharge (export). The connection point's power when the site's meter was fresh
/// at the event's start (`metered`), else the sum of the units' measured power.
public struct FrequencyEventAssessment: Sendable, Equatable {
    /// 1, 2, … since the daemon started.
    public var sequence: UInt64
    /// Unix seconds (wall clock) of the instant frequency left the deadband (confirmed after the
    /// entry delay).
    public var start: Double
    /// Unix seconds of the instant frequency came back (confirmed after the exit delay).
    public var end: Double
    /// The direction of the first excursion.
    public var direction: FrequencyEventDirection
    /// Nadir (under) or zenith (over), Hz.
    public var extremeHz: Double
    /// Largest |ROCOF| during the event, Hz/s (NaN: unknown).
    public var maxRocofHzPerSecond: Double
    /// Site power just before frequency left the deadband, W.
    public var preEventW: Double
    /// What the droop settings required at start + response time: the pre-event power plus the droop
    /// law's change through the response-time lag (EPRI OpenDER's 'pre-disturbance power + droop').
    public var requiredW: Double
    /// What was delivered at that instant.
    public var deliveredW: Double
    /// Mean required power over the event.
    public var requiredMeanW: Double
    /// Mean delivered power over the event.
    public var deliveredMeanW: Double
    /// max(0, required − delivered) in the response's direction at the response time; zero within the
    /// tolerance.
    public var shortfallW: Double
    /// Why the response fell short (at the cycle of the largest shortfall); `.none` when it did not.
    public var cause: FrequencyEventCause
    /// The interlock's code when `cause` is `.interlock`, `.unitTripped` or `.socLimit`; for
    /// `.communication`, the comm-lost code when a rule names it.
    public var causeCode: TripCode?
    /// The unit the cause belongs to (its index in the configuration), −1 when none.
    public var causeUnit: Int
    /// Delivered response over required response over the event, 0…1 (1 = full; 1 when nothing was
    /// required). A cycle within the tolerance counts in full.
    public var score: Double
    /// Whether the powers are the connection point's (true) or the units' sum (false).
    public var metered: Bool
    /// The largest shortfall of any cycle of the event, W (zero within the tolerance).
    public var maxShortfallW: Double
    /// Each unit's share: what the droop law required of it and what it delivered (its own measured
    /// power), in configuration order; at most `FrequencyEventUnits.capacity` (the units with the
    /// largest shortfall), `units.omitted` counting the rest.
    public var units: FrequencyEventUnits

    public init(
        sequence: UInt64 = 0, start: Double = 0, end: Double = 0, direction: FrequencyEventDirection = .under,
        extremeHz: Double = .nan, maxRocofHzPerSecond: Double = .nan, preEventW: Double = 0, requiredW: Double = 0,
        deliveredW: Double = 0, requiredMeanW: Double = 0, deliveredMeanW: Double = 0, shortfallW: Double = 0,
        cause: FrequencyEventCause = .none, causeCode: TripCode? = nil, causeUnit: Int = -1, score: Double = 1,
        metered: Bool = false, maxShortfallW: Double = 0, units: FrequencyEventUnits = FrequencyEventUnits()
    ) {
        self.units = units
        self.sequence = sequence
        self.start = start
        self.end = end
        self.direction = direction
        self.extremeHz = extremeHz
        self.maxRocofHzPerSecond = maxRocofHzPerSecond
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
        self.metered = metered
        self.maxShortfallW = maxShortfallW
    }
}

/// One unit's part of a frequency event: the unit's pre-event power plus the droop law's change for
/// its own rating (clamped to ± its rating) through the response-time lag, against its measured power.
/// Powers W, + = discharge.
public struct FrequencyEventUnitAssessment: Sendable, Equatable {
    /// The unit's index in the configuration.
    public var unit: Int
    /// Required and delivered at the event's response time (the site's instant).
    public var requiredW: Double
    public var deliveredW: Double
    /// The same, averaged over the event.
    public var requiredMeanW: Double
    public var deliveredMeanW: Double
    /// max(0, required − delivered) in the unit's response direction at the response time; zero within
    /// the tolerance (the same fraction of the unit's rating as the site's).
    public var shortfallW: Double

    public init(unit: Int = -1, requiredW: Double = 0, deliveredW: Double = 0, requiredMeanW: Double = 0, deliveredMeanW: Double = 0,
                shortfallW: Double = 0) {
        self.unit = unit
        self.requiredW = requiredW
        self.deliveredW = deliveredW
        self.requiredMeanW = requiredMeanW
        self.deliveredMeanW = deliveredMeanW
        self.shortfallW = shortfallW
    }
}

/// The units of one assessment, in fixed inline storage so an assessment stays a plain value the cycle
/// copies without allocating: at most `capacity`, in configuration order; units past it are counted in
/// `omitted`.
public struct FrequencyEventUnits: Sendable, Equatable, RandomAccessCollection {
    /// The most units one assessment itemises (the journal and the record stay bounded).
    public static let capacity = 32
    var storage = InlineArray<32, FrequencyEventUnitAssessment>(repeating: FrequencyEventUnitAssessment())
    var stored = 0
    /// Units the assessment does not itemise (a site of more than `capacity` units).
    public internal(set) var omitted = 0

    public init() {}

    /// Adds one (no allocation); past `capacity` it is only counted.
    public mutating func append(_ unit: FrequencyEventUnitAssessment) {
        guard stored < Self.capacity else {
            omitted += 1
            return
        }
        storage[stored] = unit
        stored += 1
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { stored }
    public subscript(position: Int) -> FrequencyEventUnitAssessment { storage[position] }

    public static func == (a: Self, b: Self) -> Bool { a.omitted == b.omitted && a.elementsEqual(b) }
}

/// When a frequency excursion is an event (`grid_integration.frequency_events`), and how closely a
/// response must follow the droop law to count as delivered. The response time is the droop
/// settings' (`DroopSettings.responseTime`).
public struct FrequencyEventSettings: Sendable, Equatable {
    /// An event starts once frequency has been outside the deadband this long (`entry_delay_s`, 1 s).
    public var entryDelay: Duration
    /// It ends once frequency has been back inside this long (`exit_delay_s`, 5 s).
    public var exitDelay: Duration
    /// A shortfall of at most this fraction of the site's rating counts as delivered (1 %): the
    /// measured power trails the setpoint by at least one cycle.
    public var toleranceFraction: Double

    public init(entryDelay: Duration = .seconds(1), exitDelay: Duration = .seconds(5), toleranceFraction: Double = 0.01) {
        self.entryDelay = entryDelay
        self.exitDelay = exitDelay
        self.toleranceFraction = toleranceFraction
    }
}

extension ControlSettings {
    /// `grid_integration.frequency_events.entry_delay_s`.
    public var eventEntryDelay: Duration {
        get { frequencyEvents.entryDelay }
        set { frequencyEvents.entryDelay = newValue }
    }

    /// `grid_integration.frequency_events.exit_delay_s`.
    public var eventExitDelay: Duration {
        get { frequencyEvents.exitDelay }
        set { frequencyEvents.exitDelay = newValue }
    }
}

/// Assessments waiting for the cycle's reader: fixed storage, oldest first. A full ring forgets its
/// oldest entry (counted), so the cycle never waits and never allocates.
public struct FrequencyAssessmentRing: Sendable {
    var storage: [FrequencyEventAssessment]
    var head = 0
    /// Assessments held now.
    public private(set) var count = 0
    /// Assessments overwritten before anyone drained them.
    public private(set) var overwritten: UInt64 = 0

    /// Allocates the storage once.
    public init(capacity: Int = 16) {
        storage = [FrequencyEventAssessment](repeating: FrequencyEventAssessment(), count: max(1, capacity))
    }

    /// Adds one (no allocation).
    public mutating func push(_ assessment: FrequencyEventAssessment) {
        if count == storage.count {
            storage[head] = assessment
            head = (head + 1) % storage.count
            overwritten &+= 1
            return
        }
        storage[(head + count) % storage.count] = assessment
        count += 1
    }

    /// Hands each held assessment to `body`, oldest first, and empties the ring.
    public mutating func drain(_ body: (FrequencyEventAssessment) throws -> Void) rethrows {
        defer {
            head = 0
            count = 0
        }
        for offset in 0..<count { try body(storage[(head + offset) % storage.count]) }
    }
}

extension SiteController {
    /// Hands every frequency event assessed since the last call to `body`, oldest first, and forgets
    /// them (the storage is kept, so draining allocates nothing). Like `drainClosedBlocks`.
    public func drainFrequencyAssessments(_ body: (FrequencyEventAssessment) throws -> Void) rethrows {
        try frequencyEvents.ring.drain(body)
    }

    /// Assessments lost because nobody drained the ring in time.
    public var frequencyAssessmentsOverwritten: UInt64 { frequencyEvents.ring.overwritten }
}
