import BessSystem
@testable import Config
import ControlCore
import Cycle
import Foundation
import Logging
import PMULink
import Scada
@testable import Service
import TestSupport
import Testing
import Uplink

/// Every component's notices reach the journal through `Journal.write`, and every code of a module's
/// table is in the docs where operators look it up.
@Suite("Notices: one journal path, every code documented")
struct NoticeJournalTests {
    @Test("a notice's entry: its topic's MESSAGE_ID, BESS_CODE, one BESS_UNIT per unit, its typed fields")
    func entryFields() {
        let notice = Notice(ScadaCode.write, "SCADA write", [.peer: "10.0.0.1:5020", .point: "WSet"], units: ["D1", "D2"])
        let metadata = Journal.metadata(notice)
        #expect(metadata["MESSAGE_ID"] == "\(MessageID.scadaWrite)")
        #expect(metadata["BESS_CODE"] == "SCADA_WRITE")
        #expect(metadata["BESS_PEER"] == "10.0.0.1:5020" && metadata["BESS_POINT"] == "WSet")
        #expect(metadata["BESS_UNIT"] == .array(["D1", "D2"]))
        let plain = Journal.metadata(Notice("uplink delivering again", topic: .uplink))
        #expect(plain["MESSAGE_ID"] == nil && plain["BESS_CODE"] == nil, "the uplink's lines have no catalogue entry")
        let device = Journal.metadata(Notice("unit id 3 on 10.0.0.5:502: found", units: ["D1"]))
        #expect(device["MESSAGE_ID"] == "\(MessageID.device)" && device["BESS_UNIT"] == "D1")
        #expect(Notice(GridInputCode.lost, titled: "silent").message == "GRID_LIMIT_INPUT_LOST: silent")
        #expect(Notice(cleared: GridInputCode.lost, "back").severity == .notice)
    }

    /// `(code, topic)` of every typed table.
    static let tables: [(String, NoticeTopic)] =
        DeviceCode.allCases.map { ($0.code, $0.topic) } + GridInputCode.allCases.map { ($0.code, $0.topic) }
        + ScadaCode.allCases.map { ($0.code, $0.topic) } + UplinkNoticeCode.allCases.map { ($0.code, $0.topic) }
        + ServiceCode.allCases.map { ($0.code, $0.topic) } + PMUCode.allCases.map { ($0.code, $0.topic) }
        + ClockCode.allCases.map { ($0.code, $0.topic) }

    /// The uplink's codes in docs/uplink*.md.
    @Test("each module's codes are in docs/operations.md's event table on their MESSAGE_ID's row")
    func codesDocumented() throws {
        let operations = try String(contentsOf: Package.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let uplink = try ["docs/uplink.md", "docs/uplink-mqtt.md"].map {
            try String(contentsOf: Package.root.appendingPathComponent($0), encoding: .utf8)
        }.joined()
        for (code, topic) in Self.tables {
            guard let id = Journal.messageID(topic) else {
                #expect(uplink.contains("`\(code)`"), "\(code) is not in docs/uplink.md or docs/uplink-mqtt.md")
                continue
            }
            let row = operations.split(separator: "\n").first { $0.hasPrefix("| \(id) |") } ?? ""
            #expect(row.contains("`\(code)`"), "\(code) is not on the row of MESSAGE_ID \(id) in docs/operations.md")
        }
    }

    @Test("EventJournal counts a unit's repeat within 10 s into the next line; a latch is never held back")
    func eventRepeats() throws {
        let configuration = try ConfigLoader.parse(ResponseReserveUplinkTests.yaml(sustain: 720), file: "site.yaml")
        let (logger, lines) = FrequencyEventReportTests.collecting()
        let journal = EventJournal(logger: logger)
        let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
        let stale = ControlEvent(kind: .meterStale, unit: -1, at: t0)
        func log(_ event: ControlEvent, at seconds: Int64) {
            journal.log([event], now: t0 + .seconds(seconds), configuration: configuration, recorder: nil)
        }
        for second in [0, 1, 2, 9] { log(stale, at: Int64(second)) }
        #expect(lines.withLock { $0.count } == 1, "three repeats within 10 s held back")
        log(stale, at: 10)
        #expect(lines.withLock { $0.count } == 2)
        let said = lines.withLock { $0.last } ?? ""
        #expect(said.contains("(3 repeats suppressed)") && said.contains("BESS_SUPPRESSED=3"), "\(said)")
        let latched = ControlEvent(kind: .latched, unit: 0, code: .thermalRunaway, at: t0)
        for second in [11, 11, 12] { log(latched, at: Int64(second)) }
        #expect(lines.withLock { $0.count } == 5, "every latch is written")
    }
}
