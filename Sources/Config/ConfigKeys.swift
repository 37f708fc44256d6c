import Cycle
import BessSystem
import ControlCore
import IEC104
import Fieldbus

/// The keys one section of the configuration file accepts, declared once beside the section's
/// decoder. `ConfigReader.Fields.finish(_:)` refuses any other key and lists these in its error; the
/// tests hold each decoder to them (it reads these keys and no other) and config/bessd.yaml to them
/// (it documents every one).
struct ConfigKeys: Sendable {
    /// Where the section sits in the file, `[]` standing for any entry of a list: `bess_units[].bms`.
    let section: String
    /// The keys, in the order the unknown-key error lists them.
    let names: [String]

    init(_ section: String, _ names: [String]) {
        self.section = section
        self.names = names
    }

    /// The keys as the unknown-key error lists them: `a, b, c`.
    var list: String { names.joined(separator: ", ") }

    /// Every section with a fixed set of keys. Two mappings have none: `interlocks:` (its keys are
    /// trip codes) and `simulation.initial_soc_percent_by_unit:` (unit ids).
    static let all: [ConfigKeys] = [
        ConfigLoader.topLevelKeys, ConfigLoader.limitsKeys,
        UnitConfiguration.keys, ModbusSettings.keys, InverterSettings.keys, RegisterMapSpec.keys, MappedRegister.keys,
        BMSSettings.keys,
        GridConfiguration.keys, DroopSettings.keys, PMUSettings.keys,
        InterlockOverride.keys,
        FrequencyEventSettings.keys,
        AggregatorConfiguration.keys, RealtimeSettings.keys,
        SimulationConfiguration.keys, FaultInjection.keys, BMSOverride.keys, PowerProfile.keys,
        SiteConfiguration.keys, MeterConfiguration.keys, MeterRegisterMap.keys, SiteConfiguration.gridLimitsKeys,
        SiteConfiguration.peakShavingKeys, SiteConfiguration.selfConsumptionKeys,
        ScadaConfiguration.keys,
        GridLimitInputsConfiguration.operatorKeys, GridLimitInputsConfiguration.keys, GridLimitInputsConfiguration.contactKeys,
        IEC104Configuration.keys, AGCConfiguration.keys, OutstationSettings.groupKeys, OutstationSettings.pointKeys,
        OutstationTLSSettings.keys, IEEE2030_5Settings.keys, ScheduleConfiguration.keys,
        OptimiserConfiguration.keys, OptimiserConfiguration.tariffKeys, OptimiserConfiguration.bandKeys,
        OptimiserConfiguration.efficiencyKeys,
    ] + ReactivePowerConfiguration.unitKeys.all + ReactivePowerConfiguration.siteKeys.all
}
