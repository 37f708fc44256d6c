import Cycle
import ControlCore
import Fieldbus
internal import Yams

extension SiteConfiguration {
    /// The keys of `site.grid_limits`.
    static let gridLimitsKeys = ConfigKeys("site.grid_limits", [
        "import_max_kw", "export_max_kw",
    ])

    /// The keys of `site.peak_shaving`.
    static let peakShavingKeys = ConfigKeys("site.peak_shaving", [
        "import_max_kw", "recharge_below_kw",
    ])

    /// The keys of `site.self_consumption`.
    static let selfConsumptionKeys = ConfigKeys("site.self_consumption", [
        "target_grid_kw",
    ])

    /// The keys of `site`.
    static let keys = ConfigKeys("site", [
        "meter", "grid_limits", "application", "peak_shaving", "self_consumption", "soc_reserve_percent", "reactive_power",
    ])

    /// `site:` — the grid connection point: its meter, limits, application and reactive power
    /// (`unitReactive`: `grid_integration.reactive_power`, which it must not duplicate).
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader, mode: RunMode, units: [UnitConfiguration],
                       unitReactive: ReactivePowerConfiguration = ReactivePowerConfiguration()) -> SiteConfiguration
    {
        var site = SiteConfiguration()
        guard let fields else { return site }
        if let m = fields.fields("meter") { site.meter = MeterConfiguration.decode(m, r, mode: mode, units: units) }
        if let limits = fields.fields("grid_limits") {
            site.importMaxKW = limits.double("import_max_kw", range: 0...1_000_000, unit: "kW")
            site.exportMaxKW = limits.double("export_max_kw", range: 0...1_000_000, unit: "kW")
            limits.finish(Self.gridLimitsKeys)
            if site.meter == nil { r.error(fields.mark("grid_limits"), fields.child("grid_limits"), "needs site.meter (limits are held at the meter)") }
        }
        let application = fields.choice("application", [("none", "none"), ("peak_shaving", "peak_shaving"),
                                                        ("self_consumption", "self_consumption")], default: "none")
        let peak = fields.fields("peak_shaving")
        let selfConsumption = fields.fields("self_consumption")
        let importMax = peak?.double("import_max_kw", range: 0...1_000_000, unit: "kW")
        let recharge = peak?.double("recharge_below_kw", range: -1_000_000...1_000_000, unit: "kW")
        let target = selfConsumption?.double("target_grid_kw", default: 0, range: -1_000_000...1_000_000, unit: "kW") ?? 0
        if let importMax, let recharge, recharge > importMax {
            r.error(peak?.mark("recharge_below_kw"), fields.child("peak_shaving.recharge_below_kw"),
                    "must not be above peak_shaving.import_max_kw (\(format(importMax)) kW): the batteries would charge into the peak",
                    got: format(recharge))
        }
        switch application {
        case "peak_shaving":
            if importMax == nil, !(peak?.has("import_max_kw") ?? false) {
                r.error(peak?.node ?? fields.mark("application"), fields.child("peak_shaving.import_max_kw"), "is required for application: peak_shaving")
            }
            if let limit = site.importMaxKW, let importMax, importMax > limit {
                r.notice(peak?.mark("import_max_kw"), fields.child("peak_shaving.import_max_kw"),
                         "is above grid_limits.import_max_kw (\(format(limit)) kW); the grid limit binds first")
            }
            if let importMax { site.application = .peakShaving(importMax: .kilowatts(importMax), rechargeBelow: recharge.map { .kilowatts($0) }) }
        case "self_consumption":
            site.application = .selfConsumption(targetGrid: .kilowatts(target))
        default: break
        }
        peak?.finish(Self.peakShavingKeys)
        selfConsumption?.finish(Self.selfConsumptionKeys)
        if application != "peak_shaving", let peak {
            r.error(peak.node, fields.child("peak_shaving"), "applies only to application: peak_shaving", got: "application: \(application)")
        }
        if application != "self_consumption", let selfConsumption {
            r.error(selfConsumption.node, fields.child("self_consumption"), "applies only to application: self_consumption",
                    got: "application: \(application)")
        }
        if application != "none", site.meter == nil {
            r.error(fields.mark("application"), fields.child("application"), "needs site.meter (the application steers grid power)",
                    got: application)
        }
        site.socReservePercent = fields.double("soc_reserve_percent", default: 0, range: 0...100, unit: "%")!
        if let reactive = fields.fields("reactive_power") {
            site.reactivePower = ReactivePowerConfiguration.decode(reactive, r, keys: ReactivePowerConfiguration.siteKeys)
            ReactivePowerConfiguration.checkLevels(site: site.reactivePower, reactive, unit: unitReactive, hasMeter: site.meter != nil, r)
        }
        fields.finish(Self.keys)
        return site
    }
}

