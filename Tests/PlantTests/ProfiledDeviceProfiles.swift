import Fieldbus

/// Profiles built in Swift for the profiled-device tests, from the layouts of
/// ../shared/reference/devices.md (§1.1 Pylontech LV, §1.3 Pylon HV, §2.1 BYD C130, §3.1 Sungrow SH-RT).
enum TestProfiles {
    static func can(_ name: String, _ quantity: ProfileQuantity?, _ id: UInt32, byte: Int, bit: Int = 0, bits: Int = 16,
                    signed: Bool = false, scale: Double = 1, offset: Double = 0, invalid: [Int64] = [],
                    magnitude: Bool = false) -> ProfileSignal {
        ProfileSignal(name: name, quantity: quantity,
                      location: .can(CANSignalLocation(frameID: id, byte: byte, bit: bit, bits: bits, order: .little)),
                      signed: signed, scale: scale, offset: offset, invalidRaw: invalid, magnitude: magnitude)
    }

    static func register(_ name: String, _ quantity: ProfileQuantity?, _ address: Int, _ type: ModbusSignalLocation.ValueType = .uint16,
                         table: ModbusTable = .holding, scale: Double = 1, lowWordFirst: Bool = false) -> ProfileSignal {
        ProfileSignal(name: name, quantity: quantity,
                      location: .modbus(ModbusSignalLocation(table: table, address: address, type: type, lowWordFirst: lowWordFirst)),
                      signed: type == .int16 || type == .int32, scale: scale)
    }

    /// Pylontech LV (0x35x, 11-bit, little-endian), as `PylontechDecoder` reads it.
    static let pylontechLV = DeviceProfile(
        name: "pylontech-lv-test", kind: .bms, vendor: "Pylontech", products: ["US3000C"],
        transport: .can(CANProfileTransport(bitrate: 500_000, extended: false, mode: .broadcast,
                                            filters: [CANFilter(id: 0x350, mask: 0x7F0), CANFilter(id: 0x370, mask: 0x7F0)])),
        signals: [
            can("charge_voltage_limit", .chargeVoltageLimit, 0x351, byte: 0, scale: 0.1),
            can("charge_current_limit", .chargeCurrentLimit, 0x351, byte: 2, signed: true, scale: 0.1, invalid: [-32768]),
            can("discharge_current_limit", .dischargeCurrentLimit, 0x351, byte: 4, signed: true, scale: 0.1, invalid: [-32768],
                magnitude: true),
            can("discharge_voltage_limit", .dischargeVoltageLimit, 0x351, byte: 6, scale: 0.1),
            can("soc", .soc, 0x355, byte: 0), can("soh", .soh, 0x355, byte: 2),
            can("soc_fine", .socFine, 0x355, byte: 4, scale: 0.01),
            can("pack_voltage", .packVoltage, 0x356, byte: 0, signed: true, scale: 0.01, invalid: [-32768]),
            can("pack_current", .packCurrent, 0x356, byte: 2, signed: true, scale: 0.1, invalid: [-32768]),
            can("temperature", .temperature, 0x356, byte: 4, signed: true, scale: 0.1, invalid: [-32768]),
            can("protection", nil, 0x359, byte: 0), can("alarm", nil, 0x359, byte: 2),
            can("charge_enabled", .chargeEnabled, 0x35C, byte: 0, bit: 7, bits: 1),
            can("discharge_enabled", .dischargeEnabled, 0x35C, byte: 0, bit: 6, bits: 1),
            can("min_cell_voltage", .minCellVoltage, 0x373, byte: 0, scale: 0.001),
            can("max_cell_voltage", .maxCellVoltage, 0x373, byte: 2, scale: 0.001),
            can("min_cell_temperature", .minCellTemperature, 0x373, byte: 4, offset: -273.15),
            can("max_cell_temperature", .maxCellTemperature, 0x373, byte: 6, offset: -273.15),
        ],
        groups: [ProfileGroup(part: .limits, presence: .required, period: .seconds(1)),
                 ProfileGroup(part: .cells, presence: .onceSeen, period: .seconds(1))],
        alarms: conditionBits("protection", .protection) + conditionBits("alarm", .alarm),
        keepAlive: [ProfileFrame(id: 0x305, extended: false, data: [0, 0, 0, 0, 0, 0, 0, 0], period: .seconds(1))])

