import BessBase
import BessSystem
import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import TestSupport
import Testing
import Uplink
import UplinkIngest

/// Issue 48 §3: "the journal and uplink record every control taken or refused". The worker hands each
/// control taken, refused or ended to its sink (bessd's: the uplink recorder's inbox); the records
/// validate against docs/uplink-openapi.yaml (hil/peers/validate_uplink.py) and bess-aggregator stores them.
@Suite("2030.5 controls to the uplink", .serialized)
struct Sep2ControlRecordTests {
    static let t0 = Sep2Fixture.t0

    /// The records a sink was given, in order.
    final class Records: Sendable {
        private let list = Mutex<[UtilityControlRecord]>([])
        var all: [UtilityControlRecord] { list.withLock { $0 } }
        var sink: @Sendable (UtilityControlRecord) -> Void { { [self] record in list.withLock { $0.append(record) } } }
    }

    /// The controls' list with `bad` refused alone (an export limit beyond its type).
    static func listWithRefusal(_ good: [Sep2Fixture.Control], bad: String) -> String {
        Sep2Fixture.controlList(good + [Sep2Fixture.Control(mRID: bad, start: t0, duration: 60, exportW: 2468)])
            .replacingOccurrences(of: "<value>2468</value>", with: "<value>99999</value>")
    }

    static func batch(_ records: [UtilityControlRecord]) -> RecordBatch {
        RecordBatch(site: "SEP2_SITE", records: records.enumerated().map {
            UplinkRecord(seq: UInt64($0.offset + 1), time: Double(t0), body: .utilityControl($0.element, message: $0.element.sentence), mode: "hil")
        }, acks: [])
    }

