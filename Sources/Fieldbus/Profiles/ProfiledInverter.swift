public import BessBase
public import ControlCore

/// An inverter or PCS driven as its profile describes it (Sungrow SH-RT in External EMS mode,
/// Sinexcel PWS2, KACO blueplanet gridsave): the status read from its signals, power commanded
/// through its setpoint with its start and stop sequences, and its fallback kept armed — a
/// watchdog rewritten at half its period, a revert timer written with every command, a traffic
/// timeout set once (bessd's polls feed it), or a time slot rewritten at half its length.
///
/// Runs on the inverter's worker thread (not the cycle); it keeps what it has written.
public struct ProfiledInverter: Sendable {
    /// Registers two signals may lie apart and still be read in one request.
    public static let defaultMaxGap = 4

    public let profile: DeviceProfile
    public let commands: ProfileCommands
    /// The reads `readStatus` makes, in order.
    public let readPlan: [ModbusReadBlock]
    /// For a traffic-timeout fallback: the longest bessd may go between two requests (half the
    /// timeout); nil for the others.
    public let maxPollInterval: Duration?

    private let table: ModbusSignalTable
    private let power: Int
    private let frequency: Int?
    private let rating: Int?
    private let state: Int?
    /// The alarms on the `state` signal: any active one is a fault.
    private let faults: [ProfileAlarm]

    /// True once the start sequence was written (until `stop` or `resetStart`).
    public private(set) var started = false
    /// When the watchdog (or the time slot) was last written.
    public private(set) var lastRefresh: MonotonicInstant?
    /// The direction last written to a split setpoint (nil: none since start).
    private var direction: UInt16?

    /// Compiles `profile` (an inverter over Modbus with an `active_power` signal and commands).
    /// `pollInterval` is how often the worker reads the device: refused when a traffic timeout
    /// needs reads more often (as is a profile group whose period is longer than half of it).
    public init(profile: DeviceProfile, pollInterval: Duration? = nil, maxGap: Int = defaultMaxGap) throws(ProfileError) {
        guard profile.kind == .inverter, case .modbus(let transport) = profile.transport else {
            throw .wrongDecoder(profile, "not an inverter over Modbus")
        }
        guard let commands = profile.commands else {
            throw .structure(profile, "no commands: power cannot be commanded")
        }
        let used: [ProfileQuantity] = [.activePower, .frequency, .ratedPower, .state]
        let signals = profile.signals.filter { $0.quantity.map(used.contains) ?? false }
        func index(_ quantity: ProfileQuantity) -> Int? { signals.firstIndex { $0.quantity == quantity } }
        guard let power = index(.activePower) else {
            throw .structure(profile, "no active_power signal")
        }
        var maxPollInterval: Duration?
        if case .trafficTimeout(_, let seconds) = commands.fallback {
            let half = Duration.seconds(seconds) / 2
            maxPollInterval = half
            let periods = profile.groups.map(\.period) + (pollInterval.map { [$0] } ?? [])
            if let slow = periods.first(where: { $0 > half }) {
                throw ProfileError(code: "PROFILE_POLL_TOO_SLOW",
                                   message: "a poll every \(slow) does not feed a \(seconds) s traffic timeout (at most \(half))")
            }
        }
        try Self.checkFallback(commands.fallback)
        self.profile = profile
        self.commands = commands
        self.maxPollInterval = maxPollInterval
        table = try ModbusSignalTable(signals, maxRegisters: transport.maxReadRegisters, maxGap: maxGap)
        readPlan = table.blocks
        self.power = power
        frequency = index(.frequency)
        rating = index(.ratedPower)
        state = index(.state)
        let stateName = state.map { signals[$0].name }
        faults = profile.alarms.filter { $0.signal == stateName }
    }

    private static func checkFallback(_ fallback: ProfileCommands.Fallback) throws(ProfileError) {
        switch fallback {
        case .watchdog(_, let seconds), .trafficTimeout(_, let seconds), .timeSlot(let seconds):
            guard seconds >= 2 else {
                throw ProfileError(code: "PROFILE_FALLBACK", message: "a fallback of \(seconds) s cannot be kept armed")
            }
        case .revertTimer(_, let scale):
            guard scale > 0, scale.isFinite else {
                throw ProfileError(code: "PROFILE_FALLBACK", message: "revert timer scale \(scale) is not positive")
            }
        }
    }

    // MARK: - Status

    /// Reads active power (+ = discharge), frequency, rating and fault state, one request per block
    /// of `readPlan`. A fault is an active alarm on the `state` signal.
    public func readStatus(_ device: inout some RegisterAccess) throws(DeviceError) -> InverterReading {
        var reads: [[UInt16]] = []
        for (b, block) in readPlan.enumerated() {
            let words = try device.readRegisters(block.table, at: block.address, count: block.count)
            try table.check(b, words)
            reads.append(words)
        }
        var values: [ModbusSignalValue?] = []
        for i in table.entries.indices { values.append(try table.decode(i) { reads[$0] }) }
        guard let watts = values[power]?.value else {
            throw DeviceError(.badResponse, message: "active power of \(profile.name) unread")
        }
        var reading = InverterReading(activePower: Watts(watts), ratedPower: rating.flatMap { values[$0] }.map { Watts($0.value) },
                                      frequency: frequency.flatMap { values[$0] }.map { Hertz($0.value) })
        if let state, let raw = values[state]?.raw {
            reading.faultBits = UInt32(truncatingIfNeeded: raw)
            reading.faulted = faults.contains { ProfiledModbusBMS.active($0, raw: raw) }
        }
        return reading
    }

