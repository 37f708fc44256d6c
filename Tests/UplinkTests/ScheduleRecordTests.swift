import BessBase
import ControlCore
import Foundation
import Testing
import Uplink
import UplinkIngest

/// The block schedule on the uplink (issue 60): the `schedule_block` record one closed block makes,
/// what an aggregator takes of it, and the `schedule` command's payload.
@Suite("Uplink schedule records and commands")
struct ScheduleRecordTests {
    static let report = ScheduleBlockReport(startUnixSeconds: 1_795_996_800, lengthSeconds: 900, targetKWh: -12.5, deliveredKWh: -11.25,
                                            droopKWh: 0.5, ratedKWh: 50, boundBy: .importLimit, revision: 2)

    static func batch(_ bodies: [RecordBody]) -> RecordBatch {
        RecordBatch(site: "SITE_1", records: bodies.enumerated().map { UplinkRecord(seq: UInt64($0.offset + 1), time: 1_795_997_701, body: $0.element) },
                    acks: [])
    }

    @Test("a closed block's record: its fields inline, deviation = delivered − droop − target and % of rated, bound_by by name")
    func record() throws {
        let record = ScheduleBlockRecord(Self.report)
        #expect(record.deviationKWh == -11.25 - 0.5 + 12.5 && record.deviationPct == 0.75 / 50 * 100)
        #expect(record.boundBy == "import_limit" && record.revision == 2)
        let text = String(decoding: try JSONEncoder().encode(UplinkRecord(seq: 7, time: 1, body: .scheduleBlock(record))), as: UTF8.self)
        // A kind added since version 1: it rides as an event of the site, without a code (docs/uplink.md).
        for member in ["\"type\":\"event\"", "\"unit\":\"site\"", "\"kind\":\"schedule_block\"", "\"message\":\"schedule block 2026-11-30T00:00:00Z",
                       "\"schedule_block\":{", "\"start_unix\":1795996800", "\"length_s\":900", "\"target_kwh\":-12.5",
                       "\"delivered_kwh\":-11.25", "\"droop_kwh\":0.5", "\"deviation_kwh\":0.75", "\"deviation_pct\":1.5",
                       "\"bound_by\":\"import_limit\"", "\"revision\":2"] {
            #expect(text.contains(member), "\(member) in \(text)")
        }
        let back = try JSONDecoder().decode(UplinkRecord.self, from: Data(text.utf8))
        #expect(back.body == .scheduleBlock(record))
    }

    @Test("ingest takes the record as sent, by the fast reader and by JSONDecoder alike, and keeps its text")
    func ingest() throws {
        let batch = Self.batch([.scheduleBlock(ScheduleBlockRecord(Self.report)), .spoolDrop(count: 1)])
        let payload = Array(try JSONEncoder().encode(batch))
        let received = try ReceivedBatch(payload: payload)
        #expect(received.cut, "read by BatchReader, not handed to JSONDecoder")
        #expect(received.batch.records.map(\.body) == batch.records.map(\.body))
        #expect(try JSONDecoder().decode(RecordBatch.self, from: Data(payload)).records.map(\.body) == batch.records.map(\.body))
        // Of another unit, or with a code, it is the plain event it also is.
        let text = String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "\"unit\":\"site\"", with: "\"unit\":\"D1\"")
        let plain = try ReceivedBatch(payload: Array(text.utf8))
        guard case .event(let unit, ScheduleBlockRecord.kind, nil, _) = plain.batch.records[0].body else {
            Issue.record("\(plain.batch.records[0].body)")
            return
        }
        #expect(unit == "D1")
        #expect(received.recordTexts[0].contains("\"bound_by\":\"import_limit\""))
        #expect(IngestRules.check(received.batch) == nil)
    }

    @Test("ingest refuses a block bessd would not write: SCHEDULE_BLOCK_INVALID, the peer's text quoted")
    func refused() {
        var unknown = ScheduleBlockRecord(Self.report)
        unknown.boundBy = "the moon\n"
        var deviation = ScheduleBlockRecord(Self.report)
        deviation.deviationKWh = 3
        var length = ScheduleBlockRecord(Self.report)
        length.lengthS = 7
        var revision = ScheduleBlockRecord(Self.report)
        revision.revision = -1
        for (record, words) in [(unknown, "bound_by \"the moon\\u{a}\""), (deviation, "is not delivered − droop − target"),
                                (length, "length_s 7"), (revision, "revision -1")] {
            let refusal = IngestRules.check(Self.batch([.scheduleBlock(record)]))
            #expect(refusal?.code == .scheduleBlockInvalid, "\(words)")
            #expect(refusal.map { "\($0)" }?.contains(words) == true, "\(String(describing: refusal))")
        }
    }

    static let document = ScheduleDocument(id: "agg:day-1", revision: 3, blocks: [
        .init(start: "2026-11-30T05:30:00+05:30", energyKWh: -12.5), .init(start: "2026-11-30T00:15:00Z", energyKWh: 4),
    ])

    @Test("a schedule command carries the operator's file's payload; it decodes from the command topic and passes the site's checks")
    func command() throws {
        let command = DispatchCommand(id: "cmd-9", kind: "schedule", expiresUnix: 1_796_000_000, schedule: Self.document)
        let text = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        #expect(text.contains("\"schedule\":{") && text.contains("\"energy_kwh\":-12.5") && text.contains("\"start\":\"2026-11-30T05:30:00+05:30\""))
        guard case .command(let decoded) = MQTTUplinkSender.decodeCommand(Array(text.utf8)) else {
            Issue.record("not decoded: \(text)")
            return
        }
        #expect(decoded == command)
        #expect(DispatchValidator.refusal(command, ratings: ["D1": 100], now: 1_795_996_700) == nil)
        let schedule = try Self.document.schedule(source: .aggregator, lengthSeconds: 900, nowUnix: 1_795_996_700)
        #expect(schedule.blocks.map(\.startUnixSeconds) == [1_795_996_800, 1_795_997_700] && schedule.source == .aggregator)
        // The payload's key is the command's own: a schedule on another kind, or a schedule command without one, is refused.
        let bare = DispatchCommand(id: "cmd-10", kind: "schedule", expiresUnix: 1_796_000_000)
        #expect(DispatchValidator.refusal(bare, ratings: ["D1": 100], now: 1_795_996_700)?.message.contains("carries its schedule") == true)
        let power = DispatchCommand(id: "cmd-11", kind: "power", powerKW: 1, expiresUnix: 1_796_000_000, schedule: Self.document)
        #expect(DispatchValidator.refusal(power, ratings: ["D1": 100], now: 1_795_996_700) != nil)
        let unit = DispatchCommand(id: "cmd-12", kind: "schedule", unit: "D1", expiresUnix: 1_796_000_000, schedule: Self.document)
        #expect(DispatchValidator.refusal(unit, ratings: ["D1": 100], now: 1_795_996_700)?.message.contains("for the site") == true)
    }
}