extension MeterConfiguration {
    /// The keys of `site.meter`.
    static let keys = ConfigKeys("site.meter", [
        "simulated", "modbus", "protocol", "register_map", "import_positive", "stale_after_s", "max_lag_s",
    ])

    /// `site.meter:` — the grid meter: simulated or on Modbus, SunSpec or a register map, its sign and timing.
    static func decode(_ m: ConfigReader.Fields, _ r: ConfigReader, mode: RunMode, units: [UnitConfiguration]) -> MeterConfiguration {
        let simulated = m.bool("simulated", default: false)
        if mode == .hardware, simulated {
            r.error(m.mark("simulated"), m.child("simulated"), ConfigLoader.notInHardware, got: "true")
        }
        let modbusFields = m.fields("modbus")
        let modbus = modbusFields.flatMap { ModbusSettings.decode($0, r) }
        let protocolName = m.choice("protocol", [("sunspec", MeterConfiguration.MeterProtocol.sunspec),
                                                 ("register_map", .registerMap)], default: .sunspec)
        var map: MeterRegisterMap?
        if let mapFields = m.fields("register_map") {
            map = MeterRegisterMap.decode(mapFields, r)
            if protocolName != .registerMap {
                r.error(m.mark("register_map"), m.child("register_map"), "needs protocol: register_map")
            }
        } else if protocolName == .registerMap {
            r.error(m.mark("protocol"), m.child("register_map"), "is required for protocol: register_map")
        }
        let importPositive = m.bool("import_positive", default: true)
        let stale = m.double("stale_after_s", default: 3, range: 0.05...60, unit: "seconds")!
        let lag = m.double("max_lag_s", default: 1, range: 0...10, unit: "seconds")!
        m.finish(Self.keys)
        let real = mode == .hardware || (mode == .hil && !simulated)
        if real, modbus == nil, !m.has("modbus") {
            r.error(m.node, m.child("modbus"), "is required for a real meter in mode \(mode.rawValue)"
                    + (mode == .hil ? " (or set simulated: true)" : ""))
        }
        if let modbus, let modbusFields = m.fields("modbus") {
            for (index, unit) in units.enumerated() {
                guard let other = unit.modbus, other.endpoint.line == modbus.endpoint.line, other.unitID == modbus.unitID else { continue }
                r.error(modbusFields.mark("unit_id"), modbusFields.child("unit_id"),
                        "is the same device as bess_units[\(index)]'s inverter (same endpoint and unit id)",
                        got: String(modbus.unitID))
            }
        }
        return MeterConfiguration(simulated: simulated, modbus: modbus, protocolName: protocolName, registerMap: map,
                                  importPositive: importPositive, staleAfter: .seconds(fromDouble: stale),
                                  maxLag: .seconds(fromDouble: lag))
    }
}

extension MeterRegisterMap {
    /// The keys of `site.meter.register_map`.
    static let keys = ConfigKeys("site.meter.register_map", [
        "power", "frequency", "imported_energy", "exported_energy",
    ])

    /// `site.meter.register_map:` — the registers of a meter that does not speak SunSpec; power is required.
    static func decode(_ mapFields: ConfigReader.Fields, _ r: ConfigReader) -> MeterRegisterMap? {
        let power = MappedRegister.decode(mapFields, "power", r, required: true)
        let frequency = MappedRegister.decode(mapFields, "frequency", r, required: false)
        let imported = MappedRegister.decode(mapFields, "imported_energy", r, required: false)
        let exported = MappedRegister.decode(mapFields, "exported_energy", r, required: false)
        mapFields.finish(Self.keys)
        return power.map { MeterRegisterMap(power: $0, frequency: frequency, importedEnergy: imported, exportedEnergy: exported) }
    }
}
