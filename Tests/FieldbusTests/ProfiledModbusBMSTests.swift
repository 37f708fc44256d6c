import BessBase
import ControlCore
import Fieldbus
import Testing

/// Registers in memory, holding and input tables apart; what a read asks and what is written is
/// recorded. A register not set answers Modbus exception 2, as a device does.
struct InMemoryRegisters: InputRegisterAccess {
    var holding: [Int: UInt16] = [:]
    var input: [Int: UInt16] = [:]
    var reads: [ModbusReadBlock] = []
    var writes: [(address: Int, values: [UInt16])] = []

    mutating func set(_ table: ModbusTable, _ address: Int, _ words: [UInt16]) {
        for (k, word) in words.enumerated() {
            if table == .holding { holding[address + k] = word } else { input[address + k] = word }
        }
    }

    private func read(_ registers: [Int: UInt16], _ address: Int, _ count: Int) throws(DeviceError) -> [UInt16] {
        var words: [UInt16] = []
        for a in address..<(address + count) {
            guard let word = registers[a] else { throw DeviceError(.exception(2), message: "nothing at \(a)") }
            words.append(word)
        }
        return words
    }

    mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        reads.append(ModbusReadBlock(table: .holding, address: address, count: count))
        return try read(holding, address, count)
    }

    mutating func readInputRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        reads.append(ModbusReadBlock(table: .input, address: address, count: count))
        return try read(input, address, count)
    }

    mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        writes.append((address, values))
        set(.holding, address, values)
    }
}

/// A Modbus signal of a profile built in Swift.
func modbusSignal(_ name: String, _ quantity: ProfileQuantity?, _ address: Int, _ type: ModbusSignalLocation.ValueType = .uint16,
                  table: ModbusTable = .holding, scale: Double = 1, lowWordFirst: Bool = false,
                  scaleFactor: Int? = nil, invalid: [Int64] = [], valid: ClosedRange<Double>? = nil) -> ProfileSignal {
    ProfileSignal(name: name, quantity: quantity,
                  location: .modbus(ModbusSignalLocation(table: table, address: address, type: type, lowWordFirst: lowWordFirst,
                                                         scaleFactorAddress: scaleFactor)),
                  scale: scale, invalidRaw: invalid, valid: valid)
}

@Suite("Profiled Modbus BMS")
struct ProfiledModbusBMSTests {
    let t = MonotonicInstant(nanoseconds: 5_000_000_000)

    /// BYD Battery-Box Commercial C130, cluster 1 (devices.md §2.1): measurements at 0x2100, the
    /// alarm levels at 0x2140/0x2141/0x2143, the current limits at 0x216C.
    static func byd(cells: ProfileGroup.Presence = .required) -> DeviceProfile {
        let second = Duration.seconds(1)
        return DeviceProfile(
            name: "byd-c130", kind: .bms, vendor: "BYD", products: ["Battery-Box Commercial C130"],
            sources: ["BYD Communication protocol for BMS and PCS V2.1"],
            transport: .modbus(ModbusProfileTransport(link: .rtu, defaultUnitID: 1)),
            signals: [
                modbusSignal("stack_voltage", .packVoltage, 0x2100, scale: 0.1),
                modbusSignal("circuit_current", .packCurrent, 0x2101, .int16, scale: 0.1),
                modbusSignal("work_state", nil, 0x2102),
                modbusSignal("soc", .soc, 0x2103, valid: 0...100),
                modbusSignal("soh", .soh, 0x2104, valid: 0...100),
                modbusSignal("max_cell_position", nil, 0x2105),
                modbusSignal("max_cell_voltage", .maxCellVoltage, 0x2106, scale: 0.001),
                modbusSignal("min_cell_position", nil, 0x2107),
                modbusSignal("min_cell_voltage", .minCellVoltage, 0x2108, scale: 0.001),
                modbusSignal("max_temperature_position", nil, 0x2109),
                modbusSignal("max_temperature", .maxCellTemperature, 0x210A, .int16, scale: 0.1),
                modbusSignal("pack_temperature", .temperature, 0x210A, .int16, scale: 0.1),
                modbusSignal("min_temperature_position", nil, 0x210B),
                modbusSignal("min_temperature", .minCellTemperature, 0x210C, .int16, scale: 0.1),
                modbusSignal("alarm_level1", nil, 0x2140),
                modbusSignal("alarm_level2", nil, 0x2141),
                modbusSignal("alarm_level3", nil, 0x2143),
                modbusSignal("max_charge_current", .chargeCurrentLimit, 0x216C, scale: 0.1),
                modbusSignal("max_discharge_current", .dischargeCurrentLimit, 0x216D, scale: 0.1),
            ],
            groups: [
                ProfileGroup(part: .status, presence: .required, period: second),
                ProfileGroup(part: .limits, presence: .required, period: second),
                ProfileGroup(part: .measurements, presence: .required, period: second),
                ProfileGroup(part: .cells, presence: cells, period: second),
                ProfileGroup(part: .protection, presence: .required, period: second),
            ],
            alarms: [
                ProfileAlarm(signal: "alarm_level3", bit: 0, condition: .cellOvervoltage, severity: .protection),
                ProfileAlarm(signal: "alarm_level3", bit: 1, condition: .cellUndervoltage, severity: .protection),
                ProfileAlarm(signal: "alarm_level3", bit: 10, condition: .dischargeOvercurrent, severity: .protection),
                ProfileAlarm(signal: "alarm_level2", bit: 0, condition: .cellOvervoltage, severity: .alarm),
                ProfileAlarm(signal: "alarm_level1", bit: 0, condition: .cellOvervoltage, severity: .alarm),
            ])
    }

