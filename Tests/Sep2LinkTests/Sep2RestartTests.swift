import ControlCore
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Synchronization
import Testing

/// The DERControlResponses kept across a restart (`ieee2030_5-responses.bin` in the state directory;
/// the controls recorded in force: Sep2ControlRecordRestartTests.swift). A restart here is a fresh
/// client over the same directory, its monotonic clock started afresh, the wall clock where the last
/// one stopped.
extension Sep2ReporterWorkerTests {
    /// bessd (re)started over `dir` at wall time `wall`: the store read, reporting with a fresh reporter.
    static func started(_ server: FakeSep2Server, _ dir: String, wall: Double) -> Sep2WorkerTests.Rig {
        let rig = Sep2WorkerTests.Rig(server: server, store: ScheduleStore(stateDirectory: dir))
        rig.wall = wall
        let fixed = Sep2SiteSample()
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { fixed })
        rig.client.restore(now: rig.now, wall: rig.wall)
        return rig
    }

    /// The bodies posted to `/rsps/1/rsp` from the `from`th post on.
    static func responseBodies(_ server: FakeSep2Server, from: Int = 0) -> [[UInt8]] {
        server.posted.withLock { Array($0.dropFirst(from)) }.filter { $0.path == "/rsps/1/rsp" }.map(\.body)
    }

    /// mRID, status, createdDateTime as made.
    @Test("queued responses survive two restarts and are posted once each, in order, byte for byte")
    func outboxSurvivesRestart() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = Self.server()
        let first = Self.started(server, dir, wall: Double(Self.t0))
        first.settle()
        first.advance(1)
        first.settle()
        #expect(Self.responses(server) == ["1 A1"], "received, while the server answers")
        server.down = true
        first.advance(129)
        first.settle()
        #expect(try Sep2ReporterTests.statuses(first.client.reporting?.reporter.pendingResponses ?? []) == ["2 A1"], "started, queued")

        // Restarted while A1 runs and the server is still down: started is not made a second time.
        let second = Self.started(server, dir, wall: first.wall)
        #expect(second.client.reporting?.reporter.pendingResponses == first.client.reporting?.reporter.pendingResponses)
        second.settle()
        second.advance(41)
        second.settle()
        let queued = try #require(second.client.reporting?.reporter.pendingResponses)
        #expect(try Sep2ReporterTests.statuses(queued) == ["2 A1", "3 A1"], "completed behind it, started once")

        // Restarted after A1's end with the server back: both go, once, as they were made.
        server.down = false
        let before = server.posted.withLock { $0.count }
        let third = Self.started(server, dir, wall: second.wall + 1)
        third.settle()
        for _ in 0..<3 {
            third.advance(31)
            third.settle()
        }
        #expect(Self.responseBodies(server, from: before) == queued.map(\.body), "\(Self.responses(server))")
        #expect(third.client.reporting?.reporter.pendingResponses.isEmpty == true)
        #expect(Self.responses(server) == ["1 A1", "2 A1", "3 A1"], "nothing made or sent twice")

        // And the next start finds nothing left to send.
        let posted = server.posted.withLock { $0.count }
        let fourth = Self.started(server, dir, wall: third.wall + 1)
        fourth.settle()
        #expect(fourth.client.reporting?.reporter.pendingResponses.isEmpty == true)
        #expect(Self.responseBodies(server, from: posted).isEmpty)
    }

    @Test("the give-up hour of a failing response runs on the wall clock across a restart")
    func answeredHourSurvivesRestart() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = Self.server()
        server.scripted.withLock { $0["/rsps/1/rsp"] = [500, 500] }
        let first = Self.started(server, dir, wall: Double(Self.t0))
        first.settle()
        first.advance(1)
        first.settle()
        #expect(Self.responses(server) == ["1 A1"], "answered 500 once")
        #expect(first.log.codes("SEP2_RESPONSE_DROPPED").isEmpty)

        // An hour on (A1 long over), a fresh monotonic clock: the second 500 is past the hour from the first.
        let second = Self.started(server, dir, wall: first.wall + 3600)
        second.settle()
        #expect(Self.responses(server) == ["1 A1", "1 A1", "3 A1"], "the same response again, given up; then A1's completed (it ended while bessd was down)")
        let dropped = second.log.codes("SEP2_RESPONSE_DROPPED")
        #expect(dropped.count == 1 && dropped.first?.contains("2 times in 360") == true, "\(dropped) \(second.log.all)")
        #expect(second.client.reporting?.reporter.pendingResponses.isEmpty == true)
    }

    /// Corrupt, truncated or oversized.
    @Test("a corrupt outbox file is SEP2_STORE_CORRUPT, moved aside; bessd goes on with an empty outbox")
    func corruptOutboxFile() throws {
        let dir = try Sep2WorkerTests.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/ieee2030_5-responses.bin"
        let server = Self.server()
        let first = Self.started(server, dir, wall: Double(Self.t0))
        first.settle()
        first.advance(1)
        first.settle()
        server.down = true
        first.advance(110)
        first.settle()
        #expect(first.client.reporting?.reporter.pendingResponses.count == 1, "started, queued while the server is down")
        let good = try Data(contentsOf: URL(fileURLWithPath: path))
        let damaged: [(String, Data)] = [("garbage", Data("BESS2RSP torn".utf8)), ("truncated", good.prefix(good.count - 5)),
                                         ("oversized", good + Data(count: 5 << 20))]
        for (name, bytes) in damaged {
            for kept in damagedCopies(of: path) { try? FileManager.default.removeItem(atPath: kept) }  // each case must move its own aside
            try bytes.write(to: URL(fileURLWithPath: path))
            let rig = Self.started(server, dir, wall: first.wall)
            let corrupt = rig.log.codes("SEP2_STORE_CORRUPT")
            #expect(corrupt.count == 1 && corrupt.first?.contains("ieee2030_5-responses.bin") == true, "\(name): \(rig.log.all)")
            #expect(rig.client.reporting?.reporter.pendingResponses.isEmpty == true, "\(name)")
            #expect(damagedCopies(of: path).count == 1 && !FileManager.default.fileExists(atPath: path), "\(name)")
            rig.settle()
            #expect(rig.client.reporting != nil, "\(name): the reporter runs on")
        }
    }
}

