/// Who wrote a block schedule. A higher source outranks a lower one: the store does not let a lower
/// source replace the schedule of a higher one while it still has blocks to run
/// (docs/design/0011-block-schedule.md).
public enum ScheduleSource: Int, Sendable, Comparable, CustomStringConvertible {
    case optimiser = 0
    case aggregator = 1
    case `operator` = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .optimiser: "optimiser"
        case .aggregator: "aggregator"
        case .operator: "operator"
        }
    }
}

/// One block of a schedule: its start on the wall clock and the energy it is to deliver.
public struct ScheduleBlock: Sendable, Equatable {
    /// Unix seconds (UTC), a multiple of the schedule's `lengthSeconds`.
    public var startUnixSeconds: Int64
    /// Energy over the block, kWh, + = export: at the connection point with a site meter, the units'
    /// summed energy without one.
    public var targetKWh: Double

    public init(startUnixSeconds: Int64, targetKWh: Double) {
        self.startUnixSeconds = startUnixSeconds
        self.targetKWh = targetKWh
    }
}

/// A block schedule as one source sent it: an id, a revision, and its blocks.
public struct Schedule: Sendable, Equatable {
    public var id: String
    public var revision: Int
    public var source: ScheduleSource
    /// The blocks' length, seconds (`schedule.block_s`).
    public var lengthSeconds: Int64
    /// Sorted by start, each start a multiple of `lengthSeconds`.
    public var blocks: [ScheduleBlock]

    public init(id: String, revision: Int, source: ScheduleSource, lengthSeconds: Int64, blocks: [ScheduleBlock]) {
        self.id = id
        self.revision = revision
        self.source = source
        self.lengthSeconds = lengthSeconds
        self.blocks = blocks
    }

    /// The block running at `unix` (start ≤ unix < start + length), if any.
    public func block(at unix: Int64) -> ScheduleBlock? {
        blocks.first { $0.startUnixSeconds <= unix && unix < $0.startUnixSeconds + lengthSeconds }
    }

    /// The end of the last block, Unix seconds; nil when there is none.
    public var endUnixSeconds: Int64? { blocks.last.map { $0.startUnixSeconds + lengthSeconds } }
}

/// When a later revision of a schedule may change its blocks (`schedule.revision_gate_blocks`,
/// `schedule.revision_gate_align`). See `Schedule.firstRevisable`.
public struct ScheduleGate: Sendable, Equatable {
    /// How many blocks after the one a revision arrived in it takes effect, at least (0 and 1 both
    /// mean the next block: a block already begun is never changed).
    public var blocks: Int
    /// The first block a revision changes has a number in the day (1 = the block starting at local
    /// midnight) with (number − 1) a multiple of `align`: 1 any block, 2 blocks 1, 3, 5, ….
    public var align: Int
    /// The local day's offset from UTC, seconds (India: 19800), for numbering blocks in the day.
    public var utcOffsetSeconds: Int

    public init(blocks: Int = 0, align: Int = 1, utcOffsetSeconds: Int = 0) {
        self.blocks = blocks
        self.align = align
        self.utcOffsetSeconds = utcOffsetSeconds
    }

    /// India's rule (IEGC 2023 Reg. 49(4)(c)): a revision in an odd block takes effect from the 7th
    /// block, in an even block from the 8th, counting the request's block as the first; IST.
    public static let india = ScheduleGate(blocks: 6, align: 2, utcOffsetSeconds: 19_800)
}

extension Schedule {
    /// The number in the local day of the block starting at `startUnix`: 1 for the block that
    /// starts at local midnight (`utcOffsetSeconds` from UTC), counting `lengthSeconds` blocks.
    public static func blockNumber(startUnix: Int64, lengthSeconds: Int64, utcOffsetSeconds: Int) -> Int64 {
        let length = max(1, lengthSeconds)
        let local = startUnix + Int64(utcOffsetSeconds)
        let ofDay = ((local % 86_400) + 86_400) % 86_400
        return ofDay / length + 1
    }

    /// The first block whose start the gate lets a revision arriving at `arrivalUnix` change.
    ///
    /// The rule: let A be the block the revision arrived in (the one whose start ≤ `arrivalUnix` <
    /// its end; arriving exactly on a boundary is arriving in the block that starts there). The
    /// revision takes effect from the first block B at least max(`gate.blocks`, 1) blocks after A
    /// whose number in the local day n(B) has (n(B) − 1) divisible by `gate.align`. So gate 0 (or
    /// 1), align 1 is "from the next block"; gate 6, align 2 is India's rule: a revision in an odd
    /// block takes effect 6 blocks later (the 7th counting A as the first), in an even block 7
    /// blocks later (the 8th), always at an odd block (a half-hour boundary).
    public static func firstRevisable(arrivalUnix: Int64, lengthSeconds: Int64, gate: ScheduleGate) -> Int64 {
        let length = max(1, lengthSeconds)
        let floored = arrivalUnix >= 0 ? arrivalUnix / length : -((-arrivalUnix + length - 1) / length)
        let arrivalBlock = floored * length
        var candidate = arrivalBlock + Int64(max(1, gate.blocks)) * length
        let align = Int64(max(1, gate.align))
        var steps: Int64 = 0
        while steps < align,
              (blockNumber(startUnix: candidate, lengthSeconds: length, utcOffsetSeconds: gate.utcOffsetSeconds) - 1) % align != 0 {
            candidate += length
            steps += 1
        }
        return candidate
    }