    static let measurements = ModbusReadBlock(table: .holding, address: 0x2100, count: 13)
    static let alarmBlock = ModbusReadBlock(table: .holding, address: 0x2140, count: 4)
    static let limitBlock = ModbusReadBlock(table: .holding, address: 0x216C, count: 2)
    /// devices.md §6: BYD C130 FC 03 0x2100 ×13.
    static let vector: [UInt16] = [0x1B00, 0x0000, 0x0000, 0x003F, 0x0062, 0x0011, 0x0D16, 0x008C, 0x0CE4, 0x0005, 0x0109, 0x0058, 0x00F0]

    @Test("BYD C130 read plan: 0x2100 ×13, alarms 0x2140 ×4, limits 0x216C ×2")
    func bydPlan() throws {
        let bms = try ProfiledModbusBMS(profile: Self.byd())
        #expect(bms.readPlan == [Self.measurements, Self.alarmBlock, Self.limitBlock])
        #expect(bms.snapshot.expectedGroups == [.cells, .protection])
    }

    @Test("BYD C130 0x2100 ×13: 691.2 V, 0.0 A, standby, SOC 63 %, SOH 98 %, cells 3.350/3.300 V, 26.5/24.0 °C")
    func bydMeasurements() throws {
        var bms = try ProfiledModbusBMS(profile: Self.byd())
        #expect(bms.ingest(Self.measurements, words: Self.vector, at: t) == nil)
        let measured = try #require(bms.snapshot.measurements)
        #expect(measured.takenAt == t)
        #expect(measured.value.packVoltage == Volts(691.2))
        #expect(measured.value.packCurrent == Amps(0))
        #expect(measured.value.temperature == Celsius(26.5))
        let status = try #require(bms.snapshot.status)
        #expect(status.value.soc == Percent(63))
        #expect(status.value.soh == Percent(98))
        let cells = try #require(bms.snapshot.cells)
        #expect(cells.value.maxCellVoltage == Volts(3.35))
        #expect(cells.value.minCellVoltage == Volts(3.3))
        #expect(cells.value.maxTemperature == Celsius(26.5))
        #expect(cells.value.minTemperature == Celsius(24.0))
        #expect(bms.raw(of: "work_state") == 0)
        #expect(bms.value(of: "max_cell_position") == 17)
        #expect(bms.value(of: "min_cell_position") == 140)
        #expect(bms.snapshot.limits == nil)
        #expect(bms.counters.accepted == 1)
    }

