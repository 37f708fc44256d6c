import ControlCore
import Testing

/// A schedule's revisions through the gate (docs/design/0011-block-schedule.md): the first revision
/// taken as it comes except blocks begun, later ones only from the gate on, India's rule as
/// gate 6, align 2.
@Suite("Schedule merge and revision gate")
struct ScheduleMergeTests {
    /// 2026-11-29 00:00 IST (UTC+05:30), Unix seconds: block 1 of that day.
    static let istMidnight: Int64 = 1_795_890_600

    static func schedule(_ id: String = "day", revision: Int = 1, from start: Int64, count: Int, kWh: Double,
                         length: Int64 = 900) -> Schedule {
        Schedule(id: id, revision: revision, source: .optimiser, lengthSeconds: length,
                 blocks: (0..<count).map { ScheduleBlock(startUnixSeconds: start + Int64($0) * length, targetKWh: kWh) })
    }

    /// The start of block `n` (1-based) of the IST day.
    static func block(_ n: Int64) -> Int64 { istMidnight + (n - 1) * 900 }

    @Test("block numbers count from local midnight: 00:00 IST is block 1, 13:45 IST block 56")
    func blockNumbers() {
        #expect(Schedule.blockNumber(startUnix: Self.istMidnight, lengthSeconds: 900, utcOffsetSeconds: 19_800) == 1)
        #expect(Schedule.blockNumber(startUnix: Self.block(56), lengthSeconds: 900, utcOffsetSeconds: 19_800) == 56)
        #expect(Schedule.blockNumber(startUnix: Self.block(96), lengthSeconds: 900, utcOffsetSeconds: 19_800) == 96)
        #expect(Schedule.blockNumber(startUnix: Self.block(97), lengthSeconds: 900, utcOffsetSeconds: 19_800) == 1)
        // UTC: 18:30 UTC is block 75 of the UTC day.
        #expect(Schedule.blockNumber(startUnix: Self.istMidnight, lengthSeconds: 900, utcOffsetSeconds: 0) == 75)
    }

    @Test("India's rule is gate 6, align 2: CERC's example (13:56, block 56) takes effect at block 63, 15:30 IST")
    func indiaExample() {
        let arrival: Int64 = 1_795_940_760  // 13:56 IST
        #expect(Schedule.firstRevisable(arrivalUnix: arrival, lengthSeconds: 900, gate: .india) == 1_795_946_400)
        #expect(Self.block(63) == 1_795_946_400)
    }

    @Test("India's rule for every block of the day: an odd block's revision from the 7th, an even block's from the 8th, counting it first",
          arguments: Array(Int64(1)...96))
    func indiaEveryBlock(n: Int64) {
        for offset: Int64 in [0, 1, 450, 899] {
            let first = Schedule.firstRevisable(arrivalUnix: Self.block(n) + offset, lengthSeconds: 900, gate: .india)
            // Counting the request's block as the first: the 7th is n + 6, the 8th n + 7.
            let expected = n % 2 == 1 ? n + 6 : n + 7
            #expect(first == Self.block(expected), "block \(n) + \(offset) s")
            #expect((Schedule.blockNumber(startUnix: first, lengthSeconds: 900, utcOffsetSeconds: 19_800) - 1) % 2 == 0)
        }
    }

    @Test("gate 0 and gate 1, align 1: from the next block; a boundary arrival is in the block starting there")
    func nextBlock() {
        for blocks in [0, 1] {
            let gate = ScheduleGate(blocks: blocks, align: 1, utcOffsetSeconds: 0)
            #expect(Schedule.firstRevisable(arrivalUnix: 9_000, lengthSeconds: 900, gate: gate) == 9_900)
            #expect(Schedule.firstRevisable(arrivalUnix: 9_899, lengthSeconds: 900, gate: gate) == 9_900)
        }
        #expect(Schedule.firstRevisable(arrivalUnix: 9_000, lengthSeconds: 60, gate: ScheduleGate(blocks: 3, align: 1)) == 9_180)
    }

