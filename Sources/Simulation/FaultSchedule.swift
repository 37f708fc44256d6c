public import Config
public import ControlCore

extension SimulationConfiguration {
    /// The grid frequency source this configuration describes.
    public func gridFrequency() -> GridFrequency {
        switch frequencyProfile {
        case .steady: GridFrequency(.steady(hz: baseHz))
        case .walk: GridFrequency(.walk(baseHz: baseHz, amplitudeHz: amplitudeHz, seed: seed))
        case .steps: GridFrequency(.steps(baseHz: baseHz, amplitudeHz: amplitudeHz, period: stepPeriod))
        case .ramp:
            GridFrequency(.ramp(fromHz: baseHz, toHz: rampToHz, start: rampStart, duration: rampDuration))
        case .trace: GridFrequency(.trace(trace.map { ($0.at, $0.hz) }))
        }
    }

    /// The faults acting on unit `unitID`, `elapsed` into the run (no allocation: bessd's own
    /// simulated devices ask every cycle).
    public func activeFaults(at elapsed: Duration, unitID: String) -> FaultSet {
        var kinds = FaultSet()
        for fault in faults where fault.isActive(at: elapsed, unitID: unitID) { kinds.insert(fault.kind) }
        return kinds
    }

    /// What the BMS of `unitID` reports in place of the model, `elapsed` into the run (the
    /// latest active `bms_values` fault wins; none = no override). No allocation.
    public func activeBMSOverride(at elapsed: Duration, unitID: String) -> BMSOverride {
        var result = BMSOverride()
        for fault in faults where fault.kind == .bmsValues && fault.isActive(at: elapsed, unitID: unitID) {
            if let values = fault.bmsValues { result = values }
        }
        return result
    }

    /// The BMS groups an active `bms_group_silence` fault keeps `unitID`'s BMS from sending. No allocation.
    public func activeSilencedGroups(at elapsed: Duration, unitID: String) -> BMSGroups {
        var groups = BMSGroups()
        for fault in faults where fault.kind == .bmsGroupSilence && fault.isActive(at: elapsed, unitID: unitID) {
            groups.formUnion(fault.silencedGroups)
        }
        return groups
    }

    /// The delay of an active delay fault of `kind` on `unitID` (zero when none). No allocation.
    public func activeDelay(_ kind: FaultInjection.Kind, at elapsed: Duration, unitID: String) -> Duration {
        var delay = Duration.zero
        for fault in faults where fault.kind == kind && fault.isActive(at: elapsed, unitID: unitID) {
            delay = max(delay, fault.delay)
        }
        return delay
    }
}

extension SimulatedUnit {
    /// Applies the fault schedule of `simulation` to this unit `elapsed` into the run —
    /// its faults, the BMS values it reports and the BMS groups it keeps quiet — and returns the
    /// faults acting now (for what lies outside the unit: the Modbus server, the CAN link, the
    /// inverter's frequency). The plant and bessd's simulated site share this one schedule.
    public mutating func follow(_ simulation: SimulationConfiguration, at elapsed: Duration, unitID id: String) -> FaultSet {
        let faults = simulation.activeFaults(at: elapsed, unitID: id)
        apply(faults)
        bmsOverride = simulation.activeBMSOverride(at: elapsed, unitID: id)
        silentGroups = simulation.activeSilencedGroups(at: elapsed, unitID: id)
        return faults
    }

    /// Applies the faults that act on the simulated devices themselves.
    public mutating func apply(_ faults: FaultSet) {
        bmsSilent = faults.contains(.bmsSilence) || faults.contains(.canBusOff)
        battery.injectedHeatW = faults.contains(.thermalRunaway) ? 1_000_000 : 0
        inverter.faulted = faults.contains(.inverterFault)
    }
}

/// A set of fault kinds in one word.
public struct FaultSet: Sendable, Equatable {
    var bits: UInt32 = 0
    public init() {}
    static func bit(_ kind: FaultInjection.Kind) -> UInt32 {
        switch kind {  // a switch, not allCases.firstIndex: that would build an array on every call
        case .bmsSilence: 1 << 0
        case .bmsDelay: 1 << 1
        case .bmsGarbage: 1 << 2
        case .bmsOutOfRange: 1 << 3
        case .canBusOff: 1 << 4
        case .thermalRunaway: 1 << 5
        case .inverterFault: 1 << 6
        case .modbusSilence: 1 << 7
        case .modbusDelay: 1 << 8
        case .bmsValues: 1 << 9
        case .frequencyLoss: 1 << 10
        case .bmsGroupSilence: 1 << 11
        case .meterSilence: 1 << 12
        case .meterDelay: 1 << 13
        case .meterGarbage: 1 << 14
        }
    }
    public mutating func insert(_ kind: FaultInjection.Kind) { bits |= Self.bit(kind) }
    public func contains(_ kind: FaultInjection.Kind) -> Bool { bits & Self.bit(kind) != 0 }
    public var isEmpty: Bool { bits == 0 }
}
