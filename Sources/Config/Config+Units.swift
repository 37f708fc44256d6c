import ControlCore
import Cycle
import Fieldbus
internal import Yams

extension UnitConfiguration {
    /// The keys of `bess_units[]`.
    static let keys = ConfigKeys("bess_units[]", [
        "id", "campus_id", "capacity_kwh", "max_power_kw", "max_apparent_power_kva", "modbus", "inverter", "bms",
    ])

    /// `bess_units:` — one entry per battery unit, then the checks across units: one set of settings per
    /// serial line, one unit per device, one BMS per CAN interface.
    static func decodeList(_ top: ConfigReader.Fields, _ r: ConfigReader, mode: RunMode,
                           profiles: ProfileResolver) -> [UnitConfiguration]? {
        guard let list = top.sequence("bess_units") else {
            if !top.has("bess_units") {
                r.error(top.node, "bess_units", "is required: list at least one unit")
            } else if top.mark("bess_units").map({ if case .scalar = $0 { true } else { false } }) ?? false {
                // `bess_units:` with nothing after it, or `~`.
                r.error(top.mark("bess_units"), "bess_units", "list at least one unit", got: "an empty value")
            }
            return nil
        }
        if list.isEmpty { r.error(top.mark("bess_units"), "bess_units", "list at least one unit", got: "[]") }
        var units: [UnitConfiguration] = []
        var seen: [String: Int] = [:]
        var endpoints: [(index: Int, settings: ModbusSettings, fields: ConfigReader.Fields)] = []
        for (index, node) in list.enumerated() {
            let path = "bess_units[\(index)]"
            guard let u = r.fields(node, path) else { continue }
            let id = u.string("id", pattern: ConfigLoader.idPattern, rule: "must be 1–64 letters, digits, '_', '-' or '.'")
            // `key:` with no value is "the default", and these have none (make fuzz found
            // `max_power_kw:` left empty accepted as a site of 0 units).
            if id == nil && u.node("id") == nil { r.error(u.mark("id"), "\(path).id", "is required") }
            if let id {
                if let first = seen[id] {
                    r.error(u.mark("id"), "\(path).id", "duplicates bess_units[\(first)].id", got: "'\(id)'")
                }
                seen[id] = index
            }
            let campus = u.string("campus_id")
            let capacity = u.double("capacity_kwh", range: 0...1_000_000, exclusiveLower: true, unit: "kWh")
            if capacity == nil && u.node("capacity_kwh") == nil { r.error(u.mark("capacity_kwh"), "\(path).capacity_kwh", "is required") }
            let power = u.double("max_power_kw", range: 0...100_000, exclusiveLower: true, unit: "kW")
            if power == nil && u.node("max_power_kw") == nil { r.error(u.mark("max_power_kw"), "\(path).max_power_kw", "is required") }
            let apparent = decodeApparentPower(u, r, activeKW: power)
            let modbusFields = u.fields("modbus")
            let modbus = modbusFields.flatMap { ModbusSettings.decode($0, r) }
            if let modbus, let fields = modbusFields { endpoints.append((index, modbus, fields)) }
            var inverter = InverterSettings(simulated: false, protocolName: .sunspec)
            var inverterStale = Duration.seconds(3)
            var inverterGrace = Duration.seconds(30)
            if let inv = u.fields("inverter") {
                (inverter, inverterStale, inverterGrace) = InverterSettings.decode(inv, r, mode: mode, profiles: profiles)
                if let profile = inverter.profile { ProfileResolver.checkLink(profile, modbus, at: inv.mark("profile"), inv.child("profile"), r) }
            }
            let bms = u.fields("bms").map { BMSSettings.decode($0, r, mode: mode, profiles: profiles) }
                ?? BMSSettings.pylontech(BMSSettings.unitDefault, u.mark("bms"), "\(path).bms", profiles, r)
            if mode != .simulation, !inverter.simulated, modbus == nil, !u.has("modbus") {
                r.error(node, "\(path).modbus", "is required for a real inverter in mode \(mode.rawValue)"
                        + (mode == .hil ? " (or set inverter.simulated: true)" : ""))
            }
            u.finish(Self.keys)
            if let id, let capacity, let power {
                units.append(UnitConfiguration(
                    id: id, campusID: campus, capacityKWh: capacity, maxPowerKW: power, modbus: modbus,
                    inverter: inverter, bms: bms, inverterStaleAfter: inverterStale))
                units[units.count - 1].inverterStartupGrace = inverterGrace
                units[units.count - 1].maxApparentPowerKVA = apparent
            }
        }
        // One serial line has one set of line settings, and one device (endpoint, unit id) one unit:
        // two units commanding the same inverter would fight over its setpoint.
        for (k, b) in endpoints.enumerated() {
            for a in endpoints[..<k] {
                switch (a.settings.transport, b.settings.transport) {
                case (.rtu(let x), .rtu(let y)) where x.device == y.device && x != y:
                    r.error(b.fields.mark("device"), b.fields.child("device"),
                            "shares \(y.device) with bess_units[\(a.index)], whose line settings differ "
                            + "(\(x.baud) \(x.dataBits)\(x.parity.rawValue.prefix(1).uppercased())\(x.stopBits)\(x.rs485 ? " rs485" : "")); "
                            + "one serial line has one set of settings",
                            got: "\(y.baud) \(y.dataBits)\(y.parity.rawValue.prefix(1).uppercased())\(y.stopBits)\(y.rs485 ? " rs485" : "")")
                default: break
                }
                let sameLine: Bool
                switch (a.settings.transport, b.settings.transport) {
                case (.rtu(let x), .rtu(let y)): sameLine = x.device == y.device
                case (.tcp(let h1, let p1), .tcp(let h2, let p2)): sameLine = h1 == h2 && p1 == p2
                default: sameLine = false
                }
                if sameLine, a.settings.unitID == b.settings.unitID {
                    r.error(b.fields.mark("unit_id"), b.fields.child("unit_id"),
                            "is the same device as bess_units[\(a.index)] (same endpoint and unit id); each unit needs its own inverter",
                            got: String(b.settings.unitID))
                }
            }
        }
        // One BMS per CAN interface: the profile's frame IDs cannot tell two apart.
        var interfaces: [String: String] = [:]
        for unit in units where !(mode == .simulation || unit.bms.simulated) && unit.bms.transport == .can {
            if let other = interfaces[unit.bms.interface] {
                r.error(top.mark("bess_units"), "bess_units", "units \(other) and \(unit.id) share CAN interface "
                        + "\(unit.bms.interface); each BMS needs its own", got: unit.bms.interface)
            }
            interfaces[unit.bms.interface] = unit.id
        }
        return units
    }
}

