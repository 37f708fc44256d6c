@testable import Config
import ControlCore
import Fieldbus
import Foundation
import Testing

/// Profile texts the profile tests share, and directories of them.
enum ProfileFixtures {
    /// A CAN BMS; its line numbers are the error cases' (line 19 is the charge limit).
    static let bms = """
        bessd_profile: 1
        name: test-bms
        kind: bms
        vendor: Example
        products: [EX1, EX2]
        sources:
          - "Example CAN protocol V1, table 1"
        transport:
          can:
            bitrate: 250000
            extended: false
            mode: broadcast
            filters: [{id: 0x350, mask: 0x7F0}]
        identity:
          can_frame: 0x359
        cells_in_series: 15
        signals:
          - {name: soc, quantity: soc, can: {id: 0x355, byte: 0, bits: 16}, valid: [0, 100]}
          - {name: ccl, quantity: charge_current_limit, can: {id: 0x351, byte: 2, bits: 16}, signed: true, scale: 0.1, invalid: [-32768]}
          - {name: dcl, quantity: discharge_current_limit, can: {id: 0x351, byte: 4, bits: 16}, signed: true, scale: 0.1, magnitude: true, clamp_min: 0}
          - {name: protection_lo, can: {id: 0x359, byte: 0, bits: 8}}
          - {name: flags, can: {id: 0x35C, byte: 1, bits: 16, order: big}}
        groups:
          - {part: status, presence: required, period_s: 1}
          - {part: limits, presence: required, period_s: 1}
          - {part: protection, presence: once_seen, period_s: 2}
        alarms:
          - {signal: protection_lo, bit: 1, condition: cell_overvoltage, severity: protection}
        keep_alive:
          - {id: 0x305, data: [0, 0, 0, 0, 0, 0, 0, 0], period_s: 1}

        """

    /// A Modbus inverter that commands power with a watchdog.
    static let inverter = """
        bessd_profile: 1
        name: test-inverter
        kind: inverter
        vendor: Example
        products: [INV-10]
        transport:
          modbus: {link: tcp, unit_id: 1, max_read_registers: 100, word_order: low_first}
        identity:
          modbus: {table: input, register: 4999, values: [0x0E03, 0x0E00]}
        signals:
          - {name: power, quantity: active_power, modbus: {table: input, register: 13033, type: int32}}
          - {name: hz, quantity: frequency, modbus: {table: input, register: 5035, type: uint16}, scale: 0.1}
          - {name: state, modbus: {table: input, register: 13000, type: uint16, scale_register: 13001}}
        commands:
          setpoint: {register: 13051, type: int16, scale: 100}
          start: [{register: 13049, value: 3}]
          stop: [{register: 13050, value: 0xCC}, {register: 13049, value: 0}]
          fallback: {watchdog: {register: 13079, seconds: 20}}

        """

    /// A Modbus BMS with every part a BMS snapshot has.
    static let modbusBMS = """
        bessd_profile: 1
        name: test-rack
        kind: bms
        vendor: Example
        products: [RACK]
        transport:
          modbus: {link: any, unit_id: 1}
        cells_in_series: 200
        signals:
          - {name: soc, quantity: soc, modbus: {table: input, register: 0}}
          - {name: ccl, quantity: charge_current_limit, modbus: {table: input, register: 1}, scale: 0.1}
          - {name: dcl, quantity: discharge_current_limit, modbus: {table: input, register: 2}, scale: 0.1}
          - {name: alarm_level, modbus: {table: input, register: 3}}
        groups:
          - {part: status, period_s: 1}
          - {part: limits, period_s: 1}
          - {part: protection, period_s: 1}
        alarms:
          - {signal: alarm_level, equals: [3], condition: system_error, severity: protection}

        """

    /// `text` with line `line` (1-based) replaced by `replacement`.
    static func replacing(_ text: String, line: Int, with replacement: String) -> String {
        var lines = text.components(separatedBy: "\n")
        lines[line - 1] = replacement
        return lines.joined(separator: "\n")
    }

