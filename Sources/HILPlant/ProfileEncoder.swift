public import ControlCore
public import Fieldbus

/// What a simulated profiled device reports, in engineering units: a BMS's values (the plant's battery
/// model as `SimulatedUnit.pylontechState` gives them, faults applied) and an inverter's.
public struct ProfiledDeviceState: Sendable, Equatable {
    public var soc = 50.0, soh = 100.0
    public var packVoltage = 51.2, packCurrent = 0.0, temperature = 25.0
    public var chargeVoltageLimit = 56.8, dischargeVoltageLimit = 46.4
    public var chargeCurrentLimit = 0.0, dischargeCurrentLimit = 0.0
    public var minCellVoltage = 3.2, maxCellVoltage = 3.2, minCellTemperature = 25.0, maxCellTemperature = 25.0
    public var chargeEnabled = true, dischargeEnabled = true, forceCharge = false
    /// Active conditions: each sets the bits (or values) of the profile's alarms of severity
    /// `protection` (`protections`) or `alarm` (`alarms`) that name it.
    public var protections: BMSConditions = [], alarms: BMSConditions = []
    /// Inverter: active power (W, + = discharge), grid frequency (Hz), rating (W), the device's state code.
    public var activePowerW = 0.0, frequencyHz = 50.0, ratedPowerW = 0.0, stateCode = 0.0

    public init() {}

    /// A BMS reporting what a Pylontech-profile BMS on the same pack sends.
    public init(bms s: PylontechBMSState) {
        soc = s.soc
        soh = s.soh
        packVoltage = s.voltage
        packCurrent = s.current
        temperature = s.temperature
        chargeVoltageLimit = s.chargeVoltageLimit
        dischargeVoltageLimit = s.dischargeVoltageLimit
        chargeCurrentLimit = s.chargeCurrentLimit
        dischargeCurrentLimit = s.dischargeCurrentLimit
        minCellVoltage = s.minCellVoltage
        maxCellVoltage = s.maxCellVoltage
        minCellTemperature = s.minCellTemperature
        maxCellTemperature = s.maxCellTemperature
        chargeEnabled = s.chargeEnabled
        dischargeEnabled = s.dischargeEnabled
        protections = s.protections
        alarms = s.alarms
    }

    /// The engineering value of `quantity` (flags as 1 or 0; power limits from the current limits at
    /// the pack's voltage).
    public func value(of quantity: ProfileQuantity) -> Double {
        switch quantity {
        case .soc, .socFine: soc
        case .soh: soh
        case .packVoltage: packVoltage
        case .packCurrent: packCurrent
        case .temperature: temperature
        case .chargeVoltageLimit: chargeVoltageLimit
        case .dischargeVoltageLimit: dischargeVoltageLimit
        case .chargeCurrentLimit: chargeCurrentLimit
        case .dischargeCurrentLimit: dischargeCurrentLimit
        case .chargePowerLimit: chargeCurrentLimit * packVoltage
        case .dischargePowerLimit: dischargeCurrentLimit * packVoltage
        case .minCellVoltage: minCellVoltage
        case .maxCellVoltage: maxCellVoltage
        case .minCellTemperature: minCellTemperature
        case .maxCellTemperature: maxCellTemperature
        case .chargeEnabled: chargeEnabled ? 1 : 0
        case .dischargeEnabled: dischargeEnabled ? 1 : 0
        case .forceCharge: forceCharge ? 1 : 0
        case .activePower: activePowerW
        case .frequency: frequencyHz
        case .ratedPower: ratedPowerW
        case .state: stateCode
        }
    }
}

