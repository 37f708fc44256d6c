import Foundation

/// A record batch as it arrived: decoded, and with each record's JSON text (and each telemetry
/// record's unit texts) cut from the payload. The aggregator stores those texts as the site sent
/// them: it does not encode every record again, and a field a newer gateway added is kept.
///
/// `BatchReader` reads the payload and cuts the texts; it takes only payloads whose object keys are
/// unescaped and distinct within their object, so a text never says other than what was read from
/// it. A payload it does not take is decoded by `JSONDecoder`, which decides, and gets texts made by
/// encoding what was decoded (`cut` is false).
public struct ReceivedBatch: Sendable {
    public var batch: RecordBatch
    /// One per record: the record as sent.
    public var recordTexts: [String]
    /// One per record: its units as sent (telemetry records); empty for other records.
    public var unitTexts: [[String]]
    /// True when `BatchReader` read the payload and the texts were cut from it; false when
    /// `JSONDecoder` decoded it and the texts were made by encoding.
    public var cut: Bool

    /// Decodes a batch; throws what `JSONDecoder` throws for a payload that is not one.
    public init(payload: [UInt8]) throws {
        let read = payload.withUnsafeBufferPointer { bytes -> BatchReader.Output? in
            var reader = BatchReader(bytes)
            return reader.batch()
        }
        if let read {
            batch = read.batch
            recordTexts = read.records.map { String(decoding: payload[$0], as: UTF8.self) }
            unitTexts = read.units.map { spans in spans.map { String(decoding: payload[$0], as: UTF8.self) } }
            cut = true
            return
        }
        batch = try JSONDecoder().decode(RecordBatch.self, from: Data(payload))
        (recordTexts, unitTexts) = try Self.encoded(batch)
        cut = false
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
}
