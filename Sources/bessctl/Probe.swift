import BessBase
import ArgumentParser
import BessSystem
import Config
import ControlCore
import Fieldbus
import Foundation

/// `bessctl probe`: what a device on site speaks, before anyone writes its configuration.
struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find out what a device speaks: a Modbus inverter or meter (SunSpec or a device profile), or a BMS on CAN.",
        subcommands: [ProbeModbus.self, ProbeCAN.self])
}

/// Scans one Modbus device for SunSpec, else for the device profiles whose identity register it
/// answers, and says what bessd would do with it.
struct ProbeModbus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modbus",
        abstract: "Scan a Modbus device for SunSpec: its models, nameplate, W and Hz, the control path bessd would use "
            + "(704, 124 or none), whether a revert timer is available, and the configuration block to paste. "
            + "A device without SunSpec is matched against the device profiles' identity registers.",
        discussion: "Exit status: 0 a device bessd can use (SunSpec, or a profile matched), 1 one it cannot, 3 no answer.")

    @Argument(help: "HOST[:PORT] for Modbus TCP (port 502 when left out). Leave out with --serial.")
    var target: String?
    @Option(name: .customLong("unit-id"), help: "Modbus unit id.") var unitID = 1
    @Option(help: "Serial device for Modbus RTU (e.g. /dev/rs485-inv1), instead of HOST.") var serial: String?
    @Option(help: "RTU baud rate.") var baud = 9600
    @Option(help: "RTU parity: none, even or odd.") var parity = "even"
    @Option(name: .customLong("timeout-ms"), help: "Per-request timeout.") var timeoutMs = 1000
    @Option(name: .customLong("profile-dir"),
            help: "A directory of device profiles, earlier wins (repeatable; default /etc/bessd/devices, /usr/share/bessd/devices).")
    var profileDirectories: [String] = []
    @OptionGroup var connection: IgnoredSocketOption

    func endpoint() throws -> (ModbusEndpoint, [String]) {
        if let serial {
            guard target == nil else { throw ValidationError("give HOST[:PORT] or --serial, not both") }
            let letter: Character
            switch parity {
            case "none": letter = "N"
            case "even": letter = "E"
            case "odd": letter = "O"
            default: throw ValidationError("--parity must be none, even or odd (got \(parity))")
            }
            return (.rtu(device: serial, baud: baud, parity: letter, dataBits: 8, stopBits: 1, rs485: false),
                    ["device: \(serial)", "baud: \(baud)", "parity: \(parity)"])
        }
        guard let target, !target.isEmpty else { throw ValidationError("give HOST[:PORT] or --serial DEVICE") }
        let parts = target.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let port = parts.count == 2 ? Int(parts[1]) : 502, (1...65535).contains(port) else {
            throw ValidationError("HOST[:PORT] expected (got \(target))")
        }
        return (.tcp(host: String(parts[0]), port: port), ["host: \(parts[0])", "port: \(port)"])
    }

    func run() throws {
        let (endpoint, keys) = try endpoint()
        let connection: ModbusConnection
        do {
            connection = try ModbusConnection(endpoint: endpoint, unitID: unitID, timeout: .milliseconds(timeoutMs))
            try connection.connect()
        } catch {
            print("\(endpoint) unit \(unitID): \(error)")
            print(Self.noAnswerAdvice(endpoint, unitID: unitID, connected: false))
            throw ExitCode(3)
        }
        defer { connection.close() }
        var unit = connection.unit(unitID)
        print("device: \(endpoint) unit \(unitID)")
        let map: SunSpecMap
        do {
            map = try SunSpec.discover(&unit)
        } catch {
            // Nothing answered: a wrong address, port, unit id or line, not a device without SunSpec.
            if error.kind == .timeout || error.kind == .linkLost {
                print("no answer: \(error)")
                print(Self.noAnswerAdvice(endpoint, unitID: unitID, connected: true))
                throw ExitCode(3)
            }
            print("SunSpec: none (\(error))")
            let modbusBlock = (["modbus:"] + keys.map { "  " + $0 } + ["  unit_id: \(unitID)"])
            let matches = ProbeProfiles.modbusMatches(ProbeProfiles.library(profileDirectories).all, &unit)
            for match in matches { ProbeProfiles.printModbus(match, &unit, modbusBlock: modbusBlock, unitID: unitID) }
            if !matches.isEmpty { return }
            print("profiles: no device profile's identity register matches")
            print("bessd cannot drive it as SunSpec; if it has a register map, use inverter.protocol: register_map (config/bessd.yaml), "
                  + "or write a device profile (docs/devices.md)")
            throw ExitCode(1)
        }
        print("SunSpec at \(map.base): models " + map.models.map { "\($0.id) (L \($0.length) at \($0.address))" }.joined(separator: ", "))
        if let common = map.first(SunSpec.Common.id), let block = try? SunSpec.read(common, from: &unit) {
            let text = { (offset: Int, count: Int) in Self.string(block, offset, count) }
            print("common: manufacturer \(text(SunSpec.Common.manufacturer, 16)), model \(text(SunSpec.Common.model, 16)), "
                  + "version \(text(SunSpec.Common.version, 8)), serial \(text(SunSpec.Common.serial, 16))")
        }
        let modbusBlock = (["modbus:"] + keys.map { "  " + $0 } + ["  unit_id: \(unitID)"])
        if map.first(of: SunSpec.Meter.ids) != nil, map.first(SunSpec.Measurement.id) == nil, map.first(of: SunSpec.Inverter.ids) == nil {
            try meter(&unit, map: map, modbusBlock: modbusBlock)
        } else {
            try inverter(&unit, map: map, modbusBlock: modbusBlock)
        }
    }

    func inverter(_ unit: inout ModbusUnit, map: SunSpecMap, modbusBlock: [String]) throws {
        let control = map.first(SunSpec.ACControls.id) != nil ? "704" : map.first(SunSpec.Storage.id) != nil ? "124" : nil
        let inverter: SunSpecInverter
        do {
            inverter = try SunSpecInverter.open(&unit, map: map)
        } catch {
            print("control path: none (\(error))")
            print("bessd cannot command this device: it needs model 704 (WSet with WSet_SF) or 124 with a revert timer")
            throw ExitCode(1)
        }
        let reading = try? inverter.readStatus(&unit)
        let rated = inverter.ratedPower.map { String(format: "%.0f W", $0.value) } ?? "not stated (set max_power_kw yourself)"
        print("nameplate: rated power \(rated)")
        if let reading {
            let hz = reading.frequency.map { String(format: "%.3f Hz", $0.value) } ?? "not reported"
            print(String(format: "now: %.0f W, ", reading.activePower.value) + hz + (reading.faulted ? ", FAULT" : ""))
        }
        print("control path: \(control ?? "none") (\(inverter.commandPath == .acControls704 ? "WSet in W" : "OutWRte/InWRte in % of WChaMax"))")
        let revert = Self.revertTimer(inverter, &unit)
        print("revert timer: \(revert ? "available" : "NOT available: bessd never commands without one")")
        guard revert else { throw ExitCode(1) }
        let kw = inverter.ratedPower.map { String(format: "%g", $0.value.rounded() / 1000) } ?? "FILL_IN"
        print("")
        print("# paste under bess_units: (choose the id; capacity_kwh is the battery's usable energy)")
        print("  - id: UNIT_\(unitID)")
        print("    capacity_kwh: FILL_IN")
        print("    max_power_kw: \(kw)")
        for line in modbusBlock { print("    " + line) }
        print("    inverter:")
        print("      protocol: sunspec")
    }

    func meter(_ unit: inout ModbusUnit, map: SunSpecMap, modbusBlock: [String]) throws {
        do {
            let meter = try SunSpecMeter.open(&unit, map: map)
            let reading = try meter.read(&unit)
            let hz = reading.frequency.map { String(format: "%.3f Hz", $0.value) } ?? "not reported"
            print("meter: model \(meter.model.id); now \(String(format: "%.0f W", reading.gridPower.value)) (+ = import), \(hz)")
        } catch {
            print("meter: unusable (\(error))")
            throw ExitCode(1)
        }
        print("")
        print("# paste under site:")
        print("  meter:")
        print("    protocol: sunspec")
        for line in modbusBlock { print("    " + line) }
    }

    /// What to check when a device gives no answer at all (`connected`: the TCP session or the
    /// serial device opened, but no reply came).
    static func noAnswerAdvice(_ endpoint: ModbusEndpoint, unitID: Int, connected: Bool) -> String {
        switch endpoint {
        case .tcp(let host, let port):
            if !connected {
                return "nothing accepted a connection at \(host):\(port): check the address and the port (502 unless the device "
                    + "says otherwise), that the device is powered and on this network, and any firewall between"
            }
            return "\(host):\(port) accepted the connection but nothing answered for unit id \(unitID): check the unit id "
                + "(--unit-id; a gateway answers only for the devices behind it), that this is the device's Modbus TCP port, "
                + "and for a slow device a longer --timeout-ms"
        case .rtu(let device, _, _, _, _, _):
            if !connected { return "cannot open \(device): check the serial device's path and that nothing else holds it" }
            return "nothing answered on \(device) for unit id \(unitID): check the unit id (--unit-id), the baud rate and "
                + "parity (--baud, --parity) against the device's settings, and the wiring (A/B swapped, termination, ground)"
        }
    }

    /// Whether the device implements the revert bessd arms with every command.
    static func revertTimer(_ inverter: SunSpecInverter, _ unit: inout ModbusUnit) -> Bool {
        let model = inverter.commandModel.address
        switch inverter.commandPath {
        case .acControls704:
            guard let words = try? unit.readRegisters(at: model + SunSpec.ACControls.wSetEnaRvrt, count: 3) else { return false }
            return words[0] != 0xFFFF && !(words[1] == 0xFFFF && words[2] == 0xFFFF)
        case .storage124:
            guard let words = try? unit.readRegisters(at: model + SunSpec.Storage.inOutWRteRvrtTms, count: 1) else { return false }
            return words[0] != 0xFFFF
        }
    }

    /// A SunSpec string point: two ASCII characters a register, NUL-padded.
    static func string(_ block: SunSpecBlock, _ offset: Int, _ count: Int) -> String {
        var bytes: [UInt8] = []
        for i in 0..<count {
            guard let word = block.uint16(offset + i) else { break }
            bytes += [UInt8(word >> 8), UInt8(word & 0xFF)]
        }
        let text = String(decoding: bytes.prefix { $0 != 0 }.filter { $0 >= 0x20 && $0 < 0x7F }, as: UTF8.self)
            .trimmingCharacters(in: .whitespaces)
        return text.isEmpty ? "(none)" : text
    }
}

