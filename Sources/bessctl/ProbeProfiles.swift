import ArgumentParser
import BessBase
import Config
import ControlCore
import Fieldbus
import Foundation

/// What `bessctl probe` says about the device profiles (docs/devices.md): which profiles of the
/// library a device's identity matches — a Modbus identity register holding one of its values, a CAN
/// identity frame heard — and the configuration block to paste for each.
enum ProbeProfiles {
    /// The profile library of `directories` (the defaults, `/etc/bessd/devices` then
    /// `/usr/share/bessd/devices`, when none is given), the built-in Pylontech LV last.
    static func library(_ directories: [String]) -> ProfileLibrary {
        ProfileLibrary(directories: directories.isEmpty ? ProfileLibrary.defaultDirectories : directories)
    }

    /// The profiles whose Modbus identity register, read from `unit`, holds one of its values, with
    /// the value read. A register is read once however many profiles name it; one that does not
    /// answer (an exception, a timeout) matches nothing.
    static func modbusMatches(_ profiles: [DeviceProfile], _ unit: inout some RegisterAccess)
        -> [(profile: DeviceProfile, value: UInt16)]
    {
        var read: [String: UInt16?] = [:]
        var found: [(profile: DeviceProfile, value: UInt16)] = []
        for profile in profiles {
            guard case .modbusRegister(let table, let address, let values)? = profile.identity else { continue }
            let key = "\(table.rawValue) \(address)"
            if read[key] == nil { read[key] = .some((try? unit.readRegisters(table, at: address, count: 1))?.first) }
            if let value = read[key] ?? nil, values.contains(value) { found.append((profile, value)) }
        }
        return found
    }

    /// The CAN profiles whose identity frame was heard (`seen`: each identifier heard, with whether it
    /// was 29-bit, and how often), with how many of the identifiers heard pass the profile's filters.
    static func canMatches(_ profiles: [DeviceProfile], seen: [(id: UInt32, extended: Bool)])
        -> [(profile: DeviceProfile, identity: UInt32, passing: Int)]
    {
        var found: [(profile: DeviceProfile, identity: UInt32, passing: Int)] = []
        for profile in profiles {
            guard case .canFrame(let identity)? = profile.identity, case .can(let can) = profile.transport else { continue }
            guard seen.contains(where: { $0.id == identity && $0.extended == can.extended }) else { continue }
            let passing = seen.filter { frame in frame.extended == can.extended && can.filters.contains { $0.matches(frame.id) } }.count
            found.append((profile, identity, passing))
        }
        // The profile that explains most of what was heard first.
        return found.sorted { $0.passing > $1.passing }
    }

    /// `name (vendor: products)`.
    static func title(_ profile: DeviceProfile) -> String {
        "\(profile.name) (\(profile.vendor): \(profile.products.joined(separator: ", ")))"
    }

    /// What a matched Modbus profile reads now (an inverter's power, a BMS's SOC and pack voltage),
    /// and the block to paste: a unit with `inverter.profile`, or a BMS on Modbus.
    static func printModbus(_ match: (profile: DeviceProfile, value: UInt16), _ unit: inout some RegisterAccess,
                            modbusBlock: [String], unitID: Int) {
        let profile = match.profile
        guard case .modbusRegister(let table, let address, _)? = profile.identity else { return }
        print("profile: \(title(profile)); \(table.rawValue) register \(address) reads " + String(format: "0x%04X", match.value))
        print("")
        switch profile.kind {
        case .inverter:
            var rated: Watts?
            if let inverter = try? ProfiledInverter(profile: profile), let reading = try? inverter.readStatus(&unit) {
                rated = reading.ratedPower
                let hz = reading.frequency.map { String(format: "%.3f Hz", $0.value) } ?? "no frequency"
                print(String(format: "now: %.0f W, ", reading.activePower.value) + hz + (reading.faulted ? ", FAULT" : ""))
            }
            print("# paste under bess_units: (choose the id; capacity_kwh is the battery's usable energy)")
            print("  - id: UNIT_\(unitID)")
            print("    capacity_kwh: FILL_IN")
            print("    max_power_kw: " + (rated.map { String(format: "%g", $0.value.rounded() / 1000) } ?? "FILL_IN"))
            for line in modbusBlock { print("    " + line) }
            print("    inverter:")
            print("      profile: \(profile.name)")
        case .bms:
            if var bms = try? ProfiledModbusBMS(profile: profile), (try? bms.poll(&unit, at: .zero)) != nil {
                let s = bms.snapshot
                print("now: SOC " + (s.status.map { String(format: "%.1f %%", $0.value.soc.value) } ?? "unread")
                      + ", pack " + (s.measurements.map { String(format: "%.1f V", $0.value.packVoltage.value) } ?? "unread"))
            }
            print("# paste under the unit (its bms:)")
            print("    bms:")
            print("      transport: modbus")
            print("      profile: \(profile.name)")
            for line in modbusBlock { print("      " + line) }
        case .meter:
            print("# a meter profile: bessd reads meters by SunSpec or register map (site.meter), not yet by profile")
        }
    }

    /// The profiles a CAN interface's traffic matches, each with the block to paste.
    static func printCAN(_ matches: [(profile: DeviceProfile, identity: UInt32, passing: Int)], heard: Int, interface: String) {
        guard !matches.isEmpty else {
            print("profiles: none of the library's CAN profiles recognises this traffic (no identity frame heard)")
            return
        }
        for match in matches {
            print("profile: \(title(match.profile)); identity frame " + String(format: "0x%03X", match.identity)
                  + " heard, \(match.passing) of \(heard) identifiers pass its filters")
        }
        print("")
        print("# paste under the unit (its bms:)")
        print("    bms:")
        print("      interface: \(interface)")
        print("      profile: \(matches[0].profile.name)")
    }
}
