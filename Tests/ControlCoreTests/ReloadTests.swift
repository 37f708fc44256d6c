import ControlCore
import Testing

@Suite("A reload carries the running state")
struct ReloadTests {
    @Test("mid-ramp, a reloaded site decides the next step exactly as the old one would have")
    func rampsGoOn() {
        // 10 %/s of 100 kW: after 1 s the allowed discharge is 10 kW on its way to 100 kW.
        let old = Fixture.site(limitRamp: 10, scheduleRamp: 10)
        let before = Fixture.run(old, seconds: 1, frequency: 49.9)
        #expect(before.allowedDischarge.value > 0 && before.allowedDischarge.value < Fixture.rating.value / 2, "\(before.allowedDischarge)")
        let fresh = Fixture.site(limitRamp: 10, scheduleRamp: 10)
        fresh.adopt(from: old, mapping: [0])
        #expect(fresh.decision(unit: 0) == before)
        #expect(fresh.units[0].state == old.units[0].state && fresh.units[0].mode == old.units[0].mode)
        #expect(fresh.units[0].bmsConfirmed && fresh.cycles == old.cycles)
        // A controller that started its ramps over would allow about 1 kW here, not 1 kW more than before.
        let next = Fixture.run(fresh, from: 1, seconds: 0.1, frequency: 49.9)
        #expect(next == Fixture.run(old, from: 1, seconds: 0.1, frequency: 49.9))
        #expect(next.allowedDischarge.value > before.allowedDischarge.value)
    }
}
