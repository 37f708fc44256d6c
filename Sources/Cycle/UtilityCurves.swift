public import ControlCore
import GridSupport

/// The utility's curve controls of one `UtilityLimits` (2030.5 `opModVoltVar`, `opModWattVar`,
/// `opModVoltWatt` as the law takes them), as `UtilityLimitCells` keeps them: plain fixed-size values
/// (`GridCurve` is inline), so a copy never allocates.
public struct UtilityCurves: Sendable {
    var voltVar: VoltVarSettings?
    var wattVar: WattVarSettings?
    var voltWatt: VoltWattSettings?

    init() {}

    init(_ limits: UtilityLimits) {
        voltVar = limits.voltVar
        wattVar = limits.wattVar
        voltWatt = limits.voltWatt
    }

    func apply(to limits: inout UtilityLimits) {
        limits.voltVar = voltVar
        limits.wattVar = wattVar
        limits.voltWatt = voltWatt
    }
}
