import BessBase
import Config
import ControlCore
import Fieldbus
import Foundation
import TestSupport
import Testing

/// The starter library (devices/*.yaml) against an oracle that never read it: scripts/profile-oracle.py
/// encodes frames with cantools from DBC files written from the vendors' documents (hil/dbc/) and
/// builds register images from the documents' tables, and says what each means (quantities, request
/// flags, conditions). Each file is read with the configuration's reader, compiled into the decoder
/// the workers run, and fed the oracle's frames and registers (Tests/Fixtures/profile-*-vectors.json;
/// `scripts/profile-oracle.py` regenerates them, docs/devices.md). Values agree within half the
/// signal's scale.
@Suite("Profile library: devices/*.yaml against the documents' oracle")
struct ProfileLibraryProofTests {
    static let canProfiles = ["pylontech-lv", "sma-victron-lv", "pylontech-hv"]
    static let modbusBMSProfiles = ["byd-c130"]
    static let inverterProfiles = ["sungrow-sh-rt", "sinexcel-pws2", "deye-sg-hybrid"]
    static let all = canProfiles + modbusBMSProfiles + inverterProfiles

    @Test("every file in devices/ reads with zero diagnostics and is proven here")
    func library() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Proof.devices.path).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(files.map(ProfileReader.stem) == Self.all.sorted(), "a profile without vectors, or vectors without a profile")
        for file in files {
            let (profile, diagnostics) = ProfileReader.read(path: Proof.devices.appendingPathComponent(file).path)
            #expect(diagnostics.isEmpty, "\(file): \(diagnostics.map(\.description))")
            #expect(profile?.name == ProfileReader.stem(file))
            #expect(profile?.sources.isEmpty == false, "\(file) names no source")
        }
    }

    @Test("byd-c130 keeps the 300 ms its PDF asks between requests")
    func requestGap() throws {
        let profile = ProfileReader.read(path: Proof.devices.appendingPathComponent("byd-c130.yaml").path).profile
        guard case .modbus(let link)? = profile?.transport else { Issue.record("byd-c130 is not a Modbus profile"); return }
        #expect(link.requestGap == .milliseconds(300))
    }

    @Test("the committed vectors are what the oracle writes from the DBC files and tables today")
    func vectorsCurrent() throws {
        let run = try Package.capture(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "scripts/profile-oracle.py", "--check"])
        #expect(run.status == 0, "\(run.out)\(run.err)")
        #expect(run.out.contains("fixtures match"))
    }

    @Test("CAN profiles decode the frames cantools encoded from the document's DBC", arguments: canProfiles)
    func canVectors(name: String) throws {
        let vectors = try #require(try Proof.can().profiles.first { $0.profile == name })
        let profile = try Proof.profile(name)
        var decoder = try ProfiledCANDecoder(profile: profile)
        var now = MonotonicInstant(nanoseconds: 1_000_000_000)
        for expect in vectors.expect {
            for frame in vectors.frames where frame.cycle == expect.cycle {
                let can = CANFrame(id: frame.id, bytes: try #require(Proof.bytes(frame.data)), isExtended: frame.extended)
                #expect(decoder.ingest(can, at: now) == nil, "\(name) cycle \(frame.cycle): \(frame.data) refused")
                now = now + .milliseconds(10)
            }
            let mismatches = Proof.compare(decoder.snapshot, expect, profile)
            #expect(mismatches.isEmpty, "\(name) cycle \(expect.cycle ?? -1): \(mismatches)")
        }
        #expect(vectors.expect.count >= 20)
    }

    @Test("Modbus BMS profiles decode the document's register images", arguments: modbusBMSProfiles)
    func modbusBMSVectors(name: String) throws {
        let vectors = try #require(try Proof.modbus().profiles.first { $0.profile == name })
        let profile = try Proof.profile(name)
        for image in vectors.images {
            var bms = try ProfiledModbusBMS(profile: profile)
            var access = ImageRegisters(image)
            try bms.poll(&access, at: MonotonicInstant(nanoseconds: 1_000_000_000))
            let mismatches = Proof.compare(bms.snapshot, image.expect, profile)
            #expect(mismatches.isEmpty, "\(name) \(image.name): \(mismatches)")
        }
    }

    @Test("inverter profiles read the document's images and command as it says", arguments: inverterProfiles)
    func inverterVectors(name: String) throws {
        let vectors = try #require(try Proof.modbus().profiles.first { $0.profile == name })
        let profile = try Proof.profile(name)
        guard profile.commands != nil else {
            // Read-only (Deye: no device-side fallback): bessd must refuse to command it.
            #expect(throws: ProfileError.self) { _ = try ProfiledInverter(profile: profile) }
            #expect(vectors.commands.isEmpty)
            return
        }
        for image in vectors.images {
            let inverter = try ProfiledInverter(profile: profile)
            var access = ImageRegisters(image)
            let reading = try inverter.readStatus(&access)
            let mismatches = Proof.compare(reading, image.expect, profile)
            #expect(mismatches.isEmpty, "\(name) \(image.name): \(mismatches)")
        }
        let first = try #require(vectors.images.first)
        #expect(!vectors.commands.isEmpty)
        for command in vectors.commands {
            var inverter = try ProfiledInverter(profile: profile)
            var access = ImageRegisters(first)
            try inverter.command(Watts(command.powerW), revert: .seconds(10), now: MonotonicInstant(nanoseconds: 1_000_000_000), &access)
            #expect(Proof.differences(access.holding, command.holding).isEmpty,
                    "\(name) \(command.powerW) W: \(Proof.differences(access.holding, command.holding))")
            try inverter.stop(&access)
            #expect(Proof.differences(access.holding, vectors.stop).isEmpty, "\(name) stop: \(Proof.differences(access.holding, vectors.stop))")
        }
    }

    @Test("every Modbus profile against a pymodbus server serving the document's image", arguments: modbusBMSProfiles + inverterProfiles)
    func pymodbusServer(name: String) throws {
        let vectors = try #require(try Proof.modbus().profiles.first { $0.profile == name })
        let profile = try Proof.profile(name)
        let image = try #require(vectors.images.first)
        let server = try PeerProcess(["python3", "scripts/profile-oracle.py", "serve", name, "--port", "0", "--image", "0", "--seconds", "30"],
                                     executable: URL(fileURLWithPath: "/usr/bin/env"), directory: Package.root)
        defer { server.stop() }
        #expect(waitFor(seconds: 15) { server.text.contains("PORT ") }, "no server: \(server.text)")
        let line = try #require(server.text.split(separator: "\n").first { $0.hasPrefix("PORT ") })
        let port = try #require(Int(line.dropFirst(5)))
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        // A unit reads both tables (function 03 and 04).
        var client = connection.unit(1)
        if profile.kind == .bms {
            var bms = try ProfiledModbusBMS(profile: profile)
            try bms.poll(&client, at: MonotonicInstant(nanoseconds: 1_000_000_000))
            let mismatches = Proof.compare(bms.snapshot, image.expect, profile)
            #expect(mismatches.isEmpty, "\(name): \(mismatches)")
            return
        }
        guard let command = vectors.commands.first else {
            #expect(profile.commands == nil, "\(name) commands power but the oracle has no command vector")
            return
        }
        var inverter = try ProfiledInverter(profile: profile)
        let mismatches = Proof.compare(try inverter.readStatus(&client), image.expect, profile)
        #expect(mismatches.isEmpty, "\(name): \(mismatches)")
        try inverter.command(Watts(command.powerW), revert: .seconds(10), now: MonotonicInstant(nanoseconds: 1_000_000_000), &client)
        for (address, word) in command.holding {
            let at = try #require(Int(address))
            #expect(try client.readRegisters(at: at, count: 1) == [word], "\(name) register \(address) after \(command.powerW) W")
        }
        try inverter.stop(&client)
        for (address, word) in vectors.stop {
            let at = try #require(Int(address))
            #expect(try client.readRegisters(at: at, count: 1) == [word], "\(name) register \(address) after stop")
        }
    }
}

