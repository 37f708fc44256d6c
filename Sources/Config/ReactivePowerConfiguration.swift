public import GridSupport

/// `grid_integration.reactive_power` (per unit) or `site.reactive_power` (at the connection point):
/// what bessd does for voltage (docs/reactive-power.md, docs/design/0010-reactive-power.md).
public struct ReactivePowerConfiguration: Sendable, Equatable {
    /// `nominal_voltage_v`: line to neutral, V. nil: no per-unit voltage is shown and the voltage
    /// interlocks of this level are inert.
    public var nominalVoltageV: Double?
    /// The reactive mode and volt-watt, from `mode` and its keys (a `profile`'s defaults, every
    /// number overridable); nil: bessd leaves the inverters' reactive power alone.
    public var settings: GridSupportSettings?

    public init(nominalVoltageV: Double? = nil, settings: GridSupportSettings? = nil) {
        self.nominalVoltageV = nominalVoltageV
        self.settings = settings
    }
}
