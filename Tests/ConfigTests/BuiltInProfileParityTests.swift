import Config
import ControlCore
import Fieldbus
import Testing

/// The built-in Pylontech LV profile as text (`BuiltInProfiles.pylontechLV`, devices/pylontech-lv.yaml),
/// read by the configuration's reader and compiled, decodes as `PylontechDecoder` does.
@Suite("Built-in Pylontech LV profile: the YAML text against the Pylontech decoder")
struct BuiltInProfileParityTests {
    static let states = [
        PylontechBMSState(chargeVoltageLimit: 56.8, chargeCurrentLimit: 150, dischargeCurrentLimit: -200, dischargeVoltageLimit: 44.8,
                          soc: 61.37, soh: 98, voltage: 52.41, current: -12.3, temperature: 27.5, minCellVoltage: 3.271,
                          maxCellVoltage: 3.298, minCellTemperature: 25, maxCellTemperature: 29,
                          protections: [.overtemperature, .systemError], alarms: [.chargeOvercurrent, .internalCommunication],
                          chargeEnabled: false, dischargeEnabled: true, moduleCount: 3),
        PylontechBMSState(chargeVoltageLimit: 53.2, chargeCurrentLimit: -5, dischargeCurrentLimit: 100, dischargeVoltageLimit: 0,
                          soc: 99.6, soh: 100, voltage: 53.9, current: 0, temperature: -4.5, minCellVoltage: 3.45,
                          maxCellVoltage: 3.61, minCellTemperature: -10, maxCellTemperature: 2, name: "US5000"),
    ]

    @Test("the text reads cleanly; emulator frames, each byte set to telling values at each length, decode as Pylontech's")
    func parity() throws {
        let (read, diagnostics) = ProfileReader.read(text: BuiltInProfiles.pylontechLV, path: "pylontech-lv.yaml")
        #expect(diagnostics.isEmpty, "\(diagnostics.map(\.description))")
        let profile = try #require(read)
        var old = PylontechDecoder()
        var new = try ProfiledCANDecoder(profile: profile)
        var at = MonotonicInstant(nanoseconds: 1_000_000_000)
        var mismatches: [String] = []
        let telling: [UInt64] = [0x00, 0x01, 0x20, 0x64, 0x65, 0x7F, 0x80, 0xFF]
        for base in Self.states.flatMap({ $0.frames() }) + [PylontechLV.keepAlive, CANFrame(id: 0x35F, bytes: [1])] {
            for length in UInt8(0)...8 {
                for index in 0..<8 {
                    for value in telling {
                        var frame = base
                        frame.length = length
                        frame.data = frame.data & ~(0xFF << UInt64(8 * index)) | value << UInt64(8 * index)
                        at = at + .milliseconds(1)
                        let (a, b) = (old.ingest(frame, at: at), new.ingest(frame, at: at))
                        let same = a == b && old.snapshot.limits == new.snapshot.limits && old.snapshot.status == new.snapshot.status
                            && old.snapshot.measurements == new.snapshot.measurements && old.snapshot.cells == new.snapshot.cells
                            && old.snapshot.protection == new.snapshot.protection && old.snapshot.requests == new.snapshot.requests
                            && old.snapshot.expectedGroups == new.snapshot.expectedGroups
                        if !same, mismatches.count < 5 { mismatches.append("\(frame) length \(length): \(String(describing: a)) \(String(describing: b))") }
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(old.counters == new.counters)
        #expect(new.counters.accepted > 1000 && new.counters.invalidValues > 100 && new.counters.shortFrames > 1000, "\(new.counters)")
        #expect(new.text(of: "manufacturer") == old.manufacturer)
    }
}
