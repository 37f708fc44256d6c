public import BessBase
public import ControlCore
public import Fieldbus

/// A hybrid inverter or PCS driven by its profile's commands, as the plant simulates it: the start
/// sequence's registers select the commanded mode, the setpoint register(s) move its power (signed, or
/// a direction and a magnitude), and its fallback acts without bessd:
/// - `watchdog`: the register counts down by itself, a second at a time, from what was last written;
///   at 0 the device leaves the commanded mode (the profile's stop sequence is applied to its
///   registers, as a Sungrow in External EMS mode drops to mode 0 and "stop") and its power goes to 0;
/// - `traffic_timeout`: no request at all (read or write) for the register's seconds (the profile's
///   when never written) → the same;
/// - `revert_timer`: the register's value ÷ scale seconds after it was last written → the same;
/// - `time_slot`: `seconds` after the last setpoint write → the same.
/// After a fallback the power stays 0 until a setpoint or start register is written again; outside
/// the commanded mode it is 0 whatever the setpoint says.
///
/// A value type with an injected clock (`now` on every call): a test steps it without sleeping.
public struct SimulatedProfiledInverter: Sendable {
    public let profile: DeviceProfile
    /// The registers it holds: commands as written (the watchdog's countdown in its register) and
    /// readings as last published.
    public private(set) var image = ProfiledRegisterImage()
    /// True once the fallback acted, until bessd commands again.
    public private(set) var fellBack = false
    /// How many times the fallback acted.
    public private(set) var fallbacks: UInt64 = 0
    /// Requests served (reads and writes).
    public private(set) var requests: UInt64 = 0
    /// Holding registers the device keeps as written (never overwritten by published readings).
    public let commandRegisters: Set<Int>
    private var watchdogWritten: (at: MonotonicInstant, seconds: Int)?
    private var lastTraffic: MonotonicInstant?
    private var deadline: MonotonicInstant?

    public init(profile: DeviceProfile) {
        self.profile = profile
        var registers = Set<Int>()
        if let c = profile.commands {
            for write in c.start + c.stop { registers.insert(write.address) }
            registers.formUnion(Self.setpointRegisters(c.setpoint))
            if let address = Self.fallbackRegister(c.fallback) { registers.insert(address) }
        }
        commandRegisters = registers
    }

    /// True while every register of the start sequence holds its start value (no start sequence: always).
    public var inCommandedMode: Bool {
        guard let start = profile.commands?.start else { return false }
        return start.allSatisfy { image[.holding, $0.address] == $0.value }
    }

    /// The power the device is commanded to now, W (+ = discharge): the setpoint while in the commanded
    /// mode and not fallen back, else 0.
    public var commandedW: Double {
        guard let commands = profile.commands, inCommandedMode, !fellBack else { return 0 }
        return Self.setpointW(commands.setpoint, image)
    }

    /// Seconds left on the watchdog as its register shows them (nil: no watchdog, or never written).
    public var watchdogRemaining: Int? {
        guard case .watchdog(let address, _) = profile.commands?.fallback, watchdogWritten != nil else { return nil }
        return Int(image[.holding, address])
    }

    /// A read request: `count` registers of `table` from `address`; it counts as traffic.
    public mutating func read(_ table: ModbusTable, at address: Int, count: Int, now: MonotonicInstant) throws(DeviceError) -> [UInt16] {
        traffic(now)
        return try image.read(table, at: address, count: count)
    }

    /// A write request (FC 06 or 16) to holding registers from `address`: applied, and the timers
    /// it arms restarted.
    public mutating func write(at address: Int, _ values: [UInt16], now: MonotonicInstant) throws(DeviceError) {
        guard (1...123).contains(values.count), address >= 0, address + values.count <= 0x10000 else {
            throw DeviceError(.exception(2), message: "write of \(values.count) registers at \(address)")
        }
        traffic(now)
        for (i, value) in values.enumerated() { image[.holding, address + i] = value }
        written(Set(address..<address + values.count), now: now)
    }