/// The inverse of the profile decoders (`ProfiledCANDecoder`, `ProfiledModbusBMS`): a device state as
/// the profile's frames or registers. raw = (value − offset) / scale, rounded, clamped to the
/// signal's width and stepped off its invalid markers; an alarm's bit is set (or its `equals` value
/// written) while its condition is active at its severity. Any profile is encoded without a trap: a
/// location outside its frame or the register space is skipped.
public enum ProfileEncoder {
    /// The frames of one transmission: one per frame id the profile's CAN signals name, in the order
    /// the signals first name them, each as long as its furthest signal reaches. `omitting`: the
    /// frames carrying a signal that feeds one of these parts are not sent (a silenced group).
    public static func frames(_ profile: DeviceProfile, _ state: ProfiledDeviceState,
                              omitting: Set<ProfileGroup.Part> = []) -> [CANFrame] {
        guard case .can(let transport) = profile.transport else { return [] }
        var ids: [UInt32] = []
        var data: [UInt32: (bytes: UInt64, length: Int, silent: Bool)] = [:]
        for signal in profile.signals {
            guard case .can(let location) = signal.location,
                  let codec = try? CANSignalCodec(location, signed: signal.signed, name: signal.name) else { continue }
            let raw = rawValue(signal, profile: profile, state: state, bits: location.bits)
            var frame = data[location.frameID] ?? (0, 0, false)
            if data[location.frameID] == nil { ids.append(location.frameID) }
            codec.write(raw, into: &frame.bytes)
            frame.length = max(frame.length, codec.byteCount)
            if let part = part(of: signal, profile: profile), omitting.contains(part) { frame.silent = true }
            data[location.frameID] = frame
        }
        return ids.compactMap { id in
            guard let frame = data[id], !frame.silent else { return nil }
            return CANFrame(id: id, length: UInt8(frame.length), data: frame.bytes, isExtended: transport.extended)
        }
    }

    /// The profile's Modbus signals as register words: (table, address) → word, signals sharing a
    /// register ORed, a scale-factor register written 0 (10⁰). `skipping`: addresses of the holding
    /// table left out (an inverter's command registers, which the device keeps as written).
    public static func registers(_ profile: DeviceProfile, _ state: ProfiledDeviceState,
                                 skipping: Set<Int> = []) -> [RegisterKey: UInt16] {
        var words: [RegisterKey: UInt16] = [:]
        for signal in profile.signals {
            guard case .modbus(let location) = signal.location else { continue }
            let count = location.count
            guard location.address >= 0, location.address + count <= 0x10000 else { continue }
            if location.table == .holding, (location.address..<location.address + count).contains(where: skipping.contains) { continue }
            let bits = count * 16
            let raw = UInt64(bitPattern: rawValue(signal, profile: profile, state: state, bits: bits)) & mask(bits)
            let parts: [UInt16] = count == 1 ? [UInt16(truncatingIfNeeded: raw)]
                : location.lowWordFirst ? [UInt16(truncatingIfNeeded: raw), UInt16(truncatingIfNeeded: raw >> 16)]
                : [UInt16(truncatingIfNeeded: raw >> 16), UInt16(truncatingIfNeeded: raw)]
            for (i, word) in parts.enumerated() {
                words[RegisterKey(location.table, location.address + i), default: 0] |= word
            }
            if let sf = location.scaleFactorAddress, (0..<0x10000).contains(sf),
               !(location.table == .holding && skipping.contains(sf)) {
                words[RegisterKey(location.table, sf)] = 0
            }
        }
        return words
    }

