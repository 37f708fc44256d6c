public import BessBase
public import ControlCore

/// A device on a Modbus link as bessd drives it, whatever its protocol: a SunSpec inverter, an
/// inverter by register map, a SunSpec meter or a meter by register map. The protocol dispatch lives
/// here, beside the protocols; the bus worker only says which device to drive and when.
public enum ModbusDevice: Sendable {
    case sunspec(SunSpecInverter)
    case registerMap(RegisterMapInverter)
    case meter(SunSpecMeter)
    case meterMap(MeterRegisterMap)
    /// An inverter driven by its profile (`inverter.profile`): start sequence, setpoint, fallback.
    case profiled(ProfiledInverter)

    /// What the configuration says a device is, before it has been discovered.
    public enum Kind: Sendable, Equatable {
        /// A SunSpec inverter (704 or 124), found by walking its model chain.
        case sunspecInverter
        /// An inverter driven through a configured register map.
        case registerMapInverter(RegisterMapSpec)
        /// A SunSpec meter (models 201–204), found by walking its model chain.
        case sunspecMeter
        /// A meter read through a configured register map.
        case meterMap(MeterRegisterMap)
        /// An inverter driven by its profile (compiled at discovery; no request).
        case profileInverter(DeviceProfile)
    }

    /// Discovers the device (walks a SunSpec chain; a register map needs no request) and says what
    /// was found, in a line for the journal.
    public static func discover(_ kind: Kind, _ unit: inout ModbusUnit) throws(DeviceError) -> (device: ModbusDevice, found: String) {
        switch kind {
        case .sunspecMeter:
            let meter = try SunSpecMeter.open(&unit)
            return (.meter(meter), "SunSpec meter, model \(meter.model.id)")
        case .meterMap(let map):
            return (.meterMap(map), "meter by register map, power at \(map.power.address)")
        case .registerMapInverter(let spec):
            return (.registerMap(RegisterMapInverter(spec: spec)), "register map, setpoint at \(spec.setpoint.address)")
        case .profileInverter(let profile):
            do throws(ProfileError) {
                let inverter = try ProfiledInverter(profile: profile)
                return (.profiled(inverter), "profile \(profile.name), \(inverter.readPlan.count) reads a poll")
            } catch {
                throw DeviceError(.invalidRequest, message: "profile \(profile.name): \(error)")
            }
        case .sunspecInverter:
            let inverter = try SunSpecInverter.open(&unit)
            return (.sunspec(inverter), "SunSpec models \(inverter.map.models.map(\.id)), command via \(inverter.commandPath.rawValue)")
        }
    }

    /// Reads power, frequency and fault state (a meter: W and var as the meter states them, its Hz and V).
    public func readStatus(_ c: inout some RegisterAccess) throws(DeviceError) -> InverterReading {
        switch self {
        case .sunspec(let inverter): return try inverter.readStatus(&c)
        case .registerMap(let inverter): return try inverter.readStatus(&c)
        case .profiled(let inverter): return try inverter.readStatus(&c)
        case .meter(let meter): return Self.carried(try meter.read(&c))
        case .meterMap(let map): return Self.carried(try map.read(&c))
        }
    }

    /// A meter's reading in an inverter reading's shape: W and var as the meter states them, its Hz and V.
    static func carried(_ reading: MeterReading) -> InverterReading {
        InverterReading(activePower: reading.gridPower, frequency: reading.frequency, reactivePower: reading.reactivePower,
                        voltage: reading.voltage)
    }

    /// Writes the setpoint with the revert timer (a meter takes none: nothing is written). A profiled
    /// inverter takes 0 W alone here (its setpoint registers, as a stop writes them): any other power
    /// goes through `command(_:revert:now:_:)`, which keeps its fallback armed.
    public func command(_ power: Watts, revert: Duration, rearm: Bool = true, _ c: inout some RegisterAccess) throws(DeviceError) {
        switch self {
        case .sunspec(let inverter): try inverter.command(power, revert: revert, rearm: rearm, &c)
        case .registerMap(let inverter): try inverter.command(power, revert: revert, rearm: rearm, &c)
        case .profiled(let inverter):
            guard power.value == 0 else {
                throw DeviceError(.invalidRequest, message: "\(power) to a profiled inverter without its sequence and fallback")
            }
            try inverter.writeSetpoint(power, &c)
        case .meter, .meterMap: return
        }
    }

