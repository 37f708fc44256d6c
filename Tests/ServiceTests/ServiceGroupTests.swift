@testable import Service
import Testing

@Suite("ServiceGroup: one start order, stopped in reverse")
struct ServiceGroupTests {
    struct Refused: Error {}

    @Test("services stop in the reverse of their start, each once; one whose start throws is never stopped")
    func order() {
        let group = ServiceGroup()
        var events: [String] = []
        group.add("uplink", start: { events.append("start uplink") }, stop: { events.append("stop uplink") })
        group.add("journal", stop: { events.append("stop journal") })
        group.add("bus workers", start: { events.append("start workers") }, stop: { events.append("stop workers") })
        #expect(throws: Refused.self) {
            try group.add("broken", start: { () throws(Refused) in throw Refused() }, stop: { events.append("stop broken") })
        }
        group.add("cycle", start: { events.append("start cycle") }, stop: { events.append("stop cycle") })
        #expect(group.names == ["uplink", "journal", "bus workers", "cycle"])
        var heard: [String] = []
        group.stopAll { heard.append($0) }
        group.stopAll { heard.append($0) }  // a second stop stops nothing
        #expect(events == ["start uplink", "start workers", "start cycle",
                           "stop cycle", "stop workers", "stop journal", "stop uplink"])
        #expect(heard == ["cycle", "bus workers", "journal", "uplink"])
        #expect(group.stoppedNames == heard)
        #expect(group.names.isEmpty)
    }
}
