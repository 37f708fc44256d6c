@testable import Config
import Cycle
import Fieldbus
import Foundation
import Testing

@Suite("Profile configuration keys")
struct ProfileConfigTests {
    /// A directory with the three test profiles.
    static func library() throws -> ProfileFixtures.Directory {
        try ProfileFixtures.Directory(["test-bms.yaml": ProfileFixtures.bms, "test-inverter.yaml": ProfileFixtures.inverter,
                                       "test-rack.yaml": ProfileFixtures.modbusBMS])
    }

    /// One unit in mode hil reading profiles from `directory`; `bms` and `inverter` are its blocks from line 9.
    static func site(_ directory: ProfileFixtures.Directory, bms: String = "    bms: {profile: test-bms}",
                     inverter: String = "    inverter: {simulated: true}", modbus: String = "{host: 10.0.0.5}") -> String {
        """
        mode: hil
        profile_directories: [\(directory.path)]
        bess_units:
          - id: U1
            capacity_kwh: 10
            max_power_kw: 5
            modbus: \(modbus)
        \(inverter)
        \(bms)

        """
    }

    @Test("bms.profile names a CAN profile: its bit rate and cells serve unless the configuration gives them")
    func canBMS() throws {
        let directory = try Self.library()
        let c = try ConfigLoader.parse(Self.site(directory), file: "site.yaml")
        let bms = c.units[0].bms
        #expect(bms.profile?.name == "test-bms" && bms.profile?.path == directory.path + "/test-bms.yaml")
        #expect(bms.protocolName == .profile && bms.transport == .can && bms.modbus == nil)
        #expect(bms.cellsInSeries == 15 && bms.bitrate == 250_000)
        #expect(c.profileDirectories == [directory.path])
        let given = try ConfigLoader.parse(Self.site(directory, bms: "    bms: {profile: test-bms, cells_in_series: 14, bitrate: 500000}"),
                                           file: "site.yaml")
        #expect(given.units[0].bms.cellsInSeries == 14 && given.units[0].bms.bitrate == 500_000)
    }

    @Test("bms.transport modbus with bms.modbus reads a Modbus BMS profile")
    func modbusBMS() throws {
        let directory = try Self.library()
        let c = try ConfigLoader.parse(Self.site(directory, bms: "    bms: {profile: test-rack, transport: modbus, modbus: {host: 10.0.0.9, unit_id: 2}}"),
                                       file: "site.yaml")
        let bms = c.units[0].bms
        #expect(bms.transport == .modbus && bms.profile?.name == "test-rack" && bms.cellsInSeries == 200)
        #expect(bms.modbus == ModbusSettings(transport: .tcp(host: "10.0.0.9", port: 502), unitID: 2, timeout: .milliseconds(500)))
        // Stale after two of the profile's longest group periods, never sooner than 3 s (this one's are 1 s).
        #expect(bms.staleAfter == .seconds(3))
        // The BYD rack, read every 2 s: 4 s.
        let byd = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("devices/byd-c130.yaml")
        let rack = try ProfileFixtures.Directory(["byd-c130.yaml": try String(contentsOf: byd, encoding: .utf8)])
        let site = try ConfigLoader.parse(Self.site(rack, bms: "    bms: {profile: byd-c130, transport: modbus, modbus: {host: 10.0.0.9}}"),
                                          file: "site.yaml")
        #expect(site.units[0].bms.staleAfter == .seconds(4))
        let given = try ConfigLoader.parse(Self.site(directory, bms: "    bms: {profile: test-rack, transport: modbus, "
                                                     + "modbus: {host: 10.0.0.9}, stale_after_s: 1.5}"), file: "site.yaml")
        #expect(given.units[0].bms.staleAfter == .milliseconds(1500))
    }

    @Test("inverter.profile sets protocol profile; protocol pylontech and the default resolve to pylontech-lv")
    func inverterAndPylontech() throws {
        let directory = try Self.library()
        let c = try ConfigLoader.parse(Self.site(directory, bms: "    bms: {protocol: pylontech}",
                                                 inverter: "    inverter: {profile: test-inverter}"), file: "site.yaml")
        #expect(c.units[0].inverter.protocolName == .profile && c.units[0].inverter.profile?.name == "test-inverter")
        #expect(c.units[0].bms.protocolName == .pylontech && c.units[0].bms.profile?.name == "pylontech-lv")
        #expect(c.units[0].bms.profile?.path == "")
        let plain = try ConfigLoader.parse("bess_units:\n  - {id: U1, capacity_kwh: 10, max_power_kw: 5}\n", file: "site.yaml")
        #expect(plain.units[0].bms.profile?.name == "pylontech-lv" && plain.units[0].bms.cellsInSeries == 16)
        #expect(plain.profileDirectories == ProfileLibrary.defaultDirectories)
    }

