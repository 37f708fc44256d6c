/// What sets a unit's (or the site's) reactive power this period, as `status --json` names it
/// (`reactive`): the configured mode, a commanding party, or why there is no command.
public enum ReactiveSource: String, Sendable, Equatable, CaseIterable {
    /// bessd leaves the inverter's reactive power alone: no mode configured and no party asking.
    case off
    /// The configured mode (`grid_integration.reactive_power.mode`).
    case constantPowerFactor = "constant_pf"
    case constantVar = "constant_var"
    case voltVar = "volt_var"
    case wattVar = "watt_var"
    /// A voltage mode without a fresh, plausible voltage: 0 var is written.
    case staleVoltage = "stale_voltage"
    /// The inverter has no 704 var points (`REACTIVE_UNAVAILABLE`).
    case unavailable
    /// The unit is not running (starting, standby, tripped, faulted): 0 var.
    case stopped
    /// A party's command in force (issue 59 §2), by authority.
    case utility, scada, aggregator
}
