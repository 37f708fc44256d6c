import Config
import ControlCore
import GridSupport
import Testing

/// `grid_integration.reactive_power` and `bess_units[].max_apparent_power_kva` as the control law
/// gets them: each unit's `UnitSettings` (ControlMapping.swift), which `ReactiveStage` steps.
@Suite("Reactive power: the configuration in each unit's control settings")
struct ReactiveUnitSettingsTests {
    @Test("each unit gets the mode, the nominal voltage and its own VAMax (none: its rating)")
    func unitSettings() throws {
        let yaml = """
            bess_units:
              - {id: U1, capacity_kwh: 250, max_power_kw: 100, max_apparent_power_kva: 110}
              - {id: U2, capacity_kwh: 250, max_power_kw: 50}
            grid_integration:
              reactive_power: {mode: constant_var, var_percent: 30, nominal_voltage_v: 230}
            """
        let c = try ConfigLoader.parse(yaml, file: "r.yaml")
        let units = c.unitSettings
        try #require(units.count == 2)
        let settings = try #require(c.grid.reactivePower.settings)
        for unit in units {
            #expect(unit.gridSupport == settings)
            #expect(unit.nominalVoltageV == 230)
        }
        #expect(units[0].apparentPowerRating == 110_000)
        #expect(units[1].apparentPowerRating == nil)
        guard case .constantVar(let constant) = units[0].gridSupport?.reactive else {
            Issue.record("not constant var: \(String(describing: units[0].gridSupport))")
            return
        }
        #expect(constant.percent == 30)
    }

    @Test("no reactive_power: no mode and no nominal, so bessd leaves the inverters' reactive power alone")
    func none() throws {
        let c = try ConfigLoader.parse("bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n", file: "r.yaml")
        let unit = try #require(c.unitSettings.first)
        #expect(unit.gridSupport == nil && unit.nominalVoltageV == nil && unit.apparentPowerRating == nil)
    }
}
