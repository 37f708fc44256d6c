import ControlCore
import Fieldbus
import Testing

/// Profiles written in Swift, as the YAML reader builds them: Pylontech LV (the text of
/// `BuiltInProfiles.pylontechLV`), Pylon HV and the SMA/Victron 0x35A variant (devices.md §1.2, §1.3).
extension DeviceProfile {
    static func can(_ id: UInt32, _ byte: Int, bit: Int = 0, bits: Int = 16, order: CANSignalLocation.ByteOrder = .little)
        -> SignalLocation {
        .can(CANSignalLocation(frameID: id, byte: byte, bit: bit, bits: bits, order: order))
    }

    static func flags(_ signal: String, _ bits: [(Int, ProfileAlarm.Condition)], _ severity: ProfileAlarm.Severity) -> [ProfileAlarm] {
        bits.map { ProfileAlarm(signal: signal, bit: $0.0, condition: $0.1, severity: severity) }
    }

    static let pylontechLVForTests = DeviceProfile(
        name: "pylontech-lv", kind: .bms, vendor: "Pylontech", products: ["US2000", "US3000C", "US5000"],
        sources: [
            "Pylontech PYLON CANBUS Protocol low voltage V1.2 (2018-04-08), table 1",
            "SMA FSS-ConnectingBat-TI-en-10 v1.0 section 5: invalid markers, high-resolution SOC in 0x355 bytes 4-5",
            "Victron extension 0x373 (cell extremes in mV and K): broglep/pylontech-victron-bms-canbus-reader can_messages.py",
        ],
        transport: .can(CANProfileTransport(bitrate: 500_000, extended: false, mode: .broadcast,
                                            filters: [CANFilter(id: 0x350, mask: 0x7F0), CANFilter(id: 0x370, mask: 0x7F0)])),
        identity: .canFrame(id: 0x359),
        signals: [
            ProfileSignal(name: "charge_voltage_limit", quantity: .chargeVoltageLimit, location: can(0x351, 0), scale: 0.1,
                          invalidRaw: [0xFFFF]),
            ProfileSignal(name: "charge_current_limit", quantity: .chargeCurrentLimit, location: can(0x351, 2), signed: true,
                          scale: 0.1, invalidRaw: [-32768], clampMinimum: 0),
            ProfileSignal(name: "discharge_current_limit", quantity: .dischargeCurrentLimit, location: can(0x351, 4), signed: true,
                          scale: 0.1, invalidRaw: [-32768], magnitude: true),
            ProfileSignal(name: "discharge_voltage_limit", quantity: .dischargeVoltageLimit, location: can(0x351, 6), scale: 0.1,
                          invalidRaw: [0xFFFF, 0], optional: true),
            ProfileSignal(name: "soc", quantity: .soc, location: can(0x355, 0), valid: 0...100),
            ProfileSignal(name: "soh", quantity: .soh, location: can(0x355, 2), valid: 0...100),
            ProfileSignal(name: "soc_fine", quantity: .socFine, location: can(0x355, 4), scale: 0.01, invalidRaw: [0xFFFF],
                          valid: 0...100, agreeWithin: 1, optional: true),
            ProfileSignal(name: "pack_voltage", quantity: .packVoltage, location: can(0x356, 0), signed: true, scale: 0.01,
                          invalidRaw: [-32768], valid: 0...400),
            ProfileSignal(name: "pack_current", quantity: .packCurrent, location: can(0x356, 2), signed: true, scale: 0.1,
                          invalidRaw: [-32768]),
            ProfileSignal(name: "temperature", quantity: .temperature, location: can(0x356, 4), signed: true, scale: 0.1,
                          invalidRaw: [-32768]),
            ProfileSignal(name: "protection_lo", quantity: nil, location: can(0x359, 0, bits: 8)),
            ProfileSignal(name: "protection_hi", quantity: nil, location: can(0x359, 1, bits: 8)),
            ProfileSignal(name: "alarm_lo", quantity: nil, location: can(0x359, 2, bits: 8)),
            ProfileSignal(name: "alarm_hi", quantity: nil, location: can(0x359, 3, bits: 8)),
            ProfileSignal(name: "module_count", quantity: nil, location: can(0x359, 4, bits: 8), optional: true),
            ProfileSignal(name: "charge_enabled", quantity: .chargeEnabled, location: can(0x35C, 0, bit: 7, bits: 1)),
            ProfileSignal(name: "discharge_enabled", quantity: .dischargeEnabled, location: can(0x35C, 0, bit: 6, bits: 1)),
            ProfileSignal(name: "force_charge", quantity: .forceCharge, location: can(0x35C, 0, bit: 4, bits: 2)),
            ProfileSignal(name: "full_charge_request", quantity: nil, location: can(0x35C, 0, bit: 3, bits: 1)),
            ProfileSignal(name: "manufacturer", quantity: nil, location: can(0x35E, 0, bits: 64), text: true),
            ProfileSignal(name: "min_cell_voltage", quantity: .minCellVoltage, location: can(0x373, 0), scale: 0.001, valid: 0...9.999),
            ProfileSignal(name: "max_cell_voltage", quantity: .maxCellVoltage, location: can(0x373, 2), scale: 0.001, valid: 0...9.999),
            ProfileSignal(name: "min_cell_temperature", quantity: .minCellTemperature, location: can(0x373, 4), offset: -273.15,
                          valid: -100...199),
            ProfileSignal(name: "max_cell_temperature", quantity: .maxCellTemperature, location: can(0x373, 6), offset: -273.15,
                          valid: -100...199),
        ],
        groups: [
            ProfileGroup(part: .status, presence: .required, period: .seconds(1)),
            ProfileGroup(part: .limits, presence: .required, period: .seconds(1)),
            ProfileGroup(part: .measurements, presence: .required, period: .seconds(1)),
            ProfileGroup(part: .protection, presence: .required, period: .seconds(1)),
            ProfileGroup(part: .requests, presence: .required, period: .seconds(1)),
            ProfileGroup(part: .cells, presence: .onceSeen, period: .seconds(1)),
        ],
        alarms: flags("protection_lo", [(1, .cellOvervoltage), (2, .cellUndervoltage), (3, .overtemperature),
                                        (4, .undertemperature), (7, .dischargeOvercurrent)], .protection)
            + flags("protection_hi", [(0, .chargeOvercurrent), (3, .systemError), (7, .systemError)], .protection)
            + flags("alarm_lo", [(1, .cellOvervoltage), (2, .cellUndervoltage), (3, .overtemperature),
                                 (4, .undertemperature), (7, .dischargeOvercurrent)], .alarm)
            + flags("alarm_hi", [(0, .chargeOvercurrent), (3, .internalCommunication), (7, .systemError)], .alarm),
        keepAlive: [ProfileFrame(id: 0x305, extended: false, data: [0, 0, 0, 0, 0, 0, 0, 0], period: .seconds(1))])

