import ControlCore
import Fieldbus
import HILPlant
import Simulation
import Testing

@Suite("Profiled devices: the plant's simulated inverter")
struct ProfiledDeviceInverterTests {
    static func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: Int64(seconds * 1e9)) }

    /// Mode 3, heartbeat `heartbeat` s, discharge `watts`, as bessd's start sequence and setpoint write them.
    static func command(_ device: inout SimulatedProfiledInverter, watts: UInt16, heartbeat: UInt16 = 20, at t: Double) throws {
        try device.write(at: 13049, [3], now: at(t))
        try device.write(at: 13050, [0xBB, watts], now: at(t))
        try device.write(at: 13079, [heartbeat], now: at(t))
    }

    @Test("Sungrow-like: mode 3 and a discharge command move its power; the heartbeat counts down in its register")
    func commandsPower() throws {
        var device = SimulatedProfiledInverter(profile: TestProfiles.sungrow())
        #expect(device.step(now: Self.at(0)) == 0)
        try device.write(at: 13050, [0xBB, 4000], now: Self.at(0))
        #expect(device.step(now: Self.at(0.1)) == 0, "no power outside the commanded mode")
        try Self.command(&device, watts: 5000, at: 1)
        #expect(device.step(now: Self.at(1.1)) == 5000)
        try device.write(at: 13050, [0xAA, 3000], now: Self.at(2))
        #expect(device.step(now: Self.at(2.1)) == -3000)
        #expect(device.step(now: Self.at(11.2)) == -3000)
        #expect(device.watchdogRemaining == 10)
        #expect(try device.read(.holding, at: 13079, count: 1, now: Self.at(11.2)) == [10])
    }

    @Test("Sungrow-like: a heartbeat not refreshed runs out: mode 0, stop, 0 W, until bessd starts it again")
    func heartbeatRunsOut() throws {
        var device = SimulatedProfiledInverter(profile: TestProfiles.sungrow())
        try Self.command(&device, watts: 5000, at: 0)
        // Refreshed at half its value: still commanding at 25 s.
        try device.write(at: 13079, [20], now: Self.at(10))
        #expect(device.step(now: Self.at(25)) == 5000)
        #expect(!device.fellBack)
        // Not refreshed again: at 30 s (20 s after the last write) it falls back on its own.
        #expect(device.step(now: Self.at(29.9)) == 5000)
        #expect(device.step(now: Self.at(30)) == 0)
        #expect(device.fellBack && device.fallbacks == 1)
        #expect(device.image[.holding, 13049] == 0 && device.image[.holding, 13050] == 0xCC && device.image[.holding, 13079] == 0)
        #expect(!device.inCommandedMode)
        #expect(device.step(now: Self.at(60)) == 0)
        #expect(device.fallbacks == 1)
        // A heartbeat alone does not bring it back: the mode must be selected again.
        try device.write(at: 13079, [20], now: Self.at(61))
        #expect(device.step(now: Self.at(61)) == 0)
        try Self.command(&device, watts: 2000, at: 62)
        #expect(device.step(now: Self.at(62)) == 2000)
    }

    @Test("the plant's unit follows the simulated inverter to 0 W when its heartbeat runs out")
    func unitFollowsFallback() throws {
        var device = SimulatedProfiledInverter(profile: TestProfiles.sungrow(heartbeat: 20))
        var unit = SimulatedUnit(capacityKWh: 20, maxPowerKW: 10, initialSOCPercent: 60)
        unit.inverter.revertTimeout = nil
        try Self.command(&device, watts: 6000, at: 0)
        var t = 0.0
        var powerAt10 = 0.0
        while t < 40 {
            t += 0.1
            unit.inverter.command(setpointW: device.step(now: Self.at(t)))
            unit.step(by: .milliseconds(100))
            if abs(t - 10) < 0.05 { powerAt10 = unit.inverter.powerW }
        }
        #expect(abs(powerAt10 - 6000) < 1)
        #expect(unit.inverter.powerW == 0)
        #expect(device.fellBack)
    }

    @Test("traffic timeout: no request for the register's seconds → 0 W; reads alone keep it alive")
    func trafficTimeout() throws {
        var profile = TestProfiles.sungrow()
        profile.commands?.fallback = .trafficTimeout(address: 327, seconds: 60)
        profile.commands?.setpoint = .signed(address: 135, type: .int16, scale: 100, lowWordFirst: false)
        profile.commands?.start = []
        profile.commands?.stop = []
        var device = SimulatedProfiledInverter(profile: profile)
        try device.write(at: 327, [10], now: Self.at(0))
        try device.write(at: 135, [0x0064], now: Self.at(0))
        #expect(device.step(now: Self.at(0)) == 10_000)
        for t in stride(from: 4.0, through: 30, by: 4) { _ = try device.read(.input, at: 5000, count: 1, now: Self.at(t)) }
        #expect(device.step(now: Self.at(35)) == 10_000)
        #expect(device.step(now: Self.at(40)) == 0)
        #expect(device.fellBack)
        try device.write(at: 135, [UInt16(bitPattern: -50)], now: Self.at(41))
        #expect(device.step(now: Self.at(41)) == -5000)
    }

    @Test("revert timer and time slot: the command lapses when its timer does")
    func revertTimerAndSlot() throws {
        var profile = TestProfiles.sungrow()
        profile.commands?.fallback = .revertTimer(address: 13060, scale: 10)
        var device = SimulatedProfiledInverter(profile: profile)
        try Self.command(&device, watts: 1000, at: 0)
        try device.write(at: 13060, [50], now: Self.at(0))  // 5 s
        #expect(device.step(now: Self.at(4.9)) == 1000)
        #expect(device.step(now: Self.at(5)) == 0)
        profile.commands?.fallback = .timeSlot(seconds: 900)
        device = SimulatedProfiledInverter(profile: profile)
        try Self.command(&device, watts: 1000, at: 0)
        #expect(device.step(now: Self.at(899)) == 1000)
        #expect(device.step(now: Self.at(900)) == 0)
    }

    @Test("published readings leave the command registers as written")
    func publishKeepsCommands() throws {
        var profile = TestProfiles.sungrow()
        profile.signals.append(TestProfiles.register("ems_mode", .state, 13049))
        var device = SimulatedProfiledInverter(profile: profile)
        try Self.command(&device, watts: 1000, at: 0)
        var state = ProfiledDeviceState()
        state.activePowerW = 1000
        state.stateCode = 7
        device.publish(state)
        #expect(device.image[.holding, 13049] == 3)
        #expect(try device.read(.input, at: 5213, count: 2, now: Self.at(1)) == [1000, 0])
        #expect(throws: DeviceError.self) { try device.write(at: 65535, [1, 2], now: Self.at(1)) }
    }
}