    /// The raw value `signal` carries for `state`, in the signal's own interpretation (signed or
    /// not) and inside its `bits`.
    public static func rawValue(_ signal: ProfileSignal, profile: DeviceProfile, state: ProfiledDeviceState, bits: Int) -> Int64 {
        let width = min(max(bits, 1), 64)
        let signed = signal.signed
        let lowest: Int64 = signed ? (width == 64 ? .min : -(1 << (width - 1))) : 0
        let highest: Int64 = signed ? (width == 64 ? .max : (1 << (width - 1)) - 1) : (width >= 63 ? .max : (1 << width) - 1)
        var raw: Int64 = 0
        if let quantity = signal.quantity {
            var value = state.value(of: quantity)
            if signal.magnitude { value = abs(value) }
            raw = toRaw(value, signal, lowest: lowest, highest: highest)
        } else if let valid = signal.valid, !valid.contains(signal.offset) {
            // No quantity: the neutral value, inside the signal's valid range.
            raw = toRaw(valid.lowerBound, signal, lowest: lowest, highest: highest)
        }
        var forbidden = signal.invalidRaw
        var pinned = false
        for alarm in profile.alarms where alarm.signal == signal.name {
            let conditions = alarm.severity == .protection ? state.protections : state.alarms
            let active = conditions.contains(alarm.condition.condition)
            if let bit = alarm.bit, (0..<width).contains(bit), bit < 63 {
                if active { raw |= 1 << Int64(bit) } else if raw & (1 << Int64(bit)) != 0 { raw ^= 1 << Int64(bit) }
            } else if !alarm.equals.isEmpty {
                if active, let first = alarm.equals.first {
                    raw = first
                    pinned = true
                } else {
                    forbidden += alarm.equals
                }
            }
        }
        // An active `equals` alarm's value stands; otherwise no inactive alarm's value, no invalid marker.
        return pinned ? raw : avoiding(forbidden, raw, lowest: lowest, highest: highest)
    }

    /// (value − offset) / scale, rounded and clamped to `lowest`…`highest` (0 for a value that is not
    /// a number or a scale of 0, which the loader refuses).
    static func toRaw(_ value: Double, _ signal: ProfileSignal, lowest: Int64, highest: Int64) -> Int64 {
        guard signal.scale != 0, signal.scale.isFinite else { return 0 }
        let raw = ((value - signal.offset) / signal.scale).rounded()
        guard raw.isFinite else { return 0 }
        if raw <= Double(lowest) { return lowest }
        if raw >= Double(highest) { return highest }
        return Int64(raw)
    }

    /// `raw`, or the nearest value toward 0 (then away) that is none of `forbidden`, inside the width.
    static func avoiding(_ forbidden: [Int64], _ raw: Int64, lowest: Int64, highest: Int64) -> Int64 {
        guard forbidden.contains(raw) else { return raw }
        let step: Int64 = raw > 0 ? -1 : 1
        var candidate = raw
        for _ in 0...forbidden.count {
            candidate = candidate &+ step
            if candidate >= lowest, candidate <= highest, !forbidden.contains(candidate) { return candidate }
        }
        candidate = raw
        for _ in 0...forbidden.count {
            candidate = candidate &- step
            if candidate >= lowest, candidate <= highest, !forbidden.contains(candidate) { return candidate }
        }
        return raw
    }

    static func mask(_ bits: Int) -> UInt64 { bits >= 64 ? .max : (1 << UInt64(max(0, bits))) - 1 }

    /// The snapshot part a signal feeds: its quantity's, or `protection` for a signal an alarm reads.
    public static func part(of signal: ProfileSignal, profile: DeviceProfile) -> ProfileGroup.Part? {
        switch signal.quantity {
        case .soc, .soh, .socFine: return .status
        case .chargeVoltageLimit, .dischargeVoltageLimit, .chargeCurrentLimit, .dischargeCurrentLimit,
             .chargePowerLimit, .dischargePowerLimit: return .limits
        case .packVoltage, .packCurrent, .temperature: return .measurements
        case .minCellVoltage, .maxCellVoltage, .minCellTemperature, .maxCellTemperature: return .cells
        case .chargeEnabled, .dischargeEnabled, .forceCharge: return .requests
        case .activePower, .frequency, .ratedPower, .state, nil:
            return profile.alarms.contains { $0.signal == signal.name } ? .protection : nil
        }
    }
}

/// A register of a Modbus device: its table and PDU address.
public struct RegisterKey: Hashable, Sendable {
    public var table: ModbusTable
    public var address: Int
    public init(_ table: ModbusTable, _ address: Int) {
        self.table = table
        self.address = address
    }
}