    /// What stands after `incoming` arrives at wall-clock `arrivalUnix`.
    ///
    /// - A first revision (no current schedule, a new id, or a different block length) is taken as
    ///   it comes except blocks already begun (start ≤ `arrivalUnix`): those keep current's target
    ///   for the same start, or are dropped when current has none; current's block running at the
    ///   arrival stays as it is when `incoming` does not have it (a block begun is never changed).
    /// - A later revision of the same id (a higher `revision`) changes only blocks from
    ///   `firstRevisable` on: current's blocks before it keep their targets (blocks inside the gate
    ///   keep their old targets, and the gate adds none), `incoming`'s from it on replace current's.
    /// - A revision of the same id not above current's changes nothing (current is returned).
    public static func merge(current: Schedule?, incoming: Schedule, arrivalUnix: Int64, gate: ScheduleGate) -> Schedule {
        guard let current, current.id == incoming.id, current.lengthSeconds == incoming.lengthSeconds else {
            return first(current: current, incoming: incoming, arrivalUnix: arrivalUnix)
        }
        guard incoming.revision > current.revision else { return current }
        let from = firstRevisable(arrivalUnix: arrivalUnix, lengthSeconds: current.lengthSeconds, gate: gate)
        var merged = incoming
        merged.blocks = current.blocks.filter { $0.startUnixSeconds < from }
            + incoming.blocks.filter { $0.startUnixSeconds >= from }
        merged.blocks.sort { $0.startUnixSeconds < $1.startUnixSeconds }
        return merged
    }

    /// A first revision: `incoming` with its begun blocks taken from `current` (same length) or dropped.
    static func first(current: Schedule?, incoming: Schedule, arrivalUnix: Int64) -> Schedule {
        let sameLength = current?.lengthSeconds == incoming.lengthSeconds
        var merged = incoming
        merged.blocks = []
        for block in incoming.blocks {
            if block.startUnixSeconds > arrivalUnix {
                merged.blocks.append(block)
            } else if sameLength, let kept = current?.blocks.first(where: { $0.startUnixSeconds == block.startUnixSeconds }) {
                merged.blocks.append(kept)
            }
        }
        if sameLength, let running = current?.block(at: arrivalUnix),
           !merged.blocks.contains(where: { $0.startUnixSeconds == running.startUnixSeconds }) {
            merged.blocks.append(running)
        }
        merged.blocks.sort { $0.startUnixSeconds < $1.startUnixSeconds }
        return merged
    }
}

/// What to do when no block is in force (no window, before its first block, between blocks, or
/// past its last): `schedule.fallback`.
public enum ScheduleFallback: Sendable, Equatable {
    /// The site application decides, as without a schedule.
    case application
    /// The schedule asks 0 of the units (the application rests; droop and every party above still act).
    case zero
}

/// The schedule layer's settings in the cycle: `CycleSettings.schedule` (nil: no schedule layer).
public struct ScheduleSettings: Sendable, Equatable {
    /// `schedule.block_s`.
    public var lengthSeconds: Int64
    /// `schedule.fallback`.
    public var fallback: ScheduleFallback

    public init(lengthSeconds: Int64 = 900, fallback: ScheduleFallback = .application) {
        self.lengthSeconds = lengthSeconds
        self.fallback = fallback
    }
}

/// What the cycle is given of the schedule in force (fixed capacity, no allocation): the next
/// blocks from the current one on. The store republishes it at every block boundary.
public struct ScheduleWindow: Sendable, Equatable {
    public static let capacity = 8
    public var lengthSeconds: Int64
    /// The first `count` are the blocks, sorted by start.
    public var blocks: InlineArray<8, ScheduleBlock>
    public var count: Int
    /// Counts the store's publications (a new one is a new window).
    public var generation: UInt64
    public var revision: Int
    public var source: ScheduleSource

    public init(lengthSeconds: Int64, blocks: InlineArray<8, ScheduleBlock>, count: Int, generation: UInt64, revision: Int,
                source: ScheduleSource) {
        self.lengthSeconds = lengthSeconds
        self.blocks = blocks
        self.count = min(max(0, count), Self.capacity)
        self.generation = generation
        self.revision = revision
        self.source = source
    }