    /// Pylon HV ("Force H"), devices.md §1.3: 29-bit, answers to the 0x4200 request, little endian,
    /// currents offset by −3000 A and temperatures by −100 °C; 0x4280 0xAA = forbidden (bit 7 read
    /// inverted: value = 1 − raw).
    static let pylonHVForTests = DeviceProfile(
        name: "pylon-hv", kind: .bms, vendor: "Pylontech", products: ["Force H2"],
        transport: .can(CANProfileTransport(bitrate: 500_000, extended: true, mode: .request,
                                            filters: [CANFilter(id: 0x4200, mask: 0x1FFF_FF00)])),
        signals: [
            ProfileSignal(name: "pack_voltage", quantity: .packVoltage, location: can(0x4210, 0), scale: 0.1),
            ProfileSignal(name: "pack_current", quantity: .packCurrent, location: can(0x4210, 2), scale: 0.1, offset: -3000),
            ProfileSignal(name: "temperature", quantity: .temperature, location: can(0x4210, 4), scale: 0.1, offset: -100),
            ProfileSignal(name: "soc", quantity: .soc, location: can(0x4210, 6, bits: 8), valid: 0...100),
            ProfileSignal(name: "soh", quantity: .soh, location: can(0x4210, 7, bits: 8), valid: 0...100),
            ProfileSignal(name: "charge_voltage_limit", quantity: .chargeVoltageLimit, location: can(0x4220, 0), scale: 0.1),
            ProfileSignal(name: "discharge_voltage_limit", quantity: .dischargeVoltageLimit, location: can(0x4220, 2), scale: 0.1),
            ProfileSignal(name: "charge_current_limit", quantity: .chargeCurrentLimit, location: can(0x4220, 4), scale: 0.1,
                          offset: -3000, clampMinimum: 0),
            ProfileSignal(name: "discharge_current_limit", quantity: .dischargeCurrentLimit, location: can(0x4220, 6), scale: 0.1,
                          offset: -3000, magnitude: true),
            ProfileSignal(name: "max_cell_voltage", quantity: .maxCellVoltage, location: can(0x4230, 0), scale: 0.001),
            ProfileSignal(name: "min_cell_voltage", quantity: .minCellVoltage, location: can(0x4230, 2), scale: 0.001),
            ProfileSignal(name: "max_cell_temperature", quantity: .maxCellTemperature, location: can(0x4240, 0), scale: 0.1, offset: -100),
            ProfileSignal(name: "min_cell_temperature", quantity: .minCellTemperature, location: can(0x4240, 2), scale: 0.1, offset: -100),
            ProfileSignal(name: "alarm_bits", quantity: nil, location: can(0x4250, 4)),
            ProfileSignal(name: "protection_bits", quantity: nil, location: can(0x4250, 6)),
            ProfileSignal(name: "charge_enabled", quantity: .chargeEnabled, location: can(0x4280, 0, bit: 7, bits: 1), scale: -1, offset: 1),
            ProfileSignal(name: "discharge_enabled", quantity: .dischargeEnabled, location: can(0x4280, 1, bit: 7, bits: 1),
                          scale: -1, offset: 1),
        ],
        groups: [ProfileGroup(part: .protection, presence: .required, period: .seconds(1)),
                 ProfileGroup(part: .requests, presence: .required, period: .seconds(1)),
                 ProfileGroup(part: .cells, presence: .required, period: .seconds(1))],
        alarms: flags("protection_bits", [(0, .cellUndervoltage), (1, .cellOvervoltage), (4, .undertemperature), (5, .overtemperature),
                                          (6, .undertemperature), (7, .overtemperature), (8, .chargeOvercurrent),
                                          (9, .dischargeOvercurrent)], .protection)
            + flags("alarm_bits", [(0, .cellUndervoltage), (1, .cellOvervoltage), (8, .chargeOvercurrent)], .alarm),
        keepAlive: [ProfileFrame(id: 0x4200, extended: true, data: [0, 0, 0, 0, 0, 0, 0, 0], period: .seconds(1))])

