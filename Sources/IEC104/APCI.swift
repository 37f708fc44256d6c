public import BessBase
import ControlCore

/// The application protocol control information of IEC 60870-5-104 (§5 of the standard): the start
/// octet 0x68, the APDU length (4…253), four control octets that make an I-, S- or U-frame, and for
/// I-frames the ASDU after them.

/// The start octet of every APDU.
public let iec104StartByte: UInt8 = 0x68
/// The largest APDU length octet (the octets after it): 4 control octets and an ASDU of at most 249.
public let iec104MaxAPDULength = 253
/// The largest ASDU an I-frame carries.
public let iec104MaxASDULength = 249

/// A send or receive sequence number, N(S)/N(R) or V(S)/V(R): 15 bits, counting modulo 32768.
public struct SequenceNumber: Hashable, Sendable, CustomStringConvertible {
    /// The number, 0…32767.
    public let value: UInt16

    /// The number `value` modulo 32768.
    public init(_ value: UInt16) { self.value = value & 0x7FFF }

    /// The first number of a connection.
    public static let zero = SequenceNumber(0)

    /// The number after this one (32767 is followed by 0).
    public var next: SequenceNumber { SequenceNumber(value &+ 1) }

    /// How many steps forward from `earlier` to this number, modulo 32768 (0…32767).
    public func distance(from earlier: SequenceNumber) -> Int { Int((value &- earlier.value) & 0x7FFF) }

    public var description: String { String(value) }
}

/// The function of a U-frame (unnumbered control): exactly one of six bits of the first control octet.
public enum UFunction: UInt8, Sendable, CaseIterable {
    /// STARTDT act: the controlling station starts data transfer.
    case startDataTransferActivation = 0x07
    /// STARTDT con.
    case startDataTransferConfirmation = 0x0B
    /// STOPDT act: the controlling station stops data transfer.
    case stopDataTransferActivation = 0x13
    /// STOPDT con.
    case stopDataTransferConfirmation = 0x23
    /// TESTFR act: a test of an idle link.
    case testFrameActivation = 0x43
    /// TESTFR con.
    case testFrameConfirmation = 0x83
}

/// One APDU: its control field and, for an I-frame, the ASDU's octets (decoded by `ASDU(decoding:)`).
public enum Frame: Hashable, Sendable {
    /// An I-frame (numbered information transfer): N(S), N(R) and the ASDU (6…249 octets).
    case information(send: SequenceNumber, receive: SequenceNumber, asdu: [UInt8])
    /// An S-frame (numbered supervisory): the acknowledgement N(R).
    case supervisory(receive: SequenceNumber)
    /// A U-frame (unnumbered control).
    case unnumbered(UFunction)

    /// The frame's octets on the wire. An I-frame's ASDU must be 6…249 octets (`ASDU.encoded()`
    /// guarantees it; a longer one is a programming error and traps).
    public func encoded() -> [UInt8] {
        switch self {
        case let .information(send, receive, asdu):
            precondition(asdu.count >= 6 && asdu.count <= iec104MaxASDULength, "ASDU of \(asdu.count) octets")
            var bytes: [UInt8] = [iec104StartByte, UInt8(4 + asdu.count),
                                  UInt8(truncatingIfNeeded: send.value << 1), UInt8(truncatingIfNeeded: send.value >> 7),
                                  UInt8(truncatingIfNeeded: receive.value << 1), UInt8(truncatingIfNeeded: receive.value >> 7)]
            bytes.reserveCapacity(6 + asdu.count)
            bytes += asdu
            return bytes
        case let .supervisory(receive):
            return [iec104StartByte, 4, 0x01, 0x00,
                    UInt8(truncatingIfNeeded: receive.value << 1), UInt8(truncatingIfNeeded: receive.value >> 7)]
        case let .unnumbered(function):
            return [iec104StartByte, 4, function.rawValue, 0, 0, 0]
        }
    }

