import ControlProtocol
import Foundation
import Testing

/// The control socket's JSON writer, read back by Foundation's parser (an independent reader).
@Suite("Control answers' JSON writer")
struct JSONTextTests {
    static func text(_ object: [String: Any]) -> String? { JSONText.encode(object).map { String(decoding: $0, as: UTF8.self) } }

    @Test("compact, keys in code-point order, integral doubles as integers, non-finite as null")
    func exactText() {
        let object: [String: Any] = [
            "b": true, "a": 1, "c": [1.5, Double.nan, 100.0, -0.25] as [Any], "d": "x\"y", "e": NSNull(),
            "f": [] as [Any], "g": [:] as [String: Any], "B": false, "a_b": Int64(-7), "ab": UInt64.max,
        ]
        #expect(Self.text(object)
            == #"{"B":false,"a":1,"a_b":-7,"ab":18446744073709551615,"b":true,"c":[1.5,null,100,-0.25],"d":"x\"y","e":null,"f":[],"g":{}}"#)
    }

    @Test("every string survives: quotes, backslashes, control characters, slashes, non-ASCII")
    func strings() throws {
        var hostile = "q\"b\\s/n\nr\rt\tz\u{0}e\u{1B}del\u{7F} °C ✓ 𝄞 \u{2028}"
        for byte in 1..<32 { hostile.append(Character(Unicode.Scalar(UInt8(byte)))) }
        let bytes = try #require(JSONText.encode(["k": hostile, hostile: ["v": hostile]]))
        #expect(!bytes.contains(0x0A), "one answer must stay one line")
        #expect(!bytes.contains { $0 < 0x20 }, "no raw control character")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(parsed["k"] as? String == hostile)
        #expect((parsed[hostile] as? [String: Any])?["v"] as? String == hostile)
    }

    @Test("a status-shaped tree reads back the same through Foundation's parser")
    func statusShape() throws {
        var units: [[String: Any]] = []
        for i in 0..<8 {
            var unit: [String: Any] = ["id": "U\(i)", "state": "running", "soc_percent": 51.25]
            unit["setpoint_w"] = Double(i) * 1234.5678
            unit["droop_w"] = -0.1 * Double(i)
            unit["trips"] = ["OVER_TEMPERATURE", "CELL_UNDERVOLTAGE"]
            unit["latched"] = [String]()
            unit["held_by"] = i == 3 ? "operator" as Any : NSNull()
            unit["override"] = ["power_w": 5e3, "remaining_s": 12] as [String: Any]
            units.append(unit)
        }
        let object: [String: Any] = [
            "ok": true, "units": units, "frequency_hz": 49.987, "cycle": ["cycles": 10_018, "jitter_p99_us": 27, "realtime": true],
            "tiny": 1.5e-7, "huge": 3.0e21, "negative_zero": -0.0, "big_int": Int.min,
        ]
        let bytes = try #require(JSONText.encode(object))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary)
        let reference = try #require(
            try JSONSerialization.jsonObject(with: JSONSerialization.data(withJSONObject: object)) as? NSDictionary)
        #expect(parsed.isEqual(reference))
        #expect(((parsed["units"] as? [[String: Any]])?[2]["setpoint_w"] as? Double) == 2469.1356)
        #expect((parsed["cycle"] as? [String: Any])?["cycles"] as? Int == 10_018)
        #expect(parsed["big_int"] as? Int == Int.min)
    }

    @Test("a value the writer does not know makes it decline, for the caller's fallback")
    func unknownValues() {
        #expect(JSONText.encode(["n": NSNumber(value: true)]) == nil)
        #expect(JSONText.encode(["d": Date()]) == nil)
        #expect(JSONText.encode(["deep": [["x": Optional<Int>.some(1) as Any]] as [Any]]) == nil)
        #expect(JSONText.encode(["f": Float(1)]) == nil)
        #expect(JSONText.encode(["ok": true]) != nil)
    }

    @Test("the socket's line: one newline at the end, Foundation's text when the writer declines")
    func line() throws {
        let own = JSONText.line(["ok": true, "n": 3])
        #expect(String(decoding: own, as: UTF8.self) == "{\"n\":3,\"ok\":true}\n")
        let fallback = JSONText.line(["ok": true, "n": NSNumber(value: 3)])
        #expect(fallback.last == 0x0A && fallback.firstIndex(of: 0x0A) == fallback.count - 1)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(fallback.dropLast())) as? [String: Any])
        #expect(parsed["n"] as? Int == 3 && parsed["ok"] as? Bool == true)
    }
}
