import Cycle
import ControlCore
internal import Yams

extension GridConfiguration {
    /// The keys of `grid_integration`.
    static let keys = ConfigKeys("grid_integration", [
        "frequency_events",
        "mode", "frequency_source", "scada_enabled", "droop_settings",
        "pmu", "reactive_power",
    ])

    /// The frequency source a mode uses when the file names none: only `simulation` simulates it.
    static func defaultFrequencySource(_ mode: RunMode) -> FrequencySource {
        mode == .simulation ? .simulated : .inverter
    }

    /// `grid_integration:` — the frequency source and the droop response (absent: the defaults).
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader, _ top: ConfigReader.Fields, mode runMode: RunMode)
        -> GridConfiguration?
    {
        guard let fields else {
            // Absent, or `grid_integration:` with no value (found by make fuzz: that refused the file
            // printing nothing): the defaults. Any other value was reported by `fields` already.
            if top.node("grid_integration") == nil {
                return GridConfiguration(mode: "simulation", frequencySource: defaultFrequencySource(runMode), droop: .seedDefault)
            }
            return nil
        }
        let mode = fields.choice("mode", [("simulation", "simulation"), ("posoco", "posoco"), ("pmu", "pmu")],
                                 default: "simulation")
        let source = fields.choice("frequency_source", [("simulated", FrequencySource.simulated), ("inverter", .inverter),
                                                        ("meter", .meter), ("pmu", .pmu)],
                                   default: defaultFrequencySource(runMode))
        if mode != "simulation", !(mode == "pmu" && source == .pmu) {
            r.notice(fields.mark("mode"), fields.child("mode"),
                     "'\(mode)' frequency feeds are not part of bessd; frequency comes from frequency_source")
        }
        if runMode == .hardware, source == .simulated {
            r.error(fields.mark("frequency_source"), fields.child("frequency_source"), ConfigLoader.notInHardware, got: "simulated")
        }
        let pmu = decodePMU(fields, r, source: source)
        fields.acknowledge("scada_enabled", "the key is ignored; the scada: block serves the site to plant SCADA")
        let droop = fields.fields("droop_settings").map { DroopSettings.decode($0, r) } ?? .seedDefault
        let frequencyEvents = fields.fields("frequency_events").map { FrequencyEventSettings.decode($0, r) } ?? FrequencyEventSettings()
        let reactive = fields.fields("reactive_power").map {
            ReactivePowerConfiguration.decode($0, r, keys: ReactivePowerConfiguration.unitKeys)
        }
        fields.finish(Self.keys)
        var grid = GridConfiguration(mode: mode, frequencySource: source, frequencyEvents: frequencyEvents, droop: droop, pmu: pmu)
        grid.reactivePower = reactive ?? ReactivePowerConfiguration()
        return grid
    }

    /// `grid_integration.pmu`: required by `frequency_source: pmu`, and read only then (a notice
    /// says so when it stands beside another source).
    static func decodePMU(_ fields: ConfigReader.Fields, _ r: ConfigReader, source: FrequencySource) -> PMUSettings? {
        let block = fields.fields("pmu")
        let pmu = block.flatMap { PMUSettings.decode($0, r) }
        if source == .pmu, fields.node("pmu") == nil {
            r.error(fields.mark("frequency_source"), fields.child("frequency_source"),
                    "needs grid_integration.pmu (the PMU's host, port and idcode)", got: "pmu")
        }
        if source != .pmu, block != nil {
            r.notice(fields.mark("pmu"), fields.child("pmu"),
                     "the PMU is not read: frequency_source is \(source.rawValue), not pmu")
        }
        return source == .pmu ? pmu : nil
    }
}

extension DroopSettings {
    /// The keys of `grid_integration.droop_settings`.
    static let keys = ConfigKeys("grid_integration.droop_settings", [
        "enabled", "nominal_hz", "deadband_hz", "droop_percent", "droop_percent_under", "droop_percent_over",
        "reference", "response_time_s", "profile", "sustain_s", "response_power_percent",
    ])