/// The oracle's fixtures and the comparison of a decoder's result with them.
enum Proof {
    static let devices = Package.root.appendingPathComponent("devices")
    static func can() throws -> CANFixture { try load("Tests/Fixtures/profile-can-vectors.json") }
    static func modbus() throws -> ModbusFixture { try load("Tests/Fixtures/profile-modbus-vectors.json") }

    struct CANFixture: Decodable { var profiles: [CANVectors] }
    struct CANVectors: Decodable {
        var profile: String
        var frames: [Frame]
        var expect: [Expect]
    }
    struct Frame: Decodable {
        var cycle: Int
        var id: UInt32
        var extended: Bool
        var data: String
    }
    struct Expect: Decodable {
        var cycle: Int?
        var values: [String: Double]
        var flags: [String: Bool]
        var protections: [String]
        var alarms: [String]
    }
    struct ModbusFixture: Decodable { var profiles: [ModbusVectors] }
    struct ModbusVectors: Decodable {
        var profile: String
        var images: [Image]
        var commands: [Command]
        var stop: [String: UInt16]
    }
    struct Image: Decodable {
        var name: String
        var holding: [String: UInt16]
        var input: [String: UInt16]
        var expect: Expect
    }
    struct Command: Decodable {
        var powerW: Double
        var holding: [String: UInt16]
        enum CodingKeys: String, CodingKey { case powerW = "power_w", holding }
    }

