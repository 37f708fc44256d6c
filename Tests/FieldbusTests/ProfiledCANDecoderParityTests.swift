import ControlCore
import Fieldbus
import Testing

/// The proof that the Pylontech LV profile is today's decoder: the same frames give the same
/// snapshot, refusals and counters from `PylontechDecoder` and from `ProfiledCANDecoder`.
@Suite("Profiled CAN decoder: parity with the Pylontech decoder")
struct ProfiledCANDecoderParityTests {
    /// xorshift64*: a fixed seed, the same frames on every run.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 0x2545_F491_4F6C_DD1D
        }
        mutating func below(_ n: UInt64) -> UInt64 { next() % n }
    }

    /// A frame of the 0x35x family, sometimes 0x305 or of the wrong kind, 0–8 bytes, its bytes often
    /// the values that matter (0, 1, 0x80, 0xFF, 0–100) so that every check is reached; one in four
    /// an emulator's frame with one byte or its length changed.
    static func frame(_ g: inout Generator) -> CANFrame {
        let kind = g.below(100)
        if kind >= 75 {
            var f = pool[Int(g.below(UInt64(pool.count)))]
            if kind < 85 { f.data ^= (g.below(255) + 1) << (8 * g.below(UInt64(f.length))) }
            if kind >= 95 { f.length = UInt8(g.below(9)) }
            return f
        }
        let id: UInt32 = kind < 4 ? 0x305 : UInt32(0x350 + g.below(0x30))
        var data: UInt64 = 0
        for i in 0..<8 {
            let byte: UInt64 = switch g.below(6) {
            case 0: 0
            case 1: 1
            case 2: 0xFF
            case 3: 0x80
            case 4: g.below(101)
            default: g.below(256)
            }
            data |= byte << UInt64(8 * i)
        }
        return CANFrame(id: id, length: UInt8(g.below(9)), data: data, isExtended: (4..<7).contains(kind),
                        isRemote: (7..<9).contains(kind), isError: kind == 9)
    }

    static let pool = states.flatMap { $0.frames() }

    static func same(_ a: BMSSnapshot, _ b: BMSSnapshot) -> Bool {
        a.limits == b.limits && a.status == b.status && a.measurements == b.measurements && a.cells == b.cells
            && a.protection == b.protection && a.requests == b.requests && a.expectedGroups == b.expectedGroups
    }

    static let states: [PylontechBMSState] = [
        PylontechBMSState(chargeVoltageLimit: 56.8, chargeCurrentLimit: 150, dischargeCurrentLimit: 200, dischargeVoltageLimit: 44.8,
                          soc: 61.37, soh: 98, voltage: 52.41, current: -12.3, temperature: 27.5, minCellVoltage: 3.271,
                          maxCellVoltage: 3.298, minCellTemperature: 25, maxCellTemperature: 29, protections: [.overtemperature],
                          alarms: [.chargeOvercurrent], chargeEnabled: false, dischargeEnabled: true),
        PylontechBMSState(chargeVoltageLimit: 53.2, chargeCurrentLimit: -5, dischargeCurrentLimit: -100, dischargeVoltageLimit: 0,
                          soc: 100, soh: 100, voltage: 53.9, current: 0, temperature: -4.5, minCellVoltage: 3.45,
                          maxCellVoltage: 3.61, minCellTemperature: -10, maxCellTemperature: 2,
                          protections: [.cellOvervoltage, .systemError, .chargeOvercurrent],
                          alarms: [.internalCommunication, .undertemperature], chargeEnabled: false, dischargeEnabled: false,
                          moduleCount: 4, name: "US5000"),
        PylontechBMSState(chargeVoltageLimit: .nan, chargeCurrentLimit: .nan, dischargeCurrentLimit: 25, dischargeVoltageLimit: .nan,
                          soc: 0.4, soh: 120, voltage: -1, current: 3276.7, temperature: .nan, minCellVoltage: 3.3,
                          maxCellVoltage: 3.2, minCellTemperature: -150, maxCellTemperature: 300, name: "\u{1}bad"),
        PylontechBMSState(chargeVoltageLimit: 0, chargeCurrentLimit: 0, dischargeCurrentLimit: 0, dischargeVoltageLimit: 47,
                          soc: 12.6, soh: 0, voltage: 0, current: -3276.8, temperature: 60, minCellVoltage: 2.5,
                          maxCellVoltage: 9.999, minCellTemperature: -99, maxCellTemperature: 199,
                          protections: [.cellUndervoltage, .undertemperature, .dischargeOvercurrent], alarms: [.systemError]),
    ]

    @Test("the emulator's frames of four states: equal snapshots, refusals and counters")
    func states() throws {
        var old = PylontechDecoder()
        var new = try ProfiledCANDecoder(profile: .pylontechLVForTests)
        var at = MonotonicInstant(nanoseconds: 1_000_000_000)
        for state in Self.states {
            for frame in state.frames() {
                at = at + .milliseconds(10)
                #expect(old.ingest(frame, at: at) == new.ingest(frame, at: at), "\(frame)")
                #expect(Self.same(old.snapshot, new.snapshot), "\(frame)")
            }
            #expect(new.text(of: "manufacturer") == old.manufacturer)
        }
        #expect(old.counters == new.counters)
        #expect(old.counters.accepted >= 20 && old.counters.invalidValues >= 3, "\(old.counters)")
    }

    /// 10^5 frames; not timed.
    @Test("100,000 seeded random frames: equal snapshots and refusals after each, equal counters")
    func randomFrames() throws {
        var old = PylontechDecoder()
        var new = try ProfiledCANDecoder(profile: .pylontechLVForTests)
        var g = Generator(state: 61)
        var mismatches: [String] = []
        var setParts = Set<String>()
        for n in 0..<100_000 {
            let frame = Self.frame(&g)
            let at = MonotonicInstant(nanoseconds: Int64(n) * 1_000_000)
            let (a, b) = (old.ingest(frame, at: at), new.ingest(frame, at: at))
            if a != b || !Self.same(old.snapshot, new.snapshot) || new.text(of: "manufacturer") != old.manufacturer,
               mismatches.count < 5 {
                mismatches.append("\(n): \(frame) \(String(describing: a)) \(String(describing: b))")
            }
            if a == nil, frame.id != 0x305 { setParts.insert(String(frame.id, radix: 16)) }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(old.counters == new.counters)
        // Every check was reached: each kind of refusal, and each frame with signals accepted.
        let c = new.counters
        #expect(c.shortFrames > 1000 && c.invalidValues > 1000 && c.wrongKind > 1000 && c.accepted > 10_000, "\(c)")
        #expect(["351", "355", "356", "359", "35c", "35e", "373"].allSatisfy(setParts.contains), "\(setParts.sorted())")
        #expect(c.accepted + c.shortFrames + c.invalidValues + c.wrongKind + c.unknownIDs == 100_000)
    }
}
