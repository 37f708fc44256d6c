import BessBase
import ControlCore
import Fieldbus
import HILPlant
import Testing

/// The plant's simulated profiled devices against bessd's own profile decoders and inverter driver:
/// what the encoder writes, `ProfiledCANDecoder` / `ProfiledModbusBMS` read back; what
/// `ProfiledInverter` commands, the simulated inverter obeys, and falls back from on its own.
@Suite("Profiled devices: encode → decode round trip")
struct ProfiledDeviceRoundTripTests {
    static let t = MonotonicInstant(nanoseconds: 5_000_000_000)

    /// A Modbus BMS's registers as bessd's poller reads them (holding registers, read only).
    struct BMSAccess: RegisterAccess {
        var bms: SimulatedProfiledBMS
        mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
            try bms.read(.holding, at: address, count: count)
        }
        mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
            throw DeviceError(.exception(1), message: "the BMS takes no writes")
        }
    }

    /// The simulated inverter on a manual clock, as bessd's driver reaches it.
    struct InverterAccess: InputRegisterAccess {
        var device: SimulatedProfiledInverter
        var now: MonotonicInstant
        mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
            try device.read(.holding, at: address, count: count, now: now)
        }
        mutating func readInputRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
            try device.read(.input, at: address, count: count, now: now)
        }
        mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
            try device.write(at: address, values, now: now)
        }
    }

    static func expectBMS(_ s: BMSSnapshot, _ state: ProfiledDeviceState, tolerance: Double) throws {
        let limits = try #require(s.limits?.value)
        #expect(abs(limits.chargeCurrentLimit.value - state.chargeCurrentLimit) <= tolerance)
        #expect(abs(limits.dischargeCurrentLimit.value - state.dischargeCurrentLimit) <= tolerance)
        #expect(abs((s.status?.value.soc.value ?? -1) - state.soc.rounded()) <= 0.5)
        let m = try #require(s.measurements?.value)
        #expect(abs(m.packVoltage.value - state.packVoltage) <= tolerance)
        #expect(abs(m.packCurrent.value - state.packCurrent) <= tolerance)
        #expect(abs(m.temperature.value - state.temperature) <= tolerance)
        let cells = try #require(s.cells?.value)
        #expect(abs(cells.maxCellVoltage.value - state.maxCellVoltage) <= 0.0005)
        #expect(abs(cells.minCellVoltage.value - state.minCellVoltage) <= 0.0005)
        #expect(abs(cells.maxTemperature.value - state.maxCellTemperature) <= tolerance)
        #expect(abs(cells.minTemperature.value - state.minCellTemperature) <= tolerance)
        #expect(s.protection?.value.protections == state.protections)
        #expect(s.protection?.value.alarms == state.alarms)
    }

    static func state(protections: BMSConditions, alarms: BMSConditions) -> ProfiledDeviceState {
        var s = ProfiledDeviceEncoderTests.bmsState()
        s.packVoltage = 396.4
        s.protections = protections
        s.alarms = alarms
        return s
    }

    @Test("Pylon-HV-like frames read back through ProfiledCANDecoder, each alarm bit to its condition",
          arguments: [BMSConditions.cellOvervoltage, .cellUndervoltage, .overtemperature, .undertemperature,
                      .chargeOvercurrent, .dischargeOvercurrent])
    func pylonHV(condition: BMSConditions) throws {
        let state = Self.state(protections: condition, alarms: condition == .cellOvervoltage ? [.chargeOvercurrent] : [.cellOvervoltage])
        var decoder = try ProfiledCANDecoder(profile: TestProfiles.pylonHV)
        for frame in ProfileEncoder.frames(TestProfiles.pylonHV, state) {
            #expect(decoder.ingest(frame, at: Self.t) == nil, "\(frame)")
        }
        try Self.expectBMS(decoder.snapshot, state, tolerance: 0.051)
        #expect(decoder.counters.accepted == 5)
    }

    @Test("BYD-like registers read back through ProfiledModbusBMS; a level-3 bit is a protection, level 1 an alarm",
          arguments: [BMSConditions.cellOvervoltage, .cellUndervoltage, .overtemperature, .undertemperature,
                      .chargeOvercurrent, .dischargeOvercurrent])
    func bydModbus(condition: BMSConditions) throws {
        let state = Self.state(protections: condition, alarms: condition == .cellOvervoltage ? [.cellUndervoltage] : [.cellOvervoltage])
        var bms = SimulatedProfiledBMS(profile: TestProfiles.bydC130)
        bms.publish(state)
        var access = BMSAccess(bms: bms)
        var decoder = try ProfiledModbusBMS(profile: TestProfiles.bydC130)
        try decoder.poll(&access, at: Self.t)
        var expected = state
        expected.packCurrent = (state.packCurrent * 10).rounded() / 10
        try Self.expectBMS(decoder.snapshot, expected, tolerance: 0.051)
        #expect(decoder.counters.accepted == UInt64(decoder.readPlan.count))
    }

    @Test("ProfiledInverter drives the Sungrow-like simulation: mode 3, its power; silent, it reverts to mode 0 and 0 W")
    func sungrowDriven() throws {
        let profile = TestProfiles.sungrow(heartbeat: 20)
        var driver = try ProfiledInverter(profile: profile)
        var access = InverterAccess(device: SimulatedProfiledInverter(profile: profile), now: .zero)
        var state = ProfiledDeviceState()
        // bessd commands every second for 30 s: the heartbeat is rewritten at half its value.
        for second in 0...30 {
            access.now = MonotonicInstant(nanoseconds: Int64(second) * 1_000_000_000)
            try driver.command(Watts(6000), revert: .seconds(10), now: access.now, &access)
            #expect(access.device.step(now: access.now) == 6000)
            state.activePowerW = access.device.commandedW
            access.device.publish(state)
        }
        #expect(access.device.image[.holding, 13049] == 3)
        #expect(try driver.readStatus(&access).activePower.value == 6000)
        #expect(!access.device.fellBack)
        // bessd stops talking at 30 s (its last heartbeat at 30 s at the latest): by 50 s it has fallen back.
        var fellBackAt: Int?
        for second in 31...60 where fellBackAt == nil {
            let now = MonotonicInstant(nanoseconds: Int64(second) * 1_000_000_000)
            if access.device.step(now: now) == 0 { fellBackAt = second }
        }
        let at = try #require(fellBackAt)
        #expect(at <= 50)
        #expect(access.device.image[.holding, 13049] == 0 && access.device.image[.holding, 13050] == 0xCC)
        #expect(access.device.fallbacks == 1)
        // bessd comes back: seen to fall back, it writes the start sequence again and power returns.
        driver.resetStart()
        access.now = MonotonicInstant(nanoseconds: 61_000_000_000)
        try driver.command(Watts(-4000), revert: .seconds(10), now: access.now, &access)
        #expect(access.device.step(now: access.now) == -4000)
    }
}
