import BessBase
import BessSystem
@testable import Config
import ControlCore
import Foundation
import Logging
@testable import Service
import Testing
import Uplink

/// The block schedule's store (issue 60 §1): ranking, once per id and revision, the revision gate,
/// the check on arrival, the file across a restart, and what it hands the cycle.
@Suite("Schedule store")
struct ScheduleStoreTests {
    /// 2026-11-30T00:00:00Z: a UTC midnight, so block numbers in the day are easy to count.
    static let midnight: Int64 = 1_795_996_800

    /// Every window the store published, newest last (nil: none).
    final class Windows: Sendable {
        let list = PILock<[ScheduleWindow?]>([])
        func publish(_ window: ScheduleWindow?) { list.withLock { $0.append(window) } }
        var last: ScheduleWindow?? { list.withLock { $0.last } }
        var count: Int { list.withLock { $0.count } }
    }

    static func directory() -> String {
        NSTemporaryDirectory() + "bessd-schedule-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    static func store(_ directory: String, settings: ScheduleConfiguration = ScheduleConfiguration(), windows: Windows = Windows(),
                      site: ScheduleFeasibilityInput? = nil, logger: Logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        -> ScheduleStore {
        ScheduleStore(settings: settings, stateDirectory: directory, logger: logger, publish: { windows.publish($0) },
                      site: { _ in site }, utcOffset: { _ in 0 })
    }

    static func schedule(_ id: String = "day-1", revision: Int = 1, source: ScheduleSource = .operator, from start: Int64 = midnight,
                         targets: [Double], length: Int64 = 900) -> Schedule {
        Schedule(id: id, revision: revision, source: source, lengthSeconds: length,
                 blocks: targets.enumerated().map { ScheduleBlock(startUnixSeconds: start + Int64($0.offset) * length, targetKWh: $0.element) })
    }

    @Test("a later revision changes only blocks from the gate on (gate 6, align 2); blocks inside it keep their targets")
    func gate() throws {
        let store = Self.store(Self.directory(), settings: ScheduleConfiguration(revisionGateBlocks: 6, revisionGateAlign: 2))
        let first = Self.schedule(targets: Array(repeating: 10, count: 20))
        // Arrives in block 1 of the day (an odd one), 100 s before the schedule's first block starts.
        #expect(store.offer(first, now: Self.midnight - 100).accepted)
        // Revision 2 arrives in block 3 of the day (00:30–00:45): the 7th block counting it, block 9 (02:00), is the first changed.
        let arrival = Self.midnight + 2 * 900 + 10
        let answer = store.offer(Self.schedule(revision: 2, targets: Array(repeating: 20, count: 20)), now: arrival)
        #expect(answer.accepted && !answer.repeated && answer.error == nil)
        let from = Schedule.firstRevisable(arrivalUnix: arrival, lengthSeconds: 900, gate: ScheduleGate(blocks: 6, align: 2))
        #expect(from == Self.midnight + 8 * 900)
        let current = try #require(store.snapshot.current)
        #expect(current.revision == 2)
        for block in current.blocks {
            #expect(block.targetKWh == (block.startUnixSeconds < from ? 10 : 20), "\(block.startUnixSeconds - Self.midnight) s")
        }
    }

    @Test("each id and revision is acted on once: the same again is answered repeated, nothing published; an older one is SCHEDULE_STALE")
    func once() {
        let windows = Windows()
        let store = Self.store(Self.directory(), windows: windows)
        let now = Self.midnight - 60
        let first = store.offer(Self.schedule(revision: 3, targets: [5, 6]), now: now)
        #expect(first.accepted && !first.repeated)
        let published = windows.count
        let again = store.offer(Self.schedule(revision: 3, targets: [50, 60]), now: now + 1)
        #expect(again.accepted && again.repeated)
        #expect(windows.count == published, "not acted on again")
        #expect(store.snapshot.current?.blocks.map(\.targetKWh) == [5, 6])
        let older = store.offer(Self.schedule(revision: 2, targets: [7, 8]), now: now + 2)
        #expect(!older.accepted && older.error?.code == .stale)
    }

    @Test("sources rank operator > aggregator > optimiser: a lower one is SCHEDULE_HELD while the higher one has blocks to run")
    func ranking() {
        let store = Self.store(Self.directory())
        let now = Self.midnight - 60
        #expect(store.offer(Self.schedule("agg", source: .aggregator, targets: [1, 2]), now: now).accepted)
        let optimiser = store.offer(Self.schedule("plan", source: .optimiser, targets: [3]), now: now)
        #expect(!optimiser.accepted && optimiser.error?.code == .held)
        #expect(optimiser.error?.message.contains("aggregator") == true)
        #expect(store.offer(Self.schedule("op", source: .operator, targets: [4]), now: now).accepted, "a higher source replaces")
        let aggregator = store.offer(Self.schedule("agg", revision: 2, source: .aggregator, targets: [1]), now: now)
        #expect(aggregator.error?.code == .held)
        // Once the operator's last block has ended, a lower source may take over.
        let later = Self.midnight + 900
        let next = Self.midnight + 1800
        #expect(store.offer(Self.schedule("plan", source: .optimiser, from: next, targets: [3]), now: later).accepted)
        #expect(store.snapshot.current?.source == .optimiser)
        // Cleared: the fallback; anyone may load.
        #expect(store.clear(now: later).ended?.id == "plan")
        #expect(store.snapshot.current == nil)
    }

    @Test("the schedule survives a new store on the same file; the window is published at start and at a block boundary")
    func persistence() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let now = Self.midnight - 60
        let store = Self.store(directory)
        #expect(store.offer(Self.schedule(source: .aggregator, targets: [1.5, -2.5, 3]), now: now).accepted)
        let text = try String(contentsOfFile: directory + "/schedule.json", encoding: .utf8)
        #expect(text.contains("\"format\":\"bessd-schedule\"") && text.contains("\"source\":\"aggregator\""))
        let windows = Windows()
        let restarted = Self.store(directory, windows: windows)
        restarted.restore(now: now)
        #expect(restarted.snapshot.current == Self.schedule(source: .aggregator, targets: [1.5, -2.5, 3]))
        #expect(restarted.snapshot.stateProblem == nil)
        let window = try #require(windows.last ?? nil)
        #expect(window.count == 3 && window.blocks[1].targetKWh == -2.5 && window.source == .aggregator)
        #expect(restarted.offer(Self.schedule(source: .aggregator, targets: [9]), now: now).repeated, "once per id and revision across restarts")
        restarted.tick(now: now + 30, reports: [])
        #expect(windows.count == 1, "no boundary crossed, nothing published")
        restarted.tick(now: Self.midnight + 900, reports: [])
        let next = try #require(windows.last ?? nil)
        #expect(windows.count == 2 && next.count == 2 && next.blocks[0].startUnixSeconds == Self.midnight + 900)
    }

