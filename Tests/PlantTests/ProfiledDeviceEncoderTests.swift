import ControlCore
import Fieldbus
import HILPlant
import Simulation
import Testing

@Suite("Profiled devices: the plant's encoder")
struct ProfiledDeviceEncoderTests {
    /// A state with `values` set, the rest at their defaults.
    static func state(_ values: [WritableKeyPath<ProfiledDeviceState, Double>: Double]) -> ProfiledDeviceState {
        var s = ProfiledDeviceState()
        for (path, value) in values { s[keyPath: path] = value }
        return s
    }

    static func bmsState() -> ProfiledDeviceState {
        var s = state([\.soc: 63.4, \.soh: 98, \.packVoltage: 52.87, \.packCurrent: -41.3, \.temperature: 27.4,
                       \.chargeVoltageLimit: 56.8, \.dischargeVoltageLimit: 46.4, \.chargeCurrentLimit: 120.5,
                       \.dischargeCurrentLimit: 150, \.minCellVoltage: 3.281, \.maxCellVoltage: 3.312,
                       \.minCellTemperature: 26, \.maxCellTemperature: 29])
        s.protections = [.cellUndervoltage, .dischargeOvercurrent, .chargeOvercurrent, .systemError]
        s.alarms = [.cellOvervoltage, .overtemperature]
        s.dischargeEnabled = false
        return s
    }

