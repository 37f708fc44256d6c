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

    @Test("0x355 padded with zeros to 8 bytes (bytes 4–7 empty in the specification) reads the whole-percent SOC, not 0 %")
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
            #expect(error.code == "CAN_INTERFACE_MISSING")
        }
    }
}
