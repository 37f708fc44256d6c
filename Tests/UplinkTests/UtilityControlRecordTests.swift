import BessBase
import ControlCore
import Foundation
import Testing
import Uplink
import UplinkIngest

/// The `utility_control` record (issue 48 §3): an `event` of kind `utility_control` with its fields in a
/// `utility_control` object; what an aggregator of this version and an older one take of it.
@Suite("Uplink utility_control records")
struct UtilityControlRecordTests {
    static let taken = UtilityControlRecord(mRID: "A1B2C3D4E5F60718293A4B5C6D7E8F90", program: "P1", outcome: "taken", start: 1_795_000_100,
                                            end: 1_795_000_160, limits: UtilityControlLimits(exportLimitW: 1500, fixedW: -20_000))
    static let refused = UtilityControlRecord(mRID: "B2", program: nil, outcome: "refused", code: "SEP2_VALUE_INVALID", responseStatus: 253,
                                              reason: "SEP2_VALUE_INVALID: opModExpLimW 99999 is beyond its type")

    static func body(_ control: UtilityControlRecord) -> RecordBody { .utilityControl(control, message: control.sentence) }

    static func batch(_ controls: [UtilityControlRecord]) -> RecordBatch {
        FrequencyEventRecordTests.batch(controls.map(body))
    }

    /// `control` changed, one field at a time.
    static func with(_ change: (inout UtilityControlRecord) -> Void, _ control: UtilityControlRecord = taken) -> UtilityControlRecord {
        var out = control
        change(&out)
        return out
    }

    @Test("the record round-trips as a site event without a code, every field written, null where unknown")
    func roundTrip() throws {
        let batch = Self.batch([Self.taken, Self.refused])
        let data = try JSONEncoder().encode(batch)
        #expect(try JSONDecoder().decode(RecordBatch.self, from: data).records == batch.records)
        let records = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["records"] as? [[String: Any]])
        #expect(records[0]["type"] as? String == "event" && records[0]["kind"] as? String == "utility_control")
        #expect(records[0]["unit"] as? String == "site" && records[0]["code"] == nil)
        let fields = try #require(records[0]["utility_control"] as? [String: Any])
        #expect(fields["mrid"] as? String == Self.taken.mRID && fields["outcome"] as? String == "taken" && fields["start"] as? Int == 1_795_000_100)
        #expect(fields["response_status"] is NSNull && fields["reason"] is NSNull && fields["code"] is NSNull)
        #expect((fields["limits"] as? [String: Any])?["export_limit_w"] as? Double == 1500)
        let refused = try #require(records[1]["utility_control"] as? [String: Any])
        #expect(refused["response_status"] as? Int == 253 && refused["start"] is NSNull && refused["program"] is NSNull)
        #expect(records[0]["message"] as? String
                    == "UTILITY_CONTROL taken: control \"A1B2C3D4E5F60718293A4B5C6D7E8F90\" of program \"P1\", 1795000100–1795000160 (server time), export_limit_w 1500.0 W, fixed_w -20000.0 W")
    }

    @Test("an older aggregator accepts it as a plain site event with no code and its sentence")
    func olderAggregator() throws {
        // An older aggregator knows no utility_control object: it reads the record as any event of an
        // unknown kind. Here the kind is renamed, which makes this version read it the same way.
        let payload = Array(try JSONEncoder().encode(Self.batch([Self.taken, Self.refused])))
        let older = Array(String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "\"kind\":\"utility_control\"", with: "\"kind\":\"utility_controk\"").utf8)
        let received = try ReceivedBatch(payload: older)
        #expect(received.cut)
        try ReceivedBatchTests.sameAsDecoder(received, older)
        #expect(received.batch.records.map(\.body) == [.event(unit: "site", kind: "utility_controk", code: nil, message: Self.taken.sentence),
                                                        .event(unit: "site", kind: "utility_controk", code: nil, message: Self.refused.sentence)])
        #expect(IngestRules.check(received.batch) == nil)
        // The text kept is the record as sent: the fields survive in the older store.
        #expect(received.recordTexts[0].contains("\"utility_control\":{"))
    }

    @Test("a batch with utility controls matches the OpenAPI document's schema")
    func openAPI() throws {
        #expect(try WireTests.openAPIVerdict(Self.batch([Self.taken, Self.refused, Self.with { $0.outcome = "completed" },
                                                          Self.with({ ($0.mRID, $0.responseStatus) = (nil, nil) }, Self.refused)])) == "VALID")
        #expect(try WireTests.openAPIVerdict(Self.batch([Self.with { $0.outcome = "withdrawn" }])).hasPrefix("INVALID"))
    }

    @Test("the fast reader reads utility controls as JSONDecoder does; a null object is the plain event")
    func fastPath() throws {
        let payload = [UInt8](try JSONEncoder().encode(Self.batch([Self.taken, Self.refused, Self.with { $0.limits = UtilityControlLimits() }])))
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut, "read by BatchReader, not handed to JSONDecoder")
        try ReceivedBatchTests.sameAsDecoder(received, payload)
        try ReceivedBatchTests.textsAgree(received)
        #expect(received.batch.records[1].body == Self.body(Self.refused))
        let text = #"{"protocol_version":1,"site":"S","acks":[],"records":[{"utility_control":null,"seq":1,"time":3,"type":"event","#
            + #""message":"m","kind":"utility_control"},{"utility_control":{"outcome":"cancelled","limits":{"target_w":null},"mrid":"X"},"#
            + #""seq":2,"time":3,"type":"event","message":"m","kind":"utility_control","unit":"site"}]}"#
        let hand = try ReceivedBatch(payload: Array(text.utf8))
        #expect(hand.cut)
        try ReceivedBatchTests.sameAsDecoder(hand, Array(text.utf8))
        #expect(hand.batch.records[0].body == .event(unit: nil, kind: "utility_control", code: nil, message: "m"))
        #expect(hand.batch.records[1].body == .utilityControl(UtilityControlRecord(mRID: "X", program: nil, outcome: "cancelled"), message: "m"))
    }

    /// An mRID too long, an unknown outcome, an end before the start, a wrong status.
    @Test("ingest refuses what bessd never writes with a code, and escapes the peer's text")
    func ingest() throws {
        #expect(IngestRules.check(Self.batch([Self.taken, Self.refused])) == nil)
        let hostile = "\u{1b}[31m<script>alert(1)</script>\u{7}"
        let cases: [(UtilityControlRecord, String)] = [
            (Self.with { $0.mRID = String(repeating: "A", count: 65) }, "mrid"),
            (Self.with { $0.mRID = "" }, "mrid"),
            (Self.with { $0.program = hostile + String(repeating: "é", count: 40) }, "program"),
            (Self.with { $0.outcome = hostile }, "outcome"),
            (Self.with { $0.outcome = "Taken" }, "outcome"),
            (Self.with { ($0.start, $0.end) = (1_795_000_100, 1_795_000_099) }, "before start"),
            (Self.with({ $0.responseStatus = 254 }, Self.refused), "response status 254"),
            (Self.with { $0.responseStatus = 252 }, "refusal's"),
            (Self.with { $0.reason = "why" }, "refusal's"),
            (Self.with({ $0.code = hostile }, Self.refused), "code"),
            (Self.with({ $0.reason = String(repeating: "x", count: 257) }, Self.refused), "reason"),
            (Self.with { $0.mRID = nil }, "without an mrid"),
            (Self.with { $0.limits.importLimitW = -2e12 }, "import_limit_w"),
        ]
        for (control, what) in cases {
            // Through the bytes, as an aggregator gets them: the fast reader takes them all.
            let payload = Array(try JSONEncoder().encode(Self.batch([Self.refused, control])))
            let received = try ReceivedBatch(payload: payload)
            #expect(received.cut, "\(what)")
            try ReceivedBatchTests.sameAsDecoder(received, payload)
            let refusal = IngestRules.check(received.batch).map { String(describing: $0) } ?? "accepted"
            #expect(refusal.hasPrefix("UTILITY_CONTROL_INVALID: record 2: utility control") && refusal.contains(what), "\(what): \(refusal)")
            #expect(!refusal.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } && refusal.count < 600, "\(refusal)")
        }
        // A utility control with another unit or a code is read as the plain event it also is, by both
        // readers alike, so the event's unit and code checks refuse it (it never skips them).
        for (field, refusal) in [(#""unit":"<x>""#, "UNIT_ID_INVALID"), (#""code":"NOT_A_TRIP""#, "TRIP_CODE_INVALID")] {
            let text = String(decoding: try JSONEncoder().encode(Self.batch([Self.taken])), as: UTF8.self)
                .replacingOccurrences(of: #""unit":"site""#, with: field == #""unit":"<x>""# ? field : #""unit":"site","# + field)
            #expect(text.contains(field), "\(text)")
            let received = try ReceivedBatch(payload: Array(text.utf8))
            #expect(received.cut, "\(field)")
            try ReceivedBatchTests.sameAsDecoder(received, Array(text.utf8))
            guard case .event(_, "utility_control", _, _) = received.batch.records[0].body else {
                Issue.record("\(field): read as \(received.batch.records[0].body)")
                continue
            }
            let verdict = IngestRules.check(received.batch).map { String(describing: $0) } ?? "accepted"
            #expect(verdict.hasPrefix(refusal), "\(field): \(verdict)")
        }
        // The site's unit said, or a null code: still a utility control.
        let plain = String(decoding: try JSONEncoder().encode(Self.batch([Self.taken])), as: UTF8.self)
            .replacingOccurrences(of: #""unit":"site""#, with: #""unit":"site","code":null"#)
        let read = try ReceivedBatch(payload: Array(plain.utf8))
        try ReceivedBatchTests.sameAsDecoder(read, Array(plain.utf8))
        #expect(read.batch.records[0].body == Self.body(Self.taken))
        // The sentence quotes the server's texts escaped and bounded.
        let sentence = Self.with({ ($0.mRID, $0.reason) = (hostile, hostile + String(repeating: "y", count: 300)) }, Self.refused).sentence
        #expect(!sentence.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } && sentence.count < 500, "\(sentence)")
        #expect(UtilityControlRecord.cut(String(repeating: "é", count: 40), bytes: 64).utf8.count == 64)
    }

    @Test("mutated utility-control batches decode the same on both paths; the fast one takes many")
    func mutations() throws {
        let cut = try ReceivedBatchTests.mutationsAgree(Array(try JSONEncoder().encode(Self.batch([Self.taken, Self.refused]))))
        #expect(cut > 50, "\(cut) of 2000 read by the fast reader")
    }
}

extension ReceivedBatchTests {
    /// `payload` mutated `rounds` times (a byte or two changed, or its end cut off): whatever either path
    /// decodes, the other decodes the same, and each text says what was decoded. Returns how many the
    /// fast reader read.
    static func mutationsAgree(_ payload: [UInt8], rounds: Int = 2000, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) throws -> Int {
        // Seeded, and the seed in every failure: `mutationsAgree(payload, seed: …)` replays a failing run.
        var generator = SeededGenerator(state: seed)
        var cut = 0
        for round in 0..<rounds {
            var bytes = payload
            if round % 2 == 0 {
                for _ in 0..<Int.random(in: 1...2, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = "{}[],:\"\\ 0-5.enul".utf8.randomElement(using: &generator)!
                }
            } else {
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &generator))
            }
            let reference = try? JSONDecoder().decode(RecordBatch.self, from: Data(bytes))
            guard let received = try? ReceivedBatch(payload: bytes) else {
                #expect(reference == nil, "JSONDecoder took a payload ReceivedBatch refused (seed \(seed), round \(round))")
                continue
            }
            if received.cut { cut += 1 }
            #expect(received.batch.records == reference?.records, "seed \(seed), round \(round): the readers differ")
            do {
                try sameAsDecoder(received, bytes)
                try textsAgree(received)
            } catch {
                Issue.record("seed \(seed), round \(round): \(error)")
                throw error
            }
        }
        return cut
    }

    /// SplitMix64: a generator a seed replays.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
