import BessBase
import ControlCore
import Fieldbus
import PropertyBased
import Testing

@Suite("Pylontech LV CAN profile")
struct PylontechTests {
    let t = MonotonicInstant(nanoseconds: 7_000_000_000)

    func frame(_ text: String) -> CANFrame { CANFrame(candump: Substring(text))! }

    @Test("0x351 limits: CVL 53.2 V, CCL 370.0 A, DCL 370.0 A, DVL 46.0 V")
    func limits() throws {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("351#1402740E740ECC01"), at: t) == nil)
        let limits = try #require(d.snapshot.limits)
        #expect(limits.takenAt == t)
        #expect(limits.value.chargeVoltageLimit == Volts(53.2))
        #expect(limits.value.chargeCurrentLimit == Amps(370))
        #expect(limits.value.dischargeCurrentLimit == Amps(370))
        #expect(limits.value.dischargeVoltageLimit == Volts(46))
    }

    @Test("a negative discharge limit is a magnitude; the 0x8000 marker is invalid")
    func signedLimits() {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("351#14029C009CFF"), at: t) == nil)  // CCL 15.6 A, DCL −10.0 A
        #expect(d.snapshot.limits?.value.dischargeCurrentLimit == Amps(10))
        #expect(d.snapshot.limits?.value.dischargeVoltageLimit == nil)
        #expect(d.ingest(frame("351#140200809CFF"), at: t) == .invalidValue)
        #expect(d.counters.invalidValues == 1)
    }

    @Test("0x355 SOC/SOH with high-resolution SOC; 0x356 voltage, current (+ charging), temperature")
    func statusAndMeasurements() {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("355#3C0063001A17"), at: t) == nil)  // 60 %, 99 %, 59.14 %
        #expect(d.snapshot.status?.value.soc == Percent(59.14))
        #expect(d.snapshot.status?.value.soh == Percent(99))
        #expect(d.ingest(frame("356#6E14E2FFFA00"), at: t) == nil)  // 52.30 V, −3.0 A, 25.0 °C
        #expect(d.snapshot.measurements?.value.packVoltage == Volts(52.30))
        #expect(d.snapshot.measurements?.value.packCurrent == Amps(-3.0))
        #expect(d.snapshot.measurements?.value.temperature == Celsius(25.0))
        #expect(d.ingest(frame("355#65006300"), at: t) == .invalidValue)  // SOC 101 %
    }

    /// Bytes 4–7 are empty in the specification.
    @Test("0x355 padded to 8 bytes reads the whole-percent SOC, not 0 %")
    func paddedStatus() {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("355#5700630000000000"), at: t) == nil)
        #expect(d.snapshot.status?.value.soc == Percent(87))
        #expect(d.ingest(frame("355#0000630000000000"), at: t) == nil)  // empty and padded: 0 % either way
        #expect(d.snapshot.status?.value.soc == Percent(0))
        #expect(d.ingest(frame("355#570063002E220000"), at: t) == nil)  // 87 % with 87.50 %: within 1 %, the finer
        #expect(d.snapshot.status?.value.soc == Percent(87.5))
    }

    @Test("0x359 protection and alarm bits, system error at bit 3 or bit 7")
    func protection() {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("359#0208040001504E"), at: t) == nil)
        #expect(d.snapshot.protection?.value.protections == [.cellOvervoltage, .systemError])
        #expect(d.snapshot.protection?.value.alarms == [.cellUndervoltage])
        #expect(d.ingest(frame("359#0080000801504E"), at: t) == nil)
        #expect(d.snapshot.protection?.value.protections == [.systemError])
        #expect(d.snapshot.protection?.value.alarms == [.internalCommunication])
        #expect(d.moduleCount == 1)
    }

    @Test("0x35C request flags; 0x35E name; 0x373 cell extremes")
    func requestsNameCells() {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("35C#C000"), at: t) == nil)
        #expect(d.snapshot.requests?.value == BMSRequests(chargeEnabled: true, dischargeEnabled: true))
        #expect(d.ingest(frame("35C#4000"), at: t) == nil)
        #expect(d.snapshot.requests?.value.chargeEnabled == false)
        #expect(d.ingest(frame("35E#50594C4F4E202020"), at: t) == nil)
        #expect(d.manufacturer == "PYLON")
        // 3.280 V, 3.310 V, 298.15 K → 25 °C rounds to 298 K = 24.85 °C, 300 K = 26.85 °C
        #expect(d.ingest(frame("373#D00CEE0C2A012C01"), at: t) == nil)
        #expect(d.snapshot.cells?.value.minCellVoltage == Volts(3.28))
        #expect(d.snapshot.cells?.value.maxCellVoltage == Volts(3.31))
        #expect(abs((d.snapshot.cells?.value.maxTemperature.value ?? 0) - 26.85) < 1e-9)
    }

    @Test("short, remote, extended, error and unknown frames are refused and counted")
    func refused() {
        var d = PylontechDecoder()
        #expect(d.ingest(frame("351#1402"), at: t) == .shortFrame)
        #expect(d.ingest(frame("356#4E14"), at: t) == .shortFrame)
        #expect(d.ingest(frame("351#R"), at: t) == .wrongKind)
        #expect(d.ingest(CANFrame(id: 0x351, bytes: [0, 0, 0, 0, 0, 0], isExtended: true), at: t) == .wrongKind)
        #expect(d.ingest(CANFrame(id: 0x40, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isError: true), at: t) == .wrongKind)
        #expect(d.ingest(frame("123#00"), at: t) == .unknownID)
        #expect(d.ingest(frame("373#D00CEE0C"), at: t) == .shortFrame)
        #expect(d.counters == {
            var c = DecoderCounters()
            c.shortFrames = 3
            c.wrongKind = 3
            c.unknownIDs = 1
            return c
        }())
        #expect(d.snapshot.limits == nil && d.snapshot.measurements == nil)
    }

    @Test("what the BMS emulator encodes, the decoder reads back")
    func roundTrip() {
        let state = PylontechBMSState(
            chargeVoltageLimit: 56.8, chargeCurrentLimit: 150, dischargeCurrentLimit: 200, dischargeVoltageLimit: 44.8,
            soc: 61.37, soh: 98, voltage: 52.41, current: -12.3, temperature: 27.5, minCellVoltage: 3.271,
            maxCellVoltage: 3.298, minCellTemperature: 25, maxCellTemperature: 29, protections: [.overtemperature],
            alarms: [.chargeOvercurrent], chargeEnabled: false, dischargeEnabled: true)
        var d = PylontechDecoder()
        for f in state.frames() { #expect(d.ingest(f, at: t) == nil, "\(f)") }
        let s = d.snapshot
        #expect(s.limits?.value.chargeCurrentLimit == Amps(150))
        #expect(s.limits?.value.dischargeCurrentLimit == Amps(200))
        #expect(s.status.map { abs($0.value.soc.value - 61.37) < 1e-9 } == true)
        #expect(s.measurements?.value.packCurrent == Amps(-12.3))
        #expect(s.measurements?.value.packVoltage == Volts(52.41))
        #expect(s.protection?.value.protections == [.overtemperature])
        #expect(s.protection?.value.alarms == [.chargeOvercurrent])
        #expect(s.requests?.value.chargeEnabled == false)
        #expect(s.cells.map { abs($0.value.maxCellVoltage.value - 3.298) < 1e-9 } == true)
        #expect(d.manufacturer == "PYLON")
        #expect(d.counters.accepted == 7)
    }

    /// One transmission of a BMS as the V1.2 specification defines it (pylontech-lv-can-v1.2.pdf),
    /// written by hand from its tables, not by bessd's encoder: 0x351 CVL 53.2 V, CCL 50.0 A, DCL
    /// 100.0 A (bytes 6–7 empty); 0x355 SOC 87 %, SOH 99 %; 0x356 52.30 V, −3.0 A, 25.0 °C; 0x359 no
    /// protections or alarms, 1 module, "PN"; 0x35C charge and discharge enabled; 0x35E "PYLON".
    /// No 0x373: the specification has none.
    static let specificationFrames = [
        "351#1402F401E8030000", "355#57006300", "356#6E14E2FFFA00", "359#0000000001504E", "35C#C000",
        "35E#50594C4F4E202020",
    ]

    /// Drives a one-unit controller (100 kW, 30 kW dispatched) from a decoder fed `frames` once a
    /// second (the specification's cycle), stepping every 100 ms from `start` for `seconds`.
    @discardableResult
    func drive(_ site: SiteController, _ decoder: inout PylontechDecoder, frames: [String], from start: Double,
               seconds: Double) -> UnitDecision {
        for step in 1...Int((seconds * 10).rounded()) {
            let tenths = Int((start * 10).rounded()) + step
            let now = MonotonicInstant(nanoseconds: Int64(tenths) * 100_000_000)
            if tenths % 10 == 0 {
                for text in frames { #expect(decoder.ingest(frame(text), at: now) == nil, "\(text)") }
            }
            var inputs = UnitInputs(bms: decoder.snapshot,
                                    inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: .kilowatts(100)), at: now))
            inputs.dispatch = PowerCommand(power: .kilowatts(30), expiresAt: MonotonicInstant(nanoseconds: 1_000_000_000_000))
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [inputs], now: now, wallClock: 1_800_000_000 + Double(tenths) / 10)
        }
        return site.decision(unit: 0)
    }

    static func site() -> SiteController {
        SiteController(control: ControlSettings(limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
                       units: [UnitSettings(rating: .kilowatts(100), capacity: WattHours(250_000))], startedAt: .zero)
    }

    @Test("the decoder expects 0x359 and 0x35C from the start, 0x373 only once the BMS sends it (valid or not)")
    func expectedGroups() {
        #expect(PylontechDecoder.definedGroups == [.protection, .requests])
        #expect(PylontechDecoder.extensionGroups == [.cells])
        var d = PylontechDecoder()
        #expect(d.snapshot.expectedGroups == [.protection, .requests])
        for text in Self.specificationFrames { _ = d.ingest(frame(text), at: t) }
        #expect(d.snapshot.expectedGroups == [.protection, .requests])
        #expect(d.ingest(CANFrame(id: 0x373, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isExtended: true), at: t) == .wrongKind)
        #expect(!d.snapshot.expectedGroups.contains(.cells), "an extended frame is not this protocol's 0x373")
        #expect(d.ingest(frame("373#D00CEE0C"), at: t) == .shortFrame)
        #expect(d.snapshot.expectedGroups == .all, "a BMS that sends 0x373, even unreadable, is expected to go on")
        #expect(d.snapshot.cells == nil)
    }

    /// Over 60 s.
    @Test("a BMS with exactly the specification's frames: no BMS_GROUP_MISSING; 0x35C stopping raises it")
    func specificationBMS() {
        let site = Self.site()
        var d = PylontechDecoder()
        var decision = drive(site, &d, frames: Self.specificationFrames, from: 0, seconds: 60)
        // 30 kW dispatched, capped by the BMS's 100 A at 52.3 V.
        #expect(decision.state == .running && decision.setpoint.kilowatts > 5 && decision.setpoint.kilowatts <= 5.23)
        #expect(decision.activeCodes.isEmpty, "\(decision.activeCodes)")
        var raised: [ControlEvent] = []
        site.events.drain { if $0.code == .bmsGroupMissing { raised.append($0) } }
        #expect(raised.isEmpty)
        // 0x35C is in the specification: its silence is missing (stale after 3 s, then the 5 s delay).
        decision = drive(site, &d, frames: Self.specificationFrames.filter { !$0.hasPrefix("35C") }, from: 60, seconds: 10)
        #expect(decision.activeCodes.contains(.bmsGroupMissing))
        site.events.drain { if $0.code == .bmsGroupMissing { raised.append($0) } }
        #expect(raised.first { $0.kind == .raised }?.value == Double(BMSGroups.requests.rawValue))
    }

    @Test("a BMS that sent 0x373 and stops: BMS_GROUP_MISSING names the cells group")
    func extensionStops() {
        let site = Self.site()
        var d = PylontechDecoder()
        let withCells = Self.specificationFrames + ["373#D00CEE0C2A012C01"]
        let before = drive(site, &d, frames: withCells, from: 0, seconds: 20)
        #expect(before.activeCodes.isEmpty)
        let decision = drive(site, &d, frames: Self.specificationFrames, from: 20, seconds: 10)
        #expect(decision.activeCodes.contains(.bmsGroupMissing))
        #expect(decision.state == .running && decision.setpoint == before.setpoint && before.setpoint > .zero, "a warning only")
        var raised: [ControlEvent] = []
        site.events.drain { if $0.code == .bmsGroupMissing, $0.kind == .raised { raised.append($0) } }
        #expect(raised.map(\.value) == [Double(BMSGroups.cells.rawValue)])
    }

    @Test("the notice of an unsent extension: once, 10 s after the first frame; again when it arrives")
    func unsentExtensionNotice() {
        var notice = UnsentExtensionNotice(extensions: PylontechDecoder.extensionGroups)
        var d = PylontechDecoder()
        #expect(notice.check(d.snapshot, at: t) == nil, "nothing received yet")
        var lines: [String] = []
        for second in 0...30 {
            let now = t + .seconds(second)
            for text in Self.specificationFrames { _ = d.ingest(frame(text), at: now) }
            if second == 25 { _ = d.ingest(frame("373#D00CEE0C2A012C01"), at: now) }
            if let line = notice.check(d.snapshot, at: now) { lines.append("\(second): \(line)") }
        }
        #expect(lines == [
            "10: the BMS sends no 0x373 cells (not defined by its protocol, not a fault): cell-voltage rules inert, "
                + "temperatures from 0x356; no BMS_GROUP_MISSING for it unless it starts and stops",
            "25: the BMS now sends 0x373 cells: its rules act; it is watched for BMS_GROUP_MISSING from now on",
        ])
        // A BMS with the extension from the start: nothing to say.
        var quiet = UnsentExtensionNotice(extensions: PylontechDecoder.extensionGroups)
        var e = PylontechDecoder()
        for second in 0...30 {
            for text in Self.specificationFrames + ["373#D00CEE0C2A012C01"] { _ = e.ingest(frame(text), at: t + .seconds(second)) }
            #expect(quiet.check(e.snapshot, at: t + .seconds(second)) == nil)
        }
    }

    @Test("candump text round-trips")
    func candumpText() {
        #expect(frame("351#1402740E740ECC01").description == "351#1402740E740ECC01")
        #expect(CANFrame(candump: "1FFFFFFF#00")?.isExtended == true)
        #expect(CANFrame(candump: "800#00") == nil)  // 11-bit ID out of range
        #expect(CANFrame(candump: "351#1") == nil)
        #expect(CANFrame(candump: "351#000000000000000000") == nil)  // 9 bytes
        #expect(CANFrame(candump: "zz#00") == nil)
        #expect(PylontechLV.keepAlive.description == "305#0000000000000000")
    }

    @Test("garbage frames never crash and are all accounted for")
    func garbage() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...0x7FF), Gen.int(in: 0...8), Gen<UInt64>.uint64(in: 0...UInt64.max)) {
            id, length, data in
            var d = PylontechDecoder()
            let f = CANFrame(id: UInt32(id % 2 == 0 ? 0x350 + id % 16 : id), length: UInt8(length), data: data)
            _ = d.ingest(f, at: MonotonicInstant(nanoseconds: 1))
            let c = d.counters
            #expect(c.accepted + c.shortFrames + c.invalidValues + c.wrongKind + c.unknownIDs == 1)
            if let soc = d.snapshot.status?.value.soc.value { #expect((0...100).contains(soc)) }
            if let l = d.snapshot.limits?.value {
                #expect(l.chargeCurrentLimit.value >= 0 && l.dischargeCurrentLimit.value >= 0)
            }
        }
    }
}

