import Testing
import Uplink

/// A message on the MQTT command topic that is no command: refused with `MQTT_COMMAND_MALFORMED`,
/// and the refusal names the message's `id` when it has a readable one (so the aggregator can match it).
@Suite("MQTT command topic: a malformed message's id")
struct CommandDecodeTests {
    static let rows: [(payload: String, id: String)] = [
        (#"{"id": "c-17", "kind": "teleport"}"#, "c-17"),
        (#"{"kind": "power", "id": "c-18"}"#, "c-18"),
        (#"{"id": 17, "kind": "power"}"#, ""),
        (#"{"id": null}"#, ""),
        (#"{"kind": "power"}"#, ""),
        (#"["c-19"]"#, ""),
        ("not json", ""),
        (#"{"id": "\#(String(repeating: "x", count: 200))"}"#, String(repeating: "x", count: 128)),
    ]

    @Test("the refusal carries the id when it is a string, at most 128 characters", arguments: rows)
    func malformedID(payload: String, id: String) {
        guard case .malformed(let ack) = MQTTUplinkSender.decodeCommand(Array(payload.utf8)) else {
            Issue.record("\(payload) decoded as a command")
            return
        }
        #expect(ack.id == id)
        #expect(!ack.accepted)
        #expect(ack.reason?.hasPrefix("MQTT_COMMAND_MALFORMED: ") == true)
    }
}
