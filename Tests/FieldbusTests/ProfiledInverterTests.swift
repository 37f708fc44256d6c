import BessBase
import ControlCore
import Fieldbus
import Testing

/// A Sungrow SH-RT as the threads of devices.md §3.1 describe it: 13049 EMS mode, 13050 direction
/// (0xAA charge, 0xBB discharge, 0xCC stop), 13051 power W, 13079 heartbeat (s) counting down by
/// itself; at 0 in mode 3 the inverter goes back to mode 0 and stops. A direct charge ↔ discharge
/// switch is ignored unless stopped first.
struct SungrowModel: InputRegisterAccess {
    var registers = InMemoryRegisters()
    /// The device's own clock, stepped by the test.
    var now = MonotonicInstant(nanoseconds: 0)
    private var heartbeatSetAt = MonotonicInstant(nanoseconds: 0)
    var heartbeatWrites: [MonotonicInstant] = []
    /// Direct reversals the model ignored.
    var ignoredReversals = 0

    static let mode = 13049, direction = 13050, power = 13051, heartbeat = 13079

    init() {
        registers.set(.holding, Self.mode, [0])
        registers.set(.holding, Self.direction, [0xCC])
        registers.set(.holding, Self.power, [0])
        registers.set(.holding, Self.heartbeat, [0])
        registers.set(.input, 5000, [100])  // 10.0 kW nominal
        registers.set(.input, 5213, [0x03E8, 0x0000])  // +1000 W, LW first
        registers.set(.input, 5241, [5000])  // 50.00 Hz
        registers.set(.input, 12999, [0x4000])  // running in External EMS mode
    }

    func holding(_ address: Int) -> UInt16 { registers.holding[address] ?? 0 }

    /// Steps the device's clock: the heartbeat counts down; at 0 mode 3 falls back to 0.
    mutating func advance(to instant: MonotonicInstant) {
        now = instant
        let left = Int64(holding(Self.heartbeat)) - (instant - heartbeatSetAt).wholeSecondsRoundedUp
        if holding(Self.mode) == 3, left <= 0 {
            registers.set(.holding, Self.mode, [0])
            registers.set(.holding, Self.direction, [0xCC])
            registers.set(.holding, Self.heartbeat, [0])
        }
    }

    mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try registers.readRegisters(at: address, count: count)
    }

    mutating func readInputRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try registers.readInputRegisters(at: address, count: count)
    }

    mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        if address == Self.heartbeat {
            heartbeatSetAt = now
            heartbeatWrites.append(now)
        }
        if address == Self.direction, let value = values.first, value != 0xCC {
            let current = holding(Self.direction)
            if current != 0xCC, current != value {
                ignoredReversals += 1
                registers.writes.append((address, values))
                return
            }
        }
        try registers.writeRegisters(at: address, values)
    }
}

@Suite("Profiled inverter")
struct ProfiledInverterTests {
    let t0 = MonotonicInstant(nanoseconds: 0)

    static func inverter(_ name: String, transport: ModbusProfileTransport = ModbusProfileTransport(link: .tcp, defaultUnitID: 1),
                         signals: [ProfileSignal], alarms: [ProfileAlarm] = [], groups: [ProfileGroup] = [],
                         commands: ProfileCommands?) -> DeviceProfile {
        DeviceProfile(name: name, kind: .inverter, vendor: "Test", products: [name], transport: .modbus(transport),
                      signals: signals, groups: groups, alarms: alarms, commands: commands)
    }

    /// Sungrow SH-RT in External EMS mode (devices.md §3.1): measurements in input registers,
    /// 32-bit values LW first, split setpoint, heartbeat 13079 of 20 s as the fallback.
    static let sungrow = inverter(
        "sungrow-sh-rt", transport: ModbusProfileTransport(link: .tcp, defaultUnitID: 1, lowWordFirst: true),
        signals: [
            modbusSignal("nominal_power", .ratedPower, 5000, table: .input, scale: 100),
            modbusSignal("battery_power", .activePower, 5213, .int32, table: .input, lowWordFirst: true),
            modbusSignal("grid_frequency", .frequency, 5241, table: .input, scale: 0.01),
            modbusSignal("system_state", .state, 12999, table: .input),
        ],
        alarms: [ProfileAlarm(signal: "system_state", equals: [0x0100], condition: .systemError, severity: .protection)],
        commands: ProfileCommands(
            setpoint: .split(direction: 13050, charge: 0xAA, discharge: 0xBB, stop: 0xCC, magnitude: 13051, type: .uint16, scale: 1),
            start: [RegisterWrite(address: 13049, value: 3)],
            stop: [RegisterWrite(address: 13050, value: 0xCC), RegisterWrite(address: 13049, value: 0)],
            fallback: .watchdog(address: 13079, seconds: 20)))