    /// Runs `arguments`, `input` on its standard input; its status and standard output.
    static func run(_ arguments: [String], input: Data? = nil) throws -> (status: Int32, out: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe(), stdin = Pipe()
        process.standardOutput = output
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(input) }
        try stdin.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Validated against the OpenAPI document.
    @Test("a taken and a refused control give two records that validate and the aggregator stores")
    func takenAndRefusedReachTheAggregator() throws {
        let now = Int64(SystemClock.wallClockSeconds())
        let control = Sep2Fixture.Control(mRID: "C1", start: now - 10, duration: 3600, exportW: 2500)
        var documents = Sep2Fixture.chain(serverTime: now, controls: [control])
        documents["/derp/1/derc"] = Self.listWithRefusal([control], bad: "B2")
        let server = FakeSep2Server(documents)
        let slot = UtilityLimitSlot()
        let log = LogLines(), records = Records()
        let worker = Sep2Worker(settings: Sep2WorkerSettings(entryPath: "/dcap", pin: nil, pollSeconds: 30, siteRatingW: 100_000,
                                                             timeout: .seconds(2), serverName: "test:443"),
                                identity: Sep2Fixture.identity, transport: server, slot: slot, store: nil, log: log.sink)
        worker.recordControls(records.sink)
        worker.start()
        #expect(waitFor(seconds: 10) { records.all.count >= 2 }, "\(records.all) \(log.all)")
        worker.stop()
        let made = records.all
        #expect(made.count == 2, "\(made)")
        let refused = try #require(made.first { $0.outcome == "refused" })
        #expect(refused.mRID == "B2" && refused.responseStatus == 253 && refused.code == "SEP2_VALUE_INVALID" && refused.program == nil, "\(refused)")
        let taken = try #require(made.first { $0.outcome == "taken" })
        #expect(taken.mRID == "C1" && taken.program == "B1" && taken.start == now - 10 && taken.end == now + 3590, "\(taken)")
        #expect(taken.limits == UtilityControlLimits(exportLimitW: 2500), "\(taken.limits)")
        #expect(log.codes("SEP2_CONTROL_REFUSED").count == 1 && log.codes("SEP2_CONTROL_TAKEN").contains { $0.contains("\"C1\"") }, "\(log.all)")

        // The batch bessd sends: the OpenAPI document's schema (an independent validator), ingest's rules.
        let batch = Self.batch(made)
        let payload = try JSONEncoder().encode(batch)
        let verdict = try Self.run(["python3", Package.root.appendingPathComponent("hil/peers/validate_uplink.py").path,
                                    Package.root.appendingPathComponent("docs/uplink-openapi.yaml").path], input: payload)
        #expect(verdict.out == "VALID", "\(verdict)")
        let received = try ReceivedBatch(payload: Array(payload))
        #expect(received.cut && received.batch.records == batch.records)
        #expect(IngestRules.check(received.batch) == nil)

        // bess-aggregator stores both, as utility_control, each as it was sent.
        let dir = NSTemporaryDirectory() + "sep2-uplink-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Loopback.freePort()
        let aggregator = Process()
        aggregator.executableURL = try #require(Package.executable("bess-aggregator"))
        aggregator.arguments = ["--listen", "127.0.0.1:\(port)", "--database", dir + "/agg.sqlite"]
        aggregator.standardOutput = FileHandle.nullDevice
        aggregator.standardError = FileHandle.nullDevice
        try aggregator.run()
        defer {
            aggregator.terminate()
            aggregator.waitUntilExit()
        }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) }, "bess-aggregator never listened")
        try payload.write(to: URL(fileURLWithPath: dir + "/batch.json"))
        let answer = try Self.run(["curl", "-s", "-m", "10", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
                                   "@\(dir)/batch.json", "http://127.0.0.1:\(port)/v1/sites/SEP2_SITE/records"])
        #expect(answer.out.contains("\"acked_seq\":2"), "\(answer)")
        let rows = try Self.run(["sqlite3", dir + "/agg.sqlite", "SELECT body FROM records WHERE site = 'SEP2_SITE' AND type = 'utility_control' ORDER BY seq"])
        let stored = rows.out.split(separator: "\n").map { try? JSONDecoder().decode(UplinkRecord.self, from: Data($0.utf8)) }
        #expect(stored == batch.records.map { Optional($0) }, "\(rows)")
        // The status page lists them, a server's hostile mRID escaped (a third record, as a server may write one).
        let hostile = Self.batch(made + [UtilityControlRecord(mRID: "<script>alert(1)</script>", program: "B1", outcome: "cancelled")])
        try JSONEncoder().encode(RecordBatch(site: "SEP2_SITE", records: Array(hostile.records.suffix(1)).map {
            UplinkRecord(seq: 3, time: $0.time, body: $0.body, mode: $0.mode)
        }, acks: [])).write(to: URL(fileURLWithPath: dir + "/hostile.json"))
        let third = try Self.run(["curl", "-s", "-m", "10", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
                                  "@\(dir)/hostile.json", "http://127.0.0.1:\(port)/v1/sites/SEP2_SITE/records"])
        #expect(third.out.contains("\"acked_seq\":3"), "\(third)")
        let page = try Self.run(["curl", "-s", "-m", "10", "http://127.0.0.1:\(port)/"]).out
        let section = page.components(separatedBy: "<h3>Utility controls (IEEE 2030.5)</h3>").dropFirst().first?.components(separatedBy: "</table>").first ?? ""
        #expect(section.contains(">C1<") && section.contains(">taken<") && section.contains("export_limit_w 2500 W"), "\(page.suffix(3000))")
        #expect(section.contains(">B2<") && section.contains("253 SEP2_VALUE_INVALID"), "\(section)")
        #expect(section.contains("&lt;script&gt;") && !page.contains("<script>alert"), "\(section)")
    }

    @Test("one record each for a control completed, cancelled, the default superseded, and a list refused whole")
    func outcomes() throws {
        let a1 = Sep2Fixture.Control(mRID: "A1", start: Self.t0 + 100, duration: 60, exportW: 1500)
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [a1])))
        let records = Records()
        rig.client.controlRecorder.sink = records.sink
        // The program's DefaultDERControl is D1 (5000 W); the events are the others.
        var events: [UtilityControlRecord] { records.all.filter { $0.mRID != "D1" } }
        var defaults: [UtilityControlRecord] { records.all.filter { $0.mRID == "D1" } }
        rig.settle()
        #expect(events.isEmpty, "no event in force before the start: \(records.all)")
        #expect(defaults.map(\.outcome) == ["taken"] && defaults.first.map { $0.start == nil && $0.end == nil && $0.limits.exportLimitW == 5000 } == true,
                "\(records.all)")
        rig.advance(101)
        rig.settle()
        #expect(events.map(\.outcome) == ["taken"] && events.first?.start == Self.t0 + 100 && events.first?.end == Self.t0 + 160)
        rig.advance(60)
        rig.settle()
        #expect(events.map(\.outcome) == ["taken", "completed"], "\(records.all)")
        #expect(events.last.map { $0.mRID == "A1" && $0.limits.exportLimitW == 1500 } == true)

        // D4 from now on for 10 minutes; the server then marks it cancelled (EventStatus 2).
        var d4 = Sep2Fixture.Control(mRID: "D4", start: Self.t0 + 170, duration: 600, exportW: 3000)
        rig.server.set("/derp/1/derc", Sep2Fixture.controlList([a1, d4]))
        for _ in 0..<3 where !events.contains(where: { $0.mRID == "D4" }) {
            rig.advance(31)
            rig.settle()
        }
        #expect(events.last.map { $0.mRID == "D4" && $0.outcome == "taken" } == true, "\(records.all)")
        d4.status = 2
        rig.server.set("/derp/1/derc", Sep2Fixture.controlList([a1, d4]))
        for _ in 0..<3 where events.last?.outcome != "cancelled" {
            rig.advance(31)
            rig.settle()
        }
        #expect(events.map(\.outcome) == ["taken", "completed", "taken", "cancelled"], "\(records.all)")
        // The default left force at each event's start and came back at its end.
        #expect(defaults.map(\.outcome) == ["taken", "superseded", "taken", "superseded", "taken"], "\(records.all)")
        // A list that is not XML: refused whole, once, with its code and no mRID.
        rig.server.set("/derp/1/derc", "<DERControlList")
        for _ in 0..<3 where events.count < 5 {
            rig.advance(31)
            rig.settle()
        }
        let whole = try #require(events.count == 5 ? events[4] : nil, "\(records.all)")
        #expect(whole.outcome == "refused" && whole.mRID == nil && whole.responseStatus == nil && whole.code?.hasPrefix("SEP2_") == true, "\(whole)")
        #expect(IngestRules.check(Self.batch(records.all)) == nil)
        #expect(try Self.run(["python3", Package.root.appendingPathComponent("hil/peers/validate_uplink.py").path,
                              Package.root.appendingPathComponent("docs/uplink-openapi.yaml").path],
                             input: try JSONEncoder().encode(Self.batch(records.all))).out == "VALID")
    }

    /// The validator's verdict on `records` as bessd sends them (docs/uplink-openapi.yaml).
    static func openAPIVerdict(_ records: [UtilityControlRecord]) throws -> String {
        try run(["python3", Package.root.appendingPathComponent("hil/peers/validate_uplink.py").path,
                 Package.root.appendingPathComponent("docs/uplink-openapi.yaml").path], input: try JSONEncoder().encode(batch(records))).out
    }

    /// Rounds `count` polls apart until `done`.
    static func poll(_ rig: Sep2WorkerTests.Rig, count: Int = 3, until done: () -> Bool) {
        for _ in 0..<count where !done() {
            rig.advance(31)
            rig.settle()
        }
    }

    /// 32767 × 10^9 W.
    @Test("a limit beyond ±10^12 W is taken, recorded as null and named; ingest and OpenAPI accept it")
    func limitBeyondRange() throws {
        let huge = Sep2Fixture.Control(mRID: "E1", start: Self.t0 - 10, duration: 600, exportW: 32767)
        var documents = Sep2Fixture.chain(controls: [huge])
        documents["/derp/1/derc"] = Sep2Fixture.controlList([huge])
            .replacingOccurrences(of: "<multiplier>0</multiplier><value>32767</value>", with: "<multiplier>9</multiplier><value>32767</value>")
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(documents))
        let records = Records()
        rig.client.controlRecorder.sink = records.sink
        rig.settle()
        let taken = try #require(records.all.first { $0.mRID == "E1" }, "\(records.all) \(rig.log.all)")
        #expect(taken.outcome == "taken" && taken.limits == UtilityControlLimits() && taken.beyondRange == ["export_limit_w"], "\(taken)")
        #expect(taken.sentence.contains("export_limit_w beyond ±10^12 W (left out)"), "\(taken.sentence)")
        let received = try ReceivedBatch(payload: Array(try JSONEncoder().encode(Self.batch(records.all))))
        #expect(IngestRules.check(received.batch) == nil)
        #expect(try Self.openAPIVerdict(records.all) == "VALID")
        // The document refuses a value beyond the range, so an aggregator can rely on it.
        #expect(try Self.openAPIVerdict([UtilityControlRecord(mRID: "E1", program: "B1", outcome: "taken",
                                                              limits: UtilityControlLimits(exportLimitW: 3.2767e13))]).hasPrefix("INVALID"))
    }

    /// E.g. a control that only sets opModWattPF.
    @Test("a 252 refusal carries SEP2_CONTROL_NOT_APPLICABLE, no reason text")
    func notApplicableCode() throws {
        let vv = Sep2Fixture.Control(mRID: "F1", start: Self.t0 - 10, duration: 600, exportW: 2468)
        var documents = Sep2Fixture.chain(controls: [vv])
        documents["/derp/1/derc"] = Sep2Fixture.controlList([vv])
            .replacingOccurrences(of: Sep2Fixture.exportLimit(2468), with: #"<opModWattPF href="/wpf/1"/>"#)
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(documents))
        let records = Records()
        rig.client.controlRecorder.sink = records.sink
        rig.settle()
        let refused = try #require(records.all.first { $0.outcome == "refused" }, "\(records.all) \(rig.log.all)")
        #expect(refused.mRID == "F1" && refused.responseStatus == 252 && refused.code == "SEP2_CONTROL_NOT_APPLICABLE", "\(refused)")
        #expect(IngestRules.check(Self.batch(records.all)) == nil)
    }

    @Test("a control outranked by a higher-priority program is superseded, not cancelled, and resumes after")
    func outrankedIsSuperseded() throws {
        // B2 (primacy 2): X from t0 for 600 s; B1 (primacy 1): Y from t0 + 100 for 100 s; both export limits.
        let x = Sep2Fixture.Control(mRID: "A0", start: Self.t0, duration: 600, exportW: 3000)
        let y = Sep2Fixture.Control(mRID: "B0", start: Self.t0 + 100, duration: 100, exportW: 1000)
        var documents = Sep2Fixture.chain(controls: [y])
        documents["/derp"] = documents["/derp"]?
            .replacingOccurrences(of: #"all="1" results="1""#, with: #"all="2" results="2""#)
            .replacingOccurrences(of: "</DERProgram></DERProgramList>", with: #"</DERProgram><DERProgram href="/derp/2"><mRID>B2</mRID><description>p2</description><DERControlListLink href="/derp/2/derc" all="1"/><primacy>2</primacy></DERProgram></DERProgramList>"#)
        documents["/derp/2/derc"] = Sep2Fixture.controlList([x]).replacingOccurrences(of: "/derp/1/derc", with: "/derp/2/derc")
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(documents))
        let records = Records()
        rig.client.controlRecorder.sink = records.sink
        var xs: [String] { records.all.filter { $0.mRID == "A0" }.map(\.outcome) }
        var ys: [String] { records.all.filter { $0.mRID == "B0" }.map(\.outcome) }
        rig.settle()
        #expect(xs == ["taken"], "\(records.all) \(rig.log.all)")
        rig.advance(101)
        rig.settle()
        #expect(ys == ["taken"] && xs == ["taken", "superseded"], "\(records.all)")
        rig.advance(100)
        rig.settle()
        #expect(ys == ["taken", "completed"] && xs == ["taken", "superseded", "taken"], "\(records.all)")
        #expect(IngestRules.check(Self.batch(records.all)) == nil)
    }

    @Test("a default changed under the same mRID (5000 → 4000 W): the old values superseded, the new ones taken")
    func defaultChanged() throws {
        let rig = Sep2WorkerTests.Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [])))
        let records = Records()
        rig.client.controlRecorder.sink = records.sink
        rig.settle()
        #expect(records.all.map(\.outcome) == ["taken"] && records.all.first?.limits.exportLimitW == 5000, "\(records.all)")
        rig.server.set("/derp/1/dderc", Sep2Fixture.chain(defaultExportW: 4000, controls: [])["/derp/1/dderc"] ?? "")
        Self.poll(rig) { records.all.count >= 3 }
        let d1 = records.all.filter { $0.mRID == "D1" }
        #expect(d1.map(\.outcome) == ["taken", "superseded", "taken"], "\(records.all) \(rig.log.all)")
        #expect(d1.map(\.limits.exportLimitW) == [5000, 5000, 4000], "\(d1)")
        #expect(IngestRules.check(Self.batch(records.all)) == nil)
    }
}