    /// A fixture scripts/profile-oracle.py wrote.
    static func load<T: Decodable>(_ path: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: Package.root.appendingPathComponent(path)))
    }

    static func profile(_ name: String) throws -> DeviceProfile {
        let (profile, diagnostics) = ProfileReader.read(path: devices.appendingPathComponent("\(name).yaml").path)
        return try #require(profile, "\(name).yaml: \(diagnostics.map(\.description))")
    }

    static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(digits[i...i + 1]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// Half the scale of the signal that carries `quantity` (soc: the finest of soc and soc_fine).
    static func tolerance(_ quantity: String, _ profile: DeviceProfile) -> Double {
        let names = quantity == "soc" ? ["soc", "soc_fine"] : [quantity]
        let scales = profile.signals.filter { names.contains($0.quantity?.rawValue ?? "") }.map { abs($0.scale) }
        return (scales.min() ?? 1) / 2 + 1e-9
    }

    static func conditions(_ names: [String]) -> BMSConditions {
        names.reduce(into: BMSConditions()) { $0.formUnion(ProfileAlarm.Condition(rawValue: $1)?.condition ?? BMSConditions(rawValue: 1 << 31)) }
    }

    static func value(_ quantity: String, _ s: BMSSnapshot) -> Double? {
        switch quantity {
        case "soc": s.status?.value.soc.value
        case "soh": s.status?.value.soh?.value
        case "charge_voltage_limit": s.limits?.value.chargeVoltageLimit?.value
        case "discharge_voltage_limit": s.limits?.value.dischargeVoltageLimit?.value
        case "charge_current_limit": s.limits?.value.chargeCurrentLimit.value
        case "discharge_current_limit": s.limits?.value.dischargeCurrentLimit.value
        case "pack_voltage": s.measurements?.value.packVoltage.value
        case "pack_current": s.measurements?.value.packCurrent.value
        case "temperature": s.measurements?.value.temperature.value
        case "min_cell_voltage": s.cells?.value.minCellVoltage.value
        case "max_cell_voltage": s.cells?.value.maxCellVoltage.value
        case "min_cell_temperature": s.cells?.value.minTemperature.value
        case "max_cell_temperature": s.cells?.value.maxTemperature.value
        default: nil
        }
    }

    static func flag(_ quantity: String, _ s: BMSSnapshot) -> Bool? {
        switch quantity {
        case "charge_enabled": s.requests?.value.chargeEnabled
        case "discharge_enabled": s.requests?.value.dischargeEnabled
        case "force_charge": s.requests?.value.forceCharge
        default: nil
        }
    }

    /// Every way `snapshot` differs from what the oracle expects, one line each.
    static func compare(_ snapshot: BMSSnapshot, _ expect: Expect, _ profile: DeviceProfile) -> [String] {
        var wrong: [String] = []
        for (quantity, expected) in expect.values.sorted(by: { $0.key < $1.key }) {
            let got = value(quantity, snapshot)
            if got.map({ abs($0 - expected) > tolerance(quantity, profile) }) ?? true {
                wrong.append("\(quantity) \(got.map { "\($0)" } ?? "absent"), expected \(expected)")
            }
        }
        for (quantity, expected) in expect.flags.sorted(by: { $0.key < $1.key }) where flag(quantity, snapshot) != expected {
            wrong.append("\(quantity) \(flag(quantity, snapshot).map { "\($0)" } ?? "absent"), expected \(expected)")
        }
        if profile.groups.contains(where: { $0.part == .protection }) {
            let state = snapshot.protection?.value
            if state?.protections != conditions(expect.protections) {
                wrong.append("protections \(String(describing: state?.protections)), expected \(expect.protections)")
            }
            if state?.alarms != conditions(expect.alarms) {
                wrong.append("alarms \(String(describing: state?.alarms)), expected \(expect.alarms)")
            }
        }
        return wrong
    }

    /// Every way an inverter's reading differs from what the oracle expects.
    static func compare(_ reading: InverterReading, _ expect: Expect, _ profile: DeviceProfile) -> [String] {
        var wrong: [String] = []
        for (quantity, expected) in expect.values.sorted(by: { $0.key < $1.key }) {
            let got: Double? = switch quantity {
            case "active_power": reading.activePower.value
            case "rated_power": reading.ratedPower?.value
            case "frequency": reading.frequency?.value
            case "state": Double(reading.faultBits)
            default: nil
            }
            if got.map({ abs($0 - expected) > tolerance(quantity, profile) }) ?? true {
                wrong.append("\(quantity) \(got.map { "\($0)" } ?? "absent"), expected \(expected)")
            }
        }
        return wrong
    }

    /// The registers of `expected` whose value in `holding` differs.
    static func differences(_ holding: [Int: UInt16], _ expected: [String: UInt16]) -> [String] {
        expected.sorted { $0.key < $1.key }.compactMap { address, word in
            let got = Int(address).flatMap { holding[$0] }
            return got == word ? nil : "\(address) = \(got.map(String.init) ?? "unwritten"), expected \(word)"
        }
    }
}

/// An oracle's register image as a device: reads answer from it (0 where it has no value), writes
/// land in its holding registers.
struct ImageRegisters: InputRegisterAccess {
    var holding: [Int: UInt16] = [:]
    var input: [Int: UInt16] = [:]

    init(_ image: Proof.Image) {
        for (address, word) in image.holding { if let a = Int(address) { holding[a] = word } }
        for (address, word) in image.input { if let a = Int(address) { input[a] = word } }
    }

    mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        (address..<address + count).map { holding[$0] ?? 0 }
    }

    mutating func readInputRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        (address..<address + count).map { input[$0] ?? 0 }
    }

    mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        for (offset, word) in values.enumerated() { holding[address + offset] = word }
    }
}
