/// A physical quantity stored as a `Double` in its SI (or stated) unit.
///
/// Most field bugs in this domain are unit, scale and sign bugs, so values cross module boundaries in
/// typed wrappers: a `Watts` cannot be passed where `Volts` is expected. Arithmetic inside a formula
/// works on `.value`.
public protocol PhysicalQuantity: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// The unit symbol used in messages.
    static var symbol: String { get }
    /// The magnitude in the quantity's unit.
    var value: Double { get set }
    /// Creates a quantity from a magnitude in its unit.
    init(_ value: Double)
}

extension PhysicalQuantity {
    @inlinable public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }
    @inlinable public static func + (lhs: Self, rhs: Self) -> Self { Self(lhs.value + rhs.value) }
    @inlinable public static func - (lhs: Self, rhs: Self) -> Self { Self(lhs.value - rhs.value) }
    @inlinable public static func * (lhs: Self, rhs: Double) -> Self { Self(lhs.value * rhs) }
    @inlinable public static prefix func - (operand: Self) -> Self { Self(-operand.value) }
    /// Zero of this quantity.
    @inlinable public static var zero: Self { Self(0) }
    /// True when the magnitude is neither NaN nor infinite.
    @inlinable public var isFinite: Bool { value.isFinite }
    public var description: String { "\(value) \(Self.symbol)" }
}

/// Active power in watts. Sign convention everywhere in bessd: **+ = discharge / export**.
public struct Watts: PhysicalQuantity {
    public static let symbol = "W"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
    /// Power from kilowatts.
    @inlinable public static func kilowatts(_ kw: Double) -> Watts { Watts(kw * 1000) }
    /// The power in kilowatts.
    @inlinable public var kilowatts: Double { value / 1000 }
}

/// Electric potential in volts.
public struct Volts: PhysicalQuantity {
    public static let symbol = "V"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
}

/// Electric current in amperes.
public struct Amps: PhysicalQuantity {
    public static let symbol = "A"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
}

/// Temperature in degrees Celsius.
public struct Celsius: PhysicalQuantity {
    public static let symbol = "°C"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
}

/// Frequency in hertz.
public struct Hertz: PhysicalQuantity {
    public static let symbol = "Hz"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
    /// The frequency rounded to whole millihertz, the resolution the droop law works in, so that a
    /// frequency exactly on a deadband edge is decided the same way on every machine. `nil` for a
    /// non-finite or non-positive frequency.
    @inlinable public var millihertz: Int64? {
        guard value.isFinite, value > 0, value < 1e6 else { return nil }
        return Int64((value * 1000).rounded())
    }
}

/// A ratio in percent (0–100 for state of charge).
public struct Percent: PhysicalQuantity {
    public static let symbol = "%"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
}

/// Energy in watt-hours.
public struct WattHours: PhysicalQuantity {
    public static let symbol = "Wh"
    public var value: Double
    @inlinable public init(_ value: Double) { self.value = value }
    /// The energy in kilowatt-hours.
    @inlinable public var kilowattHours: Double { value / 1000 }
}

/// Small numeric helpers the control law needs without importing the C math library.
public enum ControlMath {
    /// e^x for finite x, accurate to a few ulps; saturates to 0 or +inf outside the double range.
    public static func exp(_ x: Double) -> Double {
        if x.isNaN { return .nan }
        if x < -745 { return 0 }
        if x > 709 { return .infinity }
        // Range reduction: x = n·ln2 + r with |r| ≤ ln2/2, then e^x = 2^n · e^r.
        // ln 2 split in two (Cody–Waite) so that n·ln2 is exact enough for large |x|.
        let ln2Hi = 6.931_471_803_691_238_164_90e-01
        let ln2Lo = 1.908_214_929_270_587_700_02e-10
        let n = (x / 0.693_147_180_559_945_309_417).rounded()
        let r = (x - n * ln2Hi) - n * ln2Lo
        // Taylor series for e^r; 18 terms are far past double precision for |r| ≤ 0.35.
        var term = 1.0
        var sum = 1.0
        for k in 1...18 {
            term *= r / Double(k)
            sum += term
        }
        return scaleByPowerOfTwo(sum, Int(n))
    }

    static func scaleByPowerOfTwo(_ value: Double, _ exponent: Int) -> Double {
        var result = value
        var e = exponent
        // Step in chunks so intermediate powers of two stay representable.
        while e > 1000 { result *= Double(sign: .plus, exponent: 1000, significand: 1); e -= 1000 }
        while e < -1000 { result *= Double(sign: .plus, exponent: -1000, significand: 1); e += 1000 }
        return result * Double(sign: .plus, exponent: e, significand: 1)
    }

    /// ln 10: the time constant of a first-order response is its 90 % time divided by ln 10.
    public static let ln10 = 2.302_585_092_994_045_684_018

    /// `value` clamped to `[lower, upper]`; NaN becomes `lower` if `lower` ≥ 0, else 0 clamped.
    @inlinable public static func clamp(_ value: Double, _ lower: Double, _ upper: Double) -> Double {
        guard value.isFinite else {
            if value == .infinity { return upper }
            if value == -.infinity { return lower }
            return min(max(0, lower), upper)
        }
        return min(max(value, lower), upper)
    }
}
