import ControlCore
import GridSupport
internal import Yams

/// The keys of one level's `reactive_power:` block and of its three curve blocks: the same keys per
/// unit (`grid_integration.reactive_power`) and at the connection point (`site.reactive_power`).
struct ReactiveKeys: Sendable {
    let block: ConfigKeys
    let voltVar: ConfigKeys
    let wattVar: ConfigKeys
    let voltWatt: ConfigKeys

    init(_ section: String) {
        block = ConfigKeys(section, [
            "mode", "profile", "nominal_voltage_v", "reactive_priority", "pf", "excitation", "pf_absorb", "excitation_absorb",
            "var_percent", "response_time_s", "volt_var", "watt_var", "volt_watt",
        ])
        voltVar = ConfigKeys(section + ".volt_var", [
            "points", "v_ref_pu", "olrt_s", "autonomous_v_ref", "v_ref_time_constant_s", "v_ref_limits_pu",
        ])
        wattVar = ConfigKeys(section + ".watt_var", ["points", "olrt_s"])
        voltWatt = ConfigKeys(section + ".volt_watt", ["enabled", "points", "olrt_s"])
    }

    var all: [ConfigKeys] { [block, voltVar, wattVar, voltWatt] }
}

/// Settings GridSupport checks against IEEE 1547-2018's ranges (`GridSupportError`).
protocol RangeCheckedSettings {
    func validate() throws(GridSupportError)
}

extension VoltVarSettings: RangeCheckedSettings {}
extension WattVarSettings: RangeCheckedSettings {}
extension VoltWattSettings: RangeCheckedSettings {}
extension ConstantPowerFactorSettings: RangeCheckedSettings {}
extension ConstantVarSettings: RangeCheckedSettings {}

extension ReactivePowerConfiguration {
    /// `grid_integration.reactive_power`: each unit's law, on its own voltage and rating.
    static let unitKeys = ReactiveKeys("grid_integration.reactive_power")
    /// `site.reactive_power`: one law at the connection point.
    static let siteKeys = ReactiveKeys("site.reactive_power")

    /// `mode:` — IEEE 1547-2018 §5.3's reactive modes, as the file names them.
    enum Mode: String, CaseIterable {
        case constantPF = "constant_pf", constantVar = "constant_var", voltVar = "volt_var", wattVar = "watt_var"
    }

    /// `reactive_power:` — the nominal voltage, then a profile's settings (Category B by default) with
    /// every number the file states, each checked against IEEE 1547-2018's ranges and refused at its
    /// own line. `settings` stays nil unless a mode or volt-watt is on.
    static func decode(_ f: ConfigReader.Fields, _ r: ConfigReader, keys: ReactiveKeys) -> ReactivePowerConfiguration {
        let mode = f.choice("mode", [("none", Mode?.none)] + Mode.allCases.map { ($0.rawValue, Mode?.some($0)) }, default: nil)
        let profile = f.choice("profile", GridSupportProfile.allCases.map { ($0.rawValue, $0) }, default: .ieee1547_2018_cat_b)
        let nominal = f.double("nominal_voltage_v", range: 0...1_000_000, exclusiveLower: true, unit: "V (line to neutral)")
        let priority = f.bool("reactive_priority", default: true)
        let (powerFactor, constantVar) = constantModes(f, profile)
        let voltVar = decodeVoltVar(f.fields("volt_var"), profile, keys.voltVar)
        let wattVar = decodeWattVar(f.fields("watt_var"), profile, keys.wattVar)
        let voltWatt = decodeVoltWatt(f.fields("volt_watt"), profile, keys.voltWatt)
        f.finish(keys.block)
        noticeUnused(f, r, mode: mode)

        let reactive: ReactivePowerMode? = switch mode {
        case .constantPF: .constantPowerFactor(powerFactor)
        case .constantVar: .constantVar(constantVar)
        case .voltVar: .voltVar(voltVar)
        case .wattVar: .wattVar(wattVar)
        case nil: nil
        }
        var configuration = ReactivePowerConfiguration(nominalVoltageV: nominal)
        if reactive != nil || voltWatt != nil {
            var settings = profile.settings(reactive: reactive, voltWatt: false)
            settings.voltWatt = voltWatt
            settings.reactivePriority = priority
            configuration.settings = settings
        }
        // A nominal the file gives but got wrong was reported at its line already; `key:` alone is none.
        if nominal == nil, f.node("nominal_voltage_v") == nil {
            let needs = "reads the voltage, in per unit of nominal_voltage_v: state it (line to neutral, V)"
            if mode == .voltVar { r.error(f.mark("mode"), f.child("mode"), needs, got: "volt_var") }
            if voltWatt != nil { r.error(f.mark("volt_watt"), f.child("volt_watt"), needs) }
        }
        return configuration
    }

