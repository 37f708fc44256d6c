import ControlCore

/// What the cycle publishes for the service thread and the protocol servers, inside
/// `SharedState`'s lock: status, statistics, events, closed energy blocks, frequency-event
/// assessments and the outcome of the operator's requests. Its storage is allocated once, here;
/// the cycle only copies values into it (`SiteRunner.publish`).
struct CycleOutbox: Sendable {
    var units: [UnitStatus]
    var site = SiteStatus()
    var stats = CycleStatistics()
    var events = EventRing(capacity: 1024)
    /// Energy blocks closed by the cycle, for the uplink (bounded; the oldest kept).
    var blocks: [EnergyBlock] = []
    /// Frequency events the cycle assessed, for the service thread (`SharedState+FrequencyEvents`).
    var frequencyEvents = FrequencyEventMailbox()
    var resetOutcomes: [ResetOutcome]
    /// The generation of the last mailbox the cycle has applied.
    var appliedGeneration: UInt64 = 0

    init(units: Int) {
        self.units = [UnitStatus](repeating: UnitStatus(), count: units)
        resetOutcomes = [ResetOutcome](repeating: ResetOutcome(), count: units)
        blocks.reserveCapacity(64)
        frequencyEvents.pending.reserveCapacity(FrequencyEventMailbox.capacity)
    }
}

extension SharedState.Contents {
    // What tests write as a cycle would publish it, by the names they had before the outbox.
    var units: [UnitStatus] {
        get { outbox.units }
        set { outbox.units = newValue }
    }
    var stats: CycleStatistics {
        get { outbox.stats }
        set { outbox.stats = newValue }
    }
    var frequencyEvents: FrequencyEventMailbox {
        get { outbox.frequencyEvents }
        set { outbox.frequencyEvents = newValue }
    }
    var appliedGeneration: UInt64 { outbox.appliedGeneration }
}