    /// Decodes one whole APDU (start octet, length, control, ASDU), every length checked first.
    /// An I-frame's ASDU is kept as octets: decoding it is `ASDU(decoding:)`'s separate step, so an
    /// ASDU of an unknown type can still be answered on a healthy link.
    public init(decoding bytes: some Collection<UInt8>) throws(IEC104Error) {
        let bytes = Array(bytes)
        guard let first = bytes.first else { throw IEC104Error(.badLength, message: "an empty APDU") }
        guard first == iec104StartByte else { throw IEC104Error(.badStart, message: "start octet \(first), not 104 (0x68)") }
        guard bytes.count >= 2 else { throw IEC104Error(.badLength, message: "an APDU without its length octet") }
        try Self.checkLength(bytes[1])
        guard bytes.count == Int(bytes[1]) + 2 else {
            throw IEC104Error(.badLength, message: "length octet \(bytes[1]) for \(bytes.count - 2) octets")
        }
        self = try Self.decodeBody(bytes[2...])
    }

    /// Refuses a length octet outside 4…253.
    static func checkLength(_ length: UInt8) throws(IEC104Error) {
        guard length >= 4, Int(length) <= iec104MaxAPDULength else {
            throw IEC104Error(.badLength, message: "APDU length \(length) outside 4…\(iec104MaxAPDULength)")
        }
    }

    /// The control octets and what follows them (the length already checked).
    static func decodeBody(_ body: ArraySlice<UInt8>) throws(IEC104Error) -> Frame {
        let base = body.startIndex
        let c1 = body[base], c2 = body[base + 1], c3 = body[base + 2], c4 = body[base + 3]
        let asduCount = body.count - 4
        if c1 & 0x01 == 0 {
            guard asduCount >= 6 else {
                throw IEC104Error(.badLength, message: "I-frame with an ASDU of \(asduCount) octets, under its 6-octet header")
            }
            guard c3 & 0x01 == 0 else { throw IEC104Error(.badControl, message: "I-frame with bit 1 of control octet 3 set") }
            let send = SequenceNumber(UInt16(c2) << 7 | UInt16(c1 >> 1))
            let receive = SequenceNumber(UInt16(c4) << 7 | UInt16(c3 >> 1))
            return .information(send: send, receive: receive, asdu: Array(body[(base + 4)...]))
        }
        guard asduCount == 0 else {
            throw IEC104Error(.badLength, message: "\(c1 & 0x03 == 0x01 ? "S" : "U")-frame of length \(body.count), not 4")
        }
        if c1 & 0x03 == 0x01 {
            guard c1 == 0x01, c2 == 0, c3 & 0x01 == 0 else {
                throw IEC104Error(.badControl, message: "S-frame with reserved bits set (control \(c1) \(c2) \(c3))")
            }
            return .supervisory(receive: SequenceNumber(UInt16(c4) << 7 | UInt16(c3 >> 1)))
        }
        guard let function = UFunction(rawValue: c1), c2 == 0, c3 == 0, c4 == 0 else {
            throw IEC104Error(.badControl, message: "U-frame control \(c1) \(c2) \(c3) \(c4) is no single U function")
        }
        return .unnumbered(function)
    }
}

/// Cuts a TCP byte stream into APDUs. It trusts no length beyond the standard's bounds: a bad start
/// octet or length is refused as soon as its octet arrives, so at most one APDU (255 octets) is ever
/// held waiting for the rest. After a refusal the stream has no frame boundaries any more: every
/// further `next()` repeats the error, and the connection is to be closed.
public struct FrameSplitter: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: IEC104Error?

    /// An empty splitter for a new connection.
    public init() {}

    /// Octets received and not yet returned as frames.
    public var bufferedCount: Int { buffer.count - start }

    /// Adds octets as the socket delivered them.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, nil while it is incomplete, or the typed reason the stream is broken.
    public mutating func next() throws(IEC104Error) -> Frame? {
        if let failure { throw failure }
        let available = buffer.count - start
        guard available >= 1 else { return nil }
        do throws(IEC104Error) {
            guard buffer[start] == iec104StartByte else {
                throw IEC104Error(.badStart, message: "start octet \(buffer[start]), not 104 (0x68)")
            }
            guard available >= 2 else { return nil }
            try Frame.checkLength(buffer[start + 1])
            let total = Int(buffer[start + 1]) + 2
            guard available >= total else { return nil }
            let frame = try Frame.decodeBody(buffer[(start + 2)..<(start + total)])
            start += total
            return frame
        } catch {
            failure = error
            throw error
        }
    }
}