    /// `pf`/`excitation` (discharging), `pf_absorb`/`excitation_absorb` (charging; by default the
    /// discharging pair), `var_percent` and `response_time_s` (both constant modes).
    static func constantModes(_ f: ConfigReader.Fields, _ profile: GridSupportProfile)
        -> (ConstantPowerFactorSettings, ConstantVarSettings)
    {
        var pf = profile.constantPowerFactor
        var constant = profile.constantVar
        if let discharging = powerFactor(f, "pf", "excitation", default: pf.discharging) {
            check(&pf, f, "pf") { $0.discharging = discharging }
        }
        if let charging = powerFactor(f, "pf_absorb", "excitation_absorb", default: pf.discharging) {
            check(&pf, f, "pf_absorb") { $0.charging = charging }
        } else {
            pf.charging = pf.discharging
        }
        if let percent = f.double("var_percent", unit: "% of the apparent power rating") {
            check(&constant, f, "var_percent") { $0.percent = percent }
        }
        if let seconds = f.double("response_time_s", range: 0...3600, unit: "seconds") {
            let time = Duration.seconds(fromDouble: seconds)
            if check(&pf, f, "response_time_s", { $0.responseTime = time }) { constant.responseTime = time }
        }
        return (pf, constant)
    }

    /// A power factor and its excitation, each key defaulting to `base`'s; nil when neither is
    /// given. A power factor below 1 needs its excitation written: which way the vars go is not guessed.
    static func powerFactor(_ f: ConfigReader.Fields, _ pfKey: String, _ excitationKey: String,
                            default base: PowerFactorSetting) -> PowerFactorSetting?
    {
        let value = f.double(pfKey, unit: "(0, 1]")
        let excitation = f.choice(excitationKey, Excitation.allCases.map { ($0.rawValue, Excitation?.some($0)) }, default: nil)
        if let value, value < 1, excitation == nil, f.node(excitationKey) == nil {
            f.reader.error(f.mark(pfKey), f.child(pfKey), "below 1 needs \(excitationKey): injecting or absorbing",
                           got: f.mark(pfKey).map(ConfigReader.shown))
        }
        guard value != nil || excitation != nil else { return nil }
        return PowerFactorSetting(value ?? base.powerFactor, excitation ?? base.excitation)
    }

    /// `volt_var:` — the profile's curve, V_ref and response, and autonomous V_ref adjustment (off).
    static func decodeVoltVar(_ f: ConfigReader.Fields?, _ profile: GridSupportProfile, _ keys: ConfigKeys) -> VoltVarSettings {
        var settings = profile.voltVar
        guard let f else { return settings }
        if let curve = decodeCurve(f, point: "[v_pu, var_pct]") { check(&settings, f, "points") { $0.curve = curve } }
        if let vRef = f.double("v_ref_pu", unit: "per unit") { check(&settings, f, "v_ref_pu") { $0.vRef = vRef } }
        if let time = responseTime(f, "olrt_s") { check(&settings, f, "olrt_s") { $0.responseTime = time } }
        settings.autonomousVRef = f.bool("autonomous_v_ref", default: settings.autonomousVRef)
        if let time = responseTime(f, "v_ref_time_constant_s") {
            check(&settings, f, "v_ref_time_constant_s") { $0.vRefTimeConstant = time }
        }
        if let limits = f.sequence("v_ref_limits_pu") {
            let values = limits.compactMap(number)
            if values.count != 2 || limits.count != 2 || !(values[0] <= values[1]) {
                f.reader.error(f.mark("v_ref_limits_pu"), f.child("v_ref_limits_pu"), "expected [low, high] in per unit, low not above high",
                               got: "[" + limits.map { $0.scalar?.string ?? "?" }.joined(separator: ", ") + "]")
            } else {
                check(&settings, f, "v_ref_limits_pu") { $0.vRefLimits = values[0]...values[1] }
            }
        }
        f.finish(keys)
        return settings
    }