    @Test("BYD C130 0x216C ×2: max charge 50.0 A, max discharge 80.0 A")
    func bydLimits() throws {
        var bms = try ProfiledModbusBMS(profile: Self.byd())
        #expect(bms.ingest(Self.limitBlock, words: [0x01F4, 0x0320], at: t) == nil)
        let limits = try #require(bms.snapshot.limits)
        #expect(limits.value.chargeCurrentLimit == Amps(50))
        #expect(limits.value.dischargeCurrentLimit == Amps(80))
        #expect(limits.value.chargeVoltageLimit == nil)
    }

    @Test("BYD C130 0x2143 = 0x0001: level-3 cell over-voltage is a protection; level 1 an alarm")
    func bydAlarmLevels() throws {
        var bms = try ProfiledModbusBMS(profile: Self.byd())
        #expect(bms.ingest(Self.alarmBlock, words: [0, 0, 0, 0x0001], at: t) == nil)
        #expect(bms.snapshot.protection?.value == BMSProtectionState(protections: [.cellOvervoltage]))
        #expect(bms.ingest(Self.alarmBlock, words: [0x0001, 0, 0, 0x0402], at: t + .seconds(1)) == nil)
        let state = try #require(bms.snapshot.protection)
        #expect(state.value.protections == [.cellUndervoltage, .dischargeOvercurrent])
        #expect(state.value.alarms == [.cellOvervoltage])
        #expect(state.takenAt == t + .seconds(1))
        #expect(bms.ingest(Self.alarmBlock, words: [0, 0, 0, 0], at: t + .seconds(2)) == nil)
        #expect(bms.snapshot.protection?.value == BMSProtectionState())
    }

    @Test("A value outside its range refuses the whole read; the snapshot keeps the last good one")
    func invalidRefusesRead() throws {
        var bms = try ProfiledModbusBMS(profile: Self.byd())
        #expect(bms.ingest(Self.measurements, words: Self.vector, at: t) == nil)
        var bad = Self.vector
        bad[0] = 0x1B01  // a new voltage …
        bad[3] = 0x00FF  // … with SOC 255 %
        let refusal = bms.ingest(Self.measurements, words: bad, at: t + .seconds(1))
        #expect(refusal?.code == .registerValueInvalid)
        #expect(bms.snapshot.measurements?.value.packVoltage == Volts(691.2))
        #expect(bms.snapshot.measurements?.takenAt == t)
        #expect(bms.counters.invalidValues == 1)
        #expect(bms.counters.accepted == 1)
    }

    @Test("A read of the wrong length, or of a block not in the plan, is MODBUS_BAD_RESPONSE")
    func badReads() throws {
        var bms = try ProfiledModbusBMS(profile: Self.byd())
        #expect(bms.ingest(Self.limitBlock, words: [0x01F4], at: t)?.code == .badResponse)
        #expect(bms.ingest(ModbusReadBlock(table: .input, address: 0x216C, count: 2), words: [1, 2], at: t)?.code == .badResponse)
        #expect(bms.counters.badResponses == 2)
        #expect(bms.snapshot.limits == nil)
    }

    @Test("A once_seen group is expected from its first read on")
    func onceSeen() throws {
        var bms = try ProfiledModbusBMS(profile: Self.byd(cells: .onceSeen))
        #expect(bms.snapshot.expectedGroups == [.protection])
        #expect(bms.ingest(Self.limitBlock, words: [0x01F4, 0x0320], at: t) == nil)
        #expect(bms.snapshot.expectedGroups == [.protection])
        #expect(bms.ingest(Self.measurements, words: Self.vector, at: t) == nil)
        #expect(bms.snapshot.expectedGroups == [.protection, .cells])
    }