extension Sep2ReporterTests {
    @Test("the kept responses read back as written; a bound passed on writing is SEP2_STORE_TOO_LARGE")
    func keptResponsesRoundTrip() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        reporter.enqueue(reporter.respond(to: Self.control("A1", required: 0x03), .state(.active), serverTime: 1000) + Self.filler(2))
        _ = reporter.track([ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.control("B2", required: 0x01)])], serverTime: 1000)
        _ = reporter.handleResponse(Sep2Reply(status: 503), to: try #require(reporter.nextResponse(now: .at(5))), now: .at(5), wall: 1_795_000_000)
        let stored = reporter.storedResponses
        #expect(stored.outbox.count == 4 && stored.outbox.first?.mRID == "A1" && stored.outbox.last?.mRID == "" && stored.answered == 1
                && stored.answeredSince == 1_795_000_000 && !stored.sent.isEmpty && stored.seen["B2"] != nil, "\(stored)")
        var reader = ScheduleStore.Reader(bytes: try stored.encoded(), at: 0)
        #expect(try StoredResponses.decode(&reader) == stored && reader.at == reader.bytes.count)
        var huge = stored
        huge.outbox[0].request.body = [UInt8](repeating: 0x41, count: StoredResponses.maximumBodyBytes + 1)
        #expect(throws: ScheduleStoreError.self) { try huge.encoded() }
    }
}

/// The copies of the file at `path` moved aside as damaged (`NAME.damaged-UNIXTIME`, `StateFile`'s quarantine).
private func damagedCopies(of path: String) -> [String] {
    let directory = (path as NSString).deletingLastPathComponent, name = (path as NSString).lastPathComponent
    return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(name + ".damaged-") }
        .map { directory + "/" + $0 }
}
