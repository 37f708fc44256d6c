import BessSystem
import ControlCore
import Logging
@testable import Config
@testable import Service
import Testing

/// A unit reaching its response reserve, and leaving it, in the journal and /metrics (issue 47 §2).
@Suite("Response reserve in the journal and metrics")
struct ResponseReserveJournalTests {
    /// Entry carries unit, direction, SOC and edge; gauge bessd_response_reserve_held.
    @Test("RESPONSE_RESERVE_REACHED and its clear: coded journal entry, gauge by unit and direction")
    func journalAndMetric() throws {
        let configuration = try ConfigLoader.parse(ResponseReserveUplinkTests.yaml(sustain: 720), file: "site.yaml")
        let (logger, lines) = FrequencyEventReportTests.collecting()
        let journal = EventJournal(logger: logger)
        func held() -> String {
            var m = MetricsText()
            journal.metrics(into: &m)
            return m.text
        }
        journal.log([], now: .zero, configuration: configuration, recorder: nil)
        for unit in ["A", "B"] {
            for way in ["discharge", "charge"] {
                #expect(held().contains("bessd_response_reserve_held{unit=\"\(unit)\",direction=\"\(way)\"} 0.0\n"), "\(held())")
            }
        }
        let reached = ControlEvent(kind: .responseReserveReached, unit: 1, metric: .soc, value: 14.95, threshold: 15, reserve: .discharge,
                                   at: .zero)
        journal.log([reached], now: .zero, configuration: configuration, recorder: nil)
        let line = lines.withLock { $0 }.last ?? ""
        for text in ["B RESPONSE_RESERVE_REACHED: SOC 14.95 % is at its discharge reserve (down to 15", "BESS_CODE=RESPONSE_RESERVE_REACHED",
                     "BESS_UNIT=B", "BESS_DIRECTION=discharge", "BESS_VALUE=14.95", "BESS_THRESHOLD=15.0",
                     "BESS_EVENT=responseReserveReached", "MESSAGE_ID=\(MessageID.site)"] {
            #expect(line.contains(text), "\(text) in \(line)")
        }
        #expect(held().contains("bessd_response_reserve_held{unit=\"B\",direction=\"discharge\"} 1.0\n"))
        #expect(held().contains("bessd_response_reserve_held{unit=\"A\",direction=\"discharge\"} 0.0\n"))
        var cleared = reached
        (cleared.kind, cleared.value) = (.responseReserveCleared, 15.6)
        journal.log([cleared], now: MonotonicInstant(nanoseconds: 1_000_000_000), configuration: configuration, recorder: nil)
        let clear = lines.withLock { $0 }.last ?? ""
        #expect(clear.contains("B RESPONSE_RESERVE_REACHED cleared: SOC 15.6 % is back inside its discharge reserve band")
                && clear.contains("BESS_EVENT=responseReserveCleared"), "\(clear)")
        #expect(held().contains("bessd_response_reserve_held{unit=\"B\",direction=\"discharge\"} 0.0\n"))
        // A site that keeps no reserve has no such series.
        let plain = EventJournal(logger: logger)
        plain.log([], now: .zero, configuration: try ConfigLoader.parse(ResponseReserveUplinkTests.yaml(sustain: 0), file: "site.yaml"),
                  recorder: nil)
        var m = MetricsText()
        plain.metrics(into: &m)
        #expect(!m.text.contains("bessd_response_reserve_held{"))
    }
}