    /// `grid_integration.droop_settings:` — the frequency response: a profile's settings (the seed's by
    /// default), then nominal, deadband, droops, reference, response and sustain times as given.
    static func decode(_ d: ConfigReader.Fields, _ r: ConfigReader) -> DroopSettings {
        let nominal = Hertz(d.choice("nominal_hz", [("50", 50.0), ("60", 60.0)], default: 50))
        var droop = decodeProfile(d, r).settings(nominal: nominal)
        droop.enabled = d.bool("enabled", default: true)
        if let band = d.sequence("deadband_hz") {
            let values = band.map { $0.int.map(Double.init) ?? $0.float }
            if values.count != 2 || values.contains(where: { $0 == nil }) {
                r.error(d.mark("deadband_hz"), d.child("deadband_hz"), "expected two numbers [low, high] in Hz",
                        got: "[" + band.map { $0.scalar?.string ?? "?" }.joined(separator: ", ") + "]")
            } else {
                let low = values[0]!, high = values[1]!
                let nominal = droop.nominal.value
                if !(low <= high) {
                    r.error(d.mark("deadband_hz"), d.child("deadband_hz"), "low edge must not be above the high edge",
                            got: "[\(format(low)), \(format(high))]")
                } else if !(low <= nominal && nominal <= high) || nominal - low > 1 || high - nominal > 1 {
                    r.error(d.mark("deadband_hz"), d.child("deadband_hz"),
                            "must contain the nominal \(format(nominal)) Hz and lie within 1 Hz of it",
                            got: "[\(format(low)), \(format(high))]")
                } else {
                    droop.deadbandLow = Hertz(low)
                    droop.deadbandHigh = Hertz(high)
                }
            }
        }
        let both = d.double("droop_percent", range: 0...100, exclusiveLower: true, unit: "%")
        droop.droopUnderPercent = d.double("droop_percent_under", default: both ?? droop.droopUnderPercent, range: 0...100,
                                           exclusiveLower: true, unit: "%")!
        droop.droopOverPercent = d.double("droop_percent_over", default: both ?? droop.droopOverPercent, range: 0...100,
                                          exclusiveLower: true, unit: "%")!
        droop.reference = d.choice("reference", [("edge", DroopReference.edge), ("nominal", .nominal)], default: droop.reference)
        let response = d.double("response_time_s", default: droop.responseTime.secondsDouble, range: 0...600, unit: "seconds")!
        droop.responseTime = .seconds(fromDouble: response)
        droop.sustain = .seconds(fromDouble: d.double("sustain_s", default: 0, range: 0...86_400, unit: "seconds")!)
        droop.responsePowerPercent = d.double("response_power_percent", range: 0...100, exclusiveLower: true, unit: "%")
        d.finish(Self.keys)
        return droop
    }

    /// `profile:` — a named set whose numbers are verified (docs/frequency-response.md). An IEGC 2023
    /// profile is refused by name: its primary-response clauses could not be read.
    static func decodeProfile(_ d: ConfigReader.Fields, _ r: ConfigReader) -> DroopProfile {
        if let node = d.node("profile"), let name = node.scalar?.string.lowercased(), name.hasPrefix("iegc") {
            r.error(d.mark("profile"), d.child("profile"),
                    "no IEGC 2023 profile: its primary-response clauses are not verified (docs/frequency-response.md); "
                        + "state deadband_hz, droop_percent, response_time_s and sustain_s instead",
                    got: ConfigReader.shown(node))
            return .seed
        }
        return d.choice("profile", DroopProfile.allCases.map { ($0.rawValue, $0) }, default: .seed)
    }
}

extension FrequencyEventSettings {
    /// The keys of `grid_integration.frequency_events`.
    static let keys = ConfigKeys("grid_integration.frequency_events", ["entry_delay_s", "exit_delay_s"])

    /// `grid_integration.frequency_events:` — when a frequency excursion is an event (docs/frequency-events.md).
    static func decode(_ f: ConfigReader.Fields, _ r: ConfigReader) -> FrequencyEventSettings {
        var settings = FrequencyEventSettings()
        settings.entryDelay = .seconds(fromDouble: f.double("entry_delay_s", default: 1, range: 0...600, unit: "seconds")!)
        settings.exitDelay = .seconds(fromDouble: f.double("exit_delay_s", default: 5, range: 0...3600, unit: "seconds")!)
        f.finish(Self.keys)
        return settings
    }
}
