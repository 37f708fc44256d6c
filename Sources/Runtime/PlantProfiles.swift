public import Plant

extension SimulationConfiguration {
    /// The grid frequency source this configuration describes.
    public func gridFrequency() -> GridFrequency {
        switch frequencyProfile {
        case .steady: GridFrequency(.steady(hz: baseHz))
        case .walk: GridFrequency(.walk(baseHz: baseHz, amplitudeHz: amplitudeHz, seed: seed))
        case .steps: GridFrequency(.steps(baseHz: baseHz, amplitudeHz: amplitudeHz, periodSeconds: stepPeriodSeconds))
        case .ramp:
            GridFrequency(.ramp(fromHz: baseHz, toHz: rampToHz, startSeconds: rampStartSeconds,
                                durationSeconds: rampDurationSeconds))
        case .trace: GridFrequency(.trace(trace.map { ($0.seconds, $0.hz) }))
        }
    }

    /// The faults acting on unit `unitID`, `elapsed` seconds into the run.
    public func activeFaults(at elapsed: Double, unitID: String) -> Set<FaultInjection.Kind> {
        var kinds = Set<FaultInjection.Kind>()
        for fault in faults where fault.isActive(at: elapsed, unitID: unitID) { kinds.insert(fault.kind) }
        return kinds
    }

    /// The delay of an active delay fault of `kind` on `unitID`, in seconds (0 when none).
    public func activeDelay(_ kind: FaultInjection.Kind, at elapsed: Double, unitID: String) -> Double {
        faults.filter { $0.kind == kind && $0.isActive(at: elapsed, unitID: unitID) }.map(\.delaySeconds).max() ?? 0
    }
}

extension SimulatedUnit {
    /// Applies the faults that act on the simulated devices themselves.
    public mutating func apply(_ faults: Set<FaultInjection.Kind>) {
        bmsSilent = faults.contains(.bmsSilence) || faults.contains(.canBusOff)
        battery.injectedHeatW = faults.contains(.thermalRunaway) ? 1_000_000 : 0
        inverter.faulted = faults.contains(.inverterFault)
    }
}