    /// Registers `addresses` were written at `now` (by `write`, or by a server that applied them to
    /// the image itself): re-arms what they arm, and a setpoint or start write ends a fallback.
    public mutating func written(_ addresses: Set<Int>, now: MonotonicInstant) {
        guard let commands = profile.commands else { return }
        let setpoint = Self.setpointRegisters(commands.setpoint)
        if !addresses.isDisjoint(with: setpoint) || commands.start.contains(where: { addresses.contains($0.address) }) {
            fellBack = false
        }
        switch commands.fallback {
        case .watchdog(let address, _):
            if addresses.contains(address) { watchdogWritten = (now, Int(image[.holding, address])) }
        case .revertTimer(let address, let scale):
            if addresses.contains(address) {
                let raw = Double(image[.holding, address])
                let seconds = scale != 0 && scale.isFinite ? raw / scale : 0
                deadline = seconds > 0 ? now + .milliseconds(Int64(min(seconds, 1e9) * 1000)) : nil
            }
        case .timeSlot(let seconds):
            if !addresses.isDisjoint(with: setpoint) { deadline = now + .seconds(Int64(seconds)) }
        case .trafficTimeout:
            break
        }
    }

    /// Any request at `now` (a server calls this for every request it answers).
    public mutating func traffic(_ now: MonotonicInstant) {
        requests &+= 1
        lastTraffic = now
    }

    /// Advances the device's own timers to `now`: counts the watchdog register down and falls back
    /// when a timer has run out. Returns the commanded power, W.
    @discardableResult
    public mutating func step(now: MonotonicInstant) -> Double {
        guard let commands = profile.commands else { return 0 }
        var expired = false
        switch commands.fallback {
        case .watchdog(let address, _):
            if let written = watchdogWritten {
                let elapsed = Int(max(0, now.seconds(since: written.at)).rounded(.down))
                let remaining = max(0, written.seconds - elapsed)
                image[.holding, address] = UInt16(remaining)
                if remaining == 0 {
                    watchdogWritten = nil
                    expired = true
                }
            }
        case .trafficTimeout(let address, let seconds):
            let configured = Int(image[.holding, address])
            let timeout = configured > 0 ? configured : seconds
            if let last = lastTraffic, now.seconds(since: last) >= Double(timeout) {
                lastTraffic = nil
                expired = true
            }
        case .revertTimer, .timeSlot:
            if let due = deadline, now >= due {
                deadline = nil
                expired = true
            }
        }
        if expired { fallBack(commands) }
        return commandedW
    }

    /// Power to 0 and the stop sequence applied to the registers, as the device does on its own.
    private mutating func fallBack(_ commands: ProfileCommands) {
        guard !fellBack else { return }
        fellBack = true
        fallbacks &+= 1
        for write in commands.stop { image[.holding, write.address] = write.value }
    }

    /// Publishes the device's readings (its profile's signals) for `state`; command registers keep
    /// what was written.
    public mutating func publish(_ state: ProfiledDeviceState) {
        image.merge(ProfileEncoder.registers(profile, state, skipping: commandRegisters))
    }

    /// The holding registers a setpoint occupies.
    static func setpointRegisters(_ setpoint: ProfileCommands.Setpoint) -> Set<Int> {
        switch setpoint {
        case .signed(let address, let type, _, _):
            Set(address..<address + (type == .int16 || type == .uint16 ? 1 : 2))
        case .split(let direction, _, _, _, let magnitude, let type, _):
            Set([direction] + Array(magnitude..<magnitude + (type == .int16 || type == .uint16 ? 1 : 2)))
        }
    }

    static func fallbackRegister(_ fallback: ProfileCommands.Fallback) -> Int? {
        switch fallback {
        case .watchdog(let address, _), .trafficTimeout(let address, _), .revertTimer(let address, _): address
        case .timeSlot: nil
        }
    }

    /// The setpoint the registers hold, W (+ = discharge).
    static func setpointW(_ setpoint: ProfileCommands.Setpoint, _ image: ProfiledRegisterImage) -> Double {
        switch setpoint {
        case .signed(let address, let type, let scale, let lowWordFirst):
            return Double(value(image, address, type, lowWordFirst: lowWordFirst)) * scale
        case .split(let direction, let charge, let discharge, _, let magnitude, let type, let scale):
            let size = abs(Double(value(image, magnitude, type, lowWordFirst: false)) * scale)
            switch image[.holding, direction] {
            case charge: return -size
            case discharge: return size
            default: return 0
            }
        }
    }

    static func value(_ image: ProfiledRegisterImage, _ address: Int, _ type: ModbusSignalLocation.ValueType,
                      lowWordFirst: Bool) -> Int64 {
        let first = image[.holding, address]
        switch type {
        case .uint16: return Int64(first)
        case .int16: return Int64(Int16(bitPattern: first))
        case .uint32, .int32:
            let second = image[.holding, address + 1]
            let word = lowWordFirst ? UInt32(second) << 16 | UInt32(first) : UInt32(first) << 16 | UInt32(second)
            return type == .int32 ? Int64(Int32(bitPattern: word)) : Int64(word)
        }
    }
}
