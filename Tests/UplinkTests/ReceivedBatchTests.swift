import Foundation
import Testing
import Uplink
import UplinkIngest

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

    /// What was read is what `JSONDecoder` decodes from the same bytes.
    static func sameAsDecoder(_ received: ReceivedBatch, _ payload: [UInt8]) throws {
        let reference = try JSONDecoder().decode(RecordBatch.self, from: Data(payload))
        #expect(received.batch.records == reference.records)
        #expect(received.batch.acks == reference.acks)
        #expect(received.batch.site == reference.site)
        #expect(received.batch.protocolVersion == reference.protocolVersion)
        // Bit for bit, so a rounding difference in a number cannot hide behind ==.
        #expect(received.recordTexts.count == reference.records.count)
        for (a, b) in zip(received.batch.records, reference.records) where a.time.bitPattern != b.time.bitPattern {
            Issue.record("time \(a.time) read, \(b.time) decoded")
        }
    }

    @Test("read directly, as JSONDecoder decodes: nulls, an empty clock list, numbers at the edges, escapes")
    func sameAsJSONDecoder() throws {
        let payload = Self.bytes(#"""
            {"protocol_version":1,"site":"S\u00e9\n","acks":[{"id":"a","accepted":true,"reason":null},{"id":"b","accepted":false}],
             "records":[
              {"seq":18446744073709551615,"time":1.7976931348623157e308,"type":"telemetry","frequency_hz":null,"cycle_p99_us":-9223372036854775808,
               "overruns":0,"units":[],"site":null,"mode":null,"clock":[]},
              {"seq":0,"time":5e-324,"type":"telemetry","frequency_hz":49.999999999999999999,"cycle_p99_us":9223372036854775807,"overruns":1,
               "units":[{"id":"U\/1","state":"x","soc_percent":null,"setpoint_w":-0,"allowed_charge_w":1E2,"allowed_discharge_w":0.1,
                         "trips":["A","B"],"latched":[],"bms_online":false,"inverter_online":true,"power_w":123456789012345678901234567890}],
               "site":{"grid_power_w":null,"binding_limit":"import","shortfall_w":2.2250738585072011e-308,"meter_stale":true}},
              {"seq":5,"time":0,"type":"availability","units":[{"id":"U1","charge_power_w":1,"discharge_power_w":2,"charge_energy_wh":3,
               "discharge_energy_wh":4}],"site":{"up_w":1,"down_w":2}},
              {"seq":6,"time":1,"type":"event","unit":null,"kind":"k","message":"\"quoted\" \\ \t\u0000\u20ac"},
              {"seq":7,"time":1,"type":"energy_block","unit":"U1","start_unix":-5,"length_s":900,"charged_kwh":0,"discharged_kwh":1,"covered_s":900,
               "clock":["stepped"]},
              {"seq":8,"time":1,"type":"grid_energy_block","start_unix":0,"length_s":900,"imported_kwh":1,"exported_kwh":2,"covered_s":3},
              {"seq":9,"time":1,"type":"spool_drop","count":3}
             ]}
            """#)
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut)
        #expect(received.batch.records[0].clock == [], "an empty clock list is kept as decoded")
        try Self.sameAsDecoder(received, payload)
        try Self.textsAgree(received)
    }

    @Test("numbers written many ways round the same as JSONDecoder, bit for bit")
    func numbers() throws {
        var generator = SystemRandomNumberGenerator()
        var direct = 0
        for _ in 0..<5000 {
            // Zeros often, so zero, underflow and leading-zero forms come up.
            let digits = String((0..<Int.random(in: 1...25, using: &generator)).map { _ in "00000123456789".randomElement(using: &generator)! })
            let lead = digits.count > 1 && digits.first == "0" ? "1" + digits.dropFirst() : digits
            var text = (Bool.random(using: &generator) ? "-" : "") + lead
            if Bool.random(using: &generator) { text += "." + String(digits.reversed()) }
            if Bool.random(using: &generator) { text += "e" + (Bool.random(using: &generator) ? "-" : "") + "\(Int.random(in: 0...330, using: &generator))" }
            let payload = Self.bytes(#"{"protocol_version":1,"site":"S","acks":[],"records":[{"seq":1,"type":"spool_drop","count":1,"time":"# + text + "}]}")
            guard let reference = try? JSONDecoder().decode(RecordBatch.self, from: Data(payload)) else {
                #expect((try? ReceivedBatch(payload: payload)) == nil, "\(text)")
                continue
            }
            let received = try ReceivedBatch(payload: payload)
            if received.cut { direct += 1 }
            #expect(received.batch.records[0].time.bitPattern == reference.records[0].time.bitPattern, "\(text)")
        }
        #expect(direct > 2500)
    }

    @Test("a batch as bessd sends it: texts are the payload's own bytes and say what was decoded")
    func cutFromPayload() throws {
        let payload = Array(try JSONEncoder().encode(WireTests.batch))
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut)
        #expect(received.batch.records == WireTests.batch.records)
        #expect(received.batch.acks == WireTests.batch.acks)
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

    /// A key written twice or escaped, an escaped surrogate; its texts made by encoding.
    @Test("what the direct JSON reader does not take is decoded by JSONDecoder",
          arguments: [
              // The decoder takes one of the two; a cut text could say the other.
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"seq":2,"time":1,"type":"spool_drop","count":1}],"acks":[]}"#,
              #"{"protocol_version":1,"site":"S","records":[],"records":[{"seq":1,"time":1,"type":"spool_drop","count":1}],"acks":[]}"#,
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"time":1,"type":"telemetry","cycle_p99_us":1,"overruns":0,"units":[{"id":"U1","id":"U2","state":"s","setpoint_w":0,"allowed_charge_w":1,"allowed_discharge_w":1,"trips":[],"latched":[],"bms_online":true,"inverter_online":true}]}],"acks":[]}"#,
              // "s\u0065q" is "seq" to the decoder, not to a byte comparison.
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"s\u0065q":2,"time":1,"type":"spool_drop","count":1}],"acks":[]}"#,
              // A battery emoji written as a surrogate pair.
              #"{"protocol_version":1,"site":"S","records":[{"seq":1,"time":1,"type":"event","kind":"k","message":"\ud83d\udd0b"}],"acks":[]}"#,
          ])
    func refusedToCut(payload: String) throws {
        let received = try ReceivedBatch(payload: Self.bytes(payload))
        #expect(!received.cut)
        try Self.textsAgree(received)
    }

    @Test("an object with more keys than any batch goes to JSONDecoder; the repeated-key check is quadratic")
    func wideObject() throws {
        let keys = (0..<300).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        let payload = Self.bytes(#"{"protocol_version":1,"site":"S","acks":[],"records":[{"seq":1,"time":1,"type":"spool_drop","count":1,"extra":{"#
                                 + keys + "}}]}")
        let received = try ReceivedBatch(payload: payload)
        #expect(!received.cut)
        #expect(received.batch.records == [UplinkRecord(seq: 1, time: 1, body: .spoolDrop(count: 1))])
        try Self.sameAsDecoder(received, payload)
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
            let reference = try? JSONDecoder().decode(RecordBatch.self, from: Data(bytes))
            guard let received = try? ReceivedBatch(payload: bytes) else {
                #expect(reference == nil, "JSONDecoder took a payload ReceivedBatch refused")
                continue
            }
            decoded += 1
            if received.cut { cut += 1 }
            try Self.sameAsDecoder(received, bytes)
            try Self.textsAgree(received)
        }
        // The flips leave some payloads decodable (a digit for a digit, a space for a space).
        #expect(decoded > 0)
        #expect(cut > 0)
    }

    /// A telemetry unit as bessd sends it, with one field changed by `change`.
    static func unit(_ change: (inout UnitTelemetry) -> Void = { _ in }) -> UnitTelemetry {
        var unit = UnitTelemetry(id: "U-1.a_b", state: "limited", socPercent: 50, sohPercent: nil, powerW: 0, setpointW: 0, voltageV: nil,
                                 currentA: nil, temperatureMinC: nil, temperatureMaxC: nil, allowedChargeW: 1, allowedDischargeW: 1,
                                 trips: ["SOC_HIGH"], latched: ["THERMAL_RUNAWAY"], bmsOnline: true, inverterOnline: true)
        change(&unit)
        return unit
    }

    @Test("ingest takes what bessd sends and refuses, with a code, ids, states and codes bessd never sends")
    func ingestRules() throws {
        func batch(site: String = "SITE_1", _ bodies: [RecordBody]) -> RecordBatch {
            RecordBatch(site: site, records: bodies.enumerated().map { UplinkRecord(seq: UInt64($0.offset + 1), time: 1, body: $0.element) }, acks: [])
        }
        let telemetry = { (unit: UnitTelemetry) in RecordBody.telemetry(frequencyHz: 50, cycleP99Us: 1, overruns: 0, units: [unit]) }
        let good = batch([
            telemetry(Self.unit()),
            .availability(units: [UnitAvailability(id: "U2", chargePowerW: 1, dischargePowerW: 1, chargeEnergyWh: 1, dischargeEnergyWh: 1)]),
            .energyBlock(unit: "U2", startUnix: 0, lengthS: 900, chargedKWh: 0, dischargedKWh: 0, coveredS: 900),
            .event(unit: "site", kind: "raised", code: "GRID_ROCOF", message: "<b>free text is kept</b>"),
            .event(unit: nil, kind: "siteShortfall", code: nil, message: "m"),
            .spoolDrop(count: 1),
        ])
        #expect(IngestRules.check(good) == nil)
        #expect(IngestRules.check(status: SiteStatusMessage(state: "online", session: UUID().uuidString.lowercased())) == nil)
        #expect(IngestRules.check(status: SiteStatusMessage(state: "offline", session: "s-1")) == nil)

        let hostile = "<img src=x onerror=alert(1)>"
        let cases: [(RecordBatch, String)] = [
            (batch(site: hostile, []), "SITE_ID_INVALID"),
            (batch(site: "", []), "SITE_ID_INVALID"),
            (batch(site: String(repeating: "s", count: 65), []), "SITE_ID_INVALID"),
            (batch(site: "SITE-\u{212A}1", []), "SITE_ID_INVALID"),
            (batch([telemetry(Self.unit { $0.id = hostile })]), "UNIT_ID_INVALID"),
            (batch([telemetry(Self.unit { $0.state = hostile })]), "UNIT_STATE_INVALID"),
            (batch([telemetry(Self.unit { $0.trips = [hostile] })]), "TRIP_CODE_INVALID"),
            (batch([telemetry(Self.unit { $0.latched = ["thermal_runaway"] })]), "TRIP_CODE_INVALID"),
            (batch([.availability(units: [UnitAvailability(id: "U 1", chargePowerW: 1, dischargePowerW: 1, chargeEnergyWh: 1,
                                                           dischargeEnergyWh: 1)])]), "UNIT_ID_INVALID"),
            (batch([.energyBlock(unit: hostile, startUnix: 0, lengthS: 1, chargedKWh: 0, dischargedKWh: 0, coveredS: 0)]), "UNIT_ID_INVALID"),
            (batch([.event(unit: hostile, kind: "raised", code: nil, message: "m")]), "UNIT_ID_INVALID"),
            (batch([.event(unit: "U1", kind: "raised", code: hostile, message: "m")]), "TRIP_CODE_INVALID"),
        ]
        // "CODE: sentence" (a BessError).
        func text(_ refusal: IngestRefusal?) -> String { refusal.map { String(describing: $0) } ?? "accepted" }
        for (refused, code) in cases {
            let refusal = text(IngestRules.check(refused))
            #expect(refusal.hasPrefix(code + ": "), "\(refused.site): \(refusal)")
            // The refusal quotes the peer's text escaped and cut short: no control character, a bounded line.
            #expect(!refusal.unicodeScalars.contains { $0.value < 0x20 || $0.value >= 0x7F && $0 != "…" && $0 != "–" } && refusal.count < 200,
                    "\(refusal)")
        }
        #expect(text(IngestRules.check(status: SiteStatusMessage(state: hostile, session: "s"))).hasPrefix("STATUS_STATE_INVALID: "))
        #expect(text(IngestRules.check(status: SiteStatusMessage(state: "Online", session: "s"))).hasPrefix("STATUS_STATE_INVALID: "))
        #expect(text(IngestRules.check(status: SiteStatusMessage(state: "online", session: hostile))).hasPrefix("STATUS_SESSION_INVALID: "))
        #expect(IngestRules.quoted("a\"b\\c\n\u{1B}[31m<é>") == #""a\"b\\c\u{a}\u{1b}[31m<\u{e9}>""#)
        #expect(IngestRules.quoted(String(repeating: "x", count: 100), limit: 4) == "\"xxxx…\"")
    }
}
