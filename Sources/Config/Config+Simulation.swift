import ControlCore
import Foundation
internal import Yams

extension SimulationConfiguration {
    /// The keys of `simulation`.
    static let keys = ConfigKeys("simulation", [
        "initial_soc_percent", "initial_soc_percent_by_unit", "ambient_c", "frequency_profile", "base_hz",
        "amplitude_hz", "step_period_s", "seed", "ramp_to_hz", "ramp_start_s", "ramp_duration_s", "trace_file",
        "faults", "hottest_cell_above_pack_c", "load", "pv", "meter_model",
    ])

    /// `simulation:` — the simulated site: state of charge, frequency profile, faults, load, PV and meter.
    static func decode(_ fields: ConfigReader.Fields?, _ nominal: Double, units: [String], file: String,
                       _ r: ConfigReader) -> SimulationConfiguration {
        var simulation = SimulationConfiguration(
            initialSOCPercent: 60, ambientCelsius: 25, frequencyProfile: .walk, baseHz: nominal, amplitudeHz: 0.15,
            stepPeriod: .seconds(30), seed: 1, rampToHz: nominal, rampStart: .zero, rampDuration: .seconds(60), trace: [],
            faults: [])
        guard let fields else { return simulation }
        simulation.initialSOCPercent = fields.double("initial_soc_percent", default: 60, range: 0...100, unit: "%")!
        if let byUnit = fields.fields("initial_soc_percent_by_unit"), case .mapping(let mapping) = byUnit.node {
            for (key, _) in mapping {
                guard let id = key.string else { continue }
                if !units.contains(id) {
                    _ = byUnit.node(id)
                    r.error(key, byUnit.child(id), "names no unit of bess_units", got: id)
                    continue
                }
                if let soc = byUnit.double(id, range: 0...100, unit: "%") { simulation.initialSOCByUnit[id] = soc }
            }
            byUnit.finish()
        }
        simulation.ambientCelsius = fields.double("ambient_c", default: 25, range: -40...60, unit: "°C")!
        simulation.frequencyProfile = fields.choice(
            "frequency_profile",
            [("steady", .steady), ("walk", .walk), ("steps", .steps), ("ramp", .ramp), ("trace", .trace)], default: .walk)
        simulation.baseHz = fields.double("base_hz", default: nominal, range: 40...70, unit: "Hz")!
        simulation.amplitudeHz = fields.double("amplitude_hz", default: 0.15, range: 0...5, unit: "Hz")!
        simulation.stepPeriod = .seconds(fromDouble: fields.double("step_period_s", default: 30, range: 1...3600, unit: "seconds")!)
        simulation.seed = UInt64(fields.int("seed", default: 1, range: 0...Int.max)!)
        simulation.rampToHz = fields.double("ramp_to_hz", default: simulation.baseHz, range: 40...70, unit: "Hz")!
        simulation.rampStart = .seconds(fromDouble: fields.double("ramp_start_s", default: 0, range: 0...86_400, unit: "seconds")!)
        simulation.rampDuration = .seconds(fromDouble: fields.double("ramp_duration_s", default: 60, range: 0...86_400, unit: "seconds")!)
        if let traceFile = fields.string("trace_file") {
            simulation.trace = TraceFile(traceFile, besideConfiguration: file)
                .frequencyPoints(at: fields.mark("trace_file"), fields.child("trace_file"), r)
        } else if simulation.frequencyProfile == .trace {
            r.error(fields.mark("frequency_profile"), fields.child("trace_file"), "is required for frequency_profile: trace")
        }
        if let list = fields.sequence("faults") {
            for (index, node) in list.enumerated() {
                let path = fields.child("faults[\(index)]")
                guard let f = r.fields(node, path) else { continue }
                if let fault = FaultInjection.decode(f, node: node, path: path, units: units, r) {
                    simulation.faults.append(fault)
                }
            }
        }
        simulation.hottestCellAbovePackK = fields.double("hottest_cell_above_pack_c", default: 2, range: 0...20, unit: "°C")!
        if let load = fields.fields("load") { simulation.load = PowerProfile.decode(load, file: file, r) }
        if let pv = fields.fields("pv") { simulation.pv = PowerProfile.decode(pv, file: file, r, nonNegative: true) }
        simulation.meterModel = fields.choice(
            "meter_model", [("201", UInt16(201)), ("202", 202), ("203", 203), ("204", 204)], default: 203)
        fields.finish(Self.keys)
        return simulation
    }

}

