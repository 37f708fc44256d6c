@testable import Config
import ControlCore
import Cycle
import GridSupport
import Testing

/// `grid_integration.reactive_power`, `site.reactive_power` and `bess_units[].max_apparent_power_kva`
/// (issue 59 §1): each key parsed, a profile's defaults and their overrides, and each refusal at the
/// line of its key.
@Suite("Reactive power (configuration)")
struct ReactiveConfigTests {
    /// Four lines: the unit is rated 100 kW.
    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n"
    static let categoryB = GridSupportProfile.ieee1547_2018_cat_b

    /// `unit`, then `grid_integration.reactive_power` holding `lines` (each indented by four): its first
    /// key on line 7.
    static func perUnit(_ lines: String...) -> String {
        unit + "grid_integration:\n  reactive_power:\n" + lines.map { "    " + $0 + "\n" }.joined()
    }

    static func parse(_ yaml: String) throws(ConfigurationError) -> BessdConfiguration { try ConfigLoader.parse(yaml, file: "r.yaml") }

    static func curve(_ points: [(x: Double, y: Double)]) throws -> GridCurve { try GridCurve(points) }

    @Test("a mode alone takes the Category B profile's numbers; nominal_voltage_v is kept")
    func profileDefaults() throws {
        let c = try Self.parse(Self.perUnit("mode: volt_var", "nominal_voltage_v: 230"))
        #expect(c.grid.reactivePower.nominalVoltageV == 230)
        #expect(c.grid.reactivePower.settings == Self.categoryB.settings(reactive: .voltVar(Self.categoryB.voltVar), voltWatt: false))
        let settings = try #require(c.grid.reactivePower.settings)
        #expect(settings.reactivePriority && settings.voltWatt == nil)
        #expect(settings.minimumReactivePercent == (44, 44))
        guard case .voltVar(let vv) = settings.reactive else { Issue.record("\(settings)"); return }
        #expect(vv.curve == (try Self.curve([(0.92, 44), (0.98, 0), (1.02, 0), (1.08, -44)])))
        #expect(vv.vRef == 1 && vv.responseTime == .seconds(5) && !vv.autonomousVRef)
    }

    @Test("Category A by name: its watt-var curve and Table 7's 44 % / 25 %")
    func categoryA() throws {
        let c = try Self.parse(Self.perUnit("mode: watt_var", "profile: ieee1547_2018_cat_a"))
        let a = GridSupportProfile.ieee1547_2018_cat_a
        #expect(c.grid.reactivePower.settings == a.settings(reactive: .wattVar(a.wattVar), voltWatt: false))
        #expect(try #require(c.grid.reactivePower.settings).minimumReactivePercent == (44, 25))
        #expect(c.grid.reactivePower.nominalVoltageV == nil, "watt-var reads no voltage: no nominal needed")
    }

    @Test("no reactive_power block, no mode, or mode none: no settings (the inverters' Q is left alone)")
    func noMode() throws {
        #expect(try Self.parse(Self.unit).grid.reactivePower == ReactivePowerConfiguration())
        let nominal = try Self.parse(Self.perUnit("nominal_voltage_v: 240", "profile: ieee1547_2018_cat_b"))
        #expect(nominal.grid.reactivePower == ReactivePowerConfiguration(nominalVoltageV: 240, settings: nil))
        let none = try Self.parse(Self.perUnit("mode: none", "nominal_voltage_v: 240"))
        #expect(none.grid.reactivePower.settings == nil)
    }

    @Test("volt_var: every key overrides the profile's")
    func voltVarKeys() throws {
        let c = try Self.parse(Self.perUnit(
            "mode: volt_var", "nominal_voltage_v: 230", "reactive_priority: false", "volt_var:",
            "  points: [[0.90, 30], [0.97, 0], [1.03, 0], [1.10, -30]]", "  v_ref_pu: 1.01", "  olrt_s: 10",
            "  autonomous_v_ref: true", "  v_ref_time_constant_s: 600", "  v_ref_limits_pu: [0.96, 1.04]"))
        let settings = try #require(c.grid.reactivePower.settings)
        #expect(!settings.reactivePriority)
        let expected = VoltVarSettings(curve: try Self.curve([(0.90, 30), (0.97, 0), (1.03, 0), (1.10, -30)]), vRef: 1.01,
                                       autonomousVRef: true, vRefTimeConstant: .seconds(600), vRefLimits: 0.96...1.04,
                                       responseTime: .seconds(10))
        #expect(settings.reactive == .voltVar(expected))
    }

