import Foundation
import Testing
import Uplink

@Suite("Batches as received: each record's text cut from the payload")
struct ReceivedBatchTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Every text decodes to exactly the record (and unit) decoded from the whole payload.
    static func textsAgree(_ received: ReceivedBatch) throws {
        #expect(received.recordTexts.count == received.batch.records.count)
        #expect(received.unitTexts.count == received.batch.records.count)
        for (index, record) in received.batch.records.enumerated() {
            let back = try JSONDecoder().decode(UplinkRecord.self, from: Data(received.recordTexts[index].utf8))
            #expect(back == record)
            if case .telemetry(_, _, _, let units, _) = record.body {
                let texts = received.unitTexts[index]
                #expect(texts.count == units.count)
                for (unit, text) in zip(units, texts) {
                    #expect(try JSONDecoder().decode(UnitTelemetry.self, from: Data(text.utf8)) == unit)
                }
            } else {
                #expect(received.unitTexts[index].isEmpty)
            }
        }
    }

    @Test("a batch as bessd sends it: texts are the payload's own bytes and say what was decoded")
    func cutFromPayload() throws {
        let payload = Array(try JSONEncoder().encode(WireTests.batch))
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut)
        #expect(received.batch.records == WireTests.batch.records)
        let text = String(decoding: payload, as: UTF8.self)
        for record in received.recordTexts { #expect(text.contains(record)) }
        #expect(received.unitTexts[0].count == 1 && text.contains(received.unitTexts[0][0]))
        try Self.textsAgree(received)
    }

    @Test("a field this aggregator does not know is kept in the stored text, with spacing as sent")
    func newerFieldKept() throws {
        let payload = Self.bytes("""
            { "protocol_version" : 1, "site" : "S",
              "records" : [ { "seq" : 1, "time" : 2.5, "type" : "telemetry", "cycle_p99_us" : 10, "overruns" : 0,
                              "units" : [ { "id" : "U1", "state" : "running", "setpoint_w" : 0, "allowed_charge_w" : 1,
                                            "allowed_discharge_w" : 1, "trips" : [], "latched" : [], "bms_online" : true,
                                            "inverter_online" : true, "cell_spread_mv" : {"max": 12, "list": [1, 2]} } ],
                              "reactive_var" : -3.25e2 } ],
              "acks" : [] }
            """)
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut)
        #expect(received.recordTexts[0].hasPrefix("{ \"seq\" : 1,") && received.recordTexts[0].hasSuffix("\"reactive_var\" : -3.25e2 }"))
        #expect(received.unitTexts[0].count == 1)
        #expect(received.unitTexts[0][0].contains("\"cell_spread_mv\" : {\"max\": 12, \"list\": [1, 2]}"))
        try Self.textsAgree(received)
    }

    @Test("a key written twice or escaped in any object: the texts are made by encoding what was decoded",
          arguments: [
              // The decoder takes one of the two; a cut text could say the other.
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"seq":2,"time":1,"type":"spool_drop","count":1}],"acks":[]}"#,
              #"{"protocol_version":1,"site":"S","records":[],"records":[{"seq":1,"time":1,"type":"spool_drop","count":1}],"acks":[]}"#,
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"time":1,"type":"telemetry","cycle_p99_us":1,"overruns":0,"units":[{"id":"U1","id":"U2","state":"s","setpoint_w":0,"allowed_charge_w":1,"allowed_discharge_w":1,"trips":[],"latched":[],"bms_online":true,"inverter_online":true}]}],"acks":[]}"#,
              // "s\u0065q" is "seq" to the decoder, not to a byte comparison.
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"s\u0065q":2,"time":1,"type":"spool_drop","count":1}],"acks":[]}"#,
          ])
    func refusedToCut(payload: String) throws {
        let received = try ReceivedBatch(payload: Self.bytes(payload))
        #expect(!received.cut)
        try Self.textsAgree(received)
    }

    @Test("strings holding brackets, quotes and escapes do not move the cut")
    func awkwardStrings() throws {
        let batch = RecordBatch(site: "S", records: [
            UplinkRecord(seq: 1, time: 1, body: .event(unit: "U]1", kind: "}{", code: "\"q\"", message: "a\\\"],{\"x\":[1}\n\u{1}é🔋")),
            UplinkRecord(seq: 2, time: 2, body: .spoolDrop(count: 3)),
        ], acks: [CommandAck(id: "[", accepted: true, reason: "}")])
        let received = try ReceivedBatch(payload: Array(try JSONEncoder().encode(batch)))
        #expect(received.cut)
        #expect(received.batch.records == batch.records)
        try Self.textsAgree(received)
    }

    @Test("garbage, truncations and byte flips: never a crash, and whatever decodes has texts that agree")
    func mutations() throws {
        let payload = Array(try JSONEncoder().encode(WireTests.batch))
        var generator = SystemRandomNumberGenerator()
        var decoded = 0, cut = 0
        for round in 0..<3000 {
            var bytes = payload
            switch round % 4 {
            case 0:
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &generator))
            case 1:
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = "{}[],:\"\\ 0-ex".utf8.randomElement(using: &generator)!
                }
            case 2:
                // A whole record (or other span) repeated: keys and elements out of place.
                let a = Int.random(in: 0..<bytes.count, using: &generator), b = Int.random(in: a..<min(bytes.count, a + 200), using: &generator)
                bytes.insert(contentsOf: bytes[a..<b], at: Int.random(in: 0..<bytes.count, using: &generator))
            default:
                bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            guard let received = try? ReceivedBatch(payload: bytes) else { continue }
            decoded += 1
            if received.cut { cut += 1 }
            try Self.textsAgree(received)
        }
        // The flips leave some payloads decodable (a digit for a digit, a space for a space).
        #expect(decoded > 0)
        #expect(cut > 0)
    }
}
