public import BessBase
public import ControlCore

/// One register (or register pair) of a register map.
public struct MappedRegister: Sendable, Equatable {
    public enum ValueType: String, Sendable, CaseIterable { case int16, uint16, int32, uint32 }
    /// 0-based protocol address of the (first) register.
    public var address: Int
    public var type: ValueType
    /// Engineering value = raw × scale (a negative scale flips the sign convention).
    public var scale: Double
    /// For 32-bit values: true when the low word comes first.
    public var lowWordFirst: Bool

    public init(address: Int, type: ValueType, scale: Double, lowWordFirst: Bool = false) {
        self.address = address
        self.type = type
        self.scale = scale
        self.lowWordFirst = lowWordFirst
    }

    /// Registers the value occupies.
    public var count: Int { type == .int16 || type == .uint16 ? 1 : 2 }

    /// The engineering value of `words`.
    public func decode(_ words: [UInt16]) -> Double? {
        guard words.count >= count else { return nil }
        let raw: Int64
        switch type {
        case .int16: raw = Int64(Int16(bitPattern: words[0]))
        case .uint16: raw = Int64(words[0])
        case .int32, .uint32:
            let (high, low) = lowWordFirst ? (words[1], words[0]) : (words[0], words[1])
            let bits = UInt32(high) << 16 | UInt32(low)
            raw = type == .int32 ? Int64(Int32(bitPattern: bits)) : Int64(bits)
        }
        return applyScale(Double(raw))
    }

    /// raw × scale, dividing by 1/scale when that is a whole number (0.01 → ÷100) so decimal scales
    /// give the nearest double (4998 × 0.01 would give 49.980000000000004).
    func applyScale(_ raw: Double) -> Double {
        let inverse = 1 / scale
        if abs(inverse) > 1, inverse == inverse.rounded() { return raw / inverse }
        return raw * scale
    }

    func removeScale(_ value: Double) -> Double {
        let inverse = 1 / scale
        if abs(inverse) > 1, inverse == inverse.rounded() { return value * inverse }
        return value / scale
    }

    /// The registers that carry `value`, or nil when it does not fit the type. `rounding` picks the
    /// register step when `value` falls between two (a revert timeout rounds away from zero, so a
    /// coarse register never holds less time than asked, and never 0).
    public func encode(_ value: Double, rounding: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> [UInt16]? {
        guard scale != 0, value.isFinite else { return nil }
        let exact = removeScale(value)
        // A value one step holds exactly (21 s at 0.7) stays that step whatever the rounding rule:
        // binary fractions leave it a hair above (30.000000000000004), which must not round away.
        let nearest = exact.rounded()
        let raw = abs(exact - nearest) <= 1e-9 * max(1, abs(exact)) ? nearest : exact.rounded(rounding)
        let range: ClosedRange<Double> = switch type {
        case .int16: -32768...32767
        case .uint16: 0...65535
        case .int32: -2_147_483_648...2_147_483_647
        case .uint32: 0...4_294_967_295
        }
        guard range.contains(raw) else { return nil }
        switch type {
        case .int16: return [UInt16(bitPattern: Int16(raw))]
        case .uint16: return [UInt16(raw)]
        case .int32, .uint32:
            let bits = type == .int32 ? UInt32(bitPattern: Int32(raw)) : UInt32(raw)
            let words = [UInt16(bits >> 16), UInt16(bits & 0xFFFF)]
            return lowWordFirst ? words.reversed() : words
        }
    }
}

/// The registers of an inverter that does not speak SunSpec, from the configuration.
public struct RegisterMapSpec: Sendable, Equatable {
    /// Measured active power, W after scaling, + = discharge.
    public var power: MappedRegister
    /// Grid frequency, Hz after scaling (optional).
    public var frequency: MappedRegister?
    /// A status register and the raw values that mean "fault" (optional).
    public var fault: MappedRegister?
    public var faultValues: [Int64]
    /// Active-power setpoint, W after scaling, + = discharge.
    public var setpoint: MappedRegister
    /// Revert (fail-safe) timeout in seconds after scaling. Required: bessd never commands an
    /// inverter without its revert timer armed.
    public var revertTimeout: MappedRegister
    /// A register written with `enableValue` before every setpoint (optional).
    public var enable: MappedRegister?
    public var enableValue: Double
    /// The inverter's rating, if the map does not read it.
    public var rating: Watts?

