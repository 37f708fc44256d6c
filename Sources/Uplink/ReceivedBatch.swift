import Foundation

/// A record batch as it arrived: decoded, and with each record's JSON text (and each telemetry
/// record's unit texts) cut from the payload. The aggregator stores those texts as the site sent
/// them: it does not encode every record again, and a field a newer gateway added is kept.
///
/// The texts are cut only from a payload whose object keys are all unescaped and distinct within
/// their object, so a text never says anything other than what was decoded from it. Any other
/// payload the decoder accepts gets texts made by encoding the decoded batch (`cut` is false).
public struct ReceivedBatch: Sendable {
    public var batch: RecordBatch
    /// One per record: the record as sent.
    public var recordTexts: [String]
    /// One per record: its units as sent (telemetry records); empty for other records.
    public var unitTexts: [[String]]
    /// True when the texts were cut from the payload; false when they were made by encoding.
    public var cut: Bool

    /// Decodes a batch; throws what `JSONDecoder` throws for a payload that is not one.
    public init(payload: [UInt8]) throws {
        batch = try JSONDecoder().decode(RecordBatch.self, from: Data(payload))
        let spans = payload.withUnsafeBufferPointer { bytes -> [(record: Range<Int>, units: [Range<Int>])]? in
            var cutter = JSONCutter(bytes)
            return cutter.batch()
        }
        if let spans, Self.matches(spans, batch.records) {
            recordTexts = spans.map { String(decoding: payload[$0.record], as: UTF8.self) }
            unitTexts = zip(spans, batch.records).map { span, record in
                guard case .telemetry = record.body else { return [] }
                return span.units.map { String(decoding: payload[$0], as: UTF8.self) }
            }
            cut = true
        } else {
            (recordTexts, unitTexts) = try Self.encoded(batch)
            cut = false
        }
    }

    /// A batch that did not come as bytes (tests, the HTTP path's callers): texts by encoding.
    public init(batch: RecordBatch) throws {
        self.batch = batch
        (recordTexts, unitTexts) = try Self.encoded(batch)
        cut = false
    }

    static func encoded(_ batch: RecordBatch) throws -> ([String], [[String]]) {
        let encoder = JSONEncoder()
        var records: [String] = [], units: [[String]] = []
        for record in batch.records {
            records.append(String(decoding: try encoder.encode(record), as: UTF8.self))
            if case .telemetry(_, _, _, let list, _) = record.body {
                units.append(try list.map { String(decoding: try encoder.encode($0), as: UTF8.self) })
            } else {
                units.append([])
            }
        }
        return (records, units)
    }

    /// The cut spans stand for the decoded records one for one (and a telemetry record's units too).
    static func matches(_ spans: [(record: Range<Int>, units: [Range<Int>])], _ records: [UplinkRecord]) -> Bool {
        guard spans.count == records.count else { return false }
        for (span, record) in zip(spans, records) {
            if case .telemetry(_, _, _, let units, _) = record.body, units.count != span.units.count { return false }
        }
        return true
    }
}

/// Finds where values start and end in a JSON text, without building them. It refuses (nil or
/// false) any object with an escaped key or a key twice, and anything it does not understand; it
/// never reads outside the buffer, and nests at most 64 deep.
struct JSONCutter {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0
    /// Keys of the objects being walked, innermost last (reused: no allocation once warm).
    var keys: [Range<Int>] = []