    @Test("a later revision changes blocks from the gate on; blocks inside the gate keep their old targets")
    func revisionThroughGate() {
        let start = Self.block(50)
        let current = Self.schedule(from: start, count: 20, kWh: 10)
        let revised = Self.schedule(revision: 2, from: start, count: 20, kWh: -5)
        let arrival = Self.block(56) + 660  // 13:56 IST
        let merged = Schedule.merge(current: current, incoming: revised, arrivalUnix: arrival, gate: .india)
        #expect(merged.revision == 2 && merged.blocks.count == 20)
        for block in merged.blocks {
            let expected = block.startUnixSeconds < Self.block(63) ? 10.0 : -5.0
            #expect(block.targetKWh == expected, "block at \(block.startUnixSeconds)")
        }
        // Default gate: from the block after the arrival's.
        let next = Schedule.merge(current: current, incoming: revised, arrivalUnix: arrival, gate: ScheduleGate())
        #expect(next.blocks.filter { $0.targetKWh == 10 }.map(\.startUnixSeconds).last == Self.block(56))
        #expect(next.blocks.first { $0.targetKWh == -5 }?.startUnixSeconds == Self.block(57))
        // A revision not above the current one changes nothing.
        let stale = Self.schedule(revision: 1, from: start, count: 20, kWh: 99)
        #expect(Schedule.merge(current: next, incoming: stale, arrivalUnix: arrival, gate: ScheduleGate()) == next)
    }

    @Test("a revision may add blocks past the gate and drop the current ones past it; it adds none inside it")
    func revisionAddsAndDrops() {
        let current = Self.schedule(from: 0, count: 4, kWh: 1, length: 60)  // 0, 60, 120, 180
        let revised = Schedule(id: "day", revision: 3, source: .optimiser, lengthSeconds: 60, blocks: [
            ScheduleBlock(startUnixSeconds: 60, targetKWh: 7), ScheduleBlock(startUnixSeconds: 240, targetKWh: 8),
        ])
        let merged = Schedule.merge(current: current, incoming: revised, arrivalUnix: 30, gate: ScheduleGate(blocks: 2, align: 1))
        #expect(merged.blocks == [ScheduleBlock(startUnixSeconds: 0, targetKWh: 1), ScheduleBlock(startUnixSeconds: 60, targetKWh: 1),
                                  ScheduleBlock(startUnixSeconds: 240, targetKWh: 8)])
    }

    @Test("a first revision is taken as it comes, its begun blocks dropped or kept at the current schedule's target")
    func firstRevision() {
        let incoming = Self.schedule("new", from: 0, count: 4, kWh: 3, length: 60)
        // Nothing in force: the blocks begun (0 and 60, running at 90) are dropped.
        let alone = Schedule.merge(current: nil, incoming: incoming, arrivalUnix: 90, gate: .india)
        #expect(alone.blocks.map(\.startUnixSeconds) == [120, 180] && alone.id == "new")
        // Another schedule in force: its running block stays, at its target.
        let current = Self.schedule("old", from: 60, count: 1, kWh: -2, length: 60)
        let replaced = Schedule.merge(current: current, incoming: incoming, arrivalUnix: 90, gate: .india)
        #expect(replaced.blocks == [ScheduleBlock(startUnixSeconds: 60, targetKWh: -2), ScheduleBlock(startUnixSeconds: 120, targetKWh: 3),
                                    ScheduleBlock(startUnixSeconds: 180, targetKWh: 3)])
        // Arriving exactly on a boundary: the block starting there has begun.
        #expect(Schedule.merge(current: nil, incoming: incoming, arrivalUnix: 120, gate: ScheduleGate()).blocks.map(\.startUnixSeconds) == [180])
    }

    @Test("the window holds the blocks not yet ended, at most eight, and finds the block running")
    func window() {
        let schedule = Self.schedule(from: 600, count: 12, kWh: 2, length: 60)
        let window = ScheduleWindow(schedule, from: 650, generation: 4)
        #expect(window.count == 8 && window.blocks[0].startUnixSeconds == 600 && window.generation == 4)
        #expect(window.block(at: 659.9)?.startUnixSeconds == 600 && window.block(at: 660)?.startUnixSeconds == 660)
        #expect(window.block(at: 599.9) == nil && window.block(at: 1080) == nil)
        #expect(ScheduleWindow(schedule, from: 2000, generation: 5).count == 0)
        #expect(window == ScheduleWindow(schedule, from: 650, generation: 4) && window != ScheduleWindow(schedule, from: 720, generation: 4))
        #expect(ScheduleBinding.aggregatorDispatch.description == "aggregator_dispatch" && ScheduleBinding.allCases.count == 15)
    }
}