    @Test("Sungrow status: FC 04 5213 03E8 0000 = +1000 W, 50.00 Hz, 10 kW rated; state 0x0100 is a fault")
    func sungrowStatus() throws {
        let driver = try ProfiledInverter(profile: Self.sungrow)
        var device = SungrowModel()
        let reading = try driver.readStatus(&device)
        #expect(reading.activePower == Watts(1000))
        #expect(reading.frequency == Hertz(50))
        #expect(reading.ratedPower == Watts(10_000))
        #expect(!reading.faulted)
        #expect(reading.faultBits == 0x4000)
        #expect(device.registers.reads.allSatisfy { $0.table == .input })
        #expect(device.registers.reads == driver.readPlan)
        device.registers.set(.input, 12999, [0x0100])
        device.registers.set(.input, 5213, [0xFC18, 0xFFFF])
        let fault = try driver.readStatus(&device)
        #expect(fault.faulted && fault.faultBits == 0x0100)
        #expect(fault.activePower == Watts(-1000))
    }

    @Test("Sungrow: mode 3 once, split setpoint, heartbeat rewritten every 10 s of 20, never runs out")
    func sungrowCommand() throws {
        var driver = try ProfiledInverter(profile: Self.sungrow)
        var device = SungrowModel()
        try driver.command(Watts(3000), revert: .seconds(10), now: t0, &device)
        #expect(device.registers.writes.map(\.address) == [13049, 13079, 13050, 13051])
        #expect(device.holding(13049) == 3)
        #expect(device.holding(13050) == 0xBB)
        #expect(device.holding(13051) == 3000)
        // One command a second for a minute: the heartbeat is written at 0, 10, …, 60 s.
        for second in 1...60 {
            let now = t0 + .seconds(second)
            device.advance(to: now)
            try driver.command(Watts(3000), revert: .seconds(10), now: now, &device)
            #expect(device.holding(13049) == 3)
        }
        #expect(device.heartbeatWrites == (0...6).map { t0 + .seconds($0 * 10) })
        #expect(device.registers.writes.filter { $0.address == 13049 }.count == 1)
        // Silent for 21 s: the device falls back on its own.
        device.advance(to: t0 + .seconds(81))
        #expect(device.holding(13049) == 0 && device.holding(13050) == 0xCC)
        // Seen falling back: the next command starts again.
        driver.resetStart()
        try driver.command(Watts(2000), revert: .seconds(10), now: t0 + .seconds(82), &device)
        #expect(device.holding(13049) == 3 && device.holding(13050) == 0xBB && device.holding(13051) == 2000)
    }

    @Test("Sungrow: stop at 0 W, stop before a charge ↔ discharge reversal, the stop sequence")
    func sungrowDirection() throws {
        var driver = try ProfiledInverter(profile: Self.sungrow)
        var device = SungrowModel()
        try driver.command(Watts(3000), revert: .seconds(10), now: t0, &device)
        device.registers.writes.removeAll()
        try driver.command(Watts(-2000), revert: .seconds(10), now: t0 + .seconds(1), &device)
        #expect(device.registers.writes.map(\.address) == [13050, 13050, 13051])
        #expect(device.registers.writes.map(\.values) == [[0xCC], [0xAA], [2000]])
        #expect(device.ignoredReversals == 0)
        #expect(device.holding(13050) == 0xAA && device.holding(13051) == 2000)
        try driver.command(Watts(0), revert: .seconds(10), now: t0 + .seconds(2), &device)
        #expect(device.holding(13050) == 0xCC && device.holding(13051) == 0)
        try driver.command(Watts(1500), revert: .seconds(10), now: t0 + .seconds(3), &device)
        #expect(device.holding(13050) == 0xBB && device.holding(13051) == 1500)
        device.registers.writes.removeAll()
        try driver.stop(&device)
        #expect(device.registers.writes.map(\.address) == [13050, 13049])
        #expect(device.holding(13050) == 0xCC && device.holding(13049) == 0)
        #expect(!driver.started)
        try driver.command(Watts(1000), revert: .seconds(10), now: t0 + .seconds(4), &device)
        #expect(device.holding(13049) == 3)
    }