    static let maximumDepth = 64

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        keys.reserveCapacity(64)
    }

    /// The spans of a batch's records, and of each record's `units` elements.
    mutating func batch() -> [(record: Range<Int>, units: [Range<Int>])]? {
        var records: [(record: Range<Int>, units: [Range<Int>])]?
        space()
        let whole = object(depth: 0) { cutter, key in
            guard cutter.key(key, is: "records") else { return cutter.value(depth: 1) != nil }
            var list: [(record: Range<Int>, units: [Range<Int>])] = []
            let ok = cutter.array(depth: 1) { cutter in
                guard let record = cutter.record(depth: 2) else { return false }
                list.append(record)
                return true
            }
            records = list
            return ok
        }
        space()
        guard whole, i == bytes.count else { return nil }
        return records
    }

    /// One record object, and the spans of its `units` elements.
    mutating func record(depth: Int) -> (record: Range<Int>, units: [Range<Int>])? {
        space()
        let start = i
        var units: [Range<Int>] = []
        let ok = object(depth: depth) { cutter, key in
            cutter.space()
            guard cutter.key(key, is: "units"), cutter.at(UInt8(ascii: "[")) else { return cutter.value(depth: depth + 1) != nil }
            return cutter.array(depth: depth + 1) { cutter in
                guard let unit = cutter.value(depth: depth + 2) else { return false }
                units.append(unit)
                return true
            }
        }
        return ok ? (start..<i, units) : nil
    }

    /// Any value, from its first byte through its last.
    mutating func value(depth: Int) -> Range<Int>? {
        space()
        guard i < bytes.count, depth < Self.maximumDepth else { return nil }
        let start = i
        switch bytes[i] {
        case UInt8(ascii: "{"):
            guard object(depth: depth, member: { cutter, _ in cutter.value(depth: depth + 1) != nil }) else { return nil }
        case UInt8(ascii: "["):
            guard array(depth: depth, element: { cutter in cutter.value(depth: depth + 1) != nil }) else { return nil }
        case UInt8(ascii: "\""):
            guard string(plain: false) != nil else { return nil }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            while i < bytes.count, !Self.ends(bytes[i]) { i += 1 }
        default:
            return nil
        }
        return start..<i
    }

    /// An object; `member` is called with each key's span, positioned at the value, and must
    /// consume the value.
    mutating func object(depth: Int, member: (inout JSONCutter, Range<Int>) -> Bool) -> Bool {
        guard depth < Self.maximumDepth, at(UInt8(ascii: "{")) else { return false }
        i += 1
        let mark = keys.count
        defer { keys.removeSubrange(mark...) }
        space()
        if at(UInt8(ascii: "}")) {
            i += 1
            return true
        }
        while true {
            space()
            guard let key = string(plain: true) else { return false }
            for earlier in keys[mark...] where same(earlier, key) { return false }
            keys.append(key)
            space()
            guard at(UInt8(ascii: ":")) else { return false }
            i += 1
            space()
            guard member(&self, key) else { return false }
            space()
            if at(UInt8(ascii: ",")) {
                i += 1
                continue
            }
            guard at(UInt8(ascii: "}")) else { return false }
            i += 1
            return true
        }
    }

    /// An array; `element` must consume each element.
    mutating func array(depth: Int, element: (inout JSONCutter) -> Bool) -> Bool {
        guard depth < Self.maximumDepth, at(UInt8(ascii: "[")) else { return false }
        i += 1
        space()
        if at(UInt8(ascii: "]")) {
            i += 1
            return true
        }
        while true {
            space()
            guard element(&self) else { return false }
            space()
            if at(UInt8(ascii: ",")) {
                i += 1
                continue
            }
            guard at(UInt8(ascii: "]")) else { return false }
            i += 1
            return true
        }
    }

    /// A string's contents (between the quotes); nil when unterminated, or escaped and `plain`.
    mutating func string(plain: Bool) -> Range<Int>? {
        guard at(UInt8(ascii: "\"")) else { return nil }
        i += 1
        let start = i
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "\""):
                i += 1
                return start..<(i - 1)
            case UInt8(ascii: "\\"):
                if plain { return nil }
                i += 2
            default:
                i += 1
            }
        }
        return nil
    }

    mutating func space() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    func at(_ byte: UInt8) -> Bool { i < bytes.count && bytes[i] == byte }

    static func ends(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || byte == 0x20 || byte == 0x0A
            || byte == 0x0D || byte == 0x09
    }

    func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        for k in 0..<a.count where bytes[a.lowerBound + k] != bytes[b.lowerBound + k] { return false }
        return true
    }

    func key(_ span: Range<Int>, is name: StaticString) -> Bool {
        guard span.count == name.utf8CodeUnitCount else { return false }
        let text = name.utf8Start
        for k in 0..<span.count where bytes[span.lowerBound + k] != text[k] { return false }
        return true
    }
}
