public import ControlCore
public import Cycle
internal import Yams

/// `schedule:` — the block schedule bessd follows (docs/optimiser.md): how long a block is, what runs
/// when no schedule is in force, and the gate a later revision of a schedule passes. Left out: no
/// schedule layer, the site as before; written in (`schedule: {}` takes every default): schedules are
/// taken from `bessctl schedule load`, the aggregator's `schedule` command and the optimiser.
public struct ScheduleConfiguration: Sendable, Equatable {
    /// `block_s`: a block's length, seconds (60–3600, dividing a day; default 900, India's 15 minutes).
    public var blockSeconds: Int64 = 900
    /// `fallback`: with no schedule in force, or past its last block, the site application runs
    /// (`application`, the default) or every unit is held at 0 (`zero`).
    public var fallback: ScheduleFallback = .application
    /// `revision_gate_blocks`: a later revision changes blocks from the first one at least this many
    /// after the block it arrived in … (default 0).
    public var revisionGateBlocks = 0
    /// … `revision_gate_align`: whose number in the day (from 0 at local midnight) is a multiple of
    /// this (default 1: any block). India's rule as public sources state it: gate 6, align 2.
    public var revisionGateAlign = 1

    public init(blockSeconds: Int64 = 900, fallback: ScheduleFallback = .application, revisionGateBlocks: Int = 0,
                revisionGateAlign: Int = 1) {
        self.blockSeconds = blockSeconds
        self.fallback = fallback
        self.revisionGateBlocks = revisionGateBlocks
        self.revisionGateAlign = revisionGateAlign
    }

    /// The gate of a revision arriving where the gateway's local time is `utcOffsetSeconds` ahead of UTC.
    public func gate(utcOffsetSeconds: Int) -> ScheduleGate {
        ScheduleGate(blocks: revisionGateBlocks, align: revisionGateAlign, utcOffsetSeconds: utcOffsetSeconds)
    }

    /// What the cycle runs on.
    public var cycleSettings: ScheduleSettings { ScheduleSettings(lengthSeconds: blockSeconds, fallback: fallback) }

    /// The keys of `schedule`.
    static let keys = ConfigKeys("schedule", ["block_s", "fallback", "revision_gate_blocks", "revision_gate_align"])

    /// The longest gate, in blocks (a day of the longest blocks, and more than any grid code asks).
    static let maximumGateBlocks = 96

    /// `schedule:`, every key optional.
    static func decode(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> ScheduleConfiguration {
        var settings = ScheduleConfiguration()
        if let block = fields.int("block_s", range: 60...3600, unit: "seconds") {
            if 86_400 % block == 0 {
                settings.blockSeconds = Int64(block)
            } else {
                r.error(fields.mark("block_s"), fields.child("block_s"), "must divide a day (86400 s) into whole blocks",
                        got: "\(block)")
            }
        }
        settings.fallback = fields.choice("fallback", [("application", .application), ("zero", .zero)], default: .application)
        settings.revisionGateBlocks = fields.int("revision_gate_blocks", default: 0, range: 0...Self.maximumGateBlocks, unit: "blocks")!
        settings.revisionGateAlign = fields.int("revision_gate_align", default: 1, range: 1...Self.maximumGateBlocks, unit: "blocks")!
        fields.finish(Self.keys)
        return settings
    }
}