extension PowerProfile {
    /// The keys of `simulation.load, simulation.pv`.
    static let keys = ConfigKeys("simulation.load, simulation.pv", [
        "profile", "base_kw", "levels_kw", "step_period_s", "trace_file",
    ])

    /// `simulation.load` / `simulation.pv`: steady, steps or a `seconds,kw` trace.
    static func decode(_ f: ConfigReader.Fields, file: String, _ r: ConfigReader, nonNegative: Bool = false) -> PowerProfile {
        let range: ClosedRange<Double> = nonNegative ? 0...1_000_000 : -1_000_000...1_000_000
        var profile = PowerProfile(base: f.double("base_kw", default: 0, range: range, unit: "kW")!)
        profile.shape = f.choice("profile", PowerProfile.Shape.allCases.map { ($0.rawValue, $0) }, default: .steady)
        if let levels = f.sequence("levels_kw") {
            for node in levels {
                if let value = node.int.map(Double.init) ?? node.float, range.contains(value) {
                    profile.levelsKW.append(value)
                } else {
                    r.error(node, f.child("levels_kw"), "expected numbers in \(format(range.lowerBound))…\(format(range.upperBound)) kW",
                            got: ConfigReader.shown(node))
                }
            }
        }
        profile.stepPeriod = .seconds(fromDouble: f.double("step_period_s", default: 30, range: 0.1...86_400, unit: "seconds")!)
        if let name = f.string("trace_file") {
            profile.trace = TraceFile(name, besideConfiguration: file)
                .points(column: "kw", valid: { range.contains($0) }, rule: "kw in \(format(range.lowerBound))…\(format(range.upperBound))",
                        at: f.mark("trace_file"), f.child("trace_file"), r)
                .map { PowerPoint(at: $0.at, kilowatts: $0.value) }
        }
        switch profile.shape {
        case .steps where profile.levelsKW.isEmpty:
            r.error(f.mark("profile"), f.child("levels_kw"), "is required for profile: steps (the levels after base_kw)")
        case .trace where !f.has("trace_file"):
            r.error(f.mark("profile"), f.child("trace_file"), "is required for profile: trace")
        default: break
        }
        f.finish(Self.keys)
        return profile
    }

}

extension BMSOverride {
    /// The keys of `simulation.faults[].bms` (a `bms_values` fault), each optional.
    static let keys = ConfigKeys("simulation.faults[].bms", [
        "soc_percent", "pack_voltage_v", "pack_current_a", "cell_voltage_min_v", "cell_voltage_max_v",
        "temperature_min_c", "temperature_max_c", "charge_current_limit_a", "discharge_current_limit_a",
        "charge_enabled", "discharge_enabled", "protections", "alarms",
    ])

    /// The names of the BMS conditions a `bms_values` fault can raise.
    static let conditionNames: [(String, BMSConditions)] = [
        ("cell_overvoltage", .cellOvervoltage), ("cell_undervoltage", .cellUndervoltage),
        ("overtemperature", .overtemperature), ("undertemperature", .undertemperature),
        ("discharge_overcurrent", .dischargeOvercurrent), ("charge_overcurrent", .chargeOvercurrent),
        ("system_error", .systemError), ("internal_communication", .internalCommunication),
    ]

