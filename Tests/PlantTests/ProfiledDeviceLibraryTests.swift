import BessBase
import Config
import ControlCore
import Fieldbus
import Foundation
import HILPlant
import TestSupport
import Testing

/// The starter library (devices/*.yaml, read as bessd reads it) on the plant's simulated devices: every
/// alarm of every BMS profile, encoded by the plant, decodes to its condition at its severity; every
/// inverter profile that commands power, driven by `ProfiledInverter`, falls back on its own once
/// bessd goes silent.
@Suite("Profiled devices: the starter library on the plant")
struct ProfiledDeviceLibraryTests {
    static func profiles(_ kind: DeviceProfile.Kind) -> [String] {
        let directory = Package.root.appendingPathComponent("devices").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().filter { name in
            ProfileReader.read(path: directory + "/" + name).profile?.kind == kind
        }
    }

    static func load(_ name: String) throws -> DeviceProfile {
        let read = ProfileReader.read(path: Package.root.appendingPathComponent("devices/" + name).path)
        return try #require(read.profile, "\(read.diagnostics)")
    }

    /// The snapshot bessd's decoder for `profile` makes of what the plant's BMS sends for `state`.
    static func decode(_ profile: DeviceProfile, _ state: ProfiledDeviceState) throws -> BMSSnapshot {
        let t = MonotonicInstant(nanoseconds: 3_000_000_000)
        switch profile.transport {
        case .can:
            var decoder = try ProfiledCANDecoder(profile: profile)
            for frame in ProfileEncoder.frames(profile, state) { #expect(decoder.ingest(frame, at: t) == nil, "\(profile.name) \(frame)") }
            return decoder.snapshot
        case .modbus:
            var bms = SimulatedProfiledBMS(profile: profile)
            bms.publish(state)
            var access = ProfiledDeviceRoundTripTests.BMSAccess(bms: bms)
            var decoder = try ProfiledModbusBMS(profile: profile)
            try decoder.poll(&access, at: t)
            return decoder.snapshot
        }
    }

    /// The conditions the encoder's bits for `condition` read as: `condition`, and any other condition
    /// an alarm of the same severity maps onto one of those same bits.
    static func expected(_ profile: DeviceProfile, _ condition: ProfileAlarm.Condition, _ severity: ProfileAlarm.Severity) -> BMSConditions {
        let alarms = profile.alarms.filter { $0.severity == severity }
        let bits = alarms.filter { $0.condition == condition && $0.bit != nil }.map { "\($0.signal)/\($0.bit ?? -1)" }
        var conditions: BMSConditions = condition.condition
        for alarm in alarms where alarm.bit != nil && bits.contains("\(alarm.signal)/\(alarm.bit ?? -1)") {
            conditions.insert(alarm.condition.condition)
        }
        return conditions
    }

    @Test("the starter library has BMS and inverter profiles to simulate")
    func libraryPresent() {
        #expect(Self.profiles(.bms).count >= 4)
        #expect(Self.profiles(.inverter).count >= 2)
    }

    @Test("every alarm of every BMS profile trips its condition at its severity, and only while active",
          arguments: profiles(.bms))
    func bmsAlarms(name: String) throws {
        let profile = try Self.load(name)
        let quiet = try Self.decode(profile, ProfiledDeviceState())
        #expect(quiet.protection?.value == BMSProtectionState(), "\(name)")
        let pairs = Set(profile.alarms.map { "\($0.condition.rawValue)/\($0.severity.rawValue)" }).sorted()
        #expect(!pairs.isEmpty)
        for pair in pairs {
            let parts = pair.split(separator: "/").map(String.init)
            let condition = try #require(ProfileAlarm.Condition(rawValue: parts[0]))
            let severity = try #require(ProfileAlarm.Severity(rawValue: parts[1]))
            var state = ProfiledDeviceState()
            if severity == .protection { state.protections = condition.condition } else { state.alarms = condition.condition }
            let seen = try #require(try Self.decode(profile, state).protection?.value, "\(name) \(pair)")
            let want = Self.expected(profile, condition, severity)
            #expect(severity == .protection ? seen.protections == want : seen.alarms == want, "\(name) \(pair): \(seen)")
            #expect(severity == .protection ? seen.alarms.isEmpty : seen.protections.isEmpty, "\(name) \(pair): \(seen)")
        }
    }

    @Test("every inverter profile that commands power follows bessd, then falls back to 0 W on its own",
          arguments: profiles(.inverter))
    func inverterFallback(name: String) throws {
        let profile = try Self.load(name)
        guard let commands = profile.commands else { return }  // read-only (Deye): nothing to fall back from
        var driver = try ProfiledInverter(profile: profile, pollInterval: .seconds(1))
        var access = ProfiledDeviceRoundTripTests.InverterAccess(device: SimulatedProfiledInverter(profile: profile), now: .zero)
        var state = ProfiledDeviceState()
        for second in 0...30 {
            access.now = MonotonicInstant(nanoseconds: Int64(second) * 1_000_000_000)
            try driver.command(Watts(5000), revert: .seconds(10), now: access.now, &access)
            #expect(access.device.step(now: access.now) == 5000, "\(name) at \(second) s")
            state.activePowerW = access.device.commandedW
            access.device.publish(state)
            #expect(try driver.readStatus(&access).activePower.value == 5000, "\(name) at \(second) s")
        }
        let limit: Int
        switch commands.fallback {
        case .watchdog(_, let seconds), .trafficTimeout(_, let seconds), .timeSlot(let seconds): limit = seconds
        case .revertTimer: limit = 10
        }
        var fellBackAt: Int?
        for second in 31...(31 + limit) where fellBackAt == nil {
            if access.device.step(now: MonotonicInstant(nanoseconds: Int64(second) * 1_000_000_000)) == 0 { fellBackAt = second }
        }
        let at = try #require(fellBackAt, "\(name) never fell back")
        #expect(at <= 30 + limit, "\(name)")
        #expect(access.device.fellBack && access.device.fallbacks == 1)
    }
}
