import BessBase
import ControlCore
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The controls recorded in force kept across a restart (`ieee2030_5-controls.bin` in the state
/// directory): none recorded taken twice, the end of one that ended while bessd was down recorded. A
/// restart here is a fresh client over the same directory, the wall clock where the last one stopped.
extension Sep2ControlRecordTests {
    /// bessd (re)started over `dir` at wall time `wall`, its records to `records`.
    static func started(_ server: FakeSep2Server, _ dir: String, wall: Double, _ records: Records) -> Sep2WorkerTests.Rig {
        let rig = Sep2WorkerTests.Rig(server: server, store: ScheduleStore(stateDirectory: dir))
        rig.wall = wall
        rig.client.controlRecorder.sink = records.sink
        rig.client.restore(now: rig.now, wall: rig.wall)
        return rig
    }

    /// A1 (1500 W, t0 + 100 for 60 s) taken by a first bessd over a fresh `dir`; the wall clock at t0 + 110.
    static func takeA1(_ dir: String) -> (FakeSep2Server, Sep2WorkerTests.Rig, Records) {
        let server = FakeSep2Server(Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA]))
        let records = Records()
        let rig = started(server, dir, wall: Double(t0), records)
        rig.settle()
        rig.advance(110)
        rig.settle()
        return (server, rig, records)
    }

    @Test("a control in force across a restart is not recorded taken again; its end recorded once")
    func inForceSurvivesRestart() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, first, before) = Self.takeA1(dir)
        let taken = try #require(before.all.last, "\(before.all)")
        #expect(taken.mRID == "A1" && taken.outcome == "taken", "\(before.all)")
        let records = Records()
        let second = Self.started(server, dir, wall: first.wall + 10, records)
        second.settle()
        #expect(records.all.isEmpty, "A1 still in force, the default still out: \(records.all)")
        second.advance(41)
        second.settle()
        var ended = taken
        ended.outcome = UtilityControlRecord.completed
        #expect(records.all.map(\.outcome) == ["completed", "taken"] && records.all.first == ended && records.all.last?.mRID == "D1",
                "\(records.all)")
    }

    @Test("a control ended while bessd was down gets its end record at restart: completed or cancelled")
    func endedWhileDown() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, first, before) = Self.takeA1(dir)
        let taken = try #require(before.all.last)
        let records = Records()
        let second = Self.started(server, dir, wall: first.wall + 90, records)
        var completed = taken
        completed.outcome = UtilityControlRecord.completed
        #expect(records.all.first == completed && records.all.map(\.mRID) == ["A1", "D1"], "at the restart, before any exchange: \(records.all)")
        second.settle()
        #expect(records.all.count == 2, "once: \(records.all)")

        // Cancelled by the server (EventStatus 2) while bessd was down, inside its window.
        let dir2 = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        let (server2, first2, _) = Self.takeA1(dir2)
        var a1 = Sep2WorkerTests.controlA
        a1.status = 2
        server2.set("/derp/1/derc", Sep2Fixture.controlList([a1]))
        let records2 = Records()
        let second2 = Self.started(server2, dir2, wall: first2.wall + 10, records2)
        #expect(records2.all.isEmpty, "the stored schedule still has A1 in force: \(records2.all)")
        second2.settle()
        Self.poll(second2, count: 1) { records2.all.count >= 2 }
        var cancelled = taken
        cancelled.outcome = UtilityControlRecord.cancelled
        #expect(records2.all.first == cancelled && records2.all.map(\.mRID) == ["A1", "D1"], "\(records2.all)")
    }

    /// Corrupt, truncated or oversized.
    @Test("a corrupt in-force file is SEP2_STORE_CORRUPT, moved aside; bessd goes on with an empty set")
    func corruptInForceFile() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/ieee2030_5-controls.bin"
        let (server, first, _) = Self.takeA1(dir)
        let good = try Data(contentsOf: URL(fileURLWithPath: path))
        let damaged: [(String, Data)] = [("garbage", Data("BESS2INF torn".utf8)), ("truncated", good.prefix(good.count - 5)),
                                         ("oversized", good + Data(count: 5 << 20))]
        for (name, bytes) in damaged {
            for kept in damagedCopies(of: path) { try? FileManager.default.removeItem(atPath: kept) }  // each case must move its own aside
            try bytes.write(to: URL(fileURLWithPath: path))
            let records = Records()
            let rig = Self.started(server, dir, wall: first.wall, records)
            let corrupt = rig.log.codes("SEP2_STORE_CORRUPT")
            #expect(corrupt.count == 1 && corrupt.first?.contains("ieee2030_5-controls.bin") == true, "\(name): \(rig.log.all)")
            #expect(damagedCopies(of: path).count == 1, "\(name)")
            // Nothing known in force: A1 is recorded taken (again), the file written afresh.
            #expect(records.all.map(\.outcome) == ["taken"] && records.all.first?.mRID == "A1", "\(name): \(records.all)")
            #expect(FileManager.default.fileExists(atPath: path), "\(name)")
        }
    }

    @Test("the kept controls in force read back as written, the limits left out beyond range too")
    func keptControlsRoundTrip() throws {
        var record = UtilityControlRecord(mRID: "C1", program: "P1", outcome: UtilityControlRecord.taken, start: 10, end: 70,
                                          limits: UtilityControlLimits(exportLimitW: 1500, storageTargetW: -2.5))
        record.beyondRange = ["import_limit_w", "target_w"]
        let inForce = [ControlKey(program: "P1", control: "C1"): record,
                       ControlKey(program: "P1", control: "D1"): UtilityControlRecord(mRID: "D1", program: "P1", outcome: UtilityControlRecord.taken,
                                                                                      limits: UtilityControlLimits(maxLimW: 100_000))]
        var controls = ScheduleStore.Reader(bytes: try StoredInForce.encode(inForce), at: 0)
        #expect(try StoredInForce.decode(&controls) == inForce && controls.at == controls.bytes.count)
    }
}

/// The copies of the file at `path` moved aside as damaged (`NAME.damaged-UNIXTIME`, `StateFile`'s quarantine).
private func damagedCopies(of path: String) -> [String] {
    let directory = (path as NSString).deletingLastPathComponent, name = (path as NSString).lastPathComponent
    return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(name + ".damaged-") }
        .map { directory + "/" + $0 }
}