    @Test("a Pylontech-LV-like profile's frames read back through today's PylontechDecoder")
    func pylontechRoundTrip() throws {
        let state = Self.bmsState()
        let frames = ProfileEncoder.frames(TestProfiles.pylontechLV, state)
        #expect(frames.map(\.id) == [0x351, 0x355, 0x356, 0x359, 0x35C, 0x373])
        var decoder = PylontechDecoder()
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        for frame in frames { #expect(decoder.ingest(frame, at: t) == nil, "\(frame)") }
        let s = decoder.snapshot
        let limits = try #require(s.limits?.value)
        #expect(abs(limits.chargeCurrentLimit.value - 120.5) < 0.051)
        #expect(abs(limits.dischargeCurrentLimit.value - 150) < 0.051)
        #expect(abs((limits.chargeVoltageLimit?.value ?? 0) - 56.8) < 0.051)
        #expect(abs((limits.dischargeVoltageLimit?.value ?? 0) - 46.4) < 0.051)
        #expect(abs((s.status?.value.soc.value ?? 0) - 63.4) < 0.006)
        #expect(s.status?.value.soh?.value == 98)
        let m = try #require(s.measurements?.value)
        #expect(abs(m.packVoltage.value - 52.87) < 0.006)
        #expect(abs(m.packCurrent.value + 41.3) < 0.051)
        #expect(abs(m.temperature.value - 27.4) < 0.051)
        let cells = try #require(s.cells?.value)
        #expect(abs(cells.minCellVoltage.value - 3.281) < 0.0006 && abs(cells.maxCellVoltage.value - 3.312) < 0.0006)
        #expect(abs(cells.minTemperature.value - 26) < 0.6 && abs(cells.maxTemperature.value - 29) < 0.6)
        #expect(s.protection?.value.protections == [.cellUndervoltage, .dischargeOvercurrent, .chargeOvercurrent, .systemError])
        #expect(s.protection?.value.alarms == [.cellOvervoltage, .overtemperature])
        #expect(s.requests?.value.chargeEnabled == true && s.requests?.value.dischargeEnabled == false)
    }

    @Test("Pylon HV frames match devices.md §6's vectors: 29-bit, little-endian, −3000 A and −100 °C offsets")
    func pylonHVVectors() {
        var state = Self.state([\.packVoltage: 384, \.packCurrent: 0, \.temperature: 25, \.soc: 71, \.soh: 99,
                                \.chargeVoltageLimit: 432, \.dischargeVoltageLimit: 336, \.chargeCurrentLimit: 25,
                                \.dischargeCurrentLimit: 35])
        state.protections = [.cellOvervoltage]
        state.alarms = [.dischargeOvercurrent]
        let frames = ProfileEncoder.frames(TestProfiles.pylonHV, state)
        #expect(frames.allSatisfy { $0.isExtended })
        #expect(frames.first { $0.id == 0x4210 }?.bytes == [0x00, 0x0F, 0x30, 0x75, 0xE2, 0x04, 0x47, 0x63])
        #expect(frames.first { $0.id == 0x4220 }?.bytes == [0xE0, 0x10, 0x20, 0x0D, 0x2A, 0x76, 0x8E, 0x76])
        // Alarm word b9 (discharge over-current), protection word b1 (cell high V), little-endian.
        #expect(frames.first { $0.id == 0x4250 }?.bytes == [0, 0, 0, 0, 0x00, 0x02, 0x02, 0x00])
        // A silenced protection group drops the frame that carries it, and only that one.
        let silenced = ProfileEncoder.frames(TestProfiles.pylonHV, state, omitting: [.protection])
        #expect(silenced.map(\.id) == [0x4210, 0x4220, 0x4230, 0x4240])
    }

    @Test("BYD C130 registers match devices.md §6: 0x2100 block, 0x216C limits, level-3 cell over-voltage")
    func bydVectors() throws {
        var state = Self.state([\.packVoltage: 691.2, \.packCurrent: 0, \.soc: 63, \.soh: 98, \.maxCellVoltage: 3.350,
                                \.minCellVoltage: 3.300, \.maxCellTemperature: 26.5, \.minCellTemperature: 24.0,
                                \.chargeCurrentLimit: 50, \.dischargeCurrentLimit: 80])
        state.protections = [.cellOvervoltage]
        var bms = SimulatedProfiledBMS(profile: TestProfiles.bydC130)
        bms.publish(state)
        let block = try bms.read(.holding, at: 0x2100, count: 13)
        #expect(block == [0x1B00, 0, 0, 0x003F, 0x0062, 0, 0x0D16, 0, 0x0CE4, 0, 0x0109, 0, 0x00F0])
        #expect(try bms.read(.holding, at: 0x216C, count: 2) == [0x01F4, 0x0320])
        #expect(try bms.read(.holding, at: 0x2143, count: 1) == [0x0001])
        #expect(try bms.read(.holding, at: 0x2140, count: 1) == [0])
        // The alarm clears when the condition does: the image is rewritten, not ORed into.
        state.protections = []
        state.alarms = [.chargeOvercurrent]
        bms.publish(state)
        #expect(try bms.read(.holding, at: 0x2140, count: 4) == [0x0800, 0, 0, 0])
    }

    @Test("signed values, negative currents and 32-bit words in either order")
    func modbusWords() {
        var state = ProfiledDeviceState()
        state.activePowerW = -70_000
        state.frequencyHz = 49.87
        let low = ProfileEncoder.registers(TestProfiles.sungrow(), state)
        // −70000 = 0xFFFE_EE90: low word first.
        #expect(low[RegisterKey(.input, 5213)] == 0xEE90 && low[RegisterKey(.input, 5214)] == 0xFFFE)
        #expect(low[RegisterKey(.input, 5241)] == 4987)
        var high = TestProfiles.sungrow()
        high.signals[0] = TestProfiles.register("battery_power", .activePower, 5213, .int32, table: .input, lowWordFirst: false)
        let words = ProfileEncoder.registers(high, state)
        #expect(words[RegisterKey(.input, 5213)] == 0xFFFE && words[RegisterKey(.input, 5214)] == 0xEE90)
    }

    @Test("values outside the width clamp and step off invalid markers; odd locations are skipped, not trapped on")
    func bounds() {
        var state = ProfiledDeviceState()
        state.chargeCurrentLimit = -1e9  // clamps to Int16.min, the invalid marker: one step up
        state.packVoltage = .nan
        state.soc = 1e12
        let frames = ProfileEncoder.frames(TestProfiles.pylontechLV, state)
        let limits = frames.first { $0.id == 0x351 }
        #expect(limits?.int16LE(2) == -32767)
        #expect(frames.first { $0.id == 0x356 }?.int16LE(0) == 0)
        #expect(frames.first { $0.id == 0x355 }?.uint16LE(0) == 0xFFFF)
        var odd = TestProfiles.pylontechLV
        odd.signals.append(ProfileSignal(name: "beyond", quantity: .soh,
                                         location: .can(CANSignalLocation(frameID: 0x35F, byte: 7, bit: 4, bits: 12, order: .little))))
        odd.signals.append(ProfileSignal(name: "wide", quantity: .soc,
                                         location: .can(CANSignalLocation(frameID: 0x35E, byte: 0, bits: 64, order: .big)), scale: 0))
        odd.signals.append(ProfileSignal(name: "far", quantity: .soc,
                                         location: .modbus(ModbusSignalLocation(table: .holding, address: 65535, type: .uint32))))
        let more = ProfileEncoder.frames(odd, state)
        #expect(!more.contains { $0.id == 0x35F })
        #expect(more.first { $0.id == 0x35E }?.data == 0)
        #expect(ProfileEncoder.registers(odd, state).isEmpty)
    }

    @Test("value alarms: an active one writes its value, inactive ones' values and invalid markers are avoided")
    func valueAlarms() {
        var profile = TestProfiles.bydC130
        var level = TestProfiles.register("alarm_level", nil, 0x2150)
        level.invalidRaw = [0]
        profile.signals.append(level)
        profile.alarms = [ProfileAlarm(signal: "alarm_level", equals: [3], condition: .systemError, severity: .protection),
                          ProfileAlarm(signal: "alarm_level", equals: [1], condition: .cellOvervoltage, severity: .alarm)]
        var state = ProfiledDeviceState()
        #expect(ProfileEncoder.registers(profile, state)[RegisterKey(.holding, 0x2150)] == 2)
        state.protections = [.systemError]
        #expect(ProfileEncoder.registers(profile, state)[RegisterKey(.holding, 0x2150)] == 3)
        state.protections = []
        state.alarms = [.cellOvervoltage]
        #expect(ProfileEncoder.registers(profile, state)[RegisterKey(.holding, 0x2150)] == 1)
    }

    @Test("a profiled BMS on the plant's pack: its state, silenced groups, request frames")
    func simulatedBMS() {
        var unit = SimulatedUnit(capacityKWh: 10, maxPowerKW: 5, initialSOCPercent: 55)
        let bms = SimulatedProfiledBMS(profile: TestProfiles.pylonHV)
        #expect(!bms.broadcasts)
        #expect(bms.isRequest(CANFrame(id: 0x4200, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isExtended: true)))
        #expect(!bms.isRequest(CANFrame(id: 0x4200, bytes: [0], isExtended: false)))
        #expect(bms.frames(unit).first { $0.id == 0x4210 }?.byte(6) == 55)
        unit.silentGroups = [.protection]
        #expect(!bms.frames(unit).contains { $0.id == 0x4250 })
        unit.bmsSilent = true
        #expect(bms.frames(unit).isEmpty)
    }
}
