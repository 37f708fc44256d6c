public import ControlCore
public import Fieldbus

extension InverterReading {
    /// Takes what the inverter's discovery found for reactive power: whether it has 704's var points
    /// and its 702 ratings (`DeviceSlot.sample`; plain values, no allocation).
    public mutating func adopt(_ capability: SunSpecReactiveCapability) {
        reactiveAvailable = capability.available
        apparentPowerRating = capability.ratings.apparentPower
        varMaxInjecting = capability.ratings.maxInjecting
        varMaxAbsorbing = capability.ratings.maxAbsorbing
    }
}
