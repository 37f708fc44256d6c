/// A classic CAN frame (up to 8 data bytes), independent of the socket layer.
public struct CANFrame: Sendable, Hashable, CustomStringConvertible {
    /// The identifier: 11 bits for standard frames, 29 bits for extended ones.
    public var id: UInt32
    /// 29-bit identifier.
    public var isExtended: Bool
    /// Remote transmission request.
    public var isRemote: Bool
    /// An error frame reported by the controller (`CAN_ERR_FLAG`); `id` holds the error class bits.
    public var isError: Bool
    /// Data length, 0–8.
    public var length: UInt8
    /// The data bytes, byte *i* in bits 8i…8i+7 (so byte 0 is the lowest byte).
    public var data: UInt64

    public init(id: UInt32, bytes: [UInt8], isExtended: Bool = false, isRemote: Bool = false, isError: Bool = false) {
        self.id = id
        self.isExtended = isExtended
        self.isRemote = isRemote
        self.isError = isError
        length = UInt8(min(bytes.count, 8))
        var packed: UInt64 = 0
        for (i, byte) in bytes.prefix(8).enumerated() { packed |= UInt64(byte) << (8 * UInt64(i)) }
        data = packed
    }

    public init(id: UInt32, length: UInt8, data: UInt64, isExtended: Bool = false, isRemote: Bool = false,
                isError: Bool = false) {
        self.id = id
        self.length = min(length, 8)
        self.data = self.length == 8 ? data : data & ((1 << (8 * UInt64(self.length))) - 1)
        self.isExtended = isExtended
        self.isRemote = isRemote
        self.isError = isError
    }

    /// Byte `index` (0-based), 0 beyond the length.
    @inlinable public func byte(_ index: Int) -> UInt8 {
        guard index >= 0, index < Int(length) else { return 0 }
        return UInt8(truncatingIfNeeded: data >> (8 * UInt64(index)))
    }

    /// Little-endian unsigned 16-bit value at `index`.
    @inlinable public func uint16LE(_ index: Int) -> UInt16 { UInt16(byte(index)) | UInt16(byte(index + 1)) << 8 }

    /// Little-endian signed 16-bit value at `index`.
    @inlinable public func int16LE(_ index: Int) -> Int16 { Int16(bitPattern: uint16LE(index)) }

    /// The data bytes.
    public var bytes: [UInt8] { (0..<Int(length)).map(byte) }

    /// candump's compact form: `351#1402740E740ECC01` (`R` for remote frames).
    public var description: String {
        let idText = isExtended ? hex(UInt64(id), digits: 8) : hex(UInt64(id), digits: 3)
        if isRemote { return "\(idText)#R" }
        return idText + "#" + bytes.map { hex(UInt64($0), digits: 2) }.joined()
    }

    /// Parses candump's compact form (`351#1402740E740ECC01`, `1FFFFFFF#00`, `123#R`).
    public init?(candump text: Substring) {
        let parts = text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let id = UInt32(parts[0], radix: 16) else { return nil }
        let extended = parts[0].count > 3
        guard extended ? id <= 0x1FFF_FFFF : id <= 0x7FF else { return nil }
        if parts[1] == "R" {
            self.init(id: id, bytes: [], isExtended: extended, isRemote: true)
            return
        }
        let hexDigits = Array(parts[1].utf8)
        guard hexDigits.count % 2 == 0, hexDigits.count <= 16 else { return nil }
        var bytes: [UInt8] = []
        var i = 0
        while i < hexDigits.count {
            guard let byte = UInt8(String(decoding: hexDigits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            i += 2
        }
        self.init(id: id, bytes: bytes, isExtended: extended)
    }
}

func hex(_ value: UInt64, digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}