    /// Pylontech LV's condition bits in a protection or alarm word (bytes 0–1 or 2–3 of 0x359).
    static func conditionBits(_ signal: String, _ severity: ProfileAlarm.Severity) -> [ProfileAlarm] {
        let bits: [(Int, ProfileAlarm.Condition)] = [(1, .cellOvervoltage), (2, .cellUndervoltage), (3, .overtemperature),
                                                    (4, .undertemperature), (7, .dischargeOvercurrent), (8, .chargeOvercurrent),
                                                    (11, .systemError)]
        return bits.map { ProfileAlarm(signal: signal, bit: $0.0, condition: $0.1, severity: severity) }
    }

    /// Pylon HV ("Force H", 29-bit, request 0x4200): 0x4210 and 0x4220 little-endian with the
    /// −3000 A / −100 °C offsets, 0x4250 alarm and protection words (devices.md §1.3).
    static let pylonHV = DeviceProfile(
        name: "pylon-hv-test", kind: .bms, vendor: "Pylontech", products: ["Force H2"],
        transport: .can(CANProfileTransport(bitrate: 500_000, extended: true, mode: .request,
                                            filters: [CANFilter(id: 0x4200, mask: 0x1FFF_FF00)])),
        signals: [
            can("pack_voltage", .packVoltage, 0x4210, byte: 0, scale: 0.1),
            can("pack_current", .packCurrent, 0x4210, byte: 2, scale: 0.1, offset: -3000),
            can("temperature", .temperature, 0x4210, byte: 4, scale: 0.1, offset: -100),
            can("soc", .soc, 0x4210, byte: 6, bits: 8), can("soh", .soh, 0x4210, byte: 7, bits: 8),
            can("charge_voltage_limit", .chargeVoltageLimit, 0x4220, byte: 0, scale: 0.1),
            can("discharge_voltage_limit", .dischargeVoltageLimit, 0x4220, byte: 2, scale: 0.1),
            can("charge_current_limit", .chargeCurrentLimit, 0x4220, byte: 4, scale: 0.1, offset: -3000),
            can("discharge_current_limit", .dischargeCurrentLimit, 0x4220, byte: 6, scale: 0.1, offset: -3000, magnitude: true),
            can("max_cell_voltage", .maxCellVoltage, 0x4230, byte: 0, scale: 0.001),
            can("min_cell_voltage", .minCellVoltage, 0x4230, byte: 2, scale: 0.001),
            can("max_cell_temperature", .maxCellTemperature, 0x4240, byte: 0, scale: 0.1, offset: -100),
            can("min_cell_temperature", .minCellTemperature, 0x4240, byte: 2, scale: 0.1, offset: -100),
            can("alarm_bits", nil, 0x4250, byte: 4), can("protection_bits", nil, 0x4250, byte: 6),
        ],
        groups: [ProfileGroup(part: .limits, presence: .required, period: .seconds(1)),
                 ProfileGroup(part: .protection, presence: .required, period: .seconds(1))],
        alarms: hvBits("protection_bits", .protection) + hvBits("alarm_bits", .alarm),
        keepAlive: [ProfileFrame(id: 0x4200, extended: true, data: [0, 0, 0, 0, 0, 0, 0, 0], period: .seconds(1))])

    static func hvBits(_ signal: String, _ severity: ProfileAlarm.Severity) -> [ProfileAlarm] {
        let bits: [(Int, ProfileAlarm.Condition)] = [(0, .cellUndervoltage), (1, .cellOvervoltage), (5, .overtemperature),
                                                    (7, .overtemperature), (4, .undertemperature), (8, .chargeOvercurrent),
                                                    (9, .dischargeOvercurrent)]
        return bits.map { ProfileAlarm(signal: signal, bit: $0.0, condition: $0.1, severity: severity) }
    }