    @Test("constant_pf: pf and excitation while discharging, pf_absorb and excitation_absorb while charging")
    func constantPowerFactor() throws {
        let c = try Self.parse(Self.perUnit(
            "mode: constant_pf", "pf: 0.95", "excitation: absorbing", "pf_absorb: 0.9", "excitation_absorb: injecting",
            "response_time_s: 2"))
        #expect(c.grid.reactivePower.settings?.reactive == .constantPowerFactor(ConstantPowerFactorSettings(
            discharging: PowerFactorSetting(0.95, .absorbing), charging: PowerFactorSetting(0.9, .injecting),
            responseTime: .seconds(2))))
        // pf alone holds both ways; the profile's 10 s response.
        let both = try Self.parse(Self.perUnit("mode: constant_pf", "pf: 0.97", "excitation: injecting"))
        #expect(both.grid.reactivePower.settings?.reactive == .constantPowerFactor(ConstantPowerFactorSettings(
            discharging: PowerFactorSetting(0.97, .injecting), charging: PowerFactorSetting(0.97, .injecting),
            responseTime: .seconds(10))))
        let unity = try Self.parse(Self.perUnit("mode: constant_pf"))
        #expect(unity.grid.reactivePower.settings?.reactive == .constantPowerFactor(Self.categoryB.constantPowerFactor))
    }

    @Test("constant_var: var_percent (+ = injecting) and response_time_s")
    func constantVar() throws {
        let c = try Self.parse(Self.perUnit("mode: constant_var", "var_percent: -30", "response_time_s: 1.5"))
        #expect(c.grid.reactivePower.settings?.reactive == .constantVar(ConstantVarSettings(percent: -30,
                                                                                             responseTime: .milliseconds(1500))))
    }

    @Test("watt_var: points across charging and discharging (negative p_pct), olrt_s")
    func wattVar() throws {
        let c = try Self.parse(Self.perUnit(
            "mode: watt_var", "watt_var:", "  points: [[-100, 30], [-50, 0], [50, 0], [100, -30]]", "  olrt_s: 4"))
        #expect(c.grid.reactivePower.settings?.reactive == .wattVar(WattVarSettings(
            curve: try Self.curve([(-100, 30), (-50, 0), (50, 0), (100, -30)]), responseTime: .seconds(4))))
    }

    @Test("volt_watt alone: settings with no reactive mode; {} takes the profile's curve; enabled: false is off")
    func voltWatt() throws {
        let c = try Self.parse(Self.perUnit(
            "nominal_voltage_v: 230", "volt_watt:", "  points: [[1.06, 100], [1.09, 20], [1.10, -50]]", "  olrt_s: 5"))
        let settings = try #require(c.grid.reactivePower.settings)
        #expect(settings.reactive == nil)
        #expect(settings.voltWatt == VoltWattSettings(curve: try Self.curve([(1.06, 100), (1.09, 20), (1.10, -50)]),
                                                      responseTime: .seconds(5)))
        let defaults = try Self.parse(Self.perUnit("mode: constant_var", "var_percent: 10", "nominal_voltage_v: 230", "volt_watt: {}"))
        #expect(defaults.grid.reactivePower.settings?.voltWatt == Self.categoryB.voltWatt)
        let off = try Self.parse(Self.perUnit("volt_watt: {enabled: false, olrt_s: 5}"))
        #expect(off.grid.reactivePower.settings == nil)
    }

    @Test("site.reactive_power: nominal_voltage_v taken; a site mode and volt-watt accepted and mapped to the site's law")
    func site() throws {
        let c = try Self.parse(Self.unit + """
            grid_integration:
              reactive_power: {nominal_voltage_v: 230}
            site:
              reactive_power:
                nominal_voltage_v: 6350
            """)
        #expect(c.site.reactivePower.nominalVoltageV == 6350)
        #expect(c.site.reactivePower.settings == nil)
        #expect(c.siteSettings.gridSupport == nil)
        let law = try Self.parse(Self.unit + "site:\n  meter: {simulated: true}\n  reactive_power: {mode: constant_var, var_percent: 20}\n")
        #expect(law.site.reactivePower.settings?.reactive == .constantVar(ConstantVarSettings(percent: 20, responseTime: Self.categoryB.constantVar.responseTime)))
        #expect(law.siteSettings.gridSupport == law.site.reactivePower.settings)
        #expect(law.unitSettings.allSatisfy { $0.gridSupport == nil }, "the units run no law of their own")
        let voltWatt = try Self.parse(Self.unit + "site:\n  meter: {simulated: true}\n  reactive_power: {nominal_voltage_v: 6350, volt_watt: {}}\n")
        #expect(voltWatt.siteSettings.gridSupport?.voltWatt == Self.categoryB.voltWatt)
        #expect(voltWatt.siteSettings.gridSupport?.reactive == nil)
    }

    @Test("a mode, or volt-watt, at both levels is refused at the site's key; site volt-var without a meter needs the units' nominal")
    func bothLevels() throws {
        let cases: [(yaml: String, key: String, message: String)] = [
            ("grid_integration:\n  reactive_power: {mode: constant_var, var_percent: 10}\nsite:\n  meter: {simulated: true}\n"
                + "  reactive_power: {mode: constant_var, var_percent: 20}\n", "mode", "choose per unit or at the connection point"),
            ("grid_integration:\n  reactive_power: {nominal_voltage_v: 230, volt_watt: {}}\nsite:\n  meter: {simulated: true}\n"
                + "  reactive_power: {nominal_voltage_v: 6350, volt_watt: {}}\n", "volt_watt", "choose per unit or at the connection point"),
            ("site:\n  reactive_power: {mode: volt_var, nominal_voltage_v: 6350}\n", "mode", "grid_integration.reactive_power.nominal_voltage_v"),
        ]
        for item in cases {
            do {
                _ = try Self.parse(Self.unit + item.yaml)
                Issue.record("accepted: \(item.yaml)")
            } catch {
                #expect(error.diagnostics.count == 1, "\(error)")
                #expect(error.diagnostics.first?.keyPath == "site.reactive_power.\(item.key)", "\(error)")
                #expect(error.diagnostics.first?.description.contains(item.message) == true, "\(error)")
            }
        }
        // A site mode beside the units' volt-watt is one curve on each axis: taken.
        let split = try Self.parse(Self.unit + "grid_integration:\n  reactive_power: {nominal_voltage_v: 230, volt_watt: {}}\nsite:\n"
            + "  meter: {simulated: true}\n  reactive_power: {mode: volt_var, nominal_voltage_v: 6350}\n")
        #expect(split.siteSettings.gridSupport?.reactive != nil && split.unitSettings[0].gridSupport?.voltWatt != nil)
    }

    @Test("max_apparent_power_kva: the unit's VAMax, at least max_power_kw; absent: nil")
    func apparentPower() throws {
        let c = try Self.parse(Self.unit + "    max_apparent_power_kva: 110\n")
        #expect(c.units[0].maxApparentPowerKVA == 110)
        #expect(try Self.parse(Self.unit + "    max_apparent_power_kva: 100\n").units[0].maxApparentPowerKVA == 100)
        #expect(try Self.parse(Self.unit).units[0].maxApparentPowerKVA == nil)
    }

    @Test("a mode's keys under another mode are read and checked but not used: a notice says so")
    func unusedKeys() throws {
        let c = try Self.parse(Self.perUnit("mode: constant_var", "var_percent: 5", "pf: 0.9", "excitation: absorbing"))
        let notices = c.notices.filter { $0.keyPath.hasPrefix("grid_integration.reactive_power") }
        #expect(notices.map(\.keyPath) == ["grid_integration.reactive_power.pf", "grid_integration.reactive_power.excitation"])
        #expect(notices.first?.line == 9 && notices.first?.message.contains("mode is constant_var") == true)
    }

    /// A refused file with the line, key path and message of its one error (`ConfigurationTests`' form).
    typealias Refused = ConfigurationTests.Bad

    static let refusals: [Refused] = [
        Refused(name: "volt-var of 3 points", yaml: perUnit("mode: volt_var", "nominal_voltage_v: 230", "volt_var:",
                                                            "  points: [[0.92, 44], [1.0, 0], [1.08, -44]]"),
                line: 10, keyPath: "grid_integration.reactive_power.volt_var.points", message: "GRID_CURVE_POINTS"),
        Refused(name: "curve not monotonic", yaml: perUnit("mode: volt_var", "nominal_voltage_v: 230", "volt_var:",
                                                           "  points: [[0.92, 44], [1.02, 0], [0.98, 0], [1.08, -44]]"),
                line: 10, keyPath: "grid_integration.reactive_power.volt_var.points", message: "GRID_CURVE_ORDER"),
        Refused(name: "a point that is not two numbers", yaml: perUnit("mode: watt_var", "watt_var:", "  points:",
                                                                       "    - [-100, 44]", "    - [50]", "    - [100, -44]"),
                line: 11, keyPath: "grid_integration.reactive_power.watt_var.points[1]", message: "two numbers"),
        Refused(name: "volt-var point outside Table 8", yaml: perUnit("mode: volt_var", "nominal_voltage_v: 230", "volt_var:",
                                                                      "  points: [[0.92, 44], [0.95, 0], [1.02, 0], [1.08, -44]]"),
                line: 10, keyPath: "grid_integration.reactive_power.volt_var.points", message: "volt-var V2 0.95"),
        Refused(name: "V_ref outside 0.95–1.05", yaml: perUnit("mode: volt_var", "nominal_voltage_v: 230", "volt_var:", "  v_ref_pu: 1.2"),
                line: 10, keyPath: "grid_integration.reactive_power.volt_var.v_ref_pu", message: "GRID_VOLT_VAR_RANGE"),
        Refused(name: "volt-var OLRT beyond 90 s", yaml: perUnit("mode: volt_var", "nominal_voltage_v: 230", "volt_var:", "  olrt_s: 100"),
                line: 10, keyPath: "grid_integration.reactive_power.volt_var.olrt_s", message: "GRID_RESPONSE_TIME_RANGE"),
        Refused(name: "V_ref limits inverted", yaml: perUnit("mode: volt_var", "nominal_voltage_v: 230", "volt_var:",
                                                             "  v_ref_limits_pu: [1.05, 0.95]"),
                line: 10, keyPath: "grid_integration.reactive_power.volt_var.v_ref_limits_pu", message: "low not above high"),
        Refused(name: "pf above 1", yaml: perUnit("mode: constant_pf", "pf: 1.2", "excitation: injecting"),
                line: 8, keyPath: "grid_integration.reactive_power.pf", message: "GRID_POWER_FACTOR_RANGE"),
        Refused(name: "pf_absorb of 0", yaml: perUnit("mode: constant_pf", "pf_absorb: 0", "excitation_absorb: absorbing"),
                line: 8, keyPath: "grid_integration.reactive_power.pf_absorb", message: "GRID_POWER_FACTOR_RANGE"),
        Refused(name: "pf below 1 without its excitation", yaml: perUnit("mode: constant_pf", "pf: 0.9"),
                line: 8, keyPath: "grid_integration.reactive_power.pf", message: "needs excitation"),
        Refused(name: "unknown excitation", yaml: perUnit("mode: constant_pf", "pf: 0.9", "excitation: leading"),
                line: 9, keyPath: "grid_integration.reactive_power.excitation", message: "injecting, absorbing"),
        Refused(name: "var beyond 100 %", yaml: perUnit("mode: constant_var", "var_percent: 120"),
                line: 8, keyPath: "grid_integration.reactive_power.var_percent", message: "GRID_VAR_RANGE"),
        Refused(name: "constant response beyond 10 s", yaml: perUnit("mode: constant_var", "response_time_s: 11"),
                line: 8, keyPath: "grid_integration.reactive_power.response_time_s", message: "GRID_RESPONSE_TIME_RANGE"),
        Refused(name: "volt-watt limit rising with voltage", yaml: perUnit("nominal_voltage_v: 230", "volt_watt:",
                                                                           "  points: [[1.06, 50], [1.10, 80]]"),
                line: 9, keyPath: "grid_integration.reactive_power.volt_watt.points", message: "GRID_VOLT_WATT_RANGE"),
        Refused(name: "unknown mode", yaml: perUnit("mode: volt_watt"),
                line: 7, keyPath: "grid_integration.reactive_power.mode", message: "none, constant_pf, constant_var, volt_var, watt_var"),
        Refused(name: "unknown profile", yaml: perUnit("profile: ieee1547_2018_cat_c"),
                line: 7, keyPath: "grid_integration.reactive_power.profile", message: "ieee1547_2018_cat_b"),
        Refused(name: "volt_var without nominal_voltage_v", yaml: perUnit("mode: volt_var"),
                line: 7, keyPath: "grid_integration.reactive_power.mode", message: "nominal_voltage_v"),
        Refused(name: "volt_watt without nominal_voltage_v", yaml: perUnit("mode: constant_pf", "volt_watt: {}"),
                line: 8, keyPath: "grid_integration.reactive_power.volt_watt", message: "nominal_voltage_v"),
        Refused(name: "nominal voltage of 0", yaml: perUnit("nominal_voltage_v: 0"),
                line: 7, keyPath: "grid_integration.reactive_power.nominal_voltage_v", message: "greater than 0"),
        Refused(name: "unknown key", yaml: perUnit("mode: constant_var", "q_percent: 10"),
                line: 8, keyPath: "grid_integration.reactive_power.q_percent", message: "unknown key"),
        Refused(name: "unknown key in a curve block", yaml: perUnit("mode: watt_var", "watt_var: {points: [[0, 0], [100, -44]], olrt: 5}"),
                line: 8, keyPath: "grid_integration.reactive_power.watt_var.olrt", message: "unknown key"),
        Refused(name: "a mode at both levels",
                yaml: perUnit("mode: constant_var") + "site:\n  reactive_power:\n    mode: constant_pf\n",
                line: 10, keyPath: "site.reactive_power.mode", message: "grid_integration.reactive_power too"),
        Refused(name: "volt-watt at both levels",
                yaml: perUnit("nominal_voltage_v: 230", "volt_watt: {}") + "site:\n  reactive_power:\n    nominal_voltage_v: 230\n    volt_watt: {}\n",
                line: 12, keyPath: "site.reactive_power.volt_watt", message: "grid_integration.reactive_power too"),
        Refused(name: "a site voltage mode without a meter or the units' nominal",
                yaml: unit + "site:\n  reactive_power:\n    mode: volt_var\n    nominal_voltage_v: 230\n",
                line: 7, keyPath: "site.reactive_power.mode", message: "grid_integration.reactive_power.nominal_voltage_v"),
        Refused(name: "a negative last P in the site's volt-watt",
                yaml: unit + "grid_integration:\n  reactive_power: {nominal_voltage_v: 230}\nsite:\n  meter: {simulated: true}\n"
                    + "  reactive_power:\n    nominal_voltage_v: 6350\n    volt_watt:\n      points: [[1.06, 100], [1.10, -50]]\n",
                line: 12, keyPath: "site.reactive_power.volt_watt.points", message: "GRID_VOLT_WATT_RANGE: a negative last P"),
        Refused(name: "max_apparent_power_kva below max_power_kw", yaml: unit + "    max_apparent_power_kva: 90\n",
                line: 5, keyPath: "bess_units[0].max_apparent_power_kva", message: "must not be below max_power_kw (100 kW)"),
        Refused(name: "max_apparent_power_kva of 0", yaml: unit + "    max_apparent_power_kva: 0\n",
                line: 5, keyPath: "bess_units[0].max_apparent_power_kva", message: "greater than 0"),
    ]

    @Test("each refusal names the line and key path of its key, and only it", arguments: refusals)
    func refused(_ bad: Refused) {
        do {
            _ = try Self.parse(bad.yaml)
            Issue.record("accepted:\n\(bad.yaml)")
        } catch {
            #expect(error.diagnostics.count == 1, "\(error)")
            let first = error.diagnostics.first
            #expect(first?.line == bad.line, "\(error)")
            #expect(first?.keyPath == bad.keyPath, "\(error)")
            #expect(first?.description.contains(bad.message) == true, "\(error)")
            #expect(first.map { "\($0.code)" } == "CONFIG_INVALID")
        }
    }

    @Test("a reload applies reactive_power and max_apparent_power_kva: control settings, no restart key")
    func reloadIsLive() throws {
        let old = try Self.parse(Self.unit)
        let new = try Self.parse(Self.unit + "    max_apparent_power_kva: 110\n" + """
            grid_integration:
              reactive_power: {mode: constant_var, var_percent: 10, nominal_voltage_v: 230}
            site:
              reactive_power: {nominal_voltage_v: 6351}
            """)
        #expect(CycleSettings.reloadRules.restartNeeded(from: old.cycleSettings, to: new.cycleSettings) == nil)
    }

    @Test("nothing here is a secret: the redacted text and a refusal's value are shown as written")
    func notRedacted() {
        let yaml = Self.perUnit("mode: constant_pf", "pf: 1.5", "excitation: injecting",
                                "volt_var: {points: [[0.92, 44], [0.98, 0], [1.02, 0], [1.08, -44]]}")
        #expect(ConfigRedaction.text(yaml) == yaml)
        do {
            _ = try Self.parse(yaml)
            Issue.record("accepted pf 1.5")
        } catch {
            #expect(error.diagnostics.first?.got == "'1.5'", "\(error)")
        }
    }
}
