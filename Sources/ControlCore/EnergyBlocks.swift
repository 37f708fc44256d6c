/// Charged and discharged energy of one unit over one wall-clock-aligned block: the unit an
/// aggregator settles by (15 minutes by default).
public struct EnergyBlock: Sendable, Equatable {
    /// Index of the unit in the configuration.
    public var unit: Int
    /// Block start, Unix seconds (UTC), a multiple of `lengthSeconds`.
    public var startUnixSeconds: Int64
    /// Block length in seconds.
    public var lengthSeconds: Int64
    /// Energy taken from the grid into the battery, Wh (≥ 0).
    public var chargedWh: Double
    /// Energy delivered from the battery to the grid, Wh (≥ 0).
    public var dischargedWh: Double
    /// Seconds of the block for which a fresh power measurement was integrated.
    public var coveredSeconds: Double
    /// Some of this block was measured while the system clock was not synchronised (`CLOCK_UNSYNCED`):
    /// its start may not be the wall-clock time it says.
    public var clockUnsynced = false
    /// The wall clock stepped while this block was open (`CLOCK_STEPPED`): its energy is right, its
    /// boundaries are where the stepped clock put them.
    public var clockStepped = false

    public init(unit: Int, startUnixSeconds: Int64, lengthSeconds: Int64, chargedWh: Double, dischargedWh: Double,
                coveredSeconds: Double, clockUnsynced: Bool = false, clockStepped: Bool = false) {
        self.unit = unit
        self.startUnixSeconds = startUnixSeconds
        self.lengthSeconds = lengthSeconds
        self.chargedWh = chargedWh
        self.dischargedWh = dischargedWh
        self.coveredSeconds = coveredSeconds
        self.clockUnsynced = clockUnsynced
        self.clockStepped = clockStepped
    }

    /// Charged energy in kWh.
    public var chargedKWh: Double { chargedWh / 1000 }
    /// Discharged energy in kWh.
    public var dischargedKWh: Double { dischargedWh / 1000 }
    /// True when measurements covered the whole block (to within one second).
    public var isComplete: Bool { coveredSeconds >= Double(lengthSeconds) - 1 }
}

/// Integrates measured power into energy blocks aligned to the wall clock.
///
/// Time between samples comes from the monotonic clock; the wall clock only decides which block an
/// interval belongs to. A step of the wall clock (more than `stepTolerance` between how far it moved
/// and how far the monotonic clock did) never reopens or double-counts a block: forward, the open
/// block closes and the next one opens where the clock now is; backward, the open block stays open
/// (it is never left for one that may already have been settled) for at most its length of
/// monotonic time, and then the blocks go on along the timeline they were on, one length at a time,
/// until the wall clock has caught up with them. Every block touched by a step is `clockStepped`.
public struct EnergyAccumulator: Sendable {
    public let unit: Int
    public let lengthSeconds: Int64
    public private(set) var current: EnergyBlock?
    /// Wall-clock steps seen (either direction).
    public private(set) var steps = 0
    /// The wall clock at the last integration, to tell a step from time passing.
    private var lastWallClock: Double?
    /// Monotonic seconds the open block has been open (what bounds a block held after a backward step).
    private var openSeconds = 0.0
    /// A step is a disagreement of more than this between the wall clock's and the monotonic clock's
    /// advance (NTP slews at most 0.5 ms/s; a step is what is left).
    public static let stepTolerance = 1.0

    public init(unit: Int, blockLength: Duration = .seconds(900)) {
        self.unit = unit
        lengthSeconds = max(1, blockLength.components.seconds)
    }

    /// Adds `power` held for the `elapsedSeconds` that end at `wallClock` (Unix seconds), measured
    /// with the system clock `synchronized` or not.
    /// - Returns: the block that closed during this interval, if any.
    ///   - stepped: whether the wall clock stepped in this interval, when the caller knows better (the
    ///     site compares the clocks with the uncapped cycle time); detected here when nil.
    public mutating func integrate(power: Watts?, elapsedSeconds: Double, wallClock: Double, synchronized: Bool = true,
                                   stepped known: Bool? = nil) -> EnergyBlock? {
        guard wallClock.isFinite, wallClock > 0, wallClock < 1e12 else { return nil }
        let dt = elapsedSeconds.isFinite ? min(max(0, elapsedSeconds), 3600) : 0
        let length = Double(lengthSeconds)
        let blockStart = Int64((wallClock / length).rounded(.down)) * lengthSeconds
        let stepped = known ?? (lastWallClock.map { abs((wallClock - $0) - dt) > Self.stepTolerance } ?? false)
        lastWallClock = wallClock
        if stepped { steps += 1 }
        if !synchronized { current?.clockUnsynced = true }
        if var block = current, blockStart < block.startUnixSeconds {
            // Behind the open block (a backward step): stay in it, never go back to a start the clock
            // already passed (that block may be settled), but for no longer than its length.
            if stepped { block.clockStepped = true }
            let room = max(0, length - openSeconds)
            if dt <= room {
                Self.add(power, seconds: dt, to: &block)
                openSeconds += dt
                current = block
                return nil
            }
            Self.add(power, seconds: room, to: &block)
            var next = makeBlock(start: block.startUnixSeconds + lengthSeconds)
            next.clockStepped = true
            next.clockUnsynced = !synchronized
            Self.add(power, seconds: dt - room, to: &next)
            openSeconds = dt - room
            current = next
            return block
        }
        if stepped, current != nil, blockStart == current!.startUnixSeconds { current!.clockStepped = true }
        var closed: EnergyBlock?
        if var block = current, block.startUnixSeconds != blockStart {
            if stepped { block.clockStepped = true }
            defer {
                if stepped { current?.clockStepped = true }
                if !synchronized { current?.clockUnsynced = true }
            }
            // The interval [wallClock − dt, wallClock] crosses out of the current block: the part before
            // the block's end belongs to it (none when the wall clock jumped).
            let blockEnd = Double(block.startUnixSeconds + lengthSeconds)
            let before = blockStart > block.startUnixSeconds ? min(max(0, blockEnd - (wallClock - dt)), dt) : 0
            Self.add(power, seconds: before, to: &block)
            closed = block
            current = nil
            // After a step the interval has no place on the new clock: all of what is left is the new block's.
            let after = stepped ? dt - before : min(dt - before, wallClock - Double(blockStart))
            var fresh = makeBlock(start: blockStart)
            Self.add(power, seconds: max(0, after), to: &fresh)
            openSeconds = max(0, after)
            current = fresh
            return closed
        }
        if current == nil {
            current = makeBlock(start: blockStart)
            current!.clockUnsynced = !synchronized
            // The first interval may reach back before the block began.
            let inside = min(dt, wallClock - Double(blockStart))
            Self.add(power, seconds: inside, to: &current!)
            openSeconds = max(0, inside)
            return nil
        }
        Self.add(power, seconds: dt, to: &current!)
        openSeconds += dt
        return closed
    }

    private func makeBlock(start: Int64) -> EnergyBlock {
        EnergyBlock(unit: unit, startUnixSeconds: start, lengthSeconds: lengthSeconds, chargedWh: 0,
                    dischargedWh: 0, coveredSeconds: 0)
    }

    private static func add(_ power: Watts?, seconds: Double, to block: inout EnergyBlock) {
        guard seconds > 0, let power, power.value.isFinite else { return }
        let wh = power.value * seconds / 3600
        if wh >= 0 { block.dischargedWh += wh } else { block.chargedWh -= wh }
        block.coveredSeconds += seconds
    }
}