    /// BYD Battery-Box Commercial C130 (Modbus, holding registers from 0x2100; devices.md §2.1):
    /// level 1 (0x2140) → alarm, level 3 (0x2143) → protection.
    static let bydC130 = DeviceProfile(
        name: "byd-c130-test", kind: .bms, vendor: "BYD", products: ["Battery-Box Commercial C130"],
        transport: .modbus(ModbusProfileTransport(link: .rtu, defaultUnitID: 1, maxReadRegisters: 125)),
        signals: [
            register("pack_voltage", .packVoltage, 0x2100, scale: 0.1),
            register("pack_current", .packCurrent, 0x2101, .int16, scale: 0.1),
            register("work_state", nil, 0x2102),
            register("soc", .soc, 0x2103), register("soh", .soh, 0x2104),
            register("max_cell_voltage", .maxCellVoltage, 0x2106, scale: 0.001),
            register("min_cell_voltage", .minCellVoltage, 0x2108, scale: 0.001),
            register("max_cell_temperature", .maxCellTemperature, 0x210A, .int16, scale: 0.1),
            register("min_cell_temperature", .minCellTemperature, 0x210C, .int16, scale: 0.1),
            register("temperature", .temperature, 0x2C00, .int16, scale: 0.1),
            register("alarm_level_1", nil, 0x2140), register("alarm_level_3", nil, 0x2143),
            register("charge_current_limit", .chargeCurrentLimit, 0x216C, scale: 0.1),
            register("discharge_current_limit", .dischargeCurrentLimit, 0x216D, scale: 0.1),
        ],
        groups: [ProfileGroup(part: .limits, presence: .required, period: .seconds(1)),
                 ProfileGroup(part: .protection, presence: .required, period: .seconds(1))],
        alarms: bydBits("alarm_level_3", .protection) + bydBits("alarm_level_1", .alarm))

    static func bydBits(_ signal: String, _ severity: ProfileAlarm.Severity) -> [ProfileAlarm] {
        let bits: [(Int, ProfileAlarm.Condition)] = [(0, .cellOvervoltage), (1, .cellUndervoltage), (3, .overtemperature),
                                                    (4, .undertemperature), (10, .dischargeOvercurrent), (11, .chargeOvercurrent)]
        return bits.map { ProfileAlarm(signal: signal, bit: $0.0, condition: $0.1, severity: severity) }
    }

    /// Sungrow SH-RT in External EMS mode (devices.md §3.1): mode 13049 = 3, direction 13050
    /// (0xAA charge, 0xBB discharge, 0xCC stop), power 13051 in W, heartbeat 13079.
    static func sungrow(heartbeat: Int = 20) -> DeviceProfile {
        DeviceProfile(
            name: "sungrow-test", kind: .inverter, vendor: "Sungrow", products: ["SH10RT"],
            transport: .modbus(ModbusProfileTransport(link: .tcp, defaultUnitID: 1, maxReadRegisters: 100, lowWordFirst: true)),
            signals: [
                register("battery_power", .activePower, 5213, .int32, table: .input, lowWordFirst: true),
                register("grid_frequency", .frequency, 5241, table: .input, scale: 0.01),
                register("nominal_power", .ratedPower, 5000, table: .input, scale: 100),
            ],
            commands: ProfileCommands(
                setpoint: .split(direction: 13050, charge: 0xAA, discharge: 0xBB, stop: 0xCC, magnitude: 13051, type: .uint16, scale: 1),
                start: [RegisterWrite(address: 13049, value: 3)],
                stop: [RegisterWrite(address: 13050, value: 0xCC), RegisterWrite(address: 13049, value: 0)],
                fallback: .watchdog(address: 13079, seconds: heartbeat)))
    }
}