extension UnitConfiguration {
    /// `max_apparent_power_kva`: the unit's `VAMax`, which P and Q share. Not below `max_power_kw`
    /// (IEEE 1547-2018 rates the apparent power at least the active power, and 2030.5's
    /// `rtgMaxVA` is ≥ `rtgMaxW`): a smaller one would cut active power the unit is rated for.
    static func decodeApparentPower(_ u: ConfigReader.Fields, _ r: ConfigReader, activeKW: Double?) -> Double? {
        guard let kva = u.double("max_apparent_power_kva", range: 0...1_000_000, exclusiveLower: true, unit: "kVA") else { return nil }
        if let activeKW, kva < activeKW {
            r.error(u.mark("max_apparent_power_kva"), u.child("max_apparent_power_kva"),
                    "must not be below max_power_kw (\(format(activeKW)) kW): the apparent power rating bounds P and Q together",
                    got: format(kva))
            return nil
        }
        return kva
    }
}

extension InverterSettings {
    /// The keys of `bess_units[].inverter`.
    static let keys = ConfigKeys("bess_units[].inverter", [
        "simulated", "protocol", "stale_after_s", "startup_grace_s", "register_map", "profile",
    ])

    /// A unit's `inverter:` — simulated or real, its protocol and, for `register_map`, the map; with the
    /// unit's stale and start-up grace times, which `UnitConfiguration` keeps.
    static func decode(_ inv: ConfigReader.Fields, _ r: ConfigReader, mode: RunMode, profiles: ProfileResolver)
        -> (settings: InverterSettings, staleAfter: Duration, startupGrace: Duration)
    {
        var inverter = InverterSettings(simulated: false, protocolName: .sunspec)
        inverter.simulated = inv.bool("simulated", default: false)
        if mode == .hardware, inverter.simulated {
            r.error(inv.mark("simulated"), inv.child("simulated"), ConfigLoader.notInHardware, got: "true")
        }
        inverter.protocolName = inv.choice("protocol", [("sunspec", .sunspec), ("register_map", .registerMap)],
                                           default: .sunspec)
        if inv.has("profile") {
            if inv.has("protocol") { r.error(inv.mark("protocol"), inv.child("protocol"), "give protocol or profile, not both") }
            inverter.protocolName = .profile
        }
        inverter.profile = profiles.resolve(inv, "profile", kind: .inverter, r)
        if let profile = inverter.profile, case .can = profile.transport {
            r.error(inv.mark("profile"), inv.child("profile"), "'\(profile.name)' is a CAN profile; an inverter is reached over the unit's modbus")
        }
        // A unit's inverter is commanded: a read-only profile (no `commands:`, as Deye's, which has no
        // fallback) cannot be one, and starting it would leave the unit at 0 W with no word why.
        if let profile = inverter.profile, profile.commands == nil, !inverter.simulated {
            r.error(inv.mark("profile"), inv.child("profile"), "'\(profile.name)' is read-only (no commands: see its file); "
                    + "a unit's inverter must be commanded with a fallback", got: "'\(profile.name)'")
        }
        let stale = Duration.seconds(fromDouble: inv.double("stale_after_s", default: 3, range: 0.05...60, unit: "seconds")!)
        let grace = Duration.seconds(fromDouble: inv.double("startup_grace_s", default: 30, range: 0...3600, unit: "seconds")!)
        if let map = inv.fields("register_map") {
            inverter.registerMap = RegisterMapSpec.decode(map, r)
            if inverter.protocolName != .registerMap {
                r.error(inv.mark("register_map"), inv.child("register_map"), "needs protocol: register_map")
            }
        } else if inverter.protocolName == .registerMap {
            r.error(inv.mark("protocol"), inv.child("register_map"), "is required for protocol: register_map")
        }
        inv.finish(Self.keys)
        return (inverter, stale, grace)
    }
}

