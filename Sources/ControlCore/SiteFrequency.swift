/// The site's grid frequency, taken from every inverter that measures it.
public enum SiteFrequency {
    /// The median of the fresh frequency readings in `inputs`, stamped with the newest of the
    /// readings it was taken from. With no fresh reading it returns the newest stale one (so its age
    /// shows as FREQUENCY_LOST), or nil when no inverter ever reported one. One dead or stale
    /// inverter does not blind the site, and one inverter measuring nonsense cannot move the median
    /// of three or more.
    ///
    /// `scratch` is the caller's storage (capacity for one entry per unit): a steady-state call
    /// allocates nothing.
    public static func median(
        of inputs: [UnitInputs], now: MonotonicInstant, maxAge: Duration, scratch: inout [Timestamped<Hertz>]
    ) -> Timestamped<Hertz>? {
        scratch.removeAll(keepingCapacity: true)
        var newest: MonotonicInstant?
        var newestStale: Timestamped<Hertz>?
        for input in inputs {
            guard let reading = input.inverter, let hz = reading.value.frequency, hz.value.isFinite, hz.value > 0
            else { continue }
            guard reading.value(at: now, maxAge: maxAge) != nil else {
                if newestStale.map({ reading.takenAt > $0.takenAt }) ?? true { newestStale = Timestamped(hz, at: reading.takenAt) }
                continue
            }
            // Insertion keeps the list sorted by frequency (a handful of units: no heap sort needed).
            var index = scratch.count
            scratch.append(Timestamped(hz, at: reading.takenAt))
            while index > 0, scratch[index - 1].value.value > hz.value {
                scratch.swapAt(index - 1, index)
                index -= 1
            }
            if newest.map({ reading.takenAt > $0 }) ?? true { newest = reading.takenAt }
        }
        guard let newest, !scratch.isEmpty else { return newestStale }
        let middle = scratch.count / 2
        let hz = scratch.count % 2 == 1
            ? scratch[middle].value.value
            : (scratch[middle - 1].value.value + scratch[middle].value.value) / 2
        return Timestamped(Hertz(hz), at: newest)
    }
}
