import BessBase
import BessSystem
import ControlCore
import Foundation
import Logging
@testable import Config
@testable import Cycle
@testable import Service
import Testing
import Uplink

/// The uplink recorder's inbox (records posted by other threads: 2030.5 controls, IEC 104 outcomes):
/// an overflow journalled once per episode and counted on /metrics; what it holds at stop kept.
@Suite("Uplink inbox", .serialized)
struct UplinkInboxTests {
    static let yaml = """
        mode: simulation
        bess_units:
          - {id: U1, capacity_kwh: 100, max_power_kw: 50}
        """

    static func directory() -> String {
        NSTemporaryDirectory() + "bessd-uplink-inbox-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// A service over a spool in `directory` (no transport), its journal lines kept.
    static func service(_ directory: String) throws -> (UplinkService, PILock<[String]>) {
        let configuration = try ConfigLoader.parse(yaml, file: "inbox.yaml")
        let recorder = UplinkRecorder(queue: SpoolQueue(try Spool(directory: directory)), configuration: configuration)
        let lines = PILock<[String]>([])
        let logger = Logger(label: "test") { _ in LineLogHandler { line in lines.withLock { $0.append(line) } } }
        return (UplinkService(spool: recorder.queue, recorder: recorder, transport: nil, logger: logger), lines)
    }

    static func control(_ n: Int) -> RecordBody {
        let record = UtilityControlRecord(mRID: "C\(n)", program: "P1", outcome: "taken")
        return .utilityControl(record, message: record.sentence)
    }

    /// 1025 posts to an inbox of 1024.
    @Test("an inbox overflow logs UPLINK_INBOX_DROPPED once per episode with the count; /metrics counts")
    func overflowJournalledAndCounted() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (service, lines) = try Self.service(directory)
        let shared = SharedState(units: 1)
        for n in 0..<1025 { service.recorder.inbox.post(Self.control(n)) }
        service.record(now: .zero, shared: shared)
        var dropped: [String] { lines.withLock { $0 }.filter { $0.contains("UPLINK_INBOX_DROPPED") } }
        #expect(dropped.count == 1 && dropped.first?.contains("BESS_COUNT=1") == true, "\(lines.withLock { $0 })")
        var m = MetricsText()
        service.metrics(into: &m)
        #expect(m.text.contains("bessd_uplink_inbox_dropped_total 1.0\n"), "\(m.text)")
        // The next round drops again: the same episode, not journalled again, counted.
        for n in 0..<1026 { service.recorder.inbox.post(Self.control(n)) }
        service.record(now: .zero, shared: shared)
        #expect(dropped.count == 1, "\(dropped)")
        // A round without drops ends the episode; the next one is journalled.
        service.record(now: .zero, shared: shared)
        for n in 0..<1027 { service.recorder.inbox.post(Self.control(n)) }
        service.record(now: .zero, shared: shared)
        #expect(dropped.count == 2 && dropped.last?.contains("BESS_COUNT=3") == true, "\(dropped)")
        var after = MetricsText()
        service.metrics(into: &after)
        #expect(after.text.contains("bessd_uplink_inbox_dropped_total 6.0\n"), "\(after.text)")
    }

    @Test("a record posted after the last round and before the stop is in the spool when it is opened again")
    func keptAtStop() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (service, _) = try Self.service(directory)
        service.recorder.inbox.post(Self.control(7))
        service.stop()
        let reopened = SpoolQueue(try Spool(directory: directory))
        let records = try reopened.records(after: 0, limit: 100).map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        #expect(records.contains { if case .utilityControl(let c, _) = $0.body { c.mRID == "C7" } else { false } }, "\(records)")
    }
}
