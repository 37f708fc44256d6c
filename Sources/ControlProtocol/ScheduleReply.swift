/// `schedule`, `schedule-load` and `schedule-clear`: the block schedule in force (none: `id` null),
/// its blocks — closed ones with what was delivered, the open one so far, and those to come — and
/// whether the fallback runs. `schedule-load` adds `warning` (`SCHEDULE_INFEASIBLE: …`) when a block
/// cannot be met, and `repeated` when that id and revision had been taken before (not acted on again).
public struct ScheduleReply: ControlReply, Equatable {
    public var id: String?
    public var revision: Int?
    /// `operator`, `aggregator` or `optimiser`.
    public var source: String?
    /// `schedule.block_s`.
    public var blockS: Int64
    /// `schedule.fallback`: `application` or `zero`.
    public var fallback: String
    /// True while the fallback runs: no schedule, or past its last block.
    public var fallbackActive: Bool
    public var blocks: [ScheduleBlockReply]
    /// `SCHEDULE_INFEASIBLE: …` on a load whose schedule has a block that cannot be met.
    public var warning: String?
    /// The first block that cannot be met (RFC 3339) and by how much, kWh (with `warning`).
    public var infeasibleStart: String?
    public var infeasibleKWh: Double?
    /// True when a load's id and revision had been taken before: not acted on again.
    public var repeated: Bool
    /// What is wrong with the schedule file (`SCHEDULE_STATE_UNREADABLE`, `SCHEDULE_STATE_UNWRITABLE`), if anything.
    public var stateProblem: String?

    public init(id: String?, revision: Int?, source: String?, blockS: Int64, fallback: String, fallbackActive: Bool,
                blocks: [ScheduleBlockReply], warning: String? = nil, infeasibleStart: String? = nil, infeasibleKWh: Double? = nil,
                repeated: Bool = false, stateProblem: String? = nil) {
        self.id = id
        self.revision = revision
        self.source = source
        self.blockS = blockS
        self.fallback = fallback
        self.fallbackActive = fallbackActive
        self.blocks = blocks
        self.warning = warning
        self.infeasibleStart = infeasibleStart
        self.infeasibleKWh = infeasibleKWh
        self.repeated = repeated
        self.stateProblem = stateProblem
    }

    enum CodingKeys: String, CodingKey {
        case id, revision, source, fallback, blocks, warning, repeated
        case blockS = "block_s", fallbackActive = "fallback_active", infeasibleStart = "infeasible_start"
        case infeasibleKWh = "infeasible_kwh", stateProblem = "state_problem"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.blockS, blockS)
        json.field(CodingKeys.blocks, blocks)
        json.field(CodingKeys.fallback, fallback)
        json.field(CodingKeys.fallbackActive, fallbackActive)
        json.field(CodingKeys.id, id)
        json.field(CodingKeys.infeasibleKWh, infeasibleKWh)
        json.field(CodingKeys.infeasibleStart, infeasibleStart)
        json.field(okKey, true)
        json.field(CodingKeys.repeated, repeated)
        json.field(CodingKeys.revision, revision)
        json.field(CodingKeys.source, source)
        json.field(CodingKeys.stateProblem, stateProblem)
        json.field(CodingKeys.warning, warning)
        json.endObject()
    }
}

/// One block of the schedule: `closed` (its report), `open` (so far) or `upcoming` (its target only).
/// Energies kWh, + = export; deviation = delivered − droop − target, and as % of the block's energy
/// at rated power; `bound_by` what held the block back longest (`none` when nothing did).
public struct ScheduleBlockReply: Codable, Sendable, Equatable, JSONWritable {
    /// RFC 3339, UTC.
    public var start: String
    public var state: String
    public var targetKWh: Double
    public var deliveredKWh: Double?
    public var droopKWh: Double?
    public var deviationKWh: Double?
    public var deviationPct: Double?
    public var boundBy: String?
    /// The revision whose target the block ran to (closed and open blocks).
    public var revision: Int?

    public init(start: String, state: String, targetKWh: Double, deliveredKWh: Double? = nil, droopKWh: Double? = nil,
                deviationKWh: Double? = nil, deviationPct: Double? = nil, boundBy: String? = nil, revision: Int? = nil) {
        self.start = start
        self.state = state
        self.targetKWh = targetKWh
        self.deliveredKWh = deliveredKWh
        self.droopKWh = droopKWh
        self.deviationKWh = deviationKWh
        self.deviationPct = deviationPct
        self.boundBy = boundBy
        self.revision = revision
    }

    enum CodingKeys: String, CodingKey {
        case start, state, revision
        case targetKWh = "target_kwh", deliveredKWh = "delivered_kwh", droopKWh = "droop_kwh", deviationKWh = "deviation_kwh"
        case deviationPct = "deviation_pct", boundBy = "bound_by"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.boundBy, boundBy)
        json.field(CodingKeys.deliveredKWh, deliveredKWh)
        json.field(CodingKeys.deviationKWh, deviationKWh)
        json.field(CodingKeys.deviationPct, deviationPct)
        json.field(CodingKeys.droopKWh, droopKWh)
        json.field(CodingKeys.revision, revision)
        json.field(CodingKeys.start, start)
        json.field(CodingKeys.state, state)
        json.field(CodingKeys.targetKWh, targetKWh)
        json.endObject()
    }
}