    /// Sinexcel PWS2-30K (devices.md §4.1): 135 target power in 0.1 kW (+ discharge), 122 power in
    /// 0.01 kW, EMS timeout 327 of 60 s fed by any traffic.
    static let sinexcel = inverter(
        "sinexcel-pws2",
        signals: [
            modbusSignal("frequency", .frequency, 107, .int16, scale: 0.01),
            modbusSignal("active_power", .activePower, 122, .int16, scale: 10),
        ],
        groups: [ProfileGroup(part: .status, presence: .required, period: .seconds(1))],
        commands: ProfileCommands(
            setpoint: .signed(address: 135, type: .int16, scale: 100, lowWordFirst: false),
            start: [RegisterWrite(address: 653, value: 1), RegisterWrite(address: 650, value: 1)],
            stop: [RegisterWrite(address: 651, value: 1)],
            fallback: .trafficTimeout(address: 327, seconds: 60)))

    @Test("Sinexcel: 135 = 0x0064 for +10.0 kW, EMS timeout 327 = 60 written once, reads every ≤ 30 s")
    func sinexcelCommand() throws {
        var driver = try ProfiledInverter(profile: Self.sinexcel)
        #expect(driver.maxPollInterval == .seconds(30))
        var device = InMemoryRegisters()
        device.set(.holding, 107, [5002])
        device.set(.holding, 122, [0xFF38])  // −2.00 kW
        let reading = try driver.readStatus(&device)
        #expect(reading.activePower == Watts(-2000))
        #expect(reading.frequency == Hertz(50.02))
        #expect(driver.readPlan == [ModbusReadBlock(table: .holding, address: 107, count: 1),
                                    ModbusReadBlock(table: .holding, address: 122, count: 1)])
        try driver.command(.kilowatts(10), revert: .seconds(10), now: t0, &device)
        #expect(device.writes.map(\.address) == [327, 653, 650, 135])
        #expect(device.writes.map(\.values) == [[60], [1], [1], [0x0064]])
        device.writes.removeAll()
        try driver.command(.kilowatts(-5), revert: .seconds(10), now: t0 + .seconds(1), &device)
        #expect(device.writes.map(\.address) == [135])
        #expect(device.writes.first?.values == [UInt16(bitPattern: -50)])
        #expect(throws: DeviceError.self) { try driver.command(.kilowatts(4000), revert: .seconds(10), now: t0 + .seconds(2), &device) }
        #expect { try ProfiledInverter(profile: Self.sinexcel, pollInterval: .seconds(40)) } throws: {
            ($0 as? ProfileError)?.code == "PROFILE_POLL_TOO_SLOW"
        }
        #expect(try ProfiledInverter(profile: Self.sinexcel, pollInterval: .seconds(30)).maxPollInterval == .seconds(30))
    }

    /// KACO blueplanet gridsave, model 64201 (devices.md §4.2) at an assumed 41000: RequestedState
    /// at +4, Watchdog at +8 (10 s here), WSetPct at +9, a 50 kW unit at SF −2 (5 W a step).
    static let kaco = inverter(
        "kaco-gridsave",
        signals: [modbusSignal("w", .activePower, 41034, .int16, scale: 10)],
        commands: ProfileCommands(
            setpoint: .signed(address: 41009, type: .int16, scale: 5, lowWordFirst: false),
            start: [RegisterWrite(address: 41004, value: 11)],
            stop: [RegisterWrite(address: 41004, value: 8)],
            fallback: .watchdog(address: 41008, seconds: 10)))

    @Test("KACO 64201: the watchdog is rewritten once half its 10 s have passed, not sooner")
    func kacoWatchdog() throws {
        var driver = try ProfiledInverter(profile: Self.kaco)
        #expect(driver.maxPollInterval == nil)
        var device = InMemoryRegisters()
        for ms in stride(from: 0, through: 12_000, by: 500) {
            try driver.command(Watts(25_000), revert: .seconds(10), now: t0 + .milliseconds(ms), &device)
        }
        let watchdog = device.writes.indices.filter { device.writes[$0].address == 41008 }
        #expect(watchdog.count == 3)  // at 0, 5 and 10 s
        #expect(device.writes.filter { $0.address == 41009 }.count == 25)
        #expect(device.holding[41009] == 5000)
        #expect(device.writes.first.map { $0.address == 41004 && $0.values == [11] } == true)
    }

    @Test("A revert timer is written with every command, in whole seconds rounded up, never 0")
    func revertTimer() throws {
        let profile = Self.inverter(
            "revert", signals: [modbusSignal("p", .activePower, 10, .int16)],
            commands: ProfileCommands(setpoint: .signed(address: 20, type: .int16, scale: 1, lowWordFirst: false),
                                      fallback: .revertTimer(address: 30, scale: 10)))
        var driver = try ProfiledInverter(profile: profile)
        var device = InMemoryRegisters()
        try driver.command(Watts(100), revert: .seconds(10), now: t0, &device)
        try driver.command(Watts(-100), revert: .milliseconds(300), now: t0 + .seconds(1), &device)
        #expect(device.writes.map(\.address) == [30, 20, 30, 20])
        #expect(device.writes.map(\.values) == [[100], [100], [10], [UInt16(bitPattern: -100)]])
    }

    @Test("A time slot is opened with the start writes and opened again once half of it has passed")
    func timeSlot() throws {
        let profile = Self.inverter(
            "slot", signals: [modbusSignal("p", .activePower, 10, .int16)],
            commands: ProfileCommands(setpoint: .signed(address: 20, type: .int16, scale: 1, lowWordFirst: false),
                                      start: [RegisterWrite(address: 146, value: 0x00FF)], fallback: .timeSlot(seconds: 900)))
        var driver = try ProfiledInverter(profile: profile)
        var device = InMemoryRegisters()
        for minute in 0...15 {
            try driver.command(Watts(100), revert: .seconds(10), now: t0 + .seconds(60 * minute), &device)
        }
        let opened = device.writes.indices.filter { device.writes[$0].address == 146 }
        #expect(opened.count == 2)  // at 0 and 480 s (the first command at or past 450 s)
        #expect(device.writes.filter { $0.address == 20 }.count == 16)
    }

    @Test("ModbusDevice.profiled: discovered without a request, commanded with its state kept, released by its stop")
    func modbusDevice() throws {
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: 1), timeout: .seconds(1))
        var unit = connection.unit(1)
        var (device, found) = try ModbusDevice.discover(.profileInverter(Self.sungrow), &unit)
        #expect(connection.requestCount == 0)
        #expect(device.isProfiled && found.hasPrefix("profile sungrow-sh-rt"))
        #expect(device.pollRequest == nil)  // input registers, four reads
        var model = SungrowModel()
        try device.command(Watts(3000), revert: .seconds(10), now: t0, &model)
        try device.command(Watts(3000), revert: .seconds(10), now: t0 + .seconds(1), &model)
        #expect(model.registers.writes.filter { $0.address == 13049 }.count == 1)  // started once: the state is kept
        #expect(model.holding(13051) == 3000)
        // Power through the stateless path would skip the fallback: refused; 0 W is a stop's write.
        #expect(throws: DeviceError.self) { try device.command(Watts(1000), revert: .seconds(10), rearm: true, &model) }
        try device.command(.zero, revert: .seconds(10), rearm: true, &model)
        #expect(model.holding(13050) == 0xCC && model.holding(13051) == 0)
        try device.release(&model)
        #expect(model.holding(13049) == 0)
        try device.command(Watts(500), revert: .seconds(10), now: t0 + .seconds(2), &model)
        #expect(model.registers.writes.filter { $0.address == 13049 }.count == 3)  // start, stop, start again
        let kaco = try ModbusDevice.discover(.profileInverter(Self.kaco), &unit).device
        #expect(kaco.pollRequest?.address == 41034 && kaco.pollRequest?.count == 1)
    }

    @Test("An inverter profile without commands or active power, or a BMS profile, is refused")
    func refused() {
        var none = Self.sinexcel
        none.commands = nil
        #expect(throws: ProfileError.self) { try ProfiledInverter(profile: none) }
        var blind = Self.sinexcel
        blind.signals.removeAll { $0.quantity == .activePower }
        #expect(throws: ProfileError.self) { try ProfiledInverter(profile: blind) }
        #expect(throws: ProfileError.self) { try ProfiledInverter(profile: ProfiledModbusBMSTests.byd()) }
    }
}
