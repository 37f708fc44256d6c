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
/// interval belongs to, so an NTP step closes the current block early rather than inventing energy.
public struct EnergyAccumulator: Sendable {
    public let unit: Int
    public let lengthSeconds: Int64
    public private(set) var current: EnergyBlock?

    public init(unit: Int, blockLength: Duration = .seconds(900)) {
        self.unit = unit
        lengthSeconds = max(1, blockLength.components.seconds)
    }

    /// Adds `power` held for the `elapsedSeconds` that end at `wallClock` (Unix seconds).
    /// - Returns: the block that closed during this interval, if any.
    public mutating func integrate(power: Watts?, elapsedSeconds: Double, wallClock: Double) -> EnergyBlock? {
        guard wallClock.isFinite, wallClock > 0, wallClock < 1e12 else { return nil }
        let dt = elapsedSeconds.isFinite ? min(max(0, elapsedSeconds), 3600) : 0
        let length = Double(lengthSeconds)
        let blockStart = Int64((wallClock / length).rounded(.down)) * lengthSeconds
        var closed: EnergyBlock?
        if var block = current, block.startUnixSeconds != blockStart {
            // The interval [wallClock − dt, wallClock] crosses out of the current block: the part before
            // the block's end belongs to it (none when the wall clock jumped).
            let blockEnd = Double(block.startUnixSeconds + lengthSeconds)
            let before = blockStart > block.startUnixSeconds ? min(max(0, blockEnd - (wallClock - dt)), dt) : 0
            Self.add(power, seconds: before, to: &block)
            closed = block
            current = nil
            let after = min(dt - before, wallClock - Double(blockStart))
            var fresh = makeBlock(start: blockStart)
            Self.add(power, seconds: max(0, after), to: &fresh)
            current = fresh
            return closed
        }
        if current == nil {
            current = makeBlock(start: blockStart)
            // The first interval may reach back before the block began.
            let inside = min(dt, wallClock - Double(blockStart))
            Self.add(power, seconds: inside, to: &current!)
            return nil
        }
        Self.add(power, seconds: dt, to: &current!)
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
