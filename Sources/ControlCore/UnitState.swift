/// The life of a battery unit, as an operator sees it: an enum plus one handler per state.
public enum UnitState: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// BMS communication not yet confirmed: no power at all.
    case starting
    /// Operating with nothing restricting it but ratings and BMS limits.
    case running
    /// Operating with a derate, or with one direction stopped by a trip.
    case limited
    /// Both directions stopped by trips that clear by themselves.
    case tripped
    /// A latched fault: no power, disconnect requested, waits for an operator reset.
    case faulted
    /// Put in standby by an operator or the aggregator: no power.
    case standby

    public var description: String {
        switch self {
        case .starting: "starting"
        case .running: "running"
        case .limited: "limited"
        case .tripped: "tripped"
        case .faulted: "faulted"
        case .standby: "standby"
        }
    }

    /// What the state machine looks at each cycle.
    public struct Inputs: Sendable {
        public var bmsConfirmed: Bool
        public var mode: OperatingMode
        public var verdict: InterlockVerdict
        public init(bmsConfirmed: Bool, mode: OperatingMode, verdict: InterlockVerdict) {
            self.bmsConfirmed = bmsConfirmed
            self.mode = mode
            self.verdict = verdict
        }
        var latched: Bool { !verdict.latched.isEmpty }
        var bothStopped: Bool { verdict.chargeFactor == 0 && verdict.dischargeFactor == 0 && !verdict.tripped.isEmpty }
        var restricted: Bool { verdict.chargeFactor < 1 || verdict.dischargeFactor < 1 }
    }

    /// True in the states where the unit may exchange power.
    public var mayOperate: Bool { self == .running || self == .limited }

    /// The next state.
    public func next(_ inputs: Inputs) -> UnitState {
        switch self {
        case .starting: Self.onStarting(inputs)
        case .running, .limited, .tripped: Self.onOperating(inputs)
        case .faulted: Self.onFaulted(inputs)
        case .standby: Self.onStandby(inputs)
        }
    }

    static func onStarting(_ i: Inputs) -> UnitState {
        if i.latched { return .faulted }
        if i.mode == .standby { return .standby }
        return i.bmsConfirmed ? onOperating(i) : .starting
    }

    static func onOperating(_ i: Inputs) -> UnitState {
        if i.latched { return .faulted }
        if i.mode == .standby { return .standby }
        if i.bothStopped { return .tripped }
        return i.restricted ? .limited : .running
    }

    static func onFaulted(_ i: Inputs) -> UnitState {
        // Only an operator reset removes the latch; then the unit starts over.
        i.latched ? .faulted : onStarting(i)
    }

    static func onStandby(_ i: Inputs) -> UnitState {
        if i.latched { return .faulted }
        return i.mode == .standby ? .standby : onStarting(i)
    }
}
