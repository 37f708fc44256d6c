import ControlCore
import Testing

/// The site's ROCOF from a measured source (a PMU's DFREQ; issue 47 §1).
@Suite("ROCOF from a measured source")
struct ResponseSettingsTests {
    /// The default table without the frequency-deviation rules, so a ramping frequency trips on its
    /// rate alone.
    static func rocofRules(_ severity: InterlockSeverity = .trip) -> [InterlockRule] {
        InterlockRule.defaultTable().compactMap { rule in
            if rule.metric == .frequencyDeviation { return nil }
            var rule = rule
            if rule.code == .gridRocof { rule.severity = severity }
            return rule
        }
    }

    /// Steps `site` every 100 ms for `seconds` from `start`; the frequency and the measured ROCOF
    /// (nil: none given) are functions of time.
    @discardableResult
    static func run(
        _ site: SiteController, from start: Double, seconds: Double, frequency: (Double) -> Double,
        rocof: (Double) -> Timestamped<Double>?
    ) -> UnitDecision {
        var t = start
        for _ in 0..<Int((seconds / 0.1).rounded()) {
            t += 0.1
            let now = Fixture.instant(t)
            site.step(frequency: Timestamped(Hertz(frequency(t)), at: now), inputs: [Fixture.healthyInputs(at: now)],
                      now: now, wallClock: 1_800_000_000 + t, rocof: rocof(t))
        }
        return site.decision(unit: 0)
    }

    @Test("a measured ROCOF above GRID_ROCOF's threshold trips the unit on a steady frequency")
    func measuredRocofTrips() {
        let site = Fixture.site(rules: Self.rocofRules())
        let decision = Self.run(site, from: 0, seconds: 2, frequency: { _ in 50 },
                                rocof: { Timestamped(-2.5, at: Fixture.instant($0)) })
        #expect(site.site.rocof == 2.5, "the magnitude of the PMU's DFREQ, not the flat readings' slope")
        #expect(decision.activeCodes.contains(.gridRocof))
        #expect(decision.allowedDischarge == .zero && decision.allowedCharge == .zero)
    }

    @Test("configured as a derate, a measured ROCOF takes power away in proportion")
    func measuredRocofDerates() {
        let site = Fixture.site(rules: Self.rocofRules(.derate(start: 1.0)))
        let decision = Self.run(site, from: 0, seconds: 3, frequency: { _ in 50 },
                                rocof: { Timestamped(1.5, at: Fixture.instant($0)) })
        #expect(decision.activeCodes.contains(.gridRocof))
        // Half-way from 1 Hz/s (full power) to 2 Hz/s (none): half the 100 kW rating.
        #expect(abs(decision.allowedDischarge.value - 50_000) < 1)
        #expect(abs(decision.allowedCharge.value - 50_000) < 1)
    }

    @Test("absent or stale, the estimate over the readings decides as before; fresh, the measurement does")
    func estimateWhenAbsent() {
        // Absent: a frequency ramping at 3 Hz/s trips on the estimate.
        let rising: (Double) -> Double = { 49 + 3 * $0 }
        let plain = Fixture.site(rules: Self.rocofRules())
        let tripped = Self.run(plain, from: 0, seconds: 1.5, frequency: rising, rocof: { _ in nil })
        #expect(abs((plain.site.rocof ?? 0) - 3) < 0.01)
        #expect(tripped.activeCodes.contains(.gridRocof))
        // Fresh: the PMU says the frequency is steady, and its word counts.
        let measured = Fixture.site(rules: Self.rocofRules())
        let calm = Self.run(measured, from: 0, seconds: 1.5, frequency: rising,
                            rocof: { Timestamped(0.1, at: Fixture.instant($0)) })
        #expect(measured.site.rocof == 0.1)
        #expect(!calm.activeCodes.contains(.gridRocof))
        // Stale (older than frequencyStaleAfter, 2 s): the estimate again.
        let stale = Fixture.site(rules: Self.rocofRules())
        let old = Self.run(stale, from: 3, seconds: 1.5, frequency: { rising($0 - 3) },
                           rocof: { _ in Timestamped(0.1, at: Fixture.instant(0)) })
        #expect(abs((stale.site.rocof ?? 0) - 3) < 0.01)
        #expect(old.activeCodes.contains(.gridRocof))
    }
}
