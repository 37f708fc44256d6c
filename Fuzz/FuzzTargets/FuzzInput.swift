/// Reads a fuzzer's bytes as the values a harness needs; past the end every read is zero, so a
/// short input is still a whole (if dull) case.
public struct FuzzInput {
    let bytes: [UInt8]
    var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isEmpty: Bool { offset >= bytes.count }
    public var remaining: Int { max(0, bytes.count - offset) }

    public mutating func u8() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u16() -> UInt16 { UInt16(u8()) << 8 | UInt16(u8()) }

    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    public mutating func rest() -> [UInt8] { take(remaining) }

    /// The rest as big-endian 16-bit words (a trailing odd byte is dropped).
    public mutating func words() -> [UInt16] {
        var words: [UInt16] = []
        words.reserveCapacity(remaining / 2)
        while remaining >= 2 { words.append(u16()) }
        return words
    }
}

/// Serialises words big-endian: how a seed register image becomes fuzzer bytes.
func bytes(of words: [UInt16]) -> [UInt8] { words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } }
