public import ControlCore
public import Cycle

extension BessdConfiguration {
    /// What the cycle runs on, as this configuration describes it.
    public var cycleSettings: CycleSettings {
        var settings = CycleSettings(
            mode: mode, period: .milliseconds(periodMs), realtime: realtime, control: controlSettings, units: unitSettings,
            site: siteSettings,
            devices: units.map {
                UnitDevices(id: $0.id, modbus: $0.modbus, inverter: $0.inverter, bms: $0.bms,
                            inverterSimulated: isSimulated(inverterOf: $0), bmsSimulated: isSimulated(bmsOf: $0),
                            rating: .kilowatts($0.maxPowerKW))
            },
            meter: site.meter, meterSimulated: meterSimulated, frequencySource: grid.frequencySource,
            usesSimulation: usesSimulation, pmu: grid.frequencySource == .pmu ? grid.pmu : nil)
        settings.schedule = schedule?.cycleSettings
        return settings
    }
}

/// A site that reads more of the configuration than the cycle's settings (the simulated site: its
/// profiles and faults), and so takes the whole of a reloaded one.
public protocol ConfiguredSite: AnyObject {
    /// Takes a reloaded configuration, after the cycle has taken its settings.
    func reconfigure(configuration: BessdConfiguration)
}

// The cycle's types built from a configuration: what the composition roots and the tests call.

extension SiteCycle {
    /// The cycle of `configuration`'s site over `io`.
    public convenience init(configuration: BessdConfiguration, io: IO, phase: CyclePhase, startedAt: MonotonicInstant) {
        self.init(settings: configuration.cycleSettings, site: io, phase: phase, startedAt: startedAt)
    }
}

extension SiteRunner {
    /// A site of real devices only (mode hardware, or hil with nothing simulated).
    public static func hardware(configuration: BessdConfiguration, startedAt: MonotonicInstant,
                                output: @escaping (DeviceNotice) -> Void) throws(RunError) -> SiteRunner {
        try hardware(settings: configuration.cycleSettings, startedAt: startedAt, output: output)
    }

    /// Applies a reloaded configuration while the cycle is paused (`reconfigure(_:now:)` on its
    /// settings), then hands it whole to a site that reads more of it.
    public func reconfigure(_ new: BessdConfiguration, now: MonotonicInstant) throws(RunError) {
        try reconfigure(new.cycleSettings, now: now)
        (io as? any ConfiguredSite)?.reconfigure(configuration: new)
    }
}

extension HardwareSite {
    /// The real devices of `configuration`, every one of them real (`SIMULATION_REQUIRED` otherwise).
    public convenience init(configuration: BessdConfiguration, phase: CyclePhase, output: @escaping (DeviceNotice) -> Void) throws(RunError) {
        try self.init(settings: configuration.cycleSettings, phase: phase, output: output)
    }

    /// The real devices of `configuration`, beside the simulated ones `SimulatedSite` serves.
    public static func beside(simulated configuration: BessdConfiguration, phase: CyclePhase,
                              output: @escaping (DeviceNotice) -> Void) -> HardwareSite {
        beside(simulated: configuration.cycleSettings, phase: phase, output: output)
    }
}
