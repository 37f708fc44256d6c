public import ControlCore

/// The text a person reads: the live status line of `make sim`, `systemctl status` and `bessctl`.
public enum StatusText {
    /// `t=12s f=49.872Hz | UNIT running SOC 60.0% P +0.9kW SP +0.9kW droop +0.9kW [ok]`
    public static func line(settings: CycleSettings, units: [UnitStatus], frequency: Double, elapsed: Double,
                            busFaults: [[String]], site: SiteStatus? = nil) -> String {
        var text = "t=\(Int(elapsed.rounded()))s"
        text += frequency.isFinite ? " f=\(fixed(frequency, 3))Hz" : " f=--"
        if settings.meter != nil, let site {
            // `grid +312.0kW import-limit peak_shaving`: grid power (+ = import), what binds.
            text += site.gridPower.isFinite ? " grid \(signed(site.gridPower / 1000))kW" : " grid --"
            if site.meterStale { text += " METER_STALE" }
            if site.binding != .none { text += " \(site.binding)-limit" }
            if site.applicationActive { text += " \(settings.site.application.name)" }
            if site.shortfallActive { text += " SITE_SHORTFALL \(fixed(site.shortfall / 1000, 1))kW" }
        }
        for (i, unit) in settings.devices.enumerated() where i < units.count {
            let u = units[i]
            let soc = u.soc.isFinite ? "\(fixed(u.soc, 1))%" : "--"
            let power = u.power.isFinite ? signed(u.power / 1000) : "--"
            var names = u.active.map { "\($0.name)" }
            if i < busFaults.count { names += busFaults[i] }
            let codes = names.isEmpty ? "ok" : names.joined(separator: ",")
            text += " | \(unit.id) \(u.state) SOC \(soc) P \(power)kW SP \(signed(u.setpoint / 1000))kW"
                + " droop \(signed(u.droop / 1000))kW [\(codes)]"
        }
        return text
    }

    /// The one-line `STATUS=` for systemd: mode, units running, trips, cycle health.
    public static func notify(settings: CycleSettings, units: [UnitStatus], stats: CycleStatistics) -> String {
        let running = units.filter { $0.state.mayOperate }.count
        var tripped = TripCodeSet()
        for u in units { for code in u.active { tripped.insert(code) } }
        let trips = tripped.isEmpty ? "no trips" : tripped.map { "\($0.name)" }.joined(separator: ",")
        return "\(settings.mode.rawValue): \(running)/\(units.count) units running, \(trips), "
            + "cycle \(stats.periodMs) ms p99 \(stats.histogram.percentile(0.99)) µs, \(stats.overruns) overruns"
    }
}