    /// SMA Sunny Island / Victron, devices.md §1.2: 0x35A alarms (bytes 0–3) and warnings (4–7), two
    /// bits per condition, the even one "arrives"; SMA-TI's positions.
    static let smaForTests = DeviceProfile(
        name: "sma-si-lv", kind: .bms, vendor: "SMA", products: ["Sunny Island 6.0H"],
        transport: .can(CANProfileTransport(bitrate: 500_000, extended: false, mode: .broadcast,
                                            filters: [CANFilter(id: 0x350, mask: 0x7F0), CANFilter(id: 0x370, mask: 0x7F0)])),
        signals: [
            ProfileSignal(name: "soc", quantity: .soc, location: can(0x355, 0), valid: 0...100),
            ProfileSignal(name: "soc_fine", quantity: .socFine, location: can(0x355, 4), scale: 0.01, invalidRaw: [0xFFFF],
                          valid: 0...100, agreeWithin: 0, optional: true),
            ProfileSignal(name: "alarms", quantity: nil, location: can(0x35A, 0, bits: 32)),
            ProfileSignal(name: "warnings", quantity: nil, location: can(0x35A, 4, bits: 32)),
        ],
        groups: [ProfileGroup(part: .protection, presence: .required, period: .seconds(1))],
        alarms: [("alarms", ProfileAlarm.Severity.protection), ("warnings", .alarm)].flatMap { signal, severity in
            flags(signal, [(0, .systemError), (2, .cellOvervoltage), (4, .cellUndervoltage), (6, .overtemperature),
                           (8, .undertemperature), (14, .dischargeOvercurrent), (16, .chargeOvercurrent),
                           (18, .systemError), (20, .systemError), (22, .internalCommunication)], severity)
        })
}

