import BessSystem
public import ControlCore

/// The frequency-event assessments the cycle hands the service thread (issue 47 §3), inside
/// `SharedState`'s lock: a bounded list whose storage is reserved at start (the cycle appends
/// without allocating), the count published since start and the last one (the IEC 104 outstation's
/// points read them without taking anything).
struct FrequencyEventMailbox: Sendable {
    /// Assessments the service has not taken yet. An event lasts seconds and the service takes them
    /// every round, so 16 waiting means the service has stalled: past it the oldest is dropped
    /// and counted.
    static let capacity = 16
    var pending: [FrequencyEventAssessment] = []
    /// Dropped at the bound since the service last took them.
    var dropped: UInt64 = 0
    var tally = FrequencyEventTally()

    /// Adds one: in place (the storage is reserved), the oldest dropped when full.
    mutating func publish(_ assessment: FrequencyEventAssessment) {
        if pending.count >= Self.capacity {
            pending.removeFirst()
            dropped &+= 1
        }
        pending.append(assessment)
        tally.count &+= 1
        tally.last = assessment
    }
}

/// How many frequency events the cycle has assessed since start, and the last of them.
public struct FrequencyEventTally: Sendable, Equatable {
    public var count: UInt64 = 0
    public var last: FrequencyEventAssessment?
    public init() {}
}

extension SharedState {
    /// Publishes one assessment as the cycle does (tests, and a cycle that holds no lock yet).
    package func publish(frequencyEvent assessment: FrequencyEventAssessment) {
        contents.withLock { $0.outbox.frequencyEvents.publish(assessment) }
    }

    /// Removes and returns the assessments the cycle published since the last take, oldest first,
    /// and how many the bound dropped meanwhile (the service thread's side); storage reserved
    /// outside the lock.
    public func takeFrequencyEvents() -> (assessments: [FrequencyEventAssessment], dropped: UInt64) {
        var taken: [FrequencyEventAssessment] = []
        taken.reserveCapacity(FrequencyEventMailbox.capacity)
        let dropped = contents.withLock { c in
            for assessment in c.outbox.frequencyEvents.pending where taken.count < taken.capacity { taken.append(assessment) }
            c.outbox.frequencyEvents.pending.removeAll(keepingCapacity: true)
            defer { c.outbox.frequencyEvents.dropped = 0 }
            return c.outbox.frequencyEvents.dropped
        }
        return (taken, dropped)
    }

    /// The count of assessments published since start and the last one (nothing is taken).
    public var frequencyEventTally: FrequencyEventTally { contents.withLock { $0.outbox.frequencyEvents.tally } }
}