    /// Limits from two reads far apart, SOC from input registers (Sungrow style, 0.1 %).
    static func split() -> DeviceProfile {
        DeviceProfile(
            name: "split", kind: .bms, vendor: "Test", products: ["T"],
            transport: .modbus(ModbusProfileTransport(link: .tcp, defaultUnitID: 1)),
            signals: [
                modbusSignal("ccl", .chargeCurrentLimit, 100, scale: 0.1),
                modbusSignal("dcl", .dischargeCurrentLimit, 300, scale: 0.1, invalid: [0xFFFF]),
                modbusSignal("soc", .soc, 13022, table: .input, scale: 0.1),
                modbusSignal("dc_power", nil, 13023, .int32, table: .input, lowWordFirst: true),
                modbusSignal("frequency", nil, 40, .int16, scale: 1, scaleFactor: 42),
            ],
            groups: [ProfileGroup(part: .limits, presence: .required, period: .seconds(1))])
    }

    @Test("A part fed by two reads is stamped with the older one")
    func oldestArrival() throws {
        var bms = try ProfiledModbusBMS(profile: Self.split())
        let ccl = ModbusReadBlock(table: .holding, address: 100, count: 1)
        let dcl = ModbusReadBlock(table: .holding, address: 300, count: 1)
        #expect(bms.readPlan.contains(ccl) && bms.readPlan.contains(dcl))
        #expect(bms.ingest(ccl, words: [500], at: t) == nil)
        #expect(bms.snapshot.limits == nil)
        #expect(bms.ingest(dcl, words: [800], at: t + .seconds(1)) == nil)
        #expect(bms.snapshot.limits?.takenAt == t)
        #expect(bms.ingest(ccl, words: [400], at: t + .seconds(2)) == nil)
        #expect(bms.snapshot.limits?.takenAt == t + .seconds(1))
        #expect(bms.snapshot.limits?.value.chargeCurrentLimit == Amps(40))
        #expect(bms.ingest(dcl, words: [0xFFFF], at: t + .seconds(3))?.code == .registerValueInvalid)
        #expect(bms.snapshot.limits?.value.dischargeCurrentLimit == Amps(80))
    }

    @Test("poll reads holding and input registers (FC 04): SOC 0x0258 = 60.0 %, a scale-factor register, LW-first int32")
    func pollInputRegisters() throws {
        var bms = try ProfiledModbusBMS(profile: Self.split())
        var device = InMemoryRegisters()
        device.set(.holding, 100, [500])
        device.set(.holding, 300, [800])
        device.set(.holding, 40, [4998, 0, 0xFFFE])
        device.set(.input, 13022, [0x0258, 0xFC18, 0xFFFF])
        try bms.poll(&device, at: t)
        #expect(device.reads == bms.readPlan)
        #expect(device.reads.contains(ModbusReadBlock(table: .input, address: 13022, count: 3)))
        #expect(bms.value(of: "soc") == 60.0)
        #expect(bms.value(of: "dc_power") == -1000)
        #expect(bms.value(of: "frequency") == 49.98)
        #expect(bms.snapshot.limits?.value.dischargeCurrentLimit == Amps(80))
        // A scale factor of 0x8000 (not implemented) refuses the read.
        device.set(.holding, 42, [0x8000])
        #expect { try bms.poll(&device, at: t + .seconds(1)) } throws: { ($0 as? DeviceError)?.code == .registerValueInvalid }
        #expect(bms.value(of: "frequency") == 49.98)
    }

    @Test("An access that reads holding registers only refuses input registers (MODBUS_INVALID_REQUEST)")
    func holdingOnlyAccess() throws {
        var bms = try ProfiledModbusBMS(profile: Self.split())
        var device = RecordedWrites()
        #expect { try bms.poll(&device, at: t) } throws: { ($0 as? DeviceError)?.code == .invalidRequest }
        var holdingOnly = PrefetchedRegisters(address: 13022, words: [1, 2, 3])
        #expect(throws: DeviceError.self) { try holdingOnly.readRegisters(.input, at: 13022, count: 1) }
        #expect(try holdingOnly.readRegisters(.holding, at: 13022, count: 1) == [1])
    }

