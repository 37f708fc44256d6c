import ControlCore

/// The site frequency's source as the cycle picks it each cycle (`decide`): a PMU while its
/// newest usable sample is young enough, the inverters' median otherwise. Nothing here allocates.
extension SiteRunner {
    /// How long after start a PMU that has not yet delivered a usable sample is waited for before
    /// `FREQUENCY_SOURCE_FALLBACK` is announced (the cycle follows the inverters meanwhile): a
    /// connection and the PMU's configuration frame take a moment.
    static let pmuStartGrace = Duration.seconds(10)

    /// The site frequency this cycle follows, and the PMU's rate of change of frequency with it.
    func siteFrequency(now: MonotonicInstant) -> (Timestamped<Hertz>?, Timestamped<Double>?) {
        switch settings.frequencySource {
        case .simulated: return (simulatedFrequency, nil)
        case .inverter: return (inverterFrequency(now: now), nil)
        case .meter: return (meter.flatMap { m in m.value.frequency.map { Timestamped($0, at: m.takenAt) } }, nil)
        case .pmu:
            // The PMU's newest usable sample while it is young enough, else the inverters' median:
            // never a simulated source.
            guard let sample = followPMU(now: now) else { return (inverterFrequency(now: now), nil) }
            return (Timestamped(sample.frequency, at: sample.takenAt), sample.rocofHzPerSecond.map { Timestamped($0, at: sample.takenAt) })
        }
    }

    /// The median of the fresh inverters' readings (`SiteFrequency.median`).
    func inverterFrequency(now: MonotonicInstant) -> Timestamped<Hertz>? {
        SiteFrequency.median(of: inputs, now: now, maxAge: controller.control.frequencyStaleAfter, scratch: &frequencyScratch)
    }

    /// The PMU's newest usable sample, as `takeInputs` read it, when it is no older than
    /// `grid_integration.pmu.max_age_ms` at `now`, else nil (the caller falls back to the inverters). Records the source in use and
    /// pushes `frequencySourceFallback` once on the way down (after the start's grace when the PMU
    /// never delivered) and `frequencySourceRestored` once when it is back.
    func followPMU(now: MonotonicInstant) -> PMUSample? {
        let maxAge = settings.pmu?.maxAge ?? .milliseconds(100)
        let sample = inbox.pmu
        var usable: PMUSample?
        // A sample stamped after `now` was received while this cycle started: its age counts as zero.
        if let s = sample, s.frequency.value.isFinite, s.frequency.value > 0, now - s.takenAt <= maxAge { usable = s }
        let ageMs = sample.map { max(0, Double((now - $0.takenAt).nanosecondsClamped) / 1e6) } ?? .nan
        if let usable {
            if frequencyFallback {
                controller.events.push(ControlEvent(kind: .frequencySourceRestored, unit: -1, value: ageMs, at: now))
                frequencyFallback = false
            }
            pmuFollowed = true
            frequencySourceInUse = .pmu
            return usable
        }
        frequencySourceInUse = .inverter
        if !frequencyFallback, pmuFollowed || now - startedAt >= Self.pmuStartGrace {
            controller.events.push(ControlEvent(kind: .frequencySourceFallback, unit: -1, value: ageMs,
                                                threshold: Double(maxAge.nanosecondsClamped) / 1e6, at: now))
            frequencyFallback = true
        }
        return nil
    }
}