    static let cases: [(bms: String, inverter: String, line: Int, keyPath: String, message: String)] = [
        ("    bms: {profile: test-rack, transport: modbus}", "", 9, "bess_units[0].bms.modbus", "is required for transport: modbus"),
        ("    bms: {profile: test-bms, transport: modbus, modbus: {host: 10.0.0.9}}", "", 9, "bess_units[0].bms.profile",
         "'test-bms' is a CAN profile; it needs transport: can"),
        ("    bms: {profile: test-rack}", "", 9, "bess_units[0].bms.profile", "'test-rack' is a Modbus profile; set transport: modbus"),
        ("    bms: {profile: nothing}", "", 9, "bess_units[0].bms.profile",
         "no such profile; bms profiles found: pylontech-lv, test-bms, test-rack"),
        ("    bms: {profile: test-inverter}", "", 9, "bess_units[0].bms.profile",
         "'test-inverter' is an inverter profile; this needs a bms profile"),
        ("    bms: {profile: test-bms, protocol: pylontech}", "", 9, "bess_units[0].bms.protocol", "give protocol or profile, not both"),
        ("    bms: {profile: test-bms, modbus: {host: 10.0.0.9}}", "", 9, "bess_units[0].bms.modbus", "needs transport: modbus"),
        ("    bms: {profile: test-rack, transport: modbus, modbus: {host: 10.0.0.9}, interface: can1}", "", 9,
         "bess_units[0].bms.interface", "is a CAN setting"),
        ("    bms: {transport: modbus, modbus: {host: 10.0.0.9}}", "", 9, "bess_units[0].bms.profile", "is required for transport: modbus"),
        ("    bms: {transport: serial}", "", 9, "bess_units[0].bms.transport", "must be one of can, modbus"),
        ("    bms: {simulated: true}", "    inverter: {profile: test-bms}", 8, "bess_units[0].inverter.profile",
         "'test-bms' is a bms profile; this needs an inverter profile"),
        ("    bms: {simulated: true}", "    inverter: {profile: test-inverter, protocol: sunspec}", 8, "bess_units[0].inverter.protocol",
         "give protocol or profile, not both"),
    ]

    @Test("each misuse of the profile keys is an error at its line", arguments: cases)
    func misuse(c: (bms: String, inverter: String, line: Int, keyPath: String, message: String)) throws {
        let directory = try Self.library()
        let yaml = c.inverter.isEmpty ? Self.site(directory, bms: c.bms) : Self.site(directory, bms: c.bms, inverter: c.inverter)
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(yaml, file: "site.yaml") }
        let found = error?.diagnostics.first { $0.keyPath == c.keyPath && $0.message.contains(c.message) }
        #expect(found?.line == c.line, "\(error.map(\.description) ?? "accepted")")
    }

    @Test("a read-only inverter profile (no commands, as the shipped Deye) cannot be a unit's inverter")
    func readOnlyInverter() throws {
        let deye = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("devices/deye-sg-hybrid.yaml")
        let directory = try ProfileFixtures.Directory([
            "test-bms.yaml": ProfileFixtures.bms, "deye-sg-hybrid.yaml": try String(contentsOf: deye, encoding: .utf8)])
        let yaml = Self.site(directory, inverter: "    inverter: {profile: deye-sg-hybrid}")
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(yaml, file: "site.yaml") }
        let found = error?.diagnostics.first { $0.keyPath == "bess_units[0].inverter.profile" && $0.message.contains("is read-only") }
        #expect(found?.line == 8, "\(error.map(\.description) ?? "accepted")")
    }

    @Test("a TCP-only profile on a serial endpoint is refused")
    func serialEndpoint() throws {
        let directory = try Self.library()
        let yaml = Self.site(directory, bms: "    bms: {simulated: true}", inverter: "    inverter: {profile: test-inverter}",
                             modbus: "{device: /dev/ttyS1}")
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(yaml, file: "site.yaml") }
        #expect(error?.diagnostics.contains { $0.line == 8 && $0.message.contains("speaks Modbus TCP only") } == true)
    }

    @Test("a named profile that does not load refuses the configuration, and its own errors follow at their lines")
    func brokenProfile() throws {
        let directory = try ProfileFixtures.Directory([
            "test-bms.yaml": ProfileFixtures.replacing(ProfileFixtures.bms, line: 19, with:
                "  - {name: ccl, quantity: charge_current_limit, can: {id: 0x351, byte: 2, bits: 16}, scale: 0}")])
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(Self.site(directory), file: "site.yaml") }
        let lines = error?.diagnostics.map(\.description) ?? []
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.hasPrefix("site.yaml:9: bess_units[0].bms.profile: \(directory.path)/test-bms.yaml does not load") == true)
        #expect(lines.last?.hasPrefix("\(directory.path)/test-bms.yaml:19: signals[1].scale: must not be 0") == true)
    }

    @Test("a broken profile no unit names is a notice, not an error")
    func unnamedBroken() throws {
        let directory = try ProfileFixtures.Directory(["test-bms.yaml": ProfileFixtures.bms, "other.yaml": "bessd_profile: 1\n"])
        let c = try ConfigLoader.parse(Self.site(directory), file: "site.yaml")
        #expect(c.notices.contains { $0.file == directory.path + "/other.yaml" && $0.message.contains("no unit names it") })
    }

    @Test("the one-BMS-per-CAN-interface rule counts CAN BMSes only")
    func interfaces() throws {
        let directory = try Self.library()
        func two(_ bms: String) -> String {
            "mode: hil\nprofile_directories: [\(directory.path)]\nbess_units:\n"
                + (1...2).map { "  - {id: U\($0), capacity_kwh: 10, max_power_kw: 5, inverter: {simulated: true}, bms: \(bms)}\n" }.joined()
        }
        _ = try ConfigLoader.parse(two("{profile: test-rack, transport: modbus, modbus: {host: 10.0.0.9}}"), file: "site.yaml")
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(two("{profile: test-bms}"), file: "site.yaml") }
        #expect(error?.diagnostics.contains { $0.message.contains("share CAN interface can0") } == true)
    }

    @Test("profile_directories takes absolute paths only")
    func directories() {
        let error = #expect(throws: ConfigurationError.self) {
            _ = try ConfigLoader.parse("profile_directories: [devices]\nbess_units:\n  - {id: U1, capacity_kwh: 10, max_power_kw: 5}\n",
                                       file: "site.yaml")
        }
        #expect(error?.diagnostics.first?.line == 1 && error?.diagnostics.first?.keyPath == "profile_directories")
    }
}
