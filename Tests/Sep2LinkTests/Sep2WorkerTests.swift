import BessSystem
import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import TestSupport
import Synchronization
import Testing

/// The 2030.5 worker against an in-process server (no TLS): discovery → programs → the limit in the
/// cycle's slot at its boundary; an outage, a restart and a corrupt store keep the schedule; a wrong
/// PIN stops all traffic.
@Suite("2030.5 worker")
struct Sep2WorkerTests {
    static let t0 = Sep2Fixture.t0
    /// Control A: 1500 W from t0 + 100 for 60 s; the default: 5000 W.
    static let controlA = Sep2Fixture.Control(mRID: "A1", start: t0 + 100, duration: 60, exportW: 1500)

    /// A client and what it drives; the test moves `now` and `wall` together.
    final class Rig: @unchecked Sendable {
        let server: FakeSep2Server
        let slot = UtilityLimitSlot()
        let log = LogLines()
        let client: Sep2Client
        var now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        private let wallClock = Mutex(Double(Sep2Fixture.t0))
        /// The local wall clock; the fake server's Time says it too (same clock, offset 0).
        var wall: Double {
            get { wallClock.withLock { $0 } }
            set { wallClock.withLock { $0 = newValue } }
        }

        init(server: FakeSep2Server, store: ScheduleStore? = nil, pin: UInt32? = 111_115) {
            self.server = server
            client = Sep2Client(settings: Sep2WorkerSettings(entryPath: "/dcap", pin: pin, pollSeconds: 30, siteRatingW: 200_000,
                                                            timeout: .seconds(10), serverName: "test:443"),
                                identity: Sep2Fixture.identity, transport: server, slot: slot, store: store, log: log.sink)
            server.clock.withLock { $0 = { [unowned self] in Int64(self.wall.rounded(.down)) } }
        }

        func advance(_ seconds: Double) {
            now = now + .seconds(fromDouble: seconds)
            wall += seconds
        }

        /// Rounds until the client wants to wait; returns when it wants the next one.
        @discardableResult
        func settle() -> MonotonicInstant {
            for _ in 0..<200 {
                let due = client.round(now: now, wall: wall)
                if due > now { return due }
            }
            Issue.record("the client never waited")
            return now
        }

        var export: Double? { slot.read()?.exportLimitW }
    }