    /// `watt_var:` — the profile's curve (charging and discharging) and response.
    static func decodeWattVar(_ f: ConfigReader.Fields?, _ profile: GridSupportProfile, _ keys: ConfigKeys) -> WattVarSettings {
        var settings = profile.wattVar
        guard let f else { return settings }
        if let curve = decodeCurve(f, point: "[p_pct, var_pct]") { check(&settings, f, "points") { $0.curve = curve } }
        if let time = responseTime(f, "olrt_s") { check(&settings, f, "olrt_s") { $0.responseTime = time } }
        f.finish(keys)
        return settings
    }

    /// `volt_watt:` — on while the block is written (`{}`: the profile's curve), unless `enabled: false`.
    static func decodeVoltWatt(_ f: ConfigReader.Fields?, _ profile: GridSupportProfile, _ keys: ConfigKeys) -> VoltWattSettings? {
        guard let f else { return nil }
        var settings = profile.voltWatt
        let enabled = f.bool("enabled", default: true)
        if let curve = decodeCurve(f, point: "[v_pu, p_pct]") { check(&settings, f, "points") { $0.curve = curve } }
        if let time = responseTime(f, "olrt_s") { check(&settings, f, "olrt_s") { $0.responseTime = time } }
        f.finish(keys)
        return enabled ? settings : nil
    }

    /// The keys of a mode other than `mode`: read and checked, not used; a notice says so.
    static func noticeUnused(_ f: ConfigReader.Fields, _ r: ConfigReader, mode: Mode?) {
        let byMode: [(keys: [String], used: Bool)] = [
            (["pf", "excitation", "pf_absorb", "excitation_absorb"], mode == .constantPF),
            (["var_percent"], mode == .constantVar),
            (["response_time_s"], mode == .constantPF || mode == .constantVar),
            (["volt_var"], mode == .voltVar),
            (["watt_var"], mode == .wattVar),
        ]
        for (keys, used) in byMode where !used {
            for key in keys where f.has(key) {
                r.notice(f.mark(key), f.child(key), "is not used: mode is \(mode?.rawValue ?? "none")")
            }
        }
    }

    // MARK: - Numbers, curves and the ranges

    /// `key` in seconds (0–86400; the function's own range is checked after).
    static func responseTime(_ f: ConfigReader.Fields, _ key: String) -> Duration? {
        f.double(key, range: 0...86_400, unit: "seconds").map { Duration.seconds(fromDouble: $0) }
    }

    /// A scalar's number, nil for anything else or a value that is not finite.
    static func number(_ node: Node) -> Double? {
        guard case .scalar = node, let value = node.int.map(Double.init) ?? node.float, value.isFinite else { return nil }
        return value
    }

