import BessBase
public import ControlCore
public import Fieldbus

/// One device on a Modbus endpoint as the configuration names it: an inverter (SunSpec, discovered,
/// a register map, or a profile) or the site's connection-point meter, and the slot the cycle reads it through.
public struct EndpointDevice: Sendable {
    public var unitID: Int
    public var slot: DeviceSlot
    /// nil for SunSpec (discovered); a register map for other inverters.
    public var registerMap: RegisterMapSpec?
    /// An inverter driven by its profile (`inverter.profile`, `ProfiledInverter`); wins over `registerMap`.
    public var profile: DeviceProfile?
    /// Set for the site's connection-point meter: read every cycle, never written. Its reading's
    /// `activePower` is the meter's W as the meter states it, and `frequency` its Hz.
    public var meter: MeterDriver?
    /// Whose device this is, as the journal names it: the unit's configured id, or `site` for
    /// the connection-point meter (`BESS_UNIT`).
    public var name: String
    /// The configured unit's rating (bounds the device's own in the contactor's "at zero").
    public var rating: Watts?
    public init(unitID: Int, slot: DeviceSlot, registerMap: RegisterMapSpec? = nil, meter: MeterDriver? = nil,
                name: String = "", rating: Watts? = nil, profile: DeviceProfile? = nil) {
        self.rating = rating
        self.profile = profile
        self.unitID = unitID
        self.name = name
        self.slot = slot
        self.registerMap = registerMap
        self.meter = meter
    }

    /// What the configuration says the device is (discovery turns it into a `ModbusDevice`).
    public var kind: ModbusDevice.Kind {
        if meter == nil, let profile { return .profileInverter(profile) }
        return switch (meter, registerMap) {
        case (.sunspec?, _): .sunspecMeter
        case (.registerMap(let map)?, _): .meterMap(map)
        case (nil, let spec?): .registerMapInverter(spec)
        case (nil, nil): .sunspecInverter
        }
    }

    /// How a meter on the wire is read.
    public enum MeterDriver: Sendable, Equatable {
        /// SunSpec models 201–204, discovered.
        case sunspec
        /// A configured register map.
        case registerMap(MeterRegisterMap)
    }
}

/// What a failure says about the wire, and so what the worker does next.
enum BusFailure: Equatable {
    /// The connection itself is gone (refused, reset, closed, an I/O error): close it, back off,
    /// reconnect and rediscover every unit on it.
    case link
    /// One unit did not answer usefully (timeout, Modbus exception, malformed answer, a map that
    /// no longer walks): back that unit off and rediscover it; the others keep the connection.
    case unit
    /// The device answered, but a value is unusable (W not implemented, a setpoint that does
    /// not fit its register): command 0 W with the revert armed, keep link and discovery.
    case value

    init(_ kind: DeviceError.Kind) {
        switch kind {
        case .linkLost: self = .link
        case .valueInvalid: self = .value
        case .timeout, .deviceRefused: self = .unit
        }
    }
}