    // MARK: - Commands

    /// Commands `power` (+ = discharge) at `now`: the start sequence first (once, and again after
    /// `resetStart()` or `stop`), the traffic timeout with it, the watchdog when half its period has
    /// passed since it was written (or the time slot, rewritten with the start sequence), the
    /// revert timer with every command (`revert`, whole seconds rounded up), then the setpoint. A
    /// split setpoint is stopped before it reverses between charge and discharge.
    public mutating func command(_ power: Watts, revert: Duration, now: MonotonicInstant,
                                 _ device: inout some RegisterAccess) throws(DeviceError) {
        let setpoint = try setpointWrites(power)
        let refreshDue = lastRefresh.map { now - $0 >= halfPeriod } ?? true
        if !started || (refreshDue && isTimeSlot) {
            if !started, case .trafficTimeout(let address, let seconds) = commands.fallback {
                try device.writeRegisters(at: address, [UInt16(clamping: seconds)])
            }
            for write in commands.start { try device.writeRegisters(at: write.address, [write.value]) }
            started = true
            if isTimeSlot { lastRefresh = now }
        }
        switch commands.fallback {
        case .watchdog(let address, let seconds):
            if refreshDue {
                try device.writeRegisters(at: address, [UInt16(clamping: seconds)])
                lastRefresh = now
            }
        case .revertTimer(let address, let scale):
            let seconds = Double(max(1, revert.wholeSecondsRoundedUp))
            guard let words = MappedRegister(address: address, type: .uint16, scale: 1 / scale).encode(seconds, rounding: .awayFromZero) else {
                throw DeviceError(.registerValueInvalid, message: "revert timeout \(seconds) s does not fit register \(address)")
            }
            try device.writeRegisters(at: address, words)
        case .trafficTimeout, .timeSlot:
            break
        }
        for write in setpoint.writes { try device.writeRegisters(at: write.address, write.values) }
        if let next = setpoint.direction { direction = next }
    }

    /// Writes the setpoint registers alone (no sequence, no fallback, no state): how a stop writes 0 W.
    public func writeSetpoint(_ power: Watts, _ device: inout some RegisterAccess) throws(DeviceError) {
        for write in try setpointWrites(power).writes { try device.writeRegisters(at: write.address, write.values) }
    }

    /// Writes the stop sequence; the next command starts again.
    public mutating func stop(_ device: inout some RegisterAccess) throws(DeviceError) {
        started = false
        direction = nil
        lastRefresh = nil
        for write in commands.stop { try device.writeRegisters(at: write.address, [write.value]) }
    }

    /// Makes the next command write the start sequence again (the device was seen to fall back).
    public mutating func resetStart() {
        started = false
        direction = nil
        lastRefresh = nil
    }

    private var isTimeSlot: Bool {
        if case .timeSlot = commands.fallback { return true }
        return false
    }

    /// Half the watchdog's or the time slot's period (the others refresh with every command).
    private var halfPeriod: Duration {
        switch commands.fallback {
        case .watchdog(_, let seconds), .timeSlot(let seconds): .seconds(seconds) / 2
        case .revertTimer, .trafficTimeout: .zero
        }
    }

    /// The writes that set `power`, and the direction a split setpoint is left in.
    private func setpointWrites(_ power: Watts) throws(DeviceError) -> (writes: [(address: Int, values: [UInt16])], direction: UInt16?) {
        switch commands.setpoint {
        case .signed(let address, let type, let scale, let lowWordFirst):
            let register = MappedRegister(address: address, type: Self.mapped(type), scale: scale, lowWordFirst: lowWordFirst)
            guard let words = register.encode(power.value) else {
                throw DeviceError(.registerValueInvalid, message: "setpoint \(power) does not fit register \(address)")
            }
            return ([(address, words)], nil)
        case .split(let directionAddress, let charge, let discharge, let stop, let magnitude, let type, let scale):
            let register = MappedRegister(address: magnitude, type: Self.mapped(type), scale: scale)
            guard let words = register.encode(abs(power.value)) else {
                throw DeviceError(.registerValueInvalid, message: "setpoint \(power) does not fit register \(magnitude)")
            }
            let next = words.allSatisfy({ $0 == 0 }) ? stop : power.value > 0 ? discharge : charge
            var writes: [(address: Int, values: [UInt16])] = []
            // The device ignores a direct reversal unless stopped first (devices.md §3.1).
            if let last = direction, last != stop, next != stop, last != next { writes.append((directionAddress, [stop])) }
            writes.append((directionAddress, [next]))
            writes.append((magnitude, words))
            return (writes, next)
        }
    }

    private static func mapped(_ type: ModbusSignalLocation.ValueType) -> MappedRegister.ValueType {
        switch type {
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        }
    }
}