    /// Commands `power` at `now`: a profiled inverter with its start sequence and fallback
    /// (`ProfiledInverter.command`, its state kept here); any other device as `command(_:revert:rearm:_:)`.
    public mutating func command(_ power: Watts, revert: Duration, now: MonotonicInstant, _ c: inout some RegisterAccess) throws(DeviceError) {
        guard case .profiled(var inverter) = self else { return try command(power, revert: revert, rearm: true, &c) }
        defer { self = .profiled(inverter) }
        try inverter.command(power, revert: revert, now: now, &c)
    }

    /// Writes a profiled inverter's stop sequence (its next command starts it again); nothing for the others.
    public mutating func release(_ c: inout some RegisterAccess) throws(DeviceError) {
        guard case .profiled(var inverter) = self else { return }
        defer { self = .profiled(inverter) }
        try inverter.stop(&c)
    }

    /// True for an inverter driven by its profile.
    public var isProfiled: Bool {
        if case .profiled = self { return true }
        return false
    }

    /// Re-reads the static values (nameplate, settings, scale factors) of a discovered device; the
    /// model chain is not walked again. A register map and a meter (its scale factors are in the
    /// polled span) have none.
    public func refreshed(_ c: inout ModbusUnit) throws(DeviceError) -> ModbusDevice {
        switch self {
        case .sunspec(let inverter): return .sunspec(try SunSpecInverter.open(&c, map: inverter.map))
        case .registerMap, .meter, .meterMap, .profiled: return self
        }
    }

    /// The one request a poll takes, or nil when the device needs several (a register map whose
    /// registers lie far apart).
    public var pollRequest: (address: Int, count: Int)? {
        switch self {
        case .sunspec(let inverter):
            let span = SunSpecInverter.pollSpan(inverter.measurement.id)
            return (inverter.measurement.address + span.lowerBound, span.count)
        case .registerMap(let inverter):
            return inverter.pollSpan.map { ($0.lowerBound, $0.count) }
        case .meter(let meter):
            return (meter.model.address + SunSpecMeter.pollSpan.lowerBound, SunSpecMeter.pollSpan.count)
        case .meterMap(let map):
            return map.pollSpan.map { ($0.lowerBound, $0.count) }
        case .profiled(let inverter):
            guard inverter.readPlan.count == 1, let block = inverter.readPlan.first, block.table == .holding else { return nil }
            return (block.address, block.count)
        }
    }

    /// The request that opens (`connect` false) or closes the inverter's contactor (SunSpec 123
    /// `Conn`, the open armed with `Conn_RvrtTms`); nil when the device has no way to (no model 123,
    /// a register map, a meter).
    public func connectionWrite(connect: Bool, revert: Duration) -> (address: Int, values: [UInt16])? {
        if case .sunspec(let inverter) = self { return inverter.connectionWrite(connect: connect, revert: revert) }
        return nil
    }

    /// True when bessd can open the device's contactor (SunSpec model 123).
    public var canOpen: Bool {
        if case .sunspec(let inverter) = self { return inverter.connectControl != nil && inverter.connectArmable }
        return false
    }

    /// The write requests a command makes, in order, without sending them (the write plan's input).
    public func writes(_ power: Watts, revert: Duration, rearm: Bool) throws(DeviceError) -> [(address: Int, values: [UInt16])] {
        var recorded = RecordedWrites()
        try command(power, revert: revert, rearm: rearm, &recorded)
        return recorded.writes
    }
}

/// A `RegisterAccess` that also reads input registers (function code 0x04): a `ModbusUnit`
/// (`connection.unit(id)`), or a fake in tests. Devices that keep measurements there (Sungrow) are read through it.
public protocol InputRegisterAccess: RegisterAccess {
    /// Reads `count` (≤ 125) input registers from `address`.
    mutating func readInputRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16]
}

extension RegisterAccess {
    /// Reads `count` registers of `table` from `address`: holding registers through
    /// `readRegisters(at:count:)`, input registers through `InputRegisterAccess` when the access
    /// offers it (else `MODBUS_INVALID_REQUEST`). For the profile pollers, which take any access;
    /// not for the cycle (an input read goes through an existential).
    public mutating func readRegisters(_ table: ModbusTable, at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        if table == .holding { return try readRegisters(at: address, count: count) }
        guard var access = self as? any InputRegisterAccess else {
            throw DeviceError(.invalidRequest, message: "input registers at \(address): this link reads holding registers only")
        }
        defer { if let updated = access as? Self { self = updated } }
        return try access.readInputRegisters(at: address, count: count)
    }
}