extension BMSSettings {
    /// The keys of `bess_units[].bms`.
    static let keys = ConfigKeys("bess_units[].bms", [
        "simulated", "interface", "protocol", "bitrate", "stale_after_s", "startup_grace_s", "cells_in_series",
        "manage_interface", "restart_ms", "profile", "transport", "modbus",
    ])

    /// A unit's BMS when its `bms:` block is left out: a Pylontech pack of 16 cells on can0 at 500 kbit/s.
    static let unitDefault = BMSSettings(simulated: false, interface: "can0", protocolName: .pylontech, bitrate: 500_000,
                                         staleAfter: .seconds(3), cellsInSeries: 16)

    /// The keys that only a BMS on CAN takes.
    static let canKeys = ["interface", "bitrate", "manage_interface", "restart_ms"]

    /// A unit's `bms:` — simulated, on a CAN interface or a Modbus endpoint, its protocol or profile, timing.
    static func decode(_ b: ConfigReader.Fields, _ r: ConfigReader, mode: RunMode, profiles: ProfileResolver) -> BMSSettings {
        var bms = unitDefault
        bms.simulated = b.bool("simulated", default: false)
        if mode == .hardware, bms.simulated {
            r.error(b.mark("simulated"), b.child("simulated"), ConfigLoader.notInHardware, got: "true")
        }
        bms.transport = b.choice("transport", BMSTransport.allCases.map { ($0.rawValue, $0) }, default: .can)
        bms.interface = b.string("interface", default: "can0",
                                 pattern: { !$0.isEmpty && $0.utf8.count <= 15 && !$0.contains("/") && !$0.contains(" ") },
                                 rule: "must be a network interface name of at most 15 characters")!
        bms.protocolName = b.choice("protocol", [("pylontech", .pylontech)], default: .pylontech)
        let bitrate = b.int("bitrate", range: 10_000...1_000_000, unit: "bit/s")
        let stale = b.double("stale_after_s", range: 0.1...60, unit: "seconds")
        bms.startupGrace = .seconds(fromDouble: b.double("startup_grace_s", default: 30, range: 0...3600, unit: "seconds")!)
        let cells = b.int("cells_in_series", range: 1...1000)
        bms.manageInterface = b.bool("manage_interface", default: false)
        bms.restartAfter = .milliseconds(b.int("restart_ms", default: 100, range: 0...60_000, unit: "milliseconds")!)
        bms.modbus = b.fields("modbus").flatMap { ModbusSettings.decode($0, r) }
        if bms.transport == .modbus {
            if !b.has("modbus") { r.error(b.mark("transport"), b.child("modbus"), "is required for transport: modbus") }
            for key in canKeys where b.has(key) {
                r.error(b.mark(key), b.child(key), "is a CAN setting; this BMS is on Modbus (transport: modbus)")
            }
        } else if b.has("modbus") {
            r.error(b.mark("modbus"), b.child("modbus"), "needs transport: modbus")
        }
        if b.has("profile") {
            if b.has("protocol") { r.error(b.mark("protocol"), b.child("protocol"), "give protocol or profile, not both") }
            bms.protocolName = .profile
            bms.profile = profiles.resolve(b, "profile", kind: .bms, r)
            if let profile = bms.profile { checkTransport(profile, bms, b, r) }
        } else {
            _ = b.node("profile")
            if bms.transport == .modbus {
                r.error(b.mark("transport"), b.child("profile"), "is required for transport: modbus (protocol pylontech is CAN)")
            } else {
                bms = pylontech(bms, b.mark("protocol"), b.child("protocol"), profiles, r)
            }
        }
        let profileBitrate: Int? = if case .can(let can)? = bms.profile?.transport { can.bitrate } else { nil }
        bms.bitrate = bitrate ?? profileBitrate ?? 500_000
        bms.cellsInSeries = cells ?? bms.profile?.cellsInSeries ?? 16
        // Left out, a BMS is stale after two of its profile's longest group periods, never sooner than
        // 3 s: a rack read every 2 s (BYD's, 300 ms between requests) is 2 s and a round's reads old
        // just before each refresh, which a fixed 3 s would call stale now and then.
        let longest = bms.profile?.groups.map(\.period).max() ?? .zero
        bms.staleAfter = stale.map { Duration.seconds(fromDouble: $0) } ?? max(.seconds(3), longest * 2)
        b.finish(Self.keys)
        return bms
    }

