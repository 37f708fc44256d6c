import BessBase
public import Foundation
public import Planning
internal import Yams

/// `optimiser:` — the plan bessd makes for itself (docs/optimiser.md): a time-of-day tariff or the
/// aggregator's prices, a forecast file or the meter's own history, and the costs the plan weighs.
/// The plan becomes the block schedule the executor follows (source `optimiser`, the lowest).
public struct OptimiserConfiguration: Sendable, Equatable {
    /// `enabled`: plan and follow the plan (default false: the section is read and checked only).
    public var enabled = false
    /// `horizon_blocks`: how many blocks ahead each plan looks (default 96, one day of 15 minutes).
    public var horizonBlocks = 96
    /// `tariff`: import and export prices per band of the local day, weekdays and weekends; nil: the
    /// prices the aggregator pushes (`prices` command).
    public var tariff: Tariff?
    /// `time_zone`: the IANA zone the tariff's bands and the block numbers are in (default: the
    /// gateway's local zone).
    public var timeZone: TimeZone = .current
    /// `forecast_file`: CSV `start,load_kw,pv_kw` per block; nil: the aggregator's forecast, else the
    /// persistence forecast from the meter's own history.
    public var forecastFile: String?
    /// Cost per kWh charged or discharged, per kW of the horizon's highest import above the threshold,
    /// the threshold, kW, and the value of a kWh left stored at the horizon's end.
    public var wearPerKWh = 0.0
    public var demandChargePerKW = 0.0
    public var demandThresholdKW = 0.0
    public var valueEndPerKWh = 0.0
    /// `end_soc_percent`: a soft floor on the SOC at the horizon's end (nil: none).
    public var endSOCPercent: Double?
    /// `efficiency.charge` and `.discharge`: η_c and η_d of the plan's battery (default 0.95 each).
    public var chargeEfficiency = 0.95
    public var dischargeEfficiency = 0.95

    public init() {}

    static let keys = ConfigKeys("optimiser", [
        "enabled", "horizon_blocks", "tariff", "time_zone", "forecast_file", "wear_per_kwh", "demand_charge_per_kw",
        "demand_threshold_kw", "value_end_per_kwh", "end_soc_percent", "efficiency",
    ])
    static let tariffKeys = ConfigKeys("optimiser.tariff", ["weekdays", "weekends"])
    static let bandKeys = ConfigKeys("optimiser.tariff.weekdays[]", ["from", "to", "import_per_kwh", "export_per_kwh"])
    static let efficiencyKeys = ConfigKeys("optimiser.efficiency", ["charge", "discharge"])

    static func decode(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> OptimiserConfiguration {
        var o = OptimiserConfiguration()
        o.enabled = fields.bool("enabled", default: false)
        o.horizonBlocks = fields.int("horizon_blocks", default: 96, range: 1...672, unit: "blocks")!
        if let name = fields.string("time_zone", pattern: { TimeZone(identifier: $0) != nil }, rule: "must be an IANA time zone, e.g. Asia/Kolkata") {
            o.timeZone = TimeZone(identifier: name) ?? .current
        }
        o.forecastFile = fields.string("forecast_file", pattern: { $0.hasPrefix("/") }, rule: "must be an absolute path")
        o.wearPerKWh = fields.double("wear_per_kwh", default: 0, range: 0...1e6, unit: "per kWh")!
        o.demandChargePerKW = fields.double("demand_charge_per_kw", default: 0, range: 0...1e6, unit: "per kW")!
        o.demandThresholdKW = fields.double("demand_threshold_kw", default: 0, range: 0...1e6, unit: "kW")!
        o.valueEndPerKWh = fields.double("value_end_per_kwh", default: 0, range: 0...1e6, unit: "per kWh")!
        o.endSOCPercent = fields.double("end_soc_percent", range: 0...100, unit: "%")
        if let e = fields.fields("efficiency") {
            o.chargeEfficiency = e.double("charge", default: 0.95, range: 0...1, exclusiveLower: true)!
            o.dischargeEfficiency = e.double("discharge", default: 0.95, range: 0...1, exclusiveLower: true)!
            e.finish(Self.efficiencyKeys)
        }
        if let t = fields.fields("tariff") {
            let weekdays = bands(t, "weekdays", r), weekends = bands(t, "weekends", r)
            t.finish(Self.tariffKeys)
            if let weekdays, let weekends {
                do throws(PlanningError) {
                    o.tariff = try Tariff(weekdays: weekdays, weekends: weekends, timeZone: o.timeZone)
                } catch {
                    r.error(fields.mark("tariff"), fields.child("tariff"), error.description)
                }
            }
        }
        fields.finish(Self.keys)
        return o
    }

    /// What the section needs of the rest of the file: an enabled optimiser's plan runs as a block
    /// schedule (`schedule:`), and something must price it (a tariff, or the aggregator's prices).
    static func check(_ o: OptimiserConfiguration, schedule: ScheduleConfiguration?, aggregator: AggregatorConfiguration?,
                      _ fields: ConfigReader.Fields, _ r: ConfigReader) {
        guard o.enabled else { return }
        if schedule == nil {
            r.error(fields.mark("enabled"), fields.child("enabled"), "needs a schedule: section (the plan runs as the block schedule)")
        }
        if o.tariff == nil, aggregator == nil, !fields.has("tariff") {
            r.error(fields.mark("tariff"), fields.child("tariff"),
                    "is required without an aggregator: (nothing else prices the plan; the aggregator's `prices` command can)")
        }
    }

    /// One list of bands (`weekdays`, `weekends`), each `{from: "HH:MM", to: "HH:MM", import_per_kwh,
    /// export_per_kwh}`; nil after an error (reported at the band's line).
    private static func bands(_ t: ConfigReader.Fields, _ key: String, _ r: ConfigReader) -> [TariffBand]? {
        guard let list = t.sequence(key) else {
            if !t.has(key) { r.error(t.node, t.child(key), "is required (a list of bands covering the day)") }
            return nil
        }
        var out: [TariffBand] = []
        var failed = false
        for (index, node) in list.enumerated() {
            let path = "\(t.child(key))[\(index)]"
            guard let b = r.fields(node, path) else { failed = true; continue }
            let from = b.string("from"), to = b.string("to")
            let importPrice = b.double("import_per_kwh", range: -1e6...1e6, unit: "per kWh")
            let exportPrice = b.double("export_per_kwh", range: -1e6...1e6, unit: "per kWh")
            for name in ["from", "to", "import_per_kwh", "export_per_kwh"] where !b.has(name) {
                r.error(node, "\(path).\(name)", "is required")
                failed = true
            }
            b.finish(Self.bandKeys)
            guard let from, let to, let importPrice, let exportPrice else { failed = true; continue }
            let line = (node.mark?.line ?? 0)
            do throws(PlanningError) {
                out.append(try TariffBand(from: from, to: to, importPerKWh: importPrice, exportPerKWh: exportPrice, line: line))
            } catch {
                r.error(node, path, error.description)
                failed = true
            }
        }
        return failed ? nil : out
    }
}

extension BessdConfiguration {
    /// `optimiser.enabled` (false without the section): what a reload cannot change. Setting it
    /// changes a section that is there (the reload rules write back what keeps running).
    public var optimiserEnabled: Bool {
        get { optimiser?.enabled == true }
        set { optimiser?.enabled = newValue }
    }
}
