import BessBase
import Cycle
import Fieldbus

/// The plant's side of a unit whose BMS configuration names a profile (`bms.profile: NAME`): a CAN
/// BMS sends the profile's frames (broadcast every group period, or in answer to each of bessd's
/// request frames) from the same pack model, with `bms_silence`, `bms_delay` and
/// `bms_group_silence` applied as to the Pylontech one. `bms.protocol: pylontech` keeps the
/// Pylontech emulator.
extension PlantRig {
    /// The profiled BMS for `bms`, nil when it is Pylontech's (`protocol: pylontech`).
    static func profiledBMS(_ bms: BMSSettings) -> SimulatedProfiledBMS? {
        guard bms.protocolName == .profile, let profile = bms.profile else { return nil }
        return SimulatedProfiledBMS(profile: profile)
    }

    /// Refuses a BMS the plant cannot serve: one over Modbus (the plant's Modbus server serves SunSpec
    /// images only), rather than opening a CAN interface it does not use.
    static func checkServable(_ bms: BMSSettings) throws(FieldbusError) {
        guard bms.transport == .modbus else { return }
        throw FieldbusError(.modbusServerFailed,
                            message: "the plant serves a BMS over CAN only; mark a Modbus BMS `simulated: true`")
    }
}