    public init(power: MappedRegister, frequency: MappedRegister? = nil, fault: MappedRegister? = nil,
                faultValues: [Int64] = [], setpoint: MappedRegister, revertTimeout: MappedRegister,
                enable: MappedRegister? = nil, enableValue: Double = 1, rating: Watts? = nil) {
        self.power = power
        self.frequency = frequency
        self.fault = fault
        self.faultValues = faultValues
        self.setpoint = setpoint
        self.revertTimeout = revertTimeout
        self.enable = enable
        self.enableValue = enableValue
        self.rating = rating
    }
}

/// Mapped registers as one poll reads them: one request over `span` when the registers fit one,
/// else one request per register as each is asked for.
struct MappedRegisters {
    let block: (base: Int, words: [UInt16])?

    init(span: ClosedRange<Int>?, _ device: inout some RegisterAccess) throws(DeviceError) {
        guard let span else {
            block = nil
            return
        }
        let words = try device.readRegisters(at: span.lowerBound, count: span.count)
        guard words.count == span.count else {
            throw DeviceError(.badResponse, message: "\(words.count) registers for \(span.count) at \(span.lowerBound)")
        }
        block = (span.lowerBound, words)
    }

    func value(_ register: MappedRegister, _ device: inout some RegisterAccess) throws(DeviceError) -> Double? {
        guard let block else { return register.decode(try device.readRegisters(at: register.address, count: register.count)) }
        let start = register.address - block.base
        return register.decode(Array(block.words[start..<(start + register.count)]))
    }
}

/// An inverter driven through a configured register map.
public struct RegisterMapInverter: Sendable {
    public let spec: RegisterMapSpec

    public init(spec: RegisterMapSpec) { self.spec = spec }

    func read(_ register: MappedRegister, _ device: inout some RegisterAccess) throws(DeviceError) -> Double? {
        register.decode(try device.readRegisters(at: register.address, count: register.count))
    }

    /// The registers the poll reads when they fit one request (≤ 125 registers from the lowest to the
    /// end of the highest); nil when they are too far apart and are read one by one.
    public var pollSpan: ClosedRange<Int>? {
        let registers = [spec.power] + [spec.frequency, spec.fault].compactMap { $0 }
        let low = registers.map(\.address).min()!
        let high = registers.map { $0.address + $0.count - 1 }.max()!
        return high - low < 125 ? low...high : nil
    }

    /// Reads power, frequency and fault state: one request when they fit one (`pollSpan`).
    public func readStatus(_ device: inout some RegisterAccess) throws(DeviceError) -> InverterReading {
        let block = try MappedRegisters(span: pollSpan, &device)
        func value(_ register: MappedRegister, _ device: inout some RegisterAccess) throws(DeviceError) -> Double? {
            try block.value(register, &device)
        }
        guard let power = try value(spec.power, &device) else {
            throw DeviceError(.badResponse, message: "power register \(spec.power.address) unreadable")
        }
        let frequency = try spec.frequency.flatMap { register throws(DeviceError) in try value(register, &device) }
        var faulted = false
        var bits: UInt32 = 0
        if let register = spec.fault, let value = try value(register, &device) {
            let raw = Int64(register.removeScale(value).rounded())
            faulted = spec.faultValues.contains(raw)
            bits = UInt32(truncatingIfNeeded: raw)
        }
        return InverterReading(activePower: Watts(power), ratedPower: spec.rating, faulted: faulted, faultBits: bits,
                               frequency: frequency.map(Hertz.init))
    }

    /// Writes the revert timeout, the enable value and the setpoint, in that order; without `rearm`
    /// (a changed setpoint between refreshes of the revert timer) only the setpoint.
    public func command(_ power: Watts, revert: Duration, rearm: Bool = true, _ device: inout some RegisterAccess)
        throws(DeviceError)
    {
        // Away from zero: with a register step coarser than the timeout (scale 100 for 30 s), the
        // nearest step would be 0, which devices read as "no revert" (found by make fuzz).
        let revertSeconds = revert.wholeSecondsRoundedUp  // whole seconds in the register, never fewer than planned
        guard let revertWords = spec.revertTimeout.encode(Double(max(1, revertSeconds)), rounding: .awayFromZero) else {
            throw DeviceError(.registerValueInvalid, message: "revert timeout \(revertSeconds) s does not fit its register")
        }
        guard let setpoint = spec.setpoint.encode(power.value) else {
            throw DeviceError(.registerValueInvalid, message: "setpoint \(power) does not fit its register")
        }
        if rearm {
            try device.writeRegisters(at: spec.revertTimeout.address, revertWords)
            if let enable = spec.enable, let words = enable.encode(spec.enableValue) {
                try device.writeRegisters(at: enable.address, words)
            }
        }
        try device.writeRegisters(at: spec.setpoint.address, setpoint)
    }
}