/// Listens on a CAN interface, decodes what it hears with the Pylontech/SMA profile bessd uses, and
/// names the device profiles whose identity frame it heard.
struct ProbeCAN: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "can",
        abstract: "Listen on a CAN interface, decode with the BMS profile, and print values, frame rates and which "
            + "groups are missing or refused; name the device profiles whose identity frame is heard.",
        discussion: "Exit status: 0 every group bessd needs is arriving, 1 something bessd needs is missing, 3 no interface.")

    @Argument(help: "SocketCAN interface (e.g. can_bms).") var interface: String
    @Option(help: "How long to listen.") var seconds: Double = 5
    @Option(name: .customLong("protocol"), help: "BMS profile: pylontech (Pylontech LV / SMA Sunny Island).")
    var profile = "pylontech"
    @Option(name: .customLong("profile-dir"),
            help: "A directory of device profiles, earlier wins (repeatable; default /etc/bessd/devices, /usr/share/bessd/devices).")
    var profileDirectories: [String] = []
    @OptionGroup var connection: IgnoredSocketOption

    /// The groups of the profile: identifier, what it carries, what bessd does without it, and
    /// whether it is an extension the specification does not define (absent is then no fault:
    /// `PylontechDecoder.extensionGroups`).
    static let groups: [(id: UInt32, name: String, without: String, isExtension: Bool)] = [
        (0x351, "limits (CVL, CCL, DCL, DVL)", "no power at all (BMS limits missing)", false),
        (0x355, "SOC, SOH", "no power (BMS_COMM_LOST)", false),
        (0x356, "pack V, I, T", "no power (BMS_COMM_LOST)", false),
        (0x359, "protections, alarms", "no power (BMS_COMM_LOST)", false),
        (0x35C, "charge/discharge requests", "BMS_GROUP_MISSING warning; requests assumed allowed", false),
        (0x35E, "manufacturer", "nothing (name only)", false),
        (0x373, "cell extremes (extension)", "cell rules inert; no warning unless it starts and stops", true),
    ]

    static func names(_ conditions: BMSConditions) -> String {
        let all: [(BMSConditions, String)] = [
            (.cellOvervoltage, "cell overvoltage"), (.cellUndervoltage, "cell undervoltage"), (.overtemperature, "overtemperature"),
            (.undertemperature, "undertemperature"), (.dischargeOvercurrent, "discharge overcurrent"),
            (.chargeOvercurrent, "charge overcurrent"), (.systemError, "system error"), (.internalCommunication, "internal communication"),
        ]
        let set = all.filter { conditions.contains($0.0) }.map(\.1)
        return set.isEmpty ? "none" : set.joined(separator: ", ")
    }

    func run() throws {
        guard profile == "pylontech" else { throw ValidationError("--protocol: only pylontech is known (got \(profile))") }
        guard seconds > 0, seconds <= 3600 else { throw ValidationError("--seconds must be from 0 to 3600") }
        let socket: CANSocket
        do {
            // Every data frame: 11-bit ones, and 29-bit ones (the kernel's CAN_EFF_FLAG in the id).
            socket = try CANSocket(interface: interface, filters: [(0, 0), (0x8000_0000, 0)])
        } catch {
            print("\(interface): \(error)")
            throw ExitCode(3)
        }
        do {
            print("\(interface): controller \(try CANInterface.state(of: interface))")
        } catch {
            print("\(interface): no controller state (a virtual interface, or netlink not allowed)")
        }
        var decoder = PylontechDecoder()
        var counts: [UInt32: Int] = [:]
        var heard: Set<CANIdentifier> = []
        var refused: [FrameRejection: Int] = [:]
        var errorFrames = 0
        let clock = SystemClock.shared
        let start = clock.now()
        let end = start + .seconds(seconds)
        while clock.now() < end {
            let received: (frame: CANFrame, realtimeNanoseconds: Int64)?
            do {
                received = try socket.receive(timeout: .milliseconds(100))
            } catch {
                print("\(interface): \(error)")
                throw ExitCode(3)
            }
            guard let (frame, _) = received else { continue }
            if frame.isError {
                errorFrames += 1
                continue
            }
            heard.insert(CANIdentifier(id: frame.id, extended: frame.isExtended))
            counts[frame.id, default: 0] += 1
            if let rejection = decoder.ingest(frame, at: MonotonicInstant(nanoseconds: 0)) { refused[rejection, default: 0] += 1 }
        }
        let elapsed = clock.now().seconds(since: start)
        print(String(format: "listened %.1f s: %d frames, %d error frames", elapsed, counts.values.reduce(0, +), errorFrames))
        print("")
        var rows = [["ID", "GROUP", "FRAMES", "RATE", "BESSD WITHOUT IT"]]
        var missingNeeded = false
        for group in Self.groups {
            let n = counts[group.id] ?? 0
            rows.append([String(format: "0x%03X", group.id), group.name, "\(n)", String(format: "%.1f/s", Double(n) / max(elapsed, 1e-9)),
                         n == 0 ? (group.isExtension ? "not sent: " : "MISSING: ") + group.without : "-"])
            if n == 0, group.id <= 0x359 { missingNeeded = true }
        }
        for (id, n) in counts.sorted(by: { $0.key < $1.key }) where !Self.groups.contains(where: { $0.id == id }) {
            rows.append([String(format: "0x%03X", id), "(not used by the profile)", "\(n)",
                         String(format: "%.1f/s", Double(n) / max(elapsed, 1e-9)), "-"])
        }
        printTable(rows)
        print("")
        let s = decoder.snapshot
        if let l = s.limits?.value {
            print(String(format: "limits: charge %.1f A, discharge %.1f A", l.chargeCurrentLimit.value, l.dischargeCurrentLimit.value)
                  + (l.chargeVoltageLimit.map { String(format: ", CVL %.1f V", $0.value) } ?? "")
                  + (l.dischargeVoltageLimit.map { String(format: ", DVL %.1f V", $0.value) } ?? ""))
        }
        if let st = s.status?.value {
            print(String(format: "SOC %.1f %%", st.soc.value) + (st.soh.map { String(format: ", SOH %.0f %%", $0.value) } ?? ""))
        }
        if let m = s.measurements?.value {
            print(String(format: "pack: %.2f V, %.1f A, %.1f °C", m.packVoltage.value, m.packCurrent.value, m.temperature.value))
        }
        if let c = s.cells?.value {
            print(String(format: "cells: %.3f–%.3f V, %.1f–%.1f °C", c.minCellVoltage.value, c.maxCellVoltage.value,
                         c.minTemperature.value, c.maxTemperature.value))
        } else if !s.expectedGroups.contains(.cells) {
            print("cells: not sent by this BMS (0x373 is an extension of the profile): cell rules inert, temperatures from 0x356")
        }
        if let p = s.protection?.value {
            print("protections: \(Self.names(p.protections)); alarms: \(Self.names(p.alarms))")
        }
        if let r = s.requests?.value {
            print("requests: charge \(r.chargeEnabled ? "allowed" : "NOT allowed"), discharge \(r.dischargeEnabled ? "allowed" : "NOT allowed")"
                  + (r.forceCharge ? ", FORCE CHARGE" : ""))
        }
        if let name = decoder.manufacturer { print("manufacturer: \(name)" + (decoder.moduleCount.map { ", \($0) modules" } ?? "")) }
        let refusals = FrameRejection.allCases.compactMap { reason in refused[reason].map { "\(reason.rawValue) \($0)" } }
        print("refused: \(refusals.isEmpty ? "none" : refusals.joined(separator: ", "))")
        let seen = heard.map { (id: $0.id, extended: $0.extended) }
        ProbeProfiles.printCAN(ProbeProfiles.canMatches(ProbeProfiles.library(profileDirectories).all, seen: seen), heard: seen.count,
                               interface: interface)
        if missingNeeded {
            print("verdict: bessd would not run this battery: a group it needs is missing (see above)")
            throw ExitCode(1)
        }
        print("verdict: every group bessd needs is arriving")
    }
}

/// A CAN identifier heard, 11- or 29-bit.
struct CANIdentifier: Hashable {
    var id: UInt32
    var extended: Bool
}