    static func storeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "sep2-worker-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("the schedule is republished before each request, so a slow round never makes it stale")
    func republishedBeforeEachRequest() throws {
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])))
        rig.client.restore(now: rig.now, wall: rig.wall)
        rig.settle()
        rig.advance(31)
        // The requests before this one took 40 s (a server answering at the edge of its timeout).
        let late = rig.now + .seconds(40), lateWall = rig.wall + 40
        rig.client.refresh = { (late, lateWall) }
        let before = rig.server.requests.count
        _ = rig.client.round(now: rig.now, wall: rig.wall)
        #expect(rig.server.requests.count == before + 1, "a poll was due and sent")
        let published = try #require(rig.slot.read())
        #expect(published.validUntil.map { $0 > late + .seconds(40) } == true,
                "published again at the send's clock, valid for one slow send: \(String(describing: published.validUntil)) vs \(late)")
    }

    @Test("discovery → programs → default in the slot, then the control from its start's millisecond to end")
    func discoveryToBoundary() throws {
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])))
        rig.client.restore(now: rig.now, wall: rig.wall)
        #expect(!rig.slot.published, "nothing known, nothing published")
        rig.settle()
        #expect(rig.server.requests.contains { $0.hasPrefix("/derp/1/derc") }, "\(rig.server.requests)")
        #expect(rig.export == 5000, "the default before the control")
        let published = try #require(rig.slot.read())
        #expect(published.validUntil.map { $0 > rig.now + .seconds(10) } == true, "valid past the transport's timeout")
        // The client wakes at the control's start: the boundary is where it says it will publish.
        let boundary = try #require(rig.client.publish(now: rig.now, wall: rig.wall))
        #expect(boundary - rig.now >= .seconds(100) && boundary - rig.now <= .seconds(100) + .milliseconds(2), "\(boundary - rig.now)")
        rig.advance(99.9)
        rig.settle()
        #expect(rig.export == 5000, "not before its start")
        rig.now = boundary
        rig.wall = Double(Self.t0) + (boundary - MonotonicInstant(nanoseconds: 1_000_000_000_000)).secondsDouble
        _ = rig.client.round(now: rig.now, wall: rig.wall)
        #expect(rig.export == 1500, "the control at its start")
        let state = rig.client.state.withLock { $0 }
        #expect(state.source == .live)
        let control = try #require(state.controls.first { $0.type == "opModExpLimW" })
        #expect(control.program == "B1" && control.control == "A1" && control.untilUnix == Self.t0 + 160 && control.value == "1500 W", "\(control)")
        #expect(rig.log.codes("SEP2_CONTROL_TAKEN").contains { $0.contains("\"A1\"") && $0.contains("1500 W") }, "\(rig.log.all)")
        rig.advance(60)
        rig.settle()
        #expect(rig.export == 5000, "the default again after its end")
    }

    @Test("an exchange due within the timeout of a boundary waits until the boundary is published")
    func exchangeWaitsForBoundary() {
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])))
        rig.settle()
        let asked = rig.server.requests.count
        // 95 s on, every resource (poll 30 s) is due and the start is 5 s away.
        rig.advance(95)
        let due = rig.client.round(now: rig.now, wall: rig.wall)
        #expect(rig.server.requests.count == asked, "an exchange started 5 s before a boundary")
        #expect(due > rig.now && due <= rig.now + .seconds(5) + .milliseconds(2), "\(due - rig.now)")
        rig.advance(5.001)
        _ = rig.client.round(now: rig.now, wall: rig.wall)
        #expect(rig.export == 1500)
        rig.settle()
        #expect(rig.server.requests.count > asked, "after the boundary the polls go")
    }

    /// kOF 250; SEP2_CONTROL_NOT_APPLIED once; the same in the default control.
    @Test("an unapplicable opModFreqDroop beside an export limit: limit in force, no droop, notice once")
    func droopNotAppliedRestTaken() {
        let droop = "<opModFreqDroop><dBOF>36</dBOF><dBUF>36</dBUF><kOF>250</kOF><kUF>50</kUF><openLoopTms>500</openLoopTms></opModFreqDroop>"
        var chain = Sep2Fixture.chain(controls: [Self.controlA])
        chain["/derp/1/derc"] = Sep2Fixture.controlList([Self.controlA]).replacingOccurrences(of: "<DERControlBase>", with: "<DERControlBase>" + droop)
        let rig = Rig(server: FakeSep2Server(chain))
        rig.settle()
        for _ in 0..<4 {
            rig.advance(31)
            rig.settle()
        }
        #expect(rig.export == 1500 && rig.slot.read()?.droop == nil, "control A's export limit in force at t0+124, no droop")
        var lines = rig.log.codes("SEP2_CONTROL_NOT_APPLIED")
        #expect(lines.count == 1 && lines[0].contains("control \"A1\"") && lines[0].contains("kOF 250 is outside 10…200"), "\(rig.log.all)")
        #expect(rig.log.codes("SEP2_CONTROL_REFUSED").isEmpty, "\(rig.log.all)")
        let ns = Sep2Fixture.ns
        rig.server.set("/derp/1/dderc", #"<DefaultDERControl \#(ns) href="/derp/1/dderc"><mRID>D1</mRID><description>d</description><DERControlBase>"#
            + droop + Sep2Fixture.exportLimit(4000) + "</DERControlBase></DefaultDERControl>")
        for _ in 0..<4 {
            rig.advance(31)
            rig.settle()
        }
        lines = rig.log.codes("SEP2_CONTROL_NOT_APPLIED")
        #expect(rig.export == 4000 && rig.slot.read()?.droop == nil, "the default's export limit after A: \(String(describing: rig.export))")
        #expect(lines.count == 2 && lines[1].contains("control \"D1\"") && lines[1].contains("/derp/1/dderc"), "\(rig.log.all)")
    }

    @Test("an outage: said once, the cached control runs, then the default; restoration said")
    func outageKeepsSchedule() {
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])))
        rig.settle()
        #expect(rig.export == 5000)
        rig.server.down = true
        for _ in 0..<40 {
            rig.advance(5)
            rig.settle()
            if rig.wall >= Double(Self.t0 + 101), rig.wall < Double(Self.t0 + 159) { #expect(rig.export == 1500, "\(rig.wall)") }
        }
        #expect(rig.wall > Double(Self.t0 + 160))
        #expect(rig.export == 5000, "the cached default after the control, never no limit")
        #expect(rig.log.codes("SEP2_SERVER_UNREACHABLE").count == 1, "\(rig.log.all)")
        #expect(rig.client.state.withLock { $0.reachable } == false)
        rig.server.down = false
        rig.advance(300)
        rig.settle()
        #expect(rig.log.codes("SEP2_SERVER_RESTORED").count == 1, "\(rig.log.all)")
        #expect(rig.client.state.withLock { $0.reachable == true && $0.lastStatus == 200 })
    }

    /// SEP2_CONTROL_REFUSED with its reason; its sibling in the list runs.
    @Test("a refused control is reported once and alone; a list that is not XML keeps the last good schedule")
    func refusedControl() {
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])))
        rig.settle()
        let b2 = Sep2Fixture.Control(mRID: "B2", start: Self.t0 + 100, duration: 60, exportW: 2500)
        let bad = Sep2Fixture.controlList([Self.controlA, b2]).replacingOccurrences(of: "<value>2500</value>", with: "<value>99999</value>")
        rig.server.set("/derp/1/derc", bad)
        for _ in 0..<4 {
            rig.advance(31)
            rig.settle()
        }
        let refusals = rig.log.codes("SEP2_CONTROL_REFUSED")
        #expect(refusals.count == 1 && refusals[0].contains("control \"B2\"") && refusals[0].contains("SEP2_VALUE_INVALID")
                    && refusals[0].contains("/derp/1/derc"), "\(rig.log.all)")
        #expect(rig.export == 1500, "control A (t0+100…160) runs at t0+124, taken beside the refused B2")
        rig.server.set("/derp/1/derc", "<DERControlList")
        for _ in 0..<3 where rig.log.codes("SEP2_CONTROL_REFUSED").count < 2 {
            rig.advance(31)
            rig.settle()
        }
        #expect(rig.log.codes("SEP2_CONTROL_REFUSED").count == 2, "\(rig.log.all)")
        #expect(rig.client.schedule.programs.first?.controls.map(\.mRID) == ["A1"], "the whole list refused: the last good one runs on")
    }

    @Test("a restart with the server down runs the stored schedule: the control at its time, then the default")
    func restartFromStore() throws {
        let dir = try Self.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])), store: ScheduleStore(stateDirectory: dir))
        first.settle()
        #expect(first.export == 5000)
        #expect(FileManager.default.fileExists(atPath: dir + "/ieee2030_5-schedule.bin"))

        let down = FakeSep2Server([:])
        down.down = true
        let second = Rig(server: down, store: ScheduleStore(stateDirectory: dir))
        second.advance(120)
        second.client.restore(now: second.now, wall: second.wall)
        #expect(second.export == 1500, "mid-event after the restart")
        #expect(second.log.codes("SEP2_SCHEDULE_CACHED").count == 1, "\(second.log.all)")
        #expect(second.client.state.withLock { $0.source } == .cached)
        second.settle()
        #expect(second.export == 1500)
        second.advance(45)
        second.settle()
        #expect(second.export == 5000, "then the cached default")
    }

    @Test("a corrupt store is SEP2_STORE_CORRUPT and ignored; the server's schedule is stored afresh")
    func corruptStore() throws {
        let dir = try Self.storeDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ScheduleStore(stateDirectory: dir)
        try Data("BESS2030 torn".utf8).write(to: URL(fileURLWithPath: store.path))
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [Self.controlA])), store: store)
        rig.client.restore(now: rig.now, wall: rig.wall)
        #expect(rig.log.codes("SEP2_STORE_CORRUPT").count == 1, "\(rig.log.all)")
        #expect(!rig.slot.published)
        rig.settle()
        #expect(rig.export == 5000)
        let saved = try #require(try store.load())
        #expect(saved.documents.keys.contains { $0.hasPrefix("/derp/1/derc") } && saved.serverTimeOffset == 0, "\(saved.documents.keys)")
    }

    @Test("a wrong PIN stops all traffic: SEP2_PIN_MISMATCH once, nothing asked for again, no schedule taken")
    func wrongPIN() {
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(pin: 222_226, controls: [Self.controlA])))
        rig.settle()
        let asked = rig.server.requests
        #expect(asked.contains("/edev/1/rg"), "\(asked)")
        #expect(!asked.contains { $0.hasPrefix("/derp") }, "\(asked)")
        for _ in 0..<5 {
            rig.advance(600)
            rig.settle()
        }
        #expect(rig.server.requests == asked, "traffic after the PIN mismatch")
        #expect(rig.log.codes("SEP2_PIN_MISMATCH").count == 1, "\(rig.log.all)")
        #expect(rig.client.state.withLock { $0.stopped?.hasPrefix("SEP2_PIN_MISMATCH") } == true)
        #expect(!rig.slot.published)
    }

    /// 600 s behind.
    @Test("a server clock behind is followed: controls run at server time, none replayed or ended early")
    func serverClockBehind() throws {
        let t0 = Self.t0
        let c1 = Sep2Fixture.Control(mRID: "C1", start: t0 + 50, duration: 60, exportW: 1500)
        let d1 = Sep2Fixture.Control(mRID: "D1", start: t0 + 10, duration: 30, exportW: 2500)
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [c1, d1])))
        rig.settle()
        rig.advance(60)
        rig.settle()
        #expect(rig.export == 1500, "C1 started on the local clock (no offset known yet)")
        // The server's clock is found 600 s behind; after that it sends E1, on its own time.
        rig.server.clock.withLock { $0 = { [unowned rig] in Int64(rig.wall.rounded(.down)) - 600 } }
        let n1 = Sep2Fixture.Control(mRID: "E1", start: t0 - 400, duration: 60, exportW: 3500)
        var samples: [(wall: Double, server: Double, export: Double?)] = []
        var sent = false
        while rig.wall < Double(t0 + 800) {
            rig.advance(5)
            rig.settle()
            let server = rig.client.state.withLock { $0.serverTimeUnix } ?? 0
            if !sent, server < rig.wall - 300 {
                rig.server.set("/derp/1/derc", Sep2Fixture.controlList([c1, d1, n1]))
                sent = true
            }
            samples.append((rig.wall, server, rig.export))
        }
        #expect(rig.client.schedule.programs.first?.controls.map(\.mRID) == ["C1", "D1", "E1"], "E1 read: \(rig.log.all.map(\.message).suffix(4))")
        let behind = samples.filter { $0.server < $0.wall - 300 }
        #expect(!behind.isEmpty && behind.allSatisfy { abs($0.server - ($0.wall - 600)) < 2 }, "the server's time followed: \(samples.prefix(20))")
        #expect(!samples.contains { $0.export == 2500 }, "D1 ended before the step: it never runs again")
        let n1Window = samples.filter { $0.server >= Double(t0 - 400) + 1 && $0.server < Double(t0 - 340) }
        let trace = samples.map { "\(Int($0.wall) - Int(t0)) \(Int($0.server) - Int(t0)) \(Int($0.export ?? -1))" }
        #expect(!n1Window.isEmpty && n1Window.allSatisfy { $0.export == 3500 }, "E1 in its window on the server's time: \(trace)")
        let c1Held = behind.filter { ($0.server < Double(t0 - 400) || $0.server >= Double(t0 - 339)) && $0.server < Double(t0 + 110) }
        #expect(!c1Held.isEmpty && c1Held.allSatisfy { $0.export == 1500 }, "C1 started: it runs on to its end on the server's time")
        let after = samples.filter { $0.server >= Double(t0 + 111) }
        #expect(!after.isEmpty && after.allSatisfy { $0.export == 5000 }, "then the default: \(after.prefix(3))")
    }

    /// A held control that raised a limit over the default.
    @Test("server clock behind: a held control never exceeds what the server has in force; bessctl shows it")
    func serverClockBehindHeldRaiseBounded() throws {
        let t0 = Self.t0
        let c1 = Sep2Fixture.Control(mRID: "C1", start: t0 + 50, duration: 60, exportW: 9000)
        let rig = Rig(server: FakeSep2Server(Sep2Fixture.chain(controls: [c1])))
        rig.settle()
        rig.advance(60)
        rig.settle()
        #expect(rig.export == 9000, "C1 raised the export limit over the 5000 W default")
        rig.server.clock.withLock { $0 = { [unowned rig] in Int64(rig.wall.rounded(.down)) - 600 } }
        var samples: [(server: Double, export: Double?, shown: String)] = []
        while rig.wall < Double(t0 + 800) {
            rig.advance(5)
            rig.settle()
            // What `bessctl ieee2030-5` lists for the export limit: its value and the control (or default) it names.
            let (server, listed) = rig.client.state.withLock { state in (state.serverTimeUnix ?? 0, state.controls.first { $0.type == "opModExpLimW" }) }
            samples.append((server, rig.export, "\(listed?.value ?? "none") \(listed?.control ?? "default")"))
        }
        let trace = samples.map { "\(Int($0.server) - Int(t0)) \(Int($0.export ?? -1)) \($0.shown)" }
        let before = samples.filter { $0.server < Double(t0 + 50) }
        #expect(!before.isEmpty && before.allSatisfy { ($0.export ?? .infinity) <= 5000 }, "before C1's start on the server's time: \(trace)")
        #expect(before.allSatisfy { $0.shown == "5000 W default" }, "the default bounds, so it is listed, not the held C1: \(trace)")
        let during = samples.filter { $0.server >= Double(t0 + 51) && $0.server < Double(t0 + 109) }
        #expect(!during.isEmpty && during.allSatisfy { $0.export == 9000 && $0.shown == "9000 W C1" }, "C1 in its window: \(trace)")
        let after = samples.filter { $0.server >= Double(t0 + 111) }
        #expect(!after.isEmpty && after.allSatisfy { $0.export == 5000 }, "\(trace)")
    }

    @Test("the default's setGradW and a control's droop reach the slot in site units, and leave at their end")
    func gradientAndDroopPublished() throws {
        let ns = Sep2Fixture.ns
        var chain = Sep2Fixture.chain(controls: [])
        chain["/derp/1/dderc"] = #"<DefaultDERControl \#(ns) href="/derp/1/dderc"><mRID>D1</mRID><description>d</description><DERControlBase>"#
            + Sep2Fixture.exportLimit(5000) + "</DERControlBase><setGradW>27</setGradW></DefaultDERControl>"
        chain["/derp/1/derc"] = #"<DERControlList \#(ns) href="/derp/1/derc" all="1" results="1"><DERControl><mRID>F1</mRID><description>c</description>"#
            + "<creationTime>\(Self.t0 - 1000)</creationTime><EventStatus><currentStatus>0</currentStatus><dateTime>\(Self.t0 - 1000)</dateTime>"
            + "<potentiallySuperseded>false</potentiallySuperseded></EventStatus><interval><duration>60</duration><start>\(Self.t0 + 100)</start></interval>"
            + "<DERControlBase><opModFreqDroop><dBOF>36</dBOF><dBUF>50</dBUF><kOF>40</kOF><kUF>60</kUF><openLoopTms>250</openLoopTms></opModFreqDroop>"
            + "</DERControlBase></DERControl></DERControlList>"
        let rig = Rig(server: FakeSep2Server(chain))
        rig.settle()
        let before = try #require(rig.slot.read())
        #expect(before.gradientWPerSecond == 540 && before.droop == nil, "0.27 %/s of 200 kW, no droop yet: \(before)")
        rig.advance(101)
        rig.settle()
        let during = try #require(rig.slot.read())
        #expect(during.droop == UtilityDroop(deadbandOverHz: 0.036, deadbandUnderHz: 0.05, droopOverPercent: 4, droopUnderPercent: 6,
                                             responseTime: .milliseconds(2500)), "\(String(describing: during.droop))")
        #expect(rig.client.state.withLock { $0.controls }.contains { $0.type == "opModFreqDroop" && $0.control == "F1" })
        rig.advance(60)
        rig.settle()
        #expect(rig.slot.read()?.droop == nil && rig.slot.read()?.gradientWPerSecond == 540)
    }

    @Test("the worker's thread publishes the server's control into the slot and stops")
    func workerThread() throws {
        let now = Int64(SystemClock.wallClockSeconds())
        let control = Sep2Fixture.Control(mRID: "C1", start: now - 10, duration: 3600, exportW: 2500)
        let server = FakeSep2Server(Sep2Fixture.chain(serverTime: now, controls: [control]))
        let slot = UtilityLimitSlot()
        let log = LogLines()
        let worker = Sep2Worker(settings: Sep2WorkerSettings(entryPath: "/dcap", pin: nil, pollSeconds: 30, siteRatingW: 100_000,
                                                             timeout: .seconds(2), serverName: "test:443"),
                                identity: Sep2Fixture.identity, transport: server, slot: slot, store: nil, log: log.sink)
        worker.start()
        #expect(waitFor(seconds: 10) { slot.read()?.exportLimitW == 2500 }, "\(log.all)")
        #expect(worker.isAlive)
        #expect(worker.state.controls.first?.control == "C1")
        worker.stop()
        #expect(!worker.isAlive)
    }
}
