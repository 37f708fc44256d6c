/// Reads (and writes) one CAN signal's raw value, DBC style: `bits` bits from `byte`/`bit`, little
/// endian (Intel: the least significant bit at `bit` of `byte`, counting up) or big endian (Motorola,
/// byte aligned: the most significant byte at `byte`), unsigned or two's complement.
///
/// Bounded: a read never looks past the frame's length; a frame that ends before the signal's last
/// byte is `.shortFrame`. The checks of the location happen once, at init.
public struct CANSignalCodec: Sendable, Equatable {
    public let location: CANSignalLocation
    public let signed: Bool
    /// The data bytes a frame must carry for the signal to be read (its last byte + 1).
    public let byteCount: Int
    /// All ones over the signal's width.
    public let mask: UInt64
    private let shift: UInt64

    /// Checks the location: `bits` 1–64, `byte` and `bit` 0–7, the signal inside 8 bytes, a big-endian
    /// signal byte aligned.
    public init(_ location: CANSignalLocation, signed: Bool, name: String = "") throws(ProfileError) {
        let start = location.byte * 8 + location.bit
        guard (1...64).contains(location.bits), (0...7).contains(location.byte), (0...7).contains(location.bit),
              start + location.bits <= 64
        else {
            throw .signal(name, "byte \(location.byte), bit \(location.bit), \(location.bits) bits lie outside the 8 data bytes")
        }
        if location.order == .big, location.bit != 0 || location.bits % 8 != 0 {
            throw .signal(name, "a big-endian signal must start at bit 0 and span whole bytes")
        }
        self.location = location
        self.signed = signed
        byteCount = (start + location.bits + 7) / 8
        mask = location.bits == 64 ? ~0 : (1 << UInt64(location.bits)) - 1
        shift = UInt64(start)
    }

    /// The signal's bits as sent, unsigned (the pattern invalid markers and alarm bits are matched on).
    public func pattern(in frame: CANFrame) throws(FrameRejection) -> UInt64 {
        guard Int(frame.length) >= byteCount else { throw .shortFrame }
        return unchecked(frame.data)
    }

    /// The raw value: the pattern, sign-extended when the signal is signed.
    public func raw(in frame: CANFrame) throws(FrameRejection) -> Int64 {
        value(ofPattern: try pattern(in: frame))
    }

    /// The raw value of a pattern: sign-extended from the signal's width when signed. An unsigned
    /// 64-bit pattern above `Int64.max` keeps its bits.
    @inlinable public func value(ofPattern pattern: UInt64) -> Int64 {
        guard signed, location.bits < 64 else { return Int64(bitPattern: pattern) }
        let unused = UInt64(64 - location.bits)
        return Int64(bitPattern: pattern << unused) >> Int64(unused)
    }

    /// The raw value as a number (an unsigned 64-bit pattern stays positive).
    @inlinable public func number(ofPattern pattern: UInt64) -> Double {
        signed ? Double(value(ofPattern: pattern)) : Double(pattern)
    }

    /// `raw` truncated to the signal's width as its pattern: `-32768` and `0x8000` are the same
    /// 16-bit pattern. Nil when `raw` is neither a signed nor an unsigned value of that width.
    public func pattern(ofRaw raw: Int64) -> UInt64? {
        let bits = location.bits
        guard bits < 64 else { return UInt64(bitPattern: raw) }
        let fitsUnsigned = raw >= 0 && UInt64(raw) <= mask
        let fitsSigned = raw >= -(Int64(1) << (bits - 1)) && raw < (Int64(1) << (bits - 1))
        guard fitsUnsigned || fitsSigned else { return nil }
        return UInt64(bitPattern: raw) & mask
    }

    /// Writes `raw` (truncated to the signal's width) into `data`, the frame's packed bytes; the
    /// encoder of a simulated device or a test vector.
    public func write(_ raw: Int64, into data: inout UInt64) {
        var bits = UInt64(bitPattern: raw) & mask
        if location.order == .big { bits = (bits << UInt64(64 - location.bits)).byteSwapped }
        data = data & ~(mask << shift) | bits << shift
    }

    @inline(__always) private func unchecked(_ data: UInt64) -> UInt64 {
        let bits = data >> shift & mask
        guard location.order == .big else { return bits }
        // The signal's bytes read little endian, reversed: the first byte is the most significant.
        return bits.byteSwapped >> UInt64(64 - location.bits)
    }
}