    /// A directory of its own with `files` (name → text), removed with it.
    final class Directory {
        let path = NSTemporaryDirectory() + "bessd-profiles-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        init(_ files: [String: String] = [:]) throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for (name, text) in files { try write(name, text) }
        }
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path + "/" + name))
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }
}

@Suite("Profile reader")
struct ProfileReaderTests {
    static func read(_ text: String, _ name: String) -> (profile: DeviceProfile?, diagnostics: [ConfigDiagnostic]) {
        ProfileReader.read(text: text, path: "/devices/\(name).yaml")
    }

    @Test("a CAN BMS profile reads into the model, 0x numbers included")
    func canBMS() throws {
        let (profile, diagnostics) = Self.read(ProfileFixtures.bms, "test-bms")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let p = try #require(profile)
        #expect(p.name == "test-bms" && p.kind == .bms && p.vendor == "Example" && p.products == ["EX1", "EX2"])
        #expect(p.sources == ["Example CAN protocol V1, table 1"])
        #expect(p.path == "/devices/test-bms.yaml")
        #expect(p.transport == .can(CANProfileTransport(bitrate: 250_000, extended: false, mode: .broadcast,
                                                        filters: [CANFilter(id: 0x350, mask: 0x7F0)])))
        #expect(p.identity == .canFrame(id: 0x359))
        #expect(p.cellsInSeries == 15)
        #expect(p.signals.count == 5)
        #expect(p.signals[1] == ProfileSignal(name: "ccl", quantity: .chargeCurrentLimit,
                                              location: .can(CANSignalLocation(frameID: 0x351, byte: 2, bits: 16, order: .little)),
                                              signed: true, scale: 0.1, invalidRaw: [-32768]))
        #expect(p.signals[2].magnitude && p.signals[2].clampMinimum == 0)
        #expect(p.signals[0].valid == 0...100)
        #expect(p.signals[4].location == .can(CANSignalLocation(frameID: 0x35C, byte: 1, bits: 16, order: .big)))
        #expect(p.groups == [ProfileGroup(part: .status, presence: .required, period: .seconds(1)),
                             ProfileGroup(part: .limits, presence: .required, period: .seconds(1)),
                             ProfileGroup(part: .protection, presence: .onceSeen, period: .seconds(2))])
        #expect(p.alarms == [ProfileAlarm(signal: "protection_lo", bit: 1, condition: .cellOvervoltage, severity: .protection)])
        #expect(p.keepAlive == [ProfileFrame(id: 0x305, extended: false, data: [0, 0, 0, 0, 0, 0, 0, 0], period: .seconds(1))])
        #expect(p.commands == nil)
    }

    @Test("a Modbus inverter profile reads its registers, word order and commands")
    func modbusInverter() throws {
        let (profile, diagnostics) = Self.read(ProfileFixtures.inverter, "test-inverter")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let p = try #require(profile)
        #expect(p.transport == .modbus(ModbusProfileTransport(link: .tcp, defaultUnitID: 1, maxReadRegisters: 100, lowWordFirst: true)))
        #expect(p.identity == .modbusRegister(table: .input, address: 4999, values: [0x0E03, 0x0E00]))
        #expect(p.signals[0].location == .modbus(ModbusSignalLocation(table: .input, address: 13033, type: .int32, lowWordFirst: true)))
        #expect(p.signals[0].signed, "an int32 register is signed")
        #expect(!p.signals[1].signed && p.signals[1].scale == 0.1)
        #expect(p.signals[2].location == .modbus(ModbusSignalLocation(table: .input, address: 13000, type: .uint16, lowWordFirst: true,
                                                                      scaleFactorAddress: 13001)))
        #expect(p.commands == ProfileCommands(
            setpoint: .signed(address: 13051, type: .int16, scale: 100, lowWordFirst: false),
            start: [RegisterWrite(address: 13049, value: 3)],
            stop: [RegisterWrite(address: 13050, value: 0xCC), RegisterWrite(address: 13049, value: 0)],
            fallback: .watchdog(address: 13079, seconds: 20)))
    }

    @Test("a direction-and-magnitude setpoint and each fallback read", arguments: [
        ("{revert_timer: {register: 40, scale: 10}}", ProfileCommands.Fallback.revertTimer(address: 40, scale: 10)),
        ("{traffic_timeout: {register: 327, seconds: 60}}", .trafficTimeout(address: 327, seconds: 60)),
        ("{time_slot: {seconds: 900}}", .timeSlot(seconds: 900)),
    ])
    func splitSetpoint(fallback: String, expected: ProfileCommands.Fallback) throws {
        var text = ProfileFixtures.replacing(ProfileFixtures.inverter, line: 15, with:
            "  setpoint: {direction: {register: 13050, charge: 0xAA, discharge: 0xBB, stop: 0xCC}, magnitude: {register: 13051}}")
        text = ProfileFixtures.replacing(text, line: 18, with: "  fallback: \(fallback)")
        let (profile, diagnostics) = Self.read(text, "test-inverter")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let commands = try #require(profile?.commands)
        #expect(commands.setpoint == .split(direction: 13050, charge: 0xAA, discharge: 0xBB, stop: 0xCC, magnitude: 13051,
                                            type: .uint16, scale: 1))
        #expect(commands.fallback == expected)
    }

    @Test("a Modbus BMS with a value alarm reads")
    func modbusBMS() throws {
        let (profile, diagnostics) = Self.read(ProfileFixtures.modbusBMS, "test-rack")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(profile?.alarms == [ProfileAlarm(signal: "alarm_level", equals: [3], condition: .systemError, severity: .protection)])
    }

    @Test("signals with no quantity may share bits (a status byte read whole and in parts)")
    func quantityLessOverlap() {
        let text = ProfileFixtures.replacing(ProfileFixtures.bms, line: 22, with:
            "  - {name: flags, can: {id: 0x359, byte: 0, bits: 16}}")
        #expect(Self.read(text, "test-bms").profile != nil)
    }

    /// A mistake in a profile: (the base, line replaced, its new text, the expected line, key path, words).
    struct Case: CustomTestStringConvertible, Sendable {
        var base: String
        var name: String
        var line: Int
        var text: String
        var expectedLine: Int
        var keyPath: String
        var message: String
        var testDescription: String { "\(keyPath): \(message)" }
        init(_ line: Int, _ text: String, at expectedLine: Int? = nil, _ keyPath: String, _ message: String,
             in base: String = ProfileFixtures.bms) {
            self.base = base
            self.name = base == ProfileFixtures.bms ? "test-bms" : base == ProfileFixtures.inverter ? "test-inverter" : "test-rack"
            self.line = line
            self.text = text
            self.expectedLine = expectedLine ?? line
            self.keyPath = keyPath
            self.message = message
        }
    }

    static let inv = ProfileFixtures.inverter
    static let cases: [Case] = [
        Case(16, "colour: red", "colour", "unknown key; known keys: bessd_profile"),
        Case(16, "cells_in_series: many", "cells_in_series", "expected a whole number"),
        Case(5, "products: EX1", "products", "expected a list"),
        Case(3, "kind: toaster", "kind", "must be one of bms, inverter, meter"),
        Case(1, "bessd_profile: 2", "bessd_profile", "must be 1"),
        Case(4, "# no vendor", at: 1, "vendor", "is required"),
        Case(2, "name: other-bms", "name", "must be the file's name without .yaml ('test-bms')"),
        Case(20, "  - {name: ccl, quantity: discharge_current_limit, can: {id: 0x351, byte: 4, bits: 16}}",
             "signals[2].name", "duplicates signals[1].name"),
        Case(20, "  - {name: dcl, quantity: discharge_current_limit, can: {id: 0x351, byte: 3, bits: 16}}",
             "signals[2].can", "shares bits 24…31 of frame 0x351 with signals[1] 'ccl'"),
        Case(20, "  - {name: dcl, quantity: charge_current_limit, can: {id: 0x351, byte: 4, bits: 16}}",
             "signals[2].quantity", "is already signals[1]'s quantity"),
        Case(19, "  - {name: ccl, quantity: charge_current_limit, can: {id: 0x351, byte: 2, bits: 16}, scale: 0}",
             "signals[1].scale", "must not be 0"),
        Case(18, "  - {name: soc, quantity: soc, can: {id: 0x355, byte: 7, bits: 16}}", "signals[0].can.bits", "runs past the frame's 8 bytes"),
        Case(18, "  - {name: soc, quantity: soc, can: {id: 0x355, byte: 6, bit: 4, bits: 13}}", "signals[0].can.bits",
             "= 65, at most 64"),
        Case(22, "  - {name: flags, can: {id: 0x35C, byte: 1, bits: 12, order: big}}", "signals[4].can.bits",
             "a big-endian value is whole bytes"),
        Case(22, "  - {name: flags, can: {id: 0x35C, byte: 1, bit: 3, bits: 8, order: big}}", "signals[4].can.bit",
             "a big-endian value is whole bytes"),
        Case(18, "  - {name: soc, quantity: soc, can: {id: 0x400, byte: 0, bits: 16}}", "signals[0].can.id", "no filter of transport.can passes"),
        Case(18, "  - {name: soc, quantity: soc, can: {id: 0x800, byte: 0, bits: 16}}", "signals[0].can.id", "must be from 0 to 2047"),
        Case(18, "  - {name: soc, quantity: soc, modbus: {register: 1}}", "signals[0].modbus", "this is a CAN profile"),
        Case(18, "  - {name: soc, quantity: soc, can: {id: 0x355, byte: 0, bits: 16}, agree_within: 1}", "signals[0].agree_within",
             "is only for quantity soc_fine"),
        Case(19, "  - {name: ccl, quantity: charge_current_limit, can: {id: 0x351, byte: 2, bits: 16}, invalid: [0xFFFF], signed: true}",
             "signals[1].invalid", "is not a raw value of this signed 16-bit signal"),
        Case(19, "  - {name: ccl, quantity: charge_current_limit, can: {id: 0x351, byte: 2, bits: 16}, colour: 1}",
             "signals[1].colour", "unknown key; known keys: name, quantity"),
        Case(22, "  - {name: flags, quantity: state, can: {id: 0x35C, byte: 1, bits: 16}, text: true}", "signals[4].text",
             "a text signal is read and reported only; it takes no quantity"),
        Case(28, "  - {signal: nothing, bit: 1, condition: cell_overvoltage, severity: protection}", "alarms[0].signal",
             "names no signal of this profile"),
        Case(28, "  - {signal: protection_lo, bit: 8, condition: cell_overvoltage, severity: protection}", "alarms[0].bit",
             "is beyond signal 'protection_lo', which has 8 bits"),
        Case(28, "  - {signal: protection_lo, bit: 1, equals: [2], condition: cell_overvoltage, severity: protection}", "alarms[0]",
             "give bit or equals, one of them"),
        Case(28, "  - {signal: protection_lo, bit: 1, condition: melting, severity: protection}", "alarms[0].condition",
             "must be one of cell_overvoltage"),
        Case(25, "  - {part: measurements, presence: required, period_s: 1}", "groups[1].part",
             "no signal feeds it: needs signals of quantity pack_voltage, pack_current, temperature"),
        Case(25, "  - {part: cells}", "groups[1].part",
             "needs signals of quantity min_cell_voltage, max_cell_voltage, min_cell_temperature, max_cell_temperature"),
        Case(25, "  - {part: requests}", "groups[1].part", "needs signals of quantity charge_enabled, discharge_enabled"),
        Case(28, "  []", at: 26, "groups[2].part", "no alarm feeds it"),
        Case(25, "  - {part: status}", "groups[1].part", "duplicates groups[0].part"),
        Case(30, "  - {id: 0x305, data: [0, 0, 0, 0, 0, 0, 0, 0, 0], period_s: 1}", "keep_alive[0].data", "at most 8 bytes"),
        Case(30, "  - {id: 0x305, data: [256], period_s: 1}", "keep_alive[0].data", "expected bytes from 0 to 255"),
        Case(30, "commands: {setpoint: {register: 1}, fallback: {time_slot: {seconds: 900}}}", "commands",
             "only an inverter profile commands power; this one is kind bms"),
        Case(18, "  # no fallback", at: 15, "commands.fallback", ProfileCommandReader.noFallback, in: inv),
        Case(18, "  fallback: {}", "commands.fallback", ProfileCommandReader.noFallback, in: inv),
        Case(18, "  fallback: {watchdog: {register: 1, seconds: 20}, time_slot: {seconds: 900}}", "commands.fallback",
             "give one fallback", in: inv),
        Case(11, "  - {name: power, quantity: state, modbus: {table: input, register: 13033, type: int32}}", "signals",
             "an inverter profile needs a signal of quantity active_power", in: inv),
        Case(12, "  - {name: hz, quantity: frequency, modbus: {table: input, register: 13034}}", "signals[1].modbus",
             "shares input register 13034 with signals[0] 'power'", in: inv),
        Case(11, "  - {name: power, quantity: active_power, modbus: {table: input, register: 13033, type: int32}, signed: false}",
             "signals[0].signed", "contradicts the register's type", in: inv),
        Case(11, "  - {name: power, quantity: active_power, modbus: {table: input, register: 65535, type: int32}}",
             "signals[0].modbus.register", "runs past register 65535", in: inv),
        Case(15, "  setpoint: {register: 13051, type: uint16}", "commands.setpoint.type", "needs int16 or int32", in: inv),
        Case(15, "  setpoint: {register: 13051, scale: 0}", "commands.setpoint.scale", "must not be 0", in: inv),
        Case(17, "  stop: [{register: 13050}]", "commands.stop[0].value", "is required", in: inv),
        Case(7, "  modbus: {link: tcp, unit_id: 1, max_read_registers: 126}", "transport.modbus.max_read_registers",
             "must be from 1 to 125", in: inv),
        Case(7, "  serial: {}", "transport.serial", "unknown key; known keys: can, modbus", in: inv),
    ]

    @Test("every mistake is an error at its line, in the configuration's format", arguments: cases)
    func mistakes(c: Case) {
        let text = ProfileFixtures.replacing(c.base, line: c.line, with: c.text)
        let (profile, diagnostics) = Self.read(text, c.name)
        #expect(profile == nil)
        let found = diagnostics.first { $0.keyPath == c.keyPath && $0.message.contains(c.message) }
        #expect(found != nil, "diagnostics were:\n\(diagnostics.map(\.description).joined(separator: "\n"))")
        #expect(found?.line == c.expectedLine)
        #expect(found?.description.hasPrefix("/devices/\(c.name).yaml:\(c.expectedLine): \(c.keyPath): ") == true)
        #expect(diagnostics.allSatisfy { $0.severity == .error && $0.line != nil })
    }

    @Test("YAML syntax, an empty file and a file too large are refused with a diagnostic")
    func unreadable() throws {
        #expect(Self.read("bessd_profile: 1\nname: [x\n", "x").diagnostics.first?.code == .syntax)
        #expect(Self.read("", "x").diagnostics.first?.message == "the file is empty")
        let directory = try ProfileFixtures.Directory(["big.yaml": String(repeating: "#", count: ProfileReader.maxFileBytes + 1)])
        let (profile, diagnostics) = ProfileReader.read(path: directory.path + "/big.yaml")
        #expect(profile == nil && diagnostics.first?.code == .unreadable)
        #expect(ProfileReader.read(path: directory.path + "/absent.yaml").diagnostics.first?.code == .unreadable)
    }

    @Test("a profile is told from a configuration by its header line")
    func header() {
        #expect(ProfileReader.isProfile(text: ProfileFixtures.bms))
        #expect(!ProfileReader.isProfile(text: "mode: simulation\n# bessd_profile: 1\n"))
    }
}
