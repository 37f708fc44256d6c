import Cycle
public import ControlCore

extension BessdConfiguration {
    /// How old a frequency reading may be before the controller treats it as absent (ms); also the
    /// ceiling of `grid_integration.pmu.max_age_ms`, so a PMU sample the controller ignores never
    /// keeps the cycle off the inverters.
    static let frequencyStaleAfterMilliseconds = 2_000

    /// The site-wide control settings this configuration describes.
    public var controlSettings: ControlSettings {
        var settings = ControlSettings(
            droop: grid.droop, limitRampPercentPerSecond: limitRampPercentPerSecond,
            scheduleRampPercentPerSecond: scheduleRampPercentPerSecond,
            frequencyStaleAfter: .milliseconds(Self.frequencyStaleAfterMilliseconds), rocofWindow: .milliseconds(500), energyBlockLength: .seconds(900))
        settings.frequencyEvents = grid.frequencyEvents
        return settings
    }

    /// The connection point's settings (`site:`).
    public var siteSettings: SiteSettings {
        var settings = SiteSettings(
            hasMeter: site.meter != nil, importMax: site.importMaxKW.map { .kilowatts($0) },
            exportMax: site.exportMaxKW.map { .kilowatts($0) }, application: site.application,
            socReservePercent: site.socReservePercent,
            meterStaleAfter: site.meter?.staleAfter ?? .seconds(3),
            meterMaxLag: site.meter?.maxLag ?? .seconds(1))
        settings.nominalVoltageV = site.reactivePower.nominalVoltageV
        settings.gridSupport = site.reactivePower.settings
        return settings
    }

    /// Per-unit control settings, with the interlock table overridden from `interlocks:`.
    public var unitSettings: [UnitSettings] {
        units.map { unit in
            let bmsStale = unit.bms.staleAfter
            let inverterStale = unit.inverterStaleAfter
            let defaults = InterlockRule.defaultTable(InterlockDefaults(
                cellsInSeries: unit.bms.cellsInSeries, bmsStaleAfter: bmsStale, inverterStaleAfter: inverterStale))
            var settings = UnitSettings(
                rating: .kilowatts(unit.maxPowerKW), capacity: WattHours(unit.capacityKWh * 1000),
                bmsStaleAfter: bmsStale, inverterStaleAfter: inverterStale,
                rules: Self.apply(interlocks, to: defaults))
            settings.bmsStartupGrace = unit.bms.startupGrace
            settings.inverterStartupGrace = unit.inverterStartupGrace
            // `grid_integration.reactive_power`: every unit runs the same mode on its own ratings.
            settings.gridSupport = grid.reactivePower.settings
            settings.nominalVoltageV = grid.reactivePower.nominalVoltageV
            settings.apparentPowerRating = unit.maxApparentPowerKVA.map { $0 * 1000 }
            return settings
        }
    }

    /// The default table with each override applied; disabled rules are left out.
    static func apply(_ overrides: [TripCode: InterlockOverride], to table: [InterlockRule]) -> [InterlockRule] {
        table.compactMap { rule in
            guard let o = overrides[rule.code] else { return rule }
            guard o.enabled else { return nil }
            var rule = rule
            if let v = o.threshold { rule.threshold = v }
            if let v = o.hysteresis { rule.hysteresis = v }
            if let v = o.delay { rule.delay = v }
            if let v = o.hold { rule.hold = v }
            if let v = o.direction { rule.direction = v }
            var start: Double?
            if case .derate(let s) = rule.severity { start = s }
            if let v = o.derateStart { start = v }
            switch o.severity {
            case "warn": rule.severity = .warn
            case "trip": rule.severity = .trip
            case "latch": rule.severity = .latch
            case "derate": rule.severity = .derate(start: start ?? rule.threshold)
            default: if case .derate = rule.severity { rule.severity = .derate(start: start ?? rule.threshold) }
            }
            return rule
        }
    }
}
