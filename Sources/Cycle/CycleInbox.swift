import BessSystem
package import ControlCore

// The cycle's front door. Orders are posted into `PostedOrders` (inside `SharedState`'s lock) by
// the control socket, the SCADA and IEC 104 servers and the service thread (the block schedule's
// window among them); readings are published
// into the PMU and utility seqlocks by their workers. Once a period `SiteRunner.takeInputs` copies
// all of it into the cycle's own `CycleInbox` (one lock, two seqlock reads, no allocation), and
// the cycle's later phases read only the inbox.

/// Requests from the control socket to the cycle, taken at the start of the next cycle.
package struct Mailbox: Sendable {
    /// The local operator's mode per unit (`bessctl mode X --unit U`).
    package var mode: [OperatingMode?]
    /// The local operator's mode for the whole site (`bessctl mode X`).
    package var siteMode: OperatingMode?
    /// The aggregator's mode per unit: standby (or emergency stop) for `lasting`, or auto.
    package var remoteMode: [(mode: OperatingMode, lasting: Duration, emergency: Bool)?]
    /// The local operator's override per unit: power for `lasting`.
    package var override: [(power: Watts, lasting: Duration)?]
    package var clearOverride: [Bool]
    package var reset: [Bool]
    /// Aggregator dispatch: power, reactive power (var, + = injecting; nil: none asked) and how long
    /// until it expires, or a clear.
    package var dispatch: [Dispatch?]
    package var clearDispatch: [Bool]
    package var generation: UInt64 = 0

    /// One unit's part of an aggregator `power` dispatch (`UnitInputs.dispatch` once the cycle takes it).
    package typealias Dispatch = (power: Watts, reactive: Double?, lasting: Duration, pinned: Bool)

    init(units: Int) {
        mode = [OperatingMode?](repeating: nil, count: units)
        remoteMode = [(mode: OperatingMode, lasting: Duration, emergency: Bool)?](repeating: nil, count: units)
        override = [(power: Watts, lasting: Duration)?](repeating: nil, count: units)
        clearOverride = [Bool](repeating: false, count: units)
        reset = [Bool](repeating: false, count: units)
        dispatch = [Dispatch?](repeating: nil, count: units)
        clearDispatch = [Bool](repeating: false, count: units)
    }
}

extension Mailbox {
    /// Empties every request in place, keeping the arrays' storage and the generation: what the
    /// cycle does to the mailbox it has applied before it swaps it back.
    mutating func clear() {
        siteMode = nil
        for i in mode.indices {
            mode[i] = nil
            remoteMode[i] = nil
            override[i] = nil
            clearOverride[i] = false
            reset[i] = false
            dispatch[i] = nil
            clearDispatch[i] = false
        }
    }
}

/// The orders as posted, not yet taken (inside `SharedState`'s lock).
struct PostedOrders: Sendable {
    var mailbox: Mailbox
    /// What SCADA has written (model 704), and a count of the writes the cycle compares.
    var commands = SiteCommands()
    var commandsGeneration: UInt64 = 0
    /// The grid operator's AGC as the control centre last wrote it (`applyAGC`).
    var agc = AGCCommand()
    /// The relay contacts' limit, percent; nil when none is asserted.
    var inputLimitPercent: Double?
    /// The system clock's synchronisation, as the service last read it.
    var clockSynchronized = true
    /// The block schedule's window as the store last published it (nil: none), and a count of the
    /// publications the cycle compares.
    var schedule: ScheduleWindow?
    var scheduleGeneration: UInt64 = 0

    init(units: Int) { mailbox = Mailbox(units: units) }
}

/// Every external order and reading one cycle uses, taken at its start by `SiteRunner.takeInputs`:
/// the later phases read nothing else from outside the cycle. Allocated once, with the runner; a
/// cycle refills it in place.
struct CycleInbox {
    /// The operator's requests: swapped with the posted mailbox when it holds new ones (`pending`),
    /// applied by `decide`, then cleared in place for the next swap.
    var mailbox: Mailbox
    var pending = false
    /// True when this cycle took the posted orders (a runner stepped alone takes only the slots,
    /// and its controller keeps what tests set on it).
    var ordersTaken = false
    /// SCADA's commands, when written since the last cycle took them (`commandsChanged`).
    var commands = SiteCommands()
    var commandsChanged = false
    var commandsTaken: UInt64 = 0
    var agc = AGCCommand()
    var inputLimitPercent: Double?
    var clockSynchronized = true
    /// The schedule's window, when published since the last cycle took it (`scheduleChanged`).
    var schedule: ScheduleWindow?
    var scheduleChanged = false
    var scheduleTaken: UInt64 = 0
    /// The PMU's newest sample, read when the site follows a PMU (nil: none known whole).
    var pmu: PMUSample?
    /// The utility's controls: none read (no slot, or a read overtaken by publications: the cycle
    /// keeps what it had), never published, or the controls in force.
    var utility = UtilityReading.none
    /// The wall clock at the cycle's start, seconds since 1970 (energy blocks, utility schedules).
    var wallClock: Double = 0

    enum UtilityReading: Equatable {
        case none, neverPublished
        case limits(UtilityLimits)
    }

    init(units: Int) { mailbox = Mailbox(units: units) }
}
