import ControlCore
import Testing

@Suite("Site frequency from every inverter")
struct SiteFrequencyTests {
    static func input(hz: Double?, at seconds: Double) -> UnitInputs {
        UnitInputs(inverter: Timestamped(
            InverterReading(activePower: .zero, frequency: hz.map { Hertz($0) }), at: Fixture.instant(seconds)))
    }

    static func median(_ inputs: [UnitInputs], now: Double) -> Timestamped<Hertz>? {
        var scratch: [Timestamped<Hertz>] = []
        scratch.reserveCapacity(inputs.count)
        return SiteFrequency.median(of: inputs, now: Fixture.instant(now), maxAge: .seconds(2), scratch: &scratch)
    }

    @Test("the median of the fresh readings; a dead unit 0 does not blind the site")
    func deadFirstInverter() throws {
        // Unit 0's inverter last answered 30 s ago; units 1 and 2 are fresh.
        let inputs = [Self.input(hz: 50.30, at: 70), Self.input(hz: 49.80, at: 99.9), Self.input(hz: 49.82, at: 100)]
        let f = try #require(Self.median(inputs, now: 100))
        #expect(abs(f.value.value - 49.81) < 1e-9)
        #expect(f.takenAt == Fixture.instant(100))
        #expect(f.value(at: Fixture.instant(100), maxAge: .seconds(2)) != nil)
    }

    @Test("one inverter measuring nonsense cannot move the median of three")
    func outlier() throws {
        let inputs = [Self.input(hz: 49.80, at: 10), Self.input(hz: 57.0, at: 10), Self.input(hz: 49.79, at: 10),
                      Self.input(hz: nil, at: 10), UnitInputs()]
        let f = try #require(Self.median(inputs, now: 10))
        #expect(f.value == Hertz(49.80))
    }

    @Test("nothing fresh: the newest stale reading is returned so its age shows; none ever: nil")
    func stale() throws {
        let inputs = [Self.input(hz: 49.9, at: 1), Self.input(hz: 50.1, at: 3)]
        let f = try #require(Self.median(inputs, now: 10))
        #expect(f.takenAt == Fixture.instant(3))
        #expect(f.value(at: Fixture.instant(10), maxAge: .seconds(2)) == nil)
        #expect(Self.median([UnitInputs(), Self.input(hz: nil, at: 9)], now: 10) == nil)
    }
}