    /// The `bms:` block of a `bms_values` fault: every key optional, at least one given.
    static func decode(_ b: ConfigReader.Fields, _ r: ConfigReader) -> BMSOverride {
        var o = BMSOverride()
        o.socPercent = b.double("soc_percent", range: 0...100, unit: "%")
        o.packVoltage = b.double("pack_voltage_v", range: 0...1500, unit: "V")
        o.packCurrent = b.double("pack_current_a", range: -5000...5000, unit: "A")
        o.cellVoltageMin = b.double("cell_voltage_min_v", range: 0...5, unit: "V")
        o.cellVoltageMax = b.double("cell_voltage_max_v", range: 0...5, unit: "V")
        o.temperatureMin = b.double("temperature_min_c", range: -60...200, unit: "°C")
        o.temperatureMax = b.double("temperature_max_c", range: -60...200, unit: "°C")
        o.chargeCurrentLimit = b.double("charge_current_limit_a", range: 0...5000, unit: "A")
        o.dischargeCurrentLimit = b.double("discharge_current_limit_a", range: 0...5000, unit: "A")
        if b.has("charge_enabled") { o.chargeEnabled = b.bool("charge_enabled", default: true) }
        if b.has("discharge_enabled") { o.dischargeEnabled = b.bool("discharge_enabled", default: true) }
        for key in ["protections", "alarms"] {
            guard let list = b.sequence(key) else { continue }
            var set = BMSConditions()
            for item in list {
                guard let name = item.string, let c = conditionNames.first(where: { $0.0 == name }) else {
                    r.error(item, b.child(key), "unknown condition (got \(item.string ?? "?")); one of "
                        + conditionNames.map(\.0).joined(separator: ", "))
                    continue
                }
                set.insert(c.1)
            }
            if key == "protections" { o.protections = set } else { o.alarms = set }
        }
        if !keys.names.contains(where: b.has) {
            r.error(b.mark(""), b.path, "names no value to report; known: \(keys.list)")
        }
        b.finish(Self.keys)
        return o
    }
}

extension FaultInjection {
    /// The keys of `simulation.faults[]`.
    static let keys = ConfigKeys("simulation.faults[]", [
        "kind", "unit", "at_s", "duration_s", "delay_s", "bms", "group",
    ])

    /// One entry of `simulation.faults:` — its kind, unit, window and the values its kind needs; nil without a kind.
    static func decode(_ f: ConfigReader.Fields, node: Node, path: String, units: [String], _ r: ConfigReader) -> FaultInjection? {
        let kinds = FaultInjection.Kind.allCases.map { ($0.rawValue, Optional($0)) }
        let kind = f.choice("kind", kinds, default: nil)
        if kind == nil, !f.has("kind") { r.error(node, "\(path).kind", "is required") }
        let unit = f.string("unit", pattern: { units.contains($0) }, rule: "must name a unit of bess_units")
        let at = Duration.seconds(fromDouble: f.double("at_s", default: 0, range: 0...86_400, unit: "seconds")!)
        let duration = Duration.seconds(fromDouble: f.double("duration_s", default: 0, range: 0...86_400, unit: "seconds")!)
        let delay = Duration.seconds(fromDouble: f.double("delay_s", default: 0, range: 0...60, unit: "seconds")!)
        if kind.map({ $0.rawValue.hasPrefix("meter_") }) == true, f.has("unit") {
            r.error(f.mark("unit"), "\(path).unit", "a meter fault acts on the site's meter; it names no unit")
        }
        if (kind == .bmsDelay || kind == .modbusDelay || kind == .meterDelay) && delay <= .zero {
            r.error(node, "\(path).delay_s", "is required (> 0) for \(kind!.rawValue)")
        }
        var values: BMSOverride?
        if kind == .bmsValues {
            if let b = f.fields("bms") {
                values = BMSOverride.decode(b, r)
            } else {
                r.error(node, "\(path).bms", "is required for bms_values (the values the BMS reports)")
            }
        } else if f.has("bms") {
            r.error(f.mark("bms"), "\(path).bms", "applies only to kind: bms_values")
        }
        var groups = BMSGroups()
        if kind == .bmsGroupSilence {
            groups = f.choice("group", [("cells", BMSGroups.cells), ("protection", .protection), ("requests", .requests)],
                              default: BMSGroups())
            if groups.isEmpty, !f.has("group") {
                r.error(node, "\(path).group", "is required for bms_group_silence (cells, protection or requests)")
            }
        } else if f.has("group") {
            r.error(f.mark("group"), "\(path).group", "applies only to kind: bms_group_silence")
        }
        f.finish(Self.keys)
        guard let kind else { return nil }
        return FaultInjection(kind: kind, unit: unit, at: at, duration: duration, delay: delay,
                              bmsValues: values, silencedGroups: groups)
    }
}
