import ControlCore
@testable import Cycle
import Fieldbus
import Testing

/// What discovery found for reactive power travels with each sample into the cycle's inputs.
@Suite("ReactiveCapabilityTests: the 702 ratings and 704 var points in the inverter reading")
struct ReactiveCapabilityTests {
    @Test("the slot's sample carries the capability; before discovery the reading says nothing")
    func sampleCarriesCapability() throws {
        let slot = DeviceSlot()
        slot.publish(Timestamped(InverterReading(activePower: Watts(1_000)), at: .zero), roundTrip: .zero)
        let unknown = try #require(slot.sample.reading).value
        #expect(unknown.reactiveAvailable == nil && unknown.apparentPowerRating == nil)
        let ratings = SunSpecReactiveRatings(apparentPower: 90_000, maxInjecting: 50_000, maxAbsorbing: 45_000)
        slot.publish(reactive: SunSpecReactiveCapability(available: true, ratings: ratings))
        let reading = try #require(slot.sample.reading).value
        #expect(reading.reactiveAvailable == true)
        #expect(reading.apparentPowerRating == 90_000 && reading.varMaxInjecting == 50_000 && reading.varMaxAbsorbing == 45_000)
        #expect(reading.activePower == Watts(1_000))
        slot.publish(reactive: SunSpecReactiveCapability(available: false, ratings: SunSpecReactiveRatings()))
        let none = try #require(slot.sample.reading).value
        #expect(none.reactiveAvailable == false && none.apparentPowerRating == nil)
        #expect(_isPOD(SunSpecReactiveCapability.self), "the sample copies plain values")
    }
}
