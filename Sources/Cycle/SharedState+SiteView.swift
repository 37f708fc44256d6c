import BessSystem

extension SharedState {
    /// The site's view as last published, under one lock: what a reader takes that needs no unit's
    /// status (the protocols' ratings: `ratedPowerW`, `usableEnergyWh`). Before the first
    /// publication, the view of the status as it starts, the ratings already in it
    /// (`CycleOutbox.init`).
    public var view: SiteView { contents.withLock { $0.outbox.view() } }
}