    /// `points:` as `[[x, y], …]`; nil when absent or refused (each bad point at its own line, the
    /// curve's count or order at `points`).
    static func decodeCurve(_ f: ConfigReader.Fields, point: String) -> GridCurve? {
        guard let items = f.sequence("points") else { return nil }
        var points: [(x: Double, y: Double)] = []
        for (index, item) in items.enumerated() {
            let pair: [Node] = if case .sequence(let sequence) = item { Array(sequence) } else { [] }
            if pair.count == 2, let x = number(pair[0]), let y = number(pair[1]) {
                points.append((x, y))
            } else {
                f.reader.error(item, f.child("points") + "[\(index)]", "expected a point \(point): two numbers",
                               got: ConfigReader.shown(item))
            }
        }
        guard points.count == items.count else { return nil }
        do throws(GridSupportError) {
            return try GridCurve(points)
        } catch {
            f.reader.error(f.mark("points"), f.child("points"), "\(error)")
            return nil
        }
    }

    /// Applies `change` when the result lies in IEEE 1547-2018's ranges; otherwise reports the
    /// `GridSupportError` at `key`'s line and leaves `settings` as they were. Each key is applied to
    /// settings already valid (a profile's, then the keys before it), so the key that breaks a
    /// range is the one named.
    @discardableResult
    static func check<Settings: RangeCheckedSettings>(_ settings: inout Settings, _ f: ConfigReader.Fields, _ key: String,
                                                      _ change: (inout Settings) -> Void) -> Bool {
        var changed = settings
        change(&changed)
        do throws(GridSupportError) {
            try changed.validate()
        } catch {
            let node = f.mark(key)
            let got: String? = if let node, case .scalar = node { ConfigReader.shown(node) } else { nil }
            f.reader.error(node, f.child(key), "\(error)", got: got)
            return false
        }
        settings = changed
        return true
    }

    // MARK: - Across the two levels

    /// `site.reactive_power` beside `grid_integration.reactive_power`: a reactive mode, and volt-watt,
    /// run at one level (two curves on one voltage would fight), and without a site meter the site's
    /// voltage is the units' mean per-unit voltage, which needs the units' nominal voltage.
    static func checkLevels(site: ReactivePowerConfiguration, _ f: ConfigReader.Fields, unit: ReactivePowerConfiguration,
                            hasMeter: Bool, _ r: ConfigReader) {
        if site.settings?.reactive != nil, unit.settings?.reactive != nil {
            r.error(f.mark("mode"), f.child("mode"),
                    "a reactive mode is set in grid_integration.reactive_power too: choose per unit or at the connection "
                        + "point (two curves on one voltage would fight)", got: f.mark("mode").map(ConfigReader.shown))
        }
        if site.settings?.voltWatt != nil, unit.settings?.voltWatt != nil {
            r.error(f.mark("volt_watt"), f.child("volt_watt"),
                    "volt-watt is set in grid_integration.reactive_power too: choose per unit or at the connection point")
        }
        if let curve = site.settings?.voltWatt?.curve, curve.count > 0, curve[curve.count - 1].y < 0 {
            // The site's volt-watt caps Σ units' discharge; it cannot make them charge.
            let block = f.fields("volt_watt")
            let last = curve[curve.count - 1].y
            r.error(block?.mark("points") ?? f.mark("volt_watt"), f.child("volt_watt.points"),
                    "GRID_VOLT_WATT_RANGE: a negative last P (\(last) %) makes storage charge at high voltage, which volt-watt "
                        + "at the connection point does not do (it caps the units' discharge): end at 0 or above, or set "
                        + "volt_watt per unit in grid_integration.reactive_power")
        }
        let readsVoltage = site.settings?.reactive?.readsVoltage == true || site.settings?.voltWatt != nil
        guard readsVoltage, unit.nominalVoltageV == nil else { return }
        let key = site.settings?.reactive?.readsVoltage == true ? "mode" : "volt_watt"
        if !hasMeter {
            r.error(f.mark(key), f.child(key),
                    "without site.meter the site's voltage is the units' mean per-unit voltage: "
                        + "grid_integration.reactive_power.nominal_voltage_v is needed too")
        } else {
            r.notice(f.mark(key), f.child(key),
                     "while site.meter is stale the site's voltage is the units' mean per-unit voltage, which needs "
                        + "grid_integration.reactive_power.nominal_voltage_v; without it there is no voltage then (0 var)")
        }
    }
}