@Suite("Profiled CAN decoder")
struct ProfiledCANDecoderTests {
    let t = MonotonicInstant(nanoseconds: 7_000_000_000)

    func frame(_ text: String) -> CANFrame { CANFrame(candump: Substring(text))! }

    func decoder(_ profile: DeviceProfile) throws -> ProfiledCANDecoder { try ProfiledCANDecoder(profile: profile) }

    @Test("Pylon HV 0x4210 and 0x4220 (devices.md §6): 384.0 V, 0.0 A, 25.0 °C, 71 %, 99 %; 432.0/336.0 V, 25.0/35.0 A")
    func pylonHV() throws {
        var d = try decoder(.pylonHVForTests)
        #expect(d.ingest(CANFrame(id: 0x4210, bytes: [0x00, 0x0F, 0x30, 0x75, 0xE2, 0x04, 0x47, 0x63], isExtended: true), at: t) == nil)
        let m = try #require(d.snapshot.measurements)
        #expect(m.value == BMSMeasurements(packVoltage: Volts(384), packCurrent: Amps(0), temperature: Celsius(25)))
        #expect(m.takenAt == t)
        #expect(d.snapshot.status?.value == BMSStatus(soc: Percent(71), soh: Percent(99)))
        #expect(d.ingest(CANFrame(id: 0x4220, bytes: [0xE0, 0x10, 0x20, 0x0D, 0x2A, 0x76, 0x8E, 0x76], isExtended: true), at: t) == nil)
        #expect(d.snapshot.limits?.value == BMSLimits(chargeVoltageLimit: Volts(432), chargeCurrentLimit: Amps(25),
                                                      dischargeCurrentLimit: Amps(35), dischargeVoltageLimit: Volts(336)))
        // Battery-Emulator's default frame, read little endian: 246.9 V, 0.0 A, 18.1 °C, 46 %, 100 %.
        #expect(d.ingest(CANFrame(id: 0x4210, bytes: [0xA5, 0x09, 0x30, 0x75, 0x9D, 0x04, 0x2E, 0x64], isExtended: true), at: t) == nil)
        let be = try #require(d.snapshot.measurements?.value)
        #expect(abs(be.packVoltage.value - 246.9) < 1e-9 && be.packCurrent.value == 0 && abs(be.temperature.value - 18.1) < 1e-9)
        #expect(d.snapshot.status?.value == BMSStatus(soc: Percent(46), soh: Percent(100)))
        // 0x4250 protection bit 1 (cell high V), alarm bit 8 (charge over-current); 0x4280 charge forbidden.
        #expect(d.ingest(CANFrame(id: 0x4250, bytes: [0x03, 0, 0, 0, 0x00, 0x01, 0x02, 0x00], isExtended: true), at: t) == nil)
        #expect(d.snapshot.protection?.value == BMSProtectionState(protections: [.cellOvervoltage], alarms: [.chargeOvercurrent]))
        #expect(d.ingest(CANFrame(id: 0x4280, bytes: [0xAA, 0x00], isExtended: true), at: t) == nil)
        #expect(d.snapshot.requests?.value == BMSRequests(chargeEnabled: false, dischargeEnabled: true))
        // The request bessd sends, and another address's answer the filter lets through: ignored, not unknown.
        #expect(d.ingest(CANFrame(id: 0x4200, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isExtended: true), at: t) == nil)
        #expect(d.ingest(CANFrame(id: 0x4211, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isExtended: true), at: t) == nil)
        #expect(d.ingest(CANFrame(id: 0x7310, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isExtended: true), at: t) == .unknownID)
        #expect(d.definedGroups == [.protection, .requests, .cells] && d.extensionGroups.isEmpty)
        #expect(d.snapshot.expectedGroups == .all)
        #expect(d.keepAlive.map(\.id) == [0x4200] && d.receiveFilters == [CANFilter(id: 0x4200, mask: 0x1FFF_FF00)])
    }

    @Test("SMA 0x35A (devices.md §1.2.1): all-cleared AA…AA reads no condition; an arriving bit reads its condition")
    func smaAlarms() throws {
        var d = try decoder(.smaForTests)
        #expect(d.ingest(frame("35A#AAAAAAAAAAAAAAAA"), at: t) == nil)
        #expect(d.snapshot.protection?.value == BMSProtectionState())
        // Alarm byte 0: general leaves, high voltage arrives (b2), low V and high T leave: 0xA6.
        // Warning byte 4: high temperature arrives (b6), the rest leave: 0x6A. Byte 1: high current arrives (b6).
        #expect(d.ingest(frame("35A#A66AAAAA6AAAAAAA"), at: t) == nil)
        #expect(d.snapshot.protection?.value == BMSProtectionState(protections: [.cellOvervoltage, .dischargeOvercurrent],
                                                                  alarms: [.overtemperature]))
        // Byte 2: BMS internal arrives (b6); byte 6 (warning): contactor arrives (b2).
        #expect(d.ingest(frame("35A#AAAA6AAAAAAAA6AA"), at: t + .seconds(1)) == nil)
        #expect(d.snapshot.protection?.value == BMSProtectionState(protections: [.internalCommunication], alarms: [.systemError]))
        #expect(d.snapshot.protection?.takenAt == t + .seconds(1))
        #expect(d.ingest(frame("35A#AAAAAAAA"), at: t) == .shortFrame)
        // The fine SOC replaces the whole-percent one whenever present (agree_within 0).
        #expect(d.ingest(frame("355#3C0064001A17"), at: t) == nil)
        #expect(d.snapshot.status?.value.soc == Percent(59.14))
    }

    @Test("refusals: a short frame, an invalid marker, a frame of the wrong kind, an unknown id")
    func refusals() throws {
        var d = try decoder(.pylontechLVForTests)
        #expect(d.ingest(frame("351#1402"), at: t) == .shortFrame)
        #expect(d.ingest(frame("356#6E14E2FF"), at: t) == .shortFrame)
        #expect(d.ingest(frame("351#140200809CFF"), at: t) == .invalidValue)  // CCL −32768: the marker
        #expect(d.ingest(frame("356#0080E2FFFA00"), at: t) == .invalidValue)  // voltage marker
        #expect(d.ingest(frame("356#9CFFE2FFFA00"), at: t) == .invalidValue)  // −1.00 V: outside valid
        #expect(d.ingest(frame("351#R"), at: t) == .wrongKind)
        #expect(d.ingest(CANFrame(id: 0x351, bytes: [0, 0, 0, 0, 0, 0], isExtended: true), at: t) == .wrongKind)
        #expect(d.ingest(CANFrame(id: 0x40, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isError: true), at: t) == .wrongKind)
        #expect(d.ingest(frame("123#00"), at: t) == .unknownID)
        #expect(d.ingest(frame("35F#00"), at: t) == nil, "passes the filters, carries nothing")
        #expect(d.ingest(frame("305#0000000000000000"), at: t) == nil, "the keep-alive's id")
        #expect(d.snapshot.limits == nil && d.snapshot.measurements == nil)
        var expected = DecoderCounters()
        expected.accepted = 2
        expected.shortFrames = 2
        expected.invalidValues = 3
        expected.wrongKind = 3
        expected.unknownIDs = 1
        #expect(d.counters == expected)
        var hv = try decoder(.pylonHVForTests)
        #expect(hv.ingest(frame("351#1402740E740ECC01"), at: t) == .wrongKind, "an 11-bit frame on a 29-bit profile")
        #expect(hv.ingest(CANFrame(id: 0x4210, bytes: [0x00, 0x0F, 0x30, 0x75, 0xE2, 0x04, 0xC8, 0x63], isExtended: true), at: t)
            == .invalidValue, "SOC 200 %")
    }

    @Test("a part fed by two frames is stamped with the older arrival")
    func olderArrival() throws {
        var profile = DeviceProfile.pylontechLVForTests
        let index = try #require(profile.signals.firstIndex { $0.quantity == .temperature })
        profile.signals[index].location = DeviceProfile.can(0x357, 0)
        var d = try decoder(profile)
        let t1 = t, t2 = t + .milliseconds(400), t3 = t + .seconds(1), t4 = t + .milliseconds(1400)
        #expect(d.ingest(frame("357#FA00"), at: t1) == nil)
        #expect(d.snapshot.measurements == nil, "the pack voltage and current have not arrived")
        #expect(d.ingest(frame("356#6E14E2FF0000"), at: t2) == nil)
        #expect(d.snapshot.measurements?.takenAt == t1)
        #expect(d.snapshot.measurements?.value == BMSMeasurements(packVoltage: Volts(52.3), packCurrent: Amps(-3), temperature: Celsius(25)))
        #expect(d.ingest(frame("357#0401"), at: t3) == nil)
        #expect(d.snapshot.measurements?.takenAt == t2)
        #expect(d.snapshot.measurements?.value.temperature == Celsius(26))
        #expect(d.ingest(frame("356#6E14E2FF0000"), at: t4) == nil)
        #expect(d.snapshot.measurements?.takenAt == t3)
    }

    @Test("0x373 is expected once seen, valid or not; the groups and frames come from the profile")
    func groupsAndLinks() throws {
        var d = try decoder(.pylontechLVForTests)
        #expect(d.definedGroups == PylontechDecoder.definedGroups && d.extensionGroups == PylontechDecoder.extensionGroups)
        #expect(d.snapshot.expectedGroups == [.protection, .requests])
        #expect(d.ingest(frame("373#D00CEE0C"), at: t) == .shortFrame)
        #expect(d.snapshot.expectedGroups == .all)
        #expect(d.receiveFilters.map { [$0.id, $0.mask] } == PylontechLV.receiveFilters.map { [$0.id, $0.mask] })
        #expect(d.keepAlive.map { CANFrame(id: $0.id, bytes: $0.data, isExtended: $0.extended) } == [PylontechLV.keepAlive])
        #expect(d.ingest(frame("35E#50594C4F4E202020"), at: t) == nil)
        #expect(d.ingest(frame("359#0000000002504E"), at: t) == nil)
        #expect(d.text(of: "manufacturer") == "PYLON" && d.value(of: "module_count") == 2)
        #expect(d.ingest(frame("35E#50590A"), at: t) == .invalidValue, "a control character in the name")
        #expect(d.text(of: "manufacturer") == "PYLON")
    }

    @Test("profiles the decoder cannot compile are refused with a code")
    func refusedProfiles() {
        func code(_ change: (inout DeviceProfile) -> Void) -> String? {
            var profile = DeviceProfile.pylontechLVForTests
            change(&profile)
            do {
                _ = try ProfiledCANDecoder(profile: profile)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code { _ in } == nil)
        #expect(code { $0.kind = .inverter } == "PROFILE_WRONG_DECODER")
        #expect(code { $0.transport = .modbus(ModbusProfileTransport(link: .tcp, defaultUnitID: 1)) } == "PROFILE_WRONG_DECODER")
        #expect(code { $0.signals[0].location = DeviceProfile.can(0x351, 7) } == "PROFILE_SIGNAL_INVALID")
        #expect(code { $0.signals[0].location = DeviceProfile.can(0x351, 0, bit: 3, bits: 16, order: .big) } == "PROFILE_SIGNAL_INVALID")
        #expect(code { $0.signals[0].scale = 0 } == "PROFILE_SIGNAL_INVALID")
        #expect(code { $0.signals[0].invalidRaw = [0x10000] } == "PROFILE_SIGNAL_INVALID")
        #expect(code { $0.signals[0].location = DeviceProfile.can(0x851, 0) } == "PROFILE_SIGNAL_INVALID")
        #expect(code { $0.alarms[0].signal = "nothing" } == "PROFILE_STRUCTURE")
        #expect(code { $0.alarms[0].bit = 8 } == "PROFILE_STRUCTURE")
        #expect(code { $0.signals.removeAll { $0.quantity == .temperature } } == "PROFILE_STRUCTURE")
        #expect(code { $0.signals[1].quantity = .soc } == "PROFILE_STRUCTURE")
        #expect(code { $0.alarms = [] } == "PROFILE_STRUCTURE", "a protection group with no alarm")
    }
}