@Suite("CAN error frames")
struct CANErrorFrameTests {
    @Test("bus-off, restarted and controller states decode from the error class and data[1]")
    func decode() {
        let busOff = CANErrorReport(CANFrame(id: 0x040, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isError: true))
        #expect(busOff?.busOff == true)
        let passive = CANErrorReport(CANFrame(id: 0x004, bytes: [0, 0x20, 0, 0, 0, 0, 0, 0], isError: true))
        #expect(passive?.errorPassive == true && passive?.busOff == false)
        let warning = CANErrorReport(CANFrame(id: 0x004, bytes: [0, 0x08, 0, 0, 0, 0, 0, 0], isError: true))
        #expect(warning?.errorWarning == true)
        let restarted = CANErrorReport(CANFrame(id: 0x100, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isError: true))
        #expect(restarted?.restarted == true)
        let noAck = CANErrorReport(CANFrame(id: 0x020, bytes: [0, 0, 0, 0, 0, 0, 0, 0], isError: true))
        #expect(noAck?.noAcknowledge == true)
        #expect(CANErrorReport(CANFrame(id: 0x351, bytes: [1])) == nil)
    }

    @Test("opening a missing interface is a coded error")
    func missing() {
        #expect(throws: FieldbusError.self) { _ = try CANSocket(interface: "bessd-none0", filters: []) }
        do {
            _ = try CANSocket(interface: "bessd-none0", filters: [])
        } catch {
            #expect(error.code.description == "CAN_INTERFACE_MISSING")
            #expect(error.kind == .linkLost)
        }
    }
}
