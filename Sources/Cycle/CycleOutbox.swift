import ControlCore

/// What the cycle publishes for the service thread and the protocol servers, inside
/// `SharedState`'s lock: status and the site's view of it, statistics, events, closed energy
/// blocks, frequency-event assessments and the outcome of the operator's requests. Its storage is
/// allocated once, here; the cycle only copies values into it (`SiteRunner.publish`).
struct CycleOutbox: Sendable {
    /// The status as published: written only through `publishStatus`, which marks `view` stale.
    private(set) var units: [UnitStatus]
    private(set) var site = SiteStatus()
    /// The site as every protocol reports it (a value of scalars: no allocation), from `units`,
    /// `site` and `settings` as last published: computed at the first read after a publication and
    /// kept for the next readers, not at each publication (at 10 ms most go unread); before the
    /// first, from the status as it starts. Read it with `view()`.
    private var lastView: SiteView
    private var viewStale = false
    /// What the view needs of the site as it was started (usable energy, ratings, reserves, limits).
    let settings: SiteView.Settings
    var stats = CycleStatistics()
    var events = EventRing(capacity: 1024)
    /// Energy blocks closed by the cycle, for the uplink (bounded; the oldest kept).
    var blocks: [EnergyBlock] = []
    /// The schedule's blocks closed by the cycle (bounded; the oldest kept).
    var scheduleReports: [ScheduleBlockReport] = []
    /// Frequency events the cycle assessed, for the service thread (`SharedState+FrequencyEvents`).
    var frequencyEvents = FrequencyEventMailbox()
    var resetOutcomes: [ResetOutcome]
    /// The generation of the last mailbox the cycle has applied.
    var appliedGeneration: UInt64 = 0

    init(units: Int, settings: SiteView.Settings) {
        self.units = [UnitStatus](repeating: UnitStatus(), count: units)
        self.settings = settings
        lastView = SiteView(units: self.units, site: site, settings: settings)
        resetOutcomes = [ResetOutcome](repeating: ResetOutcome(), count: units)
        blocks.reserveCapacity(64)
        scheduleReports.reserveCapacity(64)
        frequencyEvents.pending.reserveCapacity(FrequencyEventMailbox.capacity)
    }

    /// The one way status is published (the cycle's `publish`, and tests writing it as a cycle
    /// would): `body` writes the units' and the site's status in place; the view follows them at
    /// its next read. No allocation.
    mutating func publishStatus(_ body: (inout [UnitStatus], inout SiteStatus) -> Void) {
        body(&units, &site)
        viewStale = true
    }

    /// The site's view of the status as last published: computed once per publication, by its
    /// first reader (under the same lock). No allocation.
    mutating func view() -> SiteView {
        if viewStale {
            lastView = SiteView(units: units, site: site, settings: settings)
            viewStale = false
        }
        return lastView
    }
}

extension SharedState.Contents {
    // What tests write as a cycle would publish it, by the names they had before the outbox.
    var units: [UnitStatus] {
        get { outbox.units }
        set { outbox.publishStatus { units, _ in units = newValue } }
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
