@testable import Service
import Testing

@Suite("ServiceGroup: one start order, stopped in reverse")
struct ServiceGroupTests {
    struct Refused: Error {}

    /// A service that writes what happens to it into a shared log.
    final class Probe: DaemonService {
        let name: String
        let refuses: Bool
        let log: Log
        init(_ name: String, refuses: Bool = false, _ log: Log) {
            self.name = name
            self.refuses = refuses
            self.log = log
        }
        func start() throws {
            if refuses { throw Refused() }
            log.events.append("start \(name)")
        }
        func stop() { log.events.append("stop \(name)") }
    }

    final class Log { var events: [String] = [] }

    @Test("services stop in the reverse of their start, each once; one whose start throws is never stopped")
    func order() {
        let group = ServiceGroup()
        let log = Log()
        group.start([Probe("uplink", log), Probe("journal", log), Probe("bus workers", log)])
        group.start([Probe("broken", refuses: true, log), Probe("cycle", log)])
        #expect(group.names == ["uplink", "journal", "bus workers", "cycle"])
        #expect(group.failedNames == ["broken"])
        var heard: [String] = []
        group.stopAll { heard.append($0) }
        group.stopAll { heard.append($0) }  // a second stop stops nothing
        #expect(log.events == ["start uplink", "start journal", "start bus workers", "start cycle",
                               "stop cycle", "stop bus workers", "stop journal", "stop uplink"])
        #expect(heard == ["cycle", "bus workers", "journal", "uplink"])
        #expect(group.stoppedNames == heard)
        #expect(group.names.isEmpty)
    }
}