    @Test("an unreadable file: no schedule, SCHEDULE_STATE_UNREADABLE in the journal, the file moved aside, nothing published")
    func unreadable() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "{\"format\":\"bessd-schedule\",\"version\":1,\"schedule\":{\"id\":".write(toFile: directory + "/schedule.json", atomically: true,
                                                                                    encoding: .utf8)
        let (logger, lines) = FrequencyEventReportTests.collecting()
        let windows = Windows()
        let store = Self.store(directory, windows: windows, logger: logger)
        store.restore(now: Self.midnight)
        #expect(store.snapshot.current == nil)
        #expect(store.snapshot.stateProblem?.code == .stateUnreadable)
        #expect(windows.count == 1 && windows.last == .some(nil), "the fallback: no window")
        let journal = lines.withLock { $0 }
        #expect(journal.contains { $0.contains("SCHEDULE_STATE_UNREADABLE: ") && $0.contains("BESS_CODE=SCHEDULE_STATE_UNREADABLE")
            && $0.contains("the fallback (application) in force") }, "\(journal)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains { $0.hasPrefix("schedule.json.damaged-") } && !names.contains("schedule.json"))
    }

    @Test("a block that cannot be met is named by its start (RFC 3339) and kWh, SCHEDULE_INFEASIBLE, and the schedule still taken")
    func infeasible() throws {
        // 100 kWh stored, a 10 kWh floor, 100 kW (25 kWh a block) either way, η 1: four 20 kWh blocks can go, the fifth is 10 kWh short.
        let site = ScheduleFeasibilityInput(socKWh: 100, capacityKWh: 200, lowerKWh: 10, upperKWh: 190, maxChargeKW: 100, maxDischargeKW: 100,
                                            metered: false)
        let store = Self.store(Self.directory(), site: site)
        let answer = store.offer(Self.schedule(targets: [20, 20, 20, 20, 20]), now: Self.midnight - 60)
        #expect(answer.accepted && answer.error == nil)
        let shortfall = try #require(answer.shortfall)
        #expect(shortfall.blockStartUnixSeconds == Self.midnight + 3600)
        #expect(abs(shortfall.shortKWh - 10) < 1e-6, "\(shortfall.shortKWh)")
        let warning = try #require(answer.warning)
        #expect(warning == "SCHEDULE_INFEASIBLE: the block from 2026-11-30T01:00:00Z cannot be met by 10.00 kWh "
                + "(SOC, reserve, power or grid limits on the forecast in use)", "\(warning)")
        #expect(store.snapshot.current?.blocks.count == 5, "taken all the same")
    }

    @Test("a document is refused SCHEDULE_INVALID with where it is wrong: boundary, order, energy, id, past, count")
    func invalidDocuments() {
        let store = Self.store(Self.directory())
        let now = Self.midnight - 60
        func refusal(_ blocks: [ScheduleDocument.Block], id: String = "d") -> String? {
            let answer = store.offer(ScheduleDocument(id: id, revision: 1, blocks: blocks), source: .operator, now: now)
            return answer.error.map { "\($0)" }
        }
        let start = "2026-11-30T00:00:00Z"
        #expect(refusal([.init(start: "2026-11-30T00:05:00Z", energyKWh: 1)])?.contains("not on a 900 s block boundary") == true)
        #expect(refusal([.init(start: "2026-11-30T05:30:00+05:30", energyKWh: 1), .init(start: start, energyKWh: 1)])?
            .contains("not after the block before it") == true, "the same instant written with an offset")
        #expect(refusal([.init(start: start, energyKWh: .infinity)])?.contains("energy_kwh must be a finite number") == true)
        #expect(refusal([.init(start: start, energyKWh: 1)], id: "bad id\n")?.hasPrefix("SCHEDULE_INVALID: id must be") == true)
        #expect(refusal([.init(start: "2026-11-29T00:00:00Z", energyKWh: 1)])?.contains("every block has ended") == true)
        #expect(refusal([.init(start: "30/11/2026 00:00", energyKWh: 1)])?.contains("is not an RFC 3339 time") == true)
        #expect(refusal([])?.contains("no block") == true)
        let many = (0..<673).map { ScheduleDocument.Block(start: ScheduleDocument.rfc3339(Self.midnight + Int64($0) * 900), energyKWh: 0) }
        #expect(refusal(many)?.contains("673 blocks, more than 672") == true)
        #expect(store.snapshot.current == nil)
        #expect(ScheduleDocument.unixSeconds(rfc3339: "2026-11-30T05:30:00+05:30") == Self.midnight)
        #expect(ScheduleDocument.unixSeconds(rfc3339: "2026-11-30T00:00:00.000Z") == Self.midnight)
        #expect(ScheduleDocument.unixSeconds(rfc3339: "2026-11-30T00:00:00.5Z") == nil)
        #expect(ScheduleDocument.rfc3339(Self.midnight) == "2026-11-30T00:00:00Z")
    }
}
