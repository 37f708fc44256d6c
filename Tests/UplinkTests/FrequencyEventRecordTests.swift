import ControlCore
import Foundation
import Testing
import Uplink
import UplinkIngest

/// The `frequency_event` record (issue 47 §3): its wire form, the OpenAPI document's schema, and
/// what an aggregator takes of it.
@Suite("Uplink frequency_event records")
struct FrequencyEventRecordTests {
    /// A record's fields as bessd writes them, with `changes` (JSON members) written over them.
    static func event(_ changes: [String: String] = [:]) throws -> FrequencyEventRecord {
        var fields = [
            "sequence": "3", "start": "1800000000.25", "end": "1800000036.5", "direction": "\"under\"", "extreme_hz": "49.712",
            "max_rocof_hz_per_s": "null", "pre_event_w": "20000", "required_w": "250000", "delivered_w": "180000",
            "required_mean_w": "200000", "delivered_mean_w": "150000", "shortfall_w": "70000", "cause": "\"unit_tripped\"",
            "cause_code": "\"INVERTER_FAULT\"", "cause_unit": "\"D2\"", "score": "0.75", "metered": "true", "max_shortfall_w": "90000",
            "units": Self.units, "units_omitted": "0",
        ]
        fields.merge(changes) { $1 }
        let text = "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        return try FrequencyEventRecord(json: Array(text.utf8))
    }

    /// Two units' parts as bessd writes them: D1 delivered, D2 tripped.
    static let units = """
        [{"unit":"D1","required_w":125000,"delivered_w":180000,"required_mean_w":100000,"delivered_mean_w":150000,"shortfall_w":0},\
        {"unit":"D2","required_w":125000,"delivered_w":0,"required_mean_w":100000,"delivered_mean_w":null,"shortfall_w":125000}]
        """

    static func batch(_ bodies: [RecordBody]) -> RecordBatch {
        RecordBatch(site: "SITE_1", records: bodies.enumerated().map { UplinkRecord(seq: UInt64($0.offset + 1), time: 1_800_000_040, body: $0.element) },
                    acks: [])
    }