    /// The window of `schedule` at `nowUnix`: its blocks that have not ended, the first
    /// `capacity` of them.
    public init(_ schedule: Schedule, from nowUnix: Int64, generation: UInt64) {
        var blocks = InlineArray<8, ScheduleBlock>(repeating: ScheduleBlock(startUnixSeconds: 0, targetKWh: 0))
        var count = 0
        for block in schedule.blocks where block.startUnixSeconds + schedule.lengthSeconds > nowUnix && count < Self.capacity {
            blocks[count] = block
            count += 1
        }
        self.init(lengthSeconds: schedule.lengthSeconds, blocks: blocks, count: count, generation: generation,
                  revision: schedule.revision, source: schedule.source)
    }

    /// The block running at wall-clock `unix` seconds (start ≤ unix < start + length), if any.
    public func block(at unix: Double) -> ScheduleBlock? {
        let length = Double(lengthSeconds)
        for i in 0..<count {
            let start = Double(blocks[i].startUnixSeconds)
            if start <= unix && unix < start + length { return blocks[i] }
        }
        return nil
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.lengthSeconds == rhs.lengthSeconds, lhs.count == rhs.count, lhs.generation == rhs.generation,
              lhs.revision == rhs.revision, lhs.source == rhs.source else { return false }
        for i in 0..<lhs.count where lhs.blocks[i] != rhs.blocks[i] { return false }
        return true
    }
}

/// What held a block back from its target (the one that held it longest is reported).
public enum ScheduleBinding: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case none
    /// A unit's interlock (derate, trip, latch) narrowed what the units could do.
    case interlock
    /// An operator override holds a unit: the schedule rests.
    case operatorOverride
    /// The grid operator's AGC speaks: the schedule rests.
    case agc
    /// The utility's request (IEEE 2030.5) speaks: the schedule rests.
    case utility
    /// SCADA's setpoint speaks: the schedule rests.
    case scada
    /// An aggregator dispatch is in force: the schedule rests.
    case aggregatorDispatch
    /// The grid operator's percent limit (SCADA `WMaxLimPct`, relay contacts) capped the units.
    case gridOperatorLimit
    /// The utility's limits (IEEE 2030.5) capped the units.
    case utilityLimit
    /// `grid_limits.import_max_kw` (or the utility's import limit) at the connection point.
    case importLimit
    /// `grid_limits.export_max_kw` (or the utility's export limit) at the connection point.
    case exportLimit
    /// The SOC reserve or a unit's frequency-response reserve.
    case socReserve
    /// The units could not give what was asked (their allowed power: BMS limits, ratings, ramps).
    case unitLimit
    /// The site meter is stale: the schedule asks nothing until it answers.
    case meterStale
    /// A unit in standby (operator or aggregator).
    case standby

    public var description: String {
        switch self {
        case .none: "none"
        case .interlock: "interlock"
        case .operatorOverride: "operator_override"
        case .agc: "agc"
        case .utility: "utility"
        case .scada: "scada"
        case .aggregatorDispatch: "aggregator_dispatch"
        case .gridOperatorLimit: "grid_operator_limit"
        case .utilityLimit: "utility_limit"
        case .importLimit: "import_limit"
        case .exportLimit: "export_limit"
        case .socReserve: "soc_reserve"
        case .unitLimit: "unit_limit"
        case .meterStale: "meter_stale"
        case .standby: "standby"
        }
    }
}

/// One block as executed: closed at its end (`SharedState.takeScheduleReports`), or so far (the
/// site view's `scheduleBlock`).
public struct ScheduleBlockReport: Sendable, Equatable {
    public var startUnixSeconds: Int64
    public var lengthSeconds: Int64
    /// The block's target, kWh (+ = export); for a block the executor joined after its start, the
    /// target in proportion to the part it ran.
    public var targetKWh: Double
    /// Energy delivered in the block, kWh (+ = export): at the connection point from a fresh
    /// meter, else the units' summed measured power.
    public var deliveredKWh: Double
    /// The frequency response's energy in the block, kWh (+ = discharge).
    public var droopKWh: Double
    /// Σ `max_power_kw` × block length, kWh.
    public var ratedKWh: Double
    /// What held the block back longest (`none` if nothing ever did).
    public var boundBy: ScheduleBinding
    public var revision: Int

    public init(startUnixSeconds: Int64, lengthSeconds: Int64, targetKWh: Double, deliveredKWh: Double, droopKWh: Double,
                ratedKWh: Double, boundBy: ScheduleBinding, revision: Int) {
        self.startUnixSeconds = startUnixSeconds
        self.lengthSeconds = lengthSeconds
        self.targetKWh = targetKWh
        self.deliveredKWh = deliveredKWh
        self.droopKWh = droopKWh
        self.ratedKWh = ratedKWh
        self.boundBy = boundBy
        self.revision = revision
    }

    /// delivered − droop − target, kWh.
    public var deviationKWh: Double { deliveredKWh - droopKWh - targetKWh }
    /// The deviation in percent of the block's rated energy.
    public var deviationPercent: Double { ratedKWh > 0 ? deviationKWh / ratedKWh * 100 : 0 }
}