    @Test("Read planning merges spans of one table across small gaps, within max_read_registers")
    func planning() {
        let spans = [ModbusReadBlock(table: .holding, address: 10, count: 2), ModbusReadBlock(table: .holding, address: 0, count: 1),
                     ModbusReadBlock(table: .input, address: 5, count: 1), ModbusReadBlock(table: .holding, address: 3, count: 1),
                     ModbusReadBlock(table: .holding, address: 20, count: 1)]
        #expect(ModbusSignalCodec.plan(spans, maxRegisters: 125, maxGap: 6) == [
            ModbusReadBlock(table: .holding, address: 0, count: 12), ModbusReadBlock(table: .holding, address: 20, count: 1),
            ModbusReadBlock(table: .input, address: 5, count: 1),
        ])
        #expect(ModbusSignalCodec.plan(spans, maxRegisters: 8, maxGap: 6) == [
            ModbusReadBlock(table: .holding, address: 0, count: 4), ModbusReadBlock(table: .holding, address: 10, count: 2),
            ModbusReadBlock(table: .holding, address: 20, count: 1), ModbusReadBlock(table: .input, address: 5, count: 1),
        ])
    }

    @Test("Signal decoding: word order, signedness, offset, magnitude, clamp, markers by bit pattern, scale factors")
    func codec() throws {
        func decode(_ signal: ProfileSignal, _ words: [UInt16], factor: UInt16? = nil) throws -> Double {
            guard case .modbus(let location) = signal.location else { throw ProfileError(code: "T", message: "not Modbus") }
            return try ModbusSignalCodec.decode(signal, location, words: words, at: 0, scaleFactor: factor).value
        }
        #expect(try decode(modbusSignal("a", nil, 0, .int32), [0xFFFF, 0xFC18]) == -1000)  // high word first
        #expect(try decode(modbusSignal("a", nil, 0, .uint32, lowWordFirst: true), [0x0000, 0x0001]) == 65536)
        var signed = modbusSignal("a", nil, 0, .uint16, scale: 0.1)
        signed.signed = true
        #expect(try decode(signed, [0xFFF6]) == -1)
        var temperature = modbusSignal("t", nil, 0, scale: 0.1)
        temperature.offset = -100  // Deye 586: 0.1 °C with −100 °C
        #expect(try decode(temperature, [1250]) == 25)
        var discharge = modbusSignal("dcl", nil, 0, .int32, scale: 0.01)
        discharge.magnitude = true  // Pylontech M2 0x110D: negative
        #expect(try decode(discharge, [0xFFFF, 0xE0C0]) == 80)
        var charge = modbusSignal("ccl", nil, 0, .int16, scale: 0.1)
        charge.clampMinimum = 0
        #expect(try decode(charge, [0xFFF6]) == 0)
        // -32768 written as the pattern 0x8000 on a signed register: a marker either way.
        let marked = modbusSignal("m", nil, 0, .int16, invalid: [0x8000])
        #expect { _ = try decode(marked, [0x8000]) } throws: { ($0 as? DeviceError)?.code == .registerValueInvalid }
        #expect(try decode(marked, [0x7FFF]) == 32767)
        let factored = modbusSignal("w", nil, 0, .int16, scaleFactor: 1)
        #expect(try decode(factored, [123], factor: 2) == 12300)
        #expect { _ = try decode(factored, [123], factor: 11) } throws: { ($0 as? DeviceError)?.code == .registerValueInvalid }
        #expect { _ = try decode(factored, [123]) } throws: { ($0 as? DeviceError)?.code == .registerValueInvalid }
        #expect { _ = try decode(modbusSignal("a", nil, 0, .int32), [1]) } throws: { ($0 as? DeviceError)?.code == .badResponse }
    }

    @Test("A CAN profile, or a part without the quantities it needs, is refused")
    func refusedProfiles() {
        var can = Self.byd()
        can.transport = .can(CANProfileTransport(bitrate: 500_000, extended: false, mode: .broadcast, filters: []))
        #expect(throws: ProfileError.self) { try ProfiledModbusBMS(profile: can) }
        var partial = Self.byd()
        partial.signals.removeAll { $0.quantity == .dischargeCurrentLimit }
        #expect { try ProfiledModbusBMS(profile: partial) } throws: { ($0 as? ProfileError)?.code == "PROFILE_STRUCTURE" }
    }
}
