import ControlCore
import GridSupport
import Testing

/// The inverter's own ratings and var points in the reactive stage (docs/design/0010-reactive-power.md,
/// "The per-unit path", rows "ratings" and "no var points"): 702 `VAMax` is the law's `VAMax` unless
/// `max_apparent_power_kva` is set; an inverter without 704's var points gets no Q and its P stays.
@Suite("ReactiveRatingTests: 702 VAMax and 704 var points in the reactive stage", .serialized)
struct ReactiveRatingTests {
    typealias Cycle = ReactiveCycleTests

    /// The unit held at `powerW` at 1.0 p.u., its inverter reporting `vaMax` (702) and var points.
    static func inputs(at now: MonotonicInstant, powerW: Double, vaMax: Double?, available: Bool? = true) -> UnitInputs {
        var reading = InverterReading(activePower: Watts(powerW), ratedPower: Fixture.rating, voltage: Cycle.nominalV)
        reading.apparentPowerRating = vaMax
        reading.reactiveAvailable = available
        return UnitInputs(bms: Fixture.healthyBMS(at: now), inverter: Timestamped(reading, at: now),
                          dispatch: PowerCommand(power: Watts(powerW), expiresAt: now + .seconds(5), pinned: true))
    }

    static func run(_ site: SiteController, from start: Double = 0, seconds: Double, powerW: Double, vaMax: Double?,
                    available: Bool? = true) -> UnitDecision {
        Fixture.run(site, from: start, seconds: seconds, period: 0.1) { inputs(at: $0, powerW: powerW, vaMax: vaMax, available: available) }
    }

    /// The law's own steady state on `rating`, fed the cycle's P: its P fed back as the next period's
    /// desire (the discharge cap), as the cycle does.
    static func law(_ settings: GridSupportSettings, rating: UnitRating, powerW: Double) throws -> GridSupportOutput {
        var law = try GridSupportController(settings: settings, rating: rating)
        var desired = powerW
        var output = law.step(voltage: 1, desiredPowerW: desired, elapsedSeconds: 0.1)
        for _ in 0..<600 {
            output = law.step(voltage: 1, desiredPowerW: desired, elapsedSeconds: 0.1)
            desired = min(powerW, output.activePowerW ?? powerW)
        }
        return output
    }

    @Test("a 702 VAMax below max_power_kw bounds P and Q as the law does on that rating; Q restarts through its filter")
    func inverterVAMax() throws {
        let settings = GridSupportSettings(reactive: Cycle.constantVar(40))
        let site = Cycle.site(settings)
        // Before the inverter says: VAMax is the 100 kW rating, 40 kvar.
        let before = Self.run(site, seconds: 60, powerW: 100_000, vaMax: nil)
        #expect(abs((before.reactive ?? .nan) - 40_000) < 1)
        // 702 VAMax 90 kVA arrives: the law is rebuilt on it, Q starting again from 0.
        let first = Self.run(site, from: 60, seconds: 0.1, powerW: 100_000, vaMax: 90_000)
        #expect((first.reactive ?? .nan) < 20_000, "Q restarts through its response: \(first.reactive ?? .nan)")
        let d = Self.run(site, from: 60.1, seconds: 60, powerW: 100_000, vaMax: 90_000)
        let expected = try Self.law(settings, rating: UnitRating(apparentPowerVA: 90_000, activePowerW: 100_000, chargePowerW: 100_000),
                                    powerW: 100_000)
        let q = try #require(d.reactive)
        #expect(abs(q - (expected.reactivePowerVar ?? .nan)) < 1, "cycle \(q), law \(expected.reactivePowerVar ?? .nan)")
        #expect(abs(d.setpoint.value - (expected.activePowerW ?? .nan)) < 1, "cycle \(d.setpoint.value), law \(expected.activePowerW ?? .nan)")
        #expect(abs(q - 36_000) < 1, "40 % of 90 kVA")
        #expect(d.setpoint.value * d.setpoint.value + q * q <= 90_000 * 90_000 * (1 + 1e-9), "inside the inverter's VAMax")
        #expect(d.reactiveSource == .constantVar)
    }

    @Test("max_apparent_power_kva outranks the inverter's 702 VAMax")
    func configuredWins() throws {
        let site = Cycle.site(GridSupportSettings(reactive: Cycle.constantVar(40)), apparentPowerVA: 110_000)
        let d = Self.run(site, seconds: 60, powerW: 100_000, vaMax: 90_000)
        // 40 % of 110 kVA is 44 kvar, and 100 kW with 44 kvar fits inside 110 kVA.
        #expect(abs((d.reactive ?? .nan) - 44_000) < 1)
        #expect(abs(d.setpoint.value - 100_000) < 1e-6)
    }

    @Test("an inverter without var points gets no reactive command, reactive: unavailable, and P as without a mode")
    func noVarPoints() throws {
        let site = Cycle.site(GridSupportSettings(reactive: Cycle.constantVar(60)))
        let d = Self.run(site, seconds: 60, powerW: 100_000, vaMax: nil, available: false)
        let plain = Self.run(Cycle.site(nil), seconds: 60, powerW: 100_000, vaMax: nil, available: false)
        #expect(d.reactive == nil)
        #expect(d.reactiveSource == .unavailable)
        #expect(d.setpoint == plain.setpoint && abs(d.setpoint.value - 100_000) < 1e-6, "P untouched: \(d.setpoint.value)")
        #expect(plain.reactiveSource == .off, "no mode: off, not unavailable")
        // Var points found later (a rediscovery): the mode runs.
        let later = Self.run(site, from: 60, seconds: 60, powerW: 100_000, vaMax: nil, available: true)
        #expect(later.reactiveSource == .constantVar && abs((later.reactive ?? .nan) - 60_000) < 1)
    }

    @Test("the ratings travel as plain values: a reading copied each period allocates nothing")
    func plainValues() {
        #expect(_isPOD(InverterReading.self))
        #expect(_isPOD(UnitRating.self))
    }
}
