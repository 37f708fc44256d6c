public import ControlCore
import Synchronization

/// What one unit looks like to an operator, published by the cycle after every step.
public struct UnitStatus: Sendable, Equatable {
    public var state: UnitState = .starting
    public var soc: Double = .nan
    public var power: Double = .nan
    public var setpoint: Double = 0
    public var droop: Double = 0
    public var allowedCharge: Double = 0
    public var allowedDischarge: Double = 0
    public var active = TripCodeSet()
    public var latched = TripCodeSet()
    public var mode: OperatingMode = .auto
    public var overrideW: Double?
    public var overrideRemaining: Double = 0
    public var soh: Double = .nan
    public var voltage: Double = .nan
    public var current: Double = .nan
    public var temperatureMin: Double = .nan
    public var temperatureMax: Double = .nan
    public var bmsOnline = false
    public var inverterOnline = false
    /// Aggregator dispatch in force, W.
    public var dispatchW: Double?
    public init() {}
}

/// Cycle timing as published.
public struct CycleStatistics: Sendable, Equatable {
    public var periodMs: Int = 0
    public var cycles: UInt64 = 0
    public var overruns: UInt64 = 0
    public var lastLatenessMicroseconds: Int64 = 0
    public var histogram = LatencyHistogram()
    public var frequency: Double = .nan
    public var realtime = false
    public init() {}
}

/// Requests from the control socket to the cycle, taken at the start of the next cycle.
struct Mailbox: Sendable {
    var mode: [OperatingMode?]
    var override: [(power: Watts, seconds: Double)?]
    var clearOverride: [Bool]
    var reset: [Bool]
    /// Aggregator dispatch: power and seconds until it expires, or a clear.
    var dispatch: [(power: Watts, seconds: Double)?]
    var clearDispatch: [Bool]
    var generation: UInt64 = 0

    init(units: Int) {
        mode = [OperatingMode?](repeating: nil, count: units)
        override = [(power: Watts, seconds: Double)?](repeating: nil, count: units)
        clearOverride = [Bool](repeating: false, count: units)
        reset = [Bool](repeating: false, count: units)
        dispatch = [(power: Watts, seconds: Double)?](repeating: nil, count: units)
        clearDispatch = [Bool](repeating: false, count: units)
    }
}

/// The state the cycle thread shares with the service thread, behind one short lock. The cycle
/// only copies values in and out of storage allocated at start-up.
public final class SharedState: Sendable {
    struct Contents: Sendable {
        var units: [UnitStatus]
        var stats = CycleStatistics()
        var events = EventRing(capacity: 1024)
        /// Energy blocks closed by the cycle, for the uplink (bounded; the oldest kept).
        var blocks: [EnergyBlock] = []
        var mailbox: Mailbox
        var resetOutcomes: [ResetOutcome]
        /// Incremented by the cycle each time it has applied the mailbox.
        var appliedGeneration: UInt64 = 0
    }

    let contents: Mutex<Contents>

    public init(units: Int) {
        var initial = Contents(units: [UnitStatus](repeating: UnitStatus(), count: units), mailbox: Mailbox(units: units),
                               resetOutcomes: [ResetOutcome](repeating: ResetOutcome(), count: units))
        initial.blocks.reserveCapacity(64)
        contents = Mutex(initial)
    }

    /// A copy of every unit's status.
    public var units: [UnitStatus] { contents.withLock { $0.units } }
    /// A copy of the cycle statistics.
    public var statistics: CycleStatistics { contents.withLock { $0.stats } }

    /// Removes and returns pending events (the service thread's side).
    public func takeEvents() -> [ControlEvent] {
        contents.withLock { c in
            var events: [ControlEvent] = []
            c.events.drain { events.append($0) }
            return events
        }
    }

    /// Removes and returns closed energy blocks (the service thread's side).
    public func takeBlocks() -> [EnergyBlock] {
        contents.withLock { c in
            let blocks = c.blocks
            c.blocks.removeAll(keepingCapacity: true)
            return blocks
        }
    }

    /// Queues operator requests; returns the generation to wait for.
    @discardableResult
    func post(_ body: (inout Mailbox) -> Void) -> UInt64 {
        contents.withLock { c in
            body(&c.mailbox)
            c.mailbox.generation &+= 1
            return c.mailbox.generation
        }
    }

    var appliedGeneration: UInt64 { contents.withLock { $0.appliedGeneration } }
    func resetOutcome(_ unit: Int) -> ResetOutcome { contents.withLock { $0.resetOutcomes[unit] } }
}