@Suite("CAN signal codec")
struct CANSignalCodecTests {
    @Test("little and big endian, signed and unsigned, odd bit fields; a short frame is refused")
    func reads() throws {
        let f = CANFrame(id: 0x100, bytes: [0x34, 0x12, 0xFE, 0xFF, 0xA5, 0x80, 0x01, 0x02])
        func raw(_ byte: Int, bit: Int = 0, _ bits: Int, _ order: CANSignalLocation.ByteOrder, signed: Bool = false) throws -> Int64 {
            let codec = try CANSignalCodec(CANSignalLocation(frameID: 0x100, byte: byte, bit: bit, bits: bits, order: order), signed: signed)
            return try codec.raw(in: f)
        }
        #expect(try raw(0, 16, .little) == 0x1234)
        #expect(try raw(0, 16, .big) == 0x3412)
        #expect(try raw(2, 16, .little, signed: true) == -2)
        #expect(try raw(2, 16, .little) == 0xFFFE)
        #expect(try raw(4, bit: 5, 3, .little) == 0b101)
        #expect(try raw(4, bit: 4, 8, .little, signed: true) == Int64(Int8(bitPattern: 0x0A)))
        #expect(try raw(5, 24, .big) == 0x80_0102)
        #expect(try raw(5, 24, .big, signed: true) == 0x80_0102 - 0x100_0000)
        #expect(try raw(0, 64, .little) == Int64(bitPattern: 0x0201_80A5_FFFE_1234))
        let short = CANFrame(id: 0x100, bytes: [1, 2, 3])
        let codec = try CANSignalCodec(CANSignalLocation(frameID: 0x100, byte: 2, bits: 16, order: .little), signed: false)
        #expect(throws: FrameRejection.shortFrame) { try codec.raw(in: short) }
        #expect(codec.byteCount == 4)
    }

    @Test("what write puts into a frame, raw reads back; markers compare as patterns of the width")
    func writes() throws {
        for (order, bits, signed, raw) in [(CANSignalLocation.ByteOrder.little, 16, true, Int64(-1234)), (.big, 16, true, -1234),
                                           (.big, 32, false, 0xDEAD_BEEF), (.little, 12, false, 0xABC)] {
            let codec = try CANSignalCodec(CANSignalLocation(frameID: 1, byte: 2, bits: bits, order: order), signed: signed)
            var data: UInt64 = 0xFFFF_FFFF_FFFF_FFFF
            codec.write(raw, into: &data)
            #expect(try codec.raw(in: CANFrame(id: 1, length: 8, data: data)) == raw, "\(order) \(bits)")
            #expect(data & 0xFFFF == 0xFFFF, "bytes 0-1 untouched")
        }
        let s16 = try CANSignalCodec(CANSignalLocation(frameID: 1, byte: 0, bits: 16, order: .little), signed: true)
        #expect(s16.pattern(ofRaw: -32768) == 0x8000 && s16.pattern(ofRaw: 0x8000) == 0x8000 && s16.pattern(ofRaw: 0x1_0000) == nil)
    }
}