    /// Protocol pylontech: the `pylontech-lv` profile of the library (a directory's file before the
    /// built-in one). A directory's file that does not load is an error; when the built-in one does
    /// not, `profile` stays nil and Pylontech's own decoder serves.
    static func pylontech(_ settings: BMSSettings, _ node: Node?, _ path: String, _ profiles: ProfileResolver,
                          _ r: ConfigReader) -> BMSSettings {
        var bms = settings
        let name = "pylontech-lv"
        if profiles.library.profile(named: name) != nil || profiles.library.path(of: name)?.isEmpty == false {
            bms.profile = profiles.resolve(name, at: node, path, kind: .bms, r)
        }
        return bms
    }

    /// A CAN profile needs transport can, a Modbus one transport modbus (and, if TCP only, a TCP endpoint).
    static func checkTransport(_ profile: DeviceProfile, _ bms: BMSSettings, _ b: ConfigReader.Fields, _ r: ConfigReader) {
        switch (profile.transport, bms.transport) {
        case (.modbus, .can):
            r.error(b.mark("profile"), b.child("profile"), "'\(profile.name)' is a Modbus profile; set transport: modbus and bms.modbus")
        case (.can, .modbus):
            r.error(b.mark("profile"), b.child("profile"), "'\(profile.name)' is a CAN profile; it needs transport: can")
        default:
            ProfileResolver.checkLink(profile, bms.modbus, at: b.mark("profile"), b.child("profile"), r)
        }
    }
}