    @Test("the record round-trips with its fields inline; unknown quantity and no cause as null")
    func roundTrip() throws {
        let batch = Self.batch([.frequencyEvent(try Self.event()),
                                .frequencyEvent(try Self.event(["cause": "null", "cause_code": "null", "cause_unit": "null",
                                                                "shortfall_w": "0", "score": "1"]))])
        let data = try JSONEncoder().encode(batch)
        let back = try JSONDecoder().decode(RecordBatch.self, from: data)
        #expect(back.records == batch.records)
        let records = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["records"] as? [[String: Any]])
        #expect(records.count == 2)
        #expect(records[0]["type"] as? String == "frequency_event" && records[0]["extreme_hz"] as? Double == 49.712)
        #expect(records[0]["cause_code"] as? String == "INVERTER_FAULT" && records[0]["cause_unit"] as? String == "D2")
        #expect(records[0].keys.contains("max_rocof_hz_per_s") && records[0]["max_rocof_hz_per_s"] is NSNull)
        #expect(records[1]["cause"] is NSNull && records[1]["cause_code"] is NSNull && records[1]["cause_unit"] is NSNull)
        // The record's own keys are not disturbed by the event's.
        #expect(records[0]["seq"] as? Int == 1 && records[0]["time"] as? Double == 1_800_000_040)
        // A quantity that is not a number is written as null (JSON has none), not refused.
        var nan = try Self.event()
        nan.extremeHz = .nan
        let written = try JSONEncoder().encode(UplinkRecord(seq: 1, time: 1, body: .frequencyEvent(nan)))
        #expect(String(decoding: written, as: UTF8.self).contains("\"extreme_hz\":null"))
    }

    @Test("one names table: every assessment cause and direction is known to the record and ingest")
    func namesFromOneTable() throws {
        #expect(FrequencyEventRecord.causes == ["soc_limit", "interlock", "grid_operator_limit", "unit_tripped", "communication", "capacity"])
        #expect(FrequencyEventRecord.directions == ["under", "over"])
        for direction in FrequencyEventDirection.allCases {
            for cause in FrequencyEventCause.allCases {
                // The record is built from the assessment directly (no JSON in between), with the cause's unit by id.
                let record = FrequencyEventRecord(
                    FrequencyEventAssessment(sequence: 4, direction: direction, extremeHz: 49.7, shortfallW: cause == .none ? 0 : 1_000,
                                             cause: cause, causeUnit: cause == .none ? -1 : 1, score: .nan),
                    unitIDs: ["D1", "D2"])
                #expect(record.direction == direction.wireName && record.cause == cause.wireName)
                #expect(record.causeUnit == (cause == .none ? nil : "D2") && record.score == nil)
                #expect(cause == .none ? record.cause == nil : FrequencyEventRecord.causes.contains(record.cause ?? ""))
                let back = try JSONDecoder().decode(UplinkRecord.self, from: JSONEncoder().encode(UplinkRecord(seq: 1, time: 1, body: .frequencyEvent(record))))
                #expect(back.body == .frequencyEvent(record))
            }
        }
    }

    @Test("a batch with frequency events matches the OpenAPI document's schema")
    func openAPI() throws {
        let batch = Self.batch([.frequencyEvent(try Self.event()),
                                .frequencyEvent(try Self.event(["direction": "\"over\"", "cause": "null", "cause_code": "null",
                                                                "cause_unit": "null", "max_rocof_hz_per_s": "0.12"]))])
        #expect(try WireTests.openAPIVerdict(batch) == "VALID")
    }

    @Test("ingest takes frequency events and refuses unknown directions, causes, codes or units, coded")
    func ingest() throws {
        #expect(IngestRules.check(Self.batch([.frequencyEvent(try Self.event())])) == nil)
        #expect(IngestRules.check(Self.batch([.frequencyEvent(try Self.event(["cause": "null", "cause_code": "null", "cause_unit": "null"]))])) == nil)
        let hostile = "\"<img src=x onerror=alert(1)>\""
        let cases: [([String: String], String)] = [
            (["direction": hostile], "FREQUENCY_EVENT_INVALID"),
            (["direction": "\"Under\""], "FREQUENCY_EVENT_INVALID"),
            (["cause": hostile], "FREQUENCY_EVENT_INVALID"),
            (["cause": "\"SOC_LIMIT\""], "FREQUENCY_EVENT_INVALID"),
            (["cause_code": hostile], "TRIP_CODE_INVALID"),
            (["cause_code": "\"inverter_fault\""], "TRIP_CODE_INVALID"),
            (["cause_unit": hostile], "UNIT_ID_INVALID"),
        ]
        for (change, code) in cases {
            let refusal = IngestRules.check(Self.batch([.frequencyEvent(try Self.event(change))])).map { String(describing: $0) } ?? "accepted"
            #expect(refusal.hasPrefix(code + ": "), "\(change): \(refusal)")
            // The refusal quotes the peer's text escaped and cut short: no control character, a bounded line.
            #expect(!refusal.unicodeScalars.contains { $0.value < 0x20 } && refusal.count < 200, "\(refusal)")
        }
    }

    @Test("a batch of frequency events reads as with JSONDecoder; each record's text says what was decoded")
    func received() throws {
        let batch = Self.batch([.frequencyEvent(try Self.event()), .spoolDrop(count: 2)])
        let payload = [UInt8](try JSONEncoder().encode(batch))
        let received = try ReceivedBatch(payload: payload)
        #expect(received.batch.records == batch.records)
        for (text, record) in zip(received.recordTexts, received.batch.records) {
            #expect(try JSONDecoder().decode(UplinkRecord.self, from: Data(text.utf8)) == record)
        }
    }

    /// Units, metered, max shortfall, nulls, a record from before the units.
    @Test("the fast reader reads frequency events as JSONDecoder does")
    func fastPath() throws {
        var older = try Self.event(["cause": "null", "cause_code": "null", "cause_unit": "null", "extreme_hz": "null"])
        (older.metered, older.maxShortfallW, older.units, older.unitsOmitted) = (nil, nil, nil, nil)
        let batch = Self.batch([.frequencyEvent(try Self.event()), .frequencyEvent(older), .spoolDrop(count: 2),
                                .frequencyEvent(try Self.event(["units": "[]", "units_omitted": "3", "metered": "false"]))])
        let payload = [UInt8](try JSONEncoder().encode(batch))
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut, "read by BatchReader, not handed to JSONDecoder")
        #expect(received.batch.records == batch.records)
        try ReceivedBatchTests.sameAsDecoder(received, payload)
        try ReceivedBatchTests.textsAgree(received)
        guard case .frequencyEvent(let first) = received.batch.records[0].body else {
            Issue.record("\(received.batch.records[0].body)")
            return
        }
        #expect(first.units?.map(\.unit) == ["D1", "D2"] && first.units?[1].deliveredMeanW == nil && first.metered == true)
        #expect(first.maxShortfallW == 90_000 && first.unitsOmitted == 0)
        // Written by hand, keys in another order, absent where the older bessd left them out.
        let text = #"{"protocol_version":1,"site":"S","acks":[],"records":[{"type":"frequency_event","units":null,"direction":"over","#
            + #""end":2.5,"sequence":1,"seq":1,"time":3,"start":1,"score":1,"cause":null}]}"#
        let hand = try ReceivedBatch(payload: Array(text.utf8))
        #expect(hand.cut)
        try ReceivedBatchTests.sameAsDecoder(hand, Array(text.utf8))
    }

    @Test("a hostile frequency event reads as with JSONDecoder, then is refused with its code, text escaped")
    func hostileFastPath() throws {
        func payload(_ changes: [String: String]) throws -> [UInt8] {
            Array(try JSONEncoder().encode(Self.batch([.frequencyEvent(try Self.event(changes))])))
        }
        let control = "\"\\u001b[31m<script>alert(1)</script>\\u0007\""
        let unitsWith = { (id: String, shortfall: String) in
            "[{\"unit\":\(id),\"required_w\":1,\"delivered_w\":1,\"required_mean_w\":1,\"delivered_mean_w\":1,\"shortfall_w\":\(shortfall)}]"
        }
        let many = "[" + (0...FrequencyEventUnits.capacity).map { _ in #"{"unit":"D1","required_w":1,"delivered_w":1,"required_mean_w":1,"delivered_mean_w":1,"shortfall_w":0}"# }
            .joined(separator: ",") + "]"
        let cases: [([String: String], String)] = [
            (["direction": control], "FREQUENCY_EVENT_INVALID"),
            (["cause": control], "FREQUENCY_EVENT_INVALID"),
            (["score": "7"], "FREQUENCY_EVENT_INVALID"),
            (["score": "-0.5"], "FREQUENCY_EVENT_INVALID"),
            (["shortfall_w": "-1"], "FREQUENCY_EVENT_INVALID"),
            (["max_shortfall_w": "-1e6"], "FREQUENCY_EVENT_INVALID"),
            (["end": "1700000000"], "FREQUENCY_EVENT_INVALID"),
            (["units_omitted": "-2"], "FREQUENCY_EVENT_INVALID"),
            (["units": many], "FREQUENCY_EVENT_INVALID"),
            (["units": unitsWith("\"D1\"", "-5")], "FREQUENCY_EVENT_INVALID"),
            (["units": unitsWith(control, "0")], "UNIT_ID_INVALID"),
        ]
        for (change, code) in cases {
            let bytes = try payload(change)
            let received = try ReceivedBatch(payload: bytes)
            #expect(received.cut, "\(change): the fast reader takes it")
            try ReceivedBatchTests.sameAsDecoder(received, bytes)
            let refusal = IngestRules.check(received.batch).map { String(describing: $0) } ?? "accepted"
            #expect(refusal.hasPrefix(code + ": "), "\(change): \(refusal)")
            #expect(!refusal.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } && refusal.count < 200, "\(refusal)")
        }
        // What bessd writes passes.
        #expect(IngestRules.check(try ReceivedBatch(payload: try payload([:])).batch) == nil)
    }

    @Test("mutated frequency-event batches decode the same on both paths; the fast one takes many")
    func mutations() throws {
        let payload = Array(try JSONEncoder().encode(Self.batch([.frequencyEvent(try Self.event()), .frequencyEvent(try Self.event(["cause": "null"]))])))
        let cut = try ReceivedBatchTests.mutationsAgree(payload)
        #expect(cut > 50, "\(cut) of 2000 read by the fast reader")
    }
}
