public import BessBase
import ControlCore

/// IEEE C37.118.2-2011 frames: the common header, CHK, and the bounded check every frame passes
/// before its body is read. Pure: no sockets, no clock, no Foundation.

/// CRC-CCITT as C37.118.2 computes CHK: polynomial x¹⁶ + x¹² + x⁵ + 1 (0x1021), initial value 0xFFFF,
/// no reflection, no final XOR (Python's `binascii.crc_hqx(data, 0xFFFF)`).
public func crcCCITT(_ bytes: some Sequence<UInt8>) -> UInt16 {
    var crc: UInt16 = 0xFFFF
    for byte in bytes {
        crc = (crc << 8) ^ crcTable[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
    }
    return crc
}

/// The CRC of each leading byte, shifted through the polynomial eight times.
private let crcTable: [UInt16] = (0..<256).map { index in
    var value = UInt16(index) << 8
    for _ in 0..<8 {
        value = value & 0x8000 != 0 ? (value << 1) ^ 0x1021 : value << 1
    }
    return value
}

/// The frame type in SYNC bits 6–4.
public enum FrameType: UInt8, Sendable, CaseIterable {
    /// Measurements (0).
    case data = 0
    /// A human-readable header (1).
    case header = 1
    /// CFG-1: what the PMU can report (2).
    case configuration1 = 2
    /// CFG-2: what the PMU reports now (3).
    case configuration2 = 3
    /// A command from the PDC (4).
    case command = 4
    /// CFG-3: the 2011 extended configuration (5).
    case configuration3 = 5
}

/// The 14 bytes every frame begins with.
public struct FrameHeader: Hashable, Sendable {
    /// What the frame carries.
    public var type: FrameType
    /// SYNC bits 3–0: 1 for C37.118-2005, 2 for C37.118.2-2011.
    public var version: UInt8
    /// FRAMESIZE: the whole frame's length in bytes, CHK included.
    public var frameSize: Int
    /// IDCODE: the data stream's (or, in a command, the destination's) number.
    public var idcode: UInt16
    /// SOC: seconds since 1970-01-01 00:00 UTC.
    public var secondOfCentury: UInt32
    /// FRACSEC bits 23–0: the fraction of the second, in units of 1/TIME_BASE.
    public var fractionOfSecond: UInt32
    /// FRACSEC bits 31–24: the time-quality byte (bit 6 leap second direction, 5 occurred, 4 pending,
    /// 3–0 the message time quality code).
    public var timeQuality: UInt8

    /// A header; `fractionOfSecond` keeps its low 24 bits.
    public init(type: FrameType, version: UInt8 = 1, frameSize: Int, idcode: UInt16, secondOfCentury: UInt32,
                fractionOfSecond: UInt32, timeQuality: UInt8 = 0) {
        self.type = type
        self.version = version
        self.frameSize = frameSize
        self.idcode = idcode
        self.secondOfCentury = secondOfCentury
        self.fractionOfSecond = fractionOfSecond & 0x00FF_FFFF
        self.timeQuality = timeQuality
    }

    /// The message time quality code (FRACSEC bits 27–24): 0 locked to UTC, 0xF clock failed.
    public var messageTimeQuality: UInt8 { timeQuality & 0x0F }

    /// The frame's time in seconds since 1970, with the configuration's TIME_BASE.
    public func seconds(timeBase: UInt32) -> Double {
        Double(secondOfCentury) + Double(fractionOfSecond) / Double(max(timeBase, 1))
    }

    /// The 14 header bytes, big-endian.
    public var bytes: [UInt8] {
        var out: [UInt8] = [0xAA, type.rawValue << 4 | version & 0x0F]
        out.appendBigEndian(UInt16(truncatingIfNeeded: frameSize))
        out.appendBigEndian(idcode)
        out.appendBigEndian(secondOfCentury)
        out.appendBigEndian(UInt32(timeQuality) << 24 | fractionOfSecond)
        return out
    }
}

/// The decoder's bounds: nothing a PMU sends makes it read or allocate beyond them.
public struct FrameLimits: Hashable, Sendable {
    /// The largest FRAMESIZE accepted (at most 65535, the field's range).
    public var maximumFrameSize: Int
    /// The most PMUs one configuration may list.
    public var maximumPMUs: Int
    /// The most phasors, analogs or digital words one PMU may list.
    public var maximumChannelsPerKind: Int

    /// Bounds; the defaults hold a PDC stream of a few dozen PMUs.
    public init(maximumFrameSize: Int = 65535, maximumPMUs: Int = 64, maximumChannelsPerKind: Int = 256) {
        self.maximumFrameSize = min(maximumFrameSize, 65535)
        self.maximumPMUs = maximumPMUs
        self.maximumChannelsPerKind = maximumChannelsPerKind
    }
}

/// A frame whose SYNC, FRAMESIZE and CHK are checked: its header and the bytes between header and CHK.
public struct Frame: Sendable {
    /// The common header.
    public var header: FrameHeader
    /// The bytes after the header and before CHK.
    public var body: ArraySlice<UInt8>

    /// The smallest frame: 14 header bytes and 2 of CHK.
    public static let minimumSize = 16

    /// The length of the frame at the start of a stream buffer: nil while fewer than 4 bytes are
    /// there, else FRAMESIZE once SYNC and FRAMESIZE are checked (a reader waits for that many bytes).
    public static func size(atStartOf bytes: some Collection<UInt8>, limits: FrameLimits = FrameLimits()) throws(SynchrophasorError) -> Int? {
        let prefix = Array(bytes.prefix(4))
        guard prefix.count == 4 else { return nil }
        _ = try checkSync(prefix[0], prefix[1])
        let size = Int(prefix[2]) << 8 | Int(prefix[3])
        try checkSize(size, limits: limits)
        return size
    }

    /// Decodes one whole frame: exactly `bytes`, checked before anything else is read.
    public init(decoding bytes: ArraySlice<UInt8>, limits: FrameLimits = FrameLimits()) throws(SynchrophasorError) {
        guard bytes.count >= Self.minimumSize else {
            throw SynchrophasorError(.frameTooShort, message: "\(bytes.count) bytes, a frame has at least \(Self.minimumSize)")
        }
        let start = bytes.startIndex
        let (type, version) = try Self.checkSync(bytes[start], bytes[start + 1])
        let size = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        try Self.checkSize(size, limits: limits)
        guard size <= bytes.count else {
            throw SynchrophasorError(.frameTooShort, message: "FRAMESIZE \(size) but only \(bytes.count) bytes")
        }
        guard size == bytes.count else {
            throw SynchrophasorError(.frameSizeInvalid, message: "FRAMESIZE \(size) but \(bytes.count) bytes given")
        }
        let end = start + size
        let check = UInt16(bytes[end - 2]) << 8 | UInt16(bytes[end - 1])
        let computed = crcCCITT(bytes[start..<(end - 2)])
        guard check == computed else {
            throw SynchrophasorError(.crcMismatch, message: "CHK \(hex(check)), computed \(hex(computed))")
        }
        var reader = ByteReader(bytes[(start + 4)..<(end - 2)], error: .frameTooShort)
        let idcode = try reader.uint16()
        let soc = try reader.uint32()
        let fracsec = try reader.uint32()
        header = FrameHeader(type: type, version: version, frameSize: size, idcode: idcode, secondOfCentury: soc,
                             fractionOfSecond: fracsec, timeQuality: UInt8(fracsec >> 24))
        body = reader.remaining
    }

    /// Decodes one whole frame from an array.
    public init(decoding bytes: [UInt8], limits: FrameLimits = FrameLimits()) throws(SynchrophasorError) {
        try self.init(decoding: bytes[...], limits: limits)
    }

    /// The frame's bytes: the header (its FRAMESIZE set from the body), the body and CHK.
    public static func encode(type: FrameType, version: UInt8 = 1, idcode: UInt16, secondOfCentury: UInt32,
                              fractionOfSecond: UInt32, timeQuality: UInt8 = 0, body: some Collection<UInt8>) -> [UInt8] {
        let header = FrameHeader(type: type, version: version, frameSize: minimumSize + body.count, idcode: idcode,
                                 secondOfCentury: secondOfCentury, fractionOfSecond: fractionOfSecond, timeQuality: timeQuality)
        var out = header.bytes
        out.append(contentsOf: body)
        out.appendBigEndian(crcCCITT(out))
        return out
    }

    private static func checkSync(_ first: UInt8, _ second: UInt8) throws(SynchrophasorError) -> (FrameType, UInt8) {
        guard first == 0xAA, second & 0x80 == 0 else {
            throw SynchrophasorError(.syncInvalid, message: "SYNC \(hex(UInt16(first) << 8 | UInt16(second))), expected 0xAA then a type and version")
        }
        guard let type = FrameType(rawValue: (second >> 4) & 0x07) else {
            throw SynchrophasorError(.frameTypeUnknown, message: "frame type \((second >> 4) & 0x07) in SYNC")
        }
        let version = second & 0x0F
        guard version == 1 || version == 2 else {
            throw SynchrophasorError(.versionUnsupported, message: "frame version \(version), only 1 (2005) and 2 (2011) are read")
        }
        return (type, version)
    }

    private static func checkSize(_ size: Int, limits: FrameLimits) throws(SynchrophasorError) {
        guard size >= minimumSize, size <= limits.maximumFrameSize else {
            throw SynchrophasorError(.frameSizeInvalid, message: "FRAMESIZE \(size) outside \(minimumSize)…\(limits.maximumFrameSize)")
        }
    }
}

/// A command to the PMU (C37.118.2-2011 Table 12).
public enum Command: UInt16, Sendable, CaseIterable {
    /// Turn off transmission of data frames.
    case stopData = 1
    /// Turn on transmission of data frames.
    case startData = 2
    /// Send the header frame.
    case sendHeader = 3
    /// Send CFG-1.
    case sendConfiguration1 = 4
    /// Send CFG-2.
    case sendConfiguration2 = 5
    /// Send CFG-3.
    case sendConfiguration3 = 6

    /// The command frame to the PMU whose IDCODE is `idcode`, stamped with the sender's time.
    public func frame(idcode: UInt16, secondOfCentury: UInt32, fractionOfSecond: UInt32 = 0, version: UInt8 = 1) -> [UInt8] {
        var body: [UInt8] = []
        body.appendBigEndian(rawValue)
        return Frame.encode(type: .command, version: version, idcode: idcode, secondOfCentury: secondOfCentury,
                            fractionOfSecond: fractionOfSecond, body: body)
    }
}

/// `0x1A2B`.
func hex(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
}

extension [UInt8] {
    mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian(_ value: UInt32) {
        appendBigEndian(UInt16(value >> 16))
        appendBigEndian(UInt16(truncatingIfNeeded: value))
    }
}

/// Big-endian fields off a slice; running out is the error it was made with.
struct ByteReader {
    private(set) var remaining: ArraySlice<UInt8>
    let error: SynchrophasorErrorCode

    init(_ bytes: ArraySlice<UInt8>, error: SynchrophasorErrorCode) {
        remaining = bytes
        self.error = error
    }

    var count: Int { remaining.count }

    mutating func take(_ count: Int, _ what: @autoclosure () -> String = "field") throws(SynchrophasorError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining.count else {
            throw SynchrophasorError(error, message: "\(what()) needs \(count) bytes, \(remaining.count) left")
        }
        let field = remaining.prefix(count)
        remaining = remaining.dropFirst(count)
        return field
    }

    mutating func uint8(_ what: @autoclosure () -> String = "field") throws(SynchrophasorError) -> UInt8 {
        let field = try take(1, what())
        return field[field.startIndex]
    }

    mutating func uint16(_ what: @autoclosure () -> String = "field") throws(SynchrophasorError) -> UInt16 {
        let field = try take(2, what())
        return UInt16(field[field.startIndex]) << 8 | UInt16(field[field.startIndex + 1])
    }

    mutating func uint32(_ what: @autoclosure () -> String = "field") throws(SynchrophasorError) -> UInt32 {
        let high = try uint16(what())
        return UInt32(high) << 16 | UInt32(try uint16(what()))
    }

    mutating func float32(_ what: @autoclosure () -> String = "field") throws(SynchrophasorError) -> Float {
        Float(bitPattern: try uint32(what()))
    }
}
