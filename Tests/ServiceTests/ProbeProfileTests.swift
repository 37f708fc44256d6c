import Foundation
import TestSupport
import Testing

/// `bessctl probe modbus` against a device without SunSpec: the device profiles whose identity
/// register it answers are named, with the block to paste (hil/peers/pymodbus_profile_peer.py).
@Suite("bessctl probe by device profile", .serialized)
struct ProbeProfileTests {
    static let devices = Package.root.appendingPathComponent("devices").path

    @Test("a Sungrow SH10RT (no SunSpec): its profile named, now read by it, and the pasted block passes check-config")
    func sungrow() throws {
        let peer = try UnitsPeer(arguments: ["python3", "hil/peers/pymodbus_profile_peer.py", "--seconds", "60",
                                             "--input", "4999=0x0E03,100", "--input", "5213=1000,0", "--input", "5241=5000",
                                             "--input", "12999=0x4000", "--input", "13019=0,0,0,0,0,0", "--input", "13033=0,0",
                                             "--holding", "13049=0,0xCC,0", "--holding", "13079=0"])
        defer { peer.stop() }
        #expect(peer.port > 0)
        let probe = try Package.run("bessctl", ["probe", "modbus", "127.0.0.1:\(peer.port)", "--profile-dir", Self.devices])
        #expect(probe.status == 0, "\(probe.out)\(probe.err)")
        #expect(probe.out.contains("SunSpec: none"), "\(probe.out)")
        #expect(probe.out.contains("profile: sungrow-sh-rt (Sungrow: "), "\(probe.out)")
        #expect(probe.out.contains("input register 4999 reads 0x0E03"), "\(probe.out)")
        #expect(probe.out.contains("now: 1000 W, 50.000 Hz"), "\(probe.out)")
        let unit = ProbeDiagTests.pasted(probe.out)
        #expect(unit.contains("    max_power_kw: 10\n"), "\(unit)")
        #expect(unit.contains("      unit_id: 1\n    inverter:\n      profile: sungrow-sh-rt"), "\(unit)")
        let check = try ProbeDiagTests.checkConfig("profile_directories: [\(Self.devices)]\nmode: hardware\nbess_units:\n" + unit + "\n"
                                                   + ProbeDiagTests.bms)
        #expect(check.status == 0, "pasted block refused: \(check.out)\(check.err)\n\(unit)")
    }

    @Test("a device no profile recognises: exit 1, and what to do about it")
    func unknown() throws {
        let peer = try UnitsPeer(arguments: ["python3", "hil/peers/pymodbus_profile_peer.py", "--seconds", "60",
                                             "--input", "4999=0x1234", "--holding", "0=7"])
        defer { peer.stop() }
        let probe = try Package.run("bessctl", ["probe", "modbus", "127.0.0.1:\(peer.port)", "--profile-dir", Self.devices])
        #expect(probe.status == 1, "\(probe.out)\(probe.err)")
        #expect(probe.out.contains("profiles: no device profile's identity register matches"), "\(probe.out)")
        #expect(probe.out.contains("write a device profile (docs/devices.md)"), "\(probe.out)")
        #expect(!probe.out.contains("# paste under"))
    }
}
