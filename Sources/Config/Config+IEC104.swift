import Cycle
public import ControlCore
public import IEC104

/// `iec104:` — the grid operator's control centre over IEC 60870-5-104 (issue 46). Only its AGC
/// part is read so far; the outstation's own keys come with the outstation.
public struct IEC104Configuration: Sendable, Equatable {
    /// `iec104.agc`: the regulation band and signal expiry the site declares; nil when absent (AGC
    /// orders are then refused with `AGC_NOT_CONFIGURED`).
    public var agc: AGCConfiguration?
    /// The outstation: listen address, timers, redundancy groups, points (docs/iec104.md).
    public var server = OutstationSettings()

    public init(agc: AGCConfiguration? = nil) { self.agc = agc }

    /// The keys of `iec104`.
    static let keys = ConfigKeys("iec104", ["agc"] + OutstationSettings.keyNames)

    /// `iec104:`; `units` give the site's rating, the band's default.
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader, units: [UnitConfiguration]) -> IEC104Configuration? {
        guard let fields else { return nil }
        let agc = AGCConfiguration.decode(fields.fields("agc"), r, rating: units.reduce(0) { $0 + $1.maxPowerKW })
        var configuration = IEC104Configuration(agc: agc)
        configuration.server = OutstationSettings.decode(fields, r)
        fields.finish(Self.keys)
        return configuration
    }
}

/// `iec104.agc`: what the site declares to the control centre's AGC (docs/design/0008-agc.md).
public struct AGCConfiguration: Sendable, Equatable {
    /// `expiry_s`: a signal not refreshed this long is lost (`AGC_SIGNAL_LOST`) and the schedule
    /// decides again.
    public var expiry: Duration
    /// `upper_limit_kw`, `lower_limit_kw`: the regulation band (+ = discharge).
    public var upperLimitKW: Double
    public var lowerLimitKW: Double

    public init(expiry: Duration = .seconds(12), upperLimitKW: Double, lowerLimitKW: Double) {
        self.expiry = expiry
        self.upperLimitKW = upperLimitKW
        self.lowerLimitKW = lowerLimitKW
    }

    /// The band and expiry as the control law takes them (W).
    public var limits: AGCLimits { AGCLimits(upper: upperLimitKW * 1000, lower: lowerLimitKW * 1000, expiry: expiry) }

    /// The keys of `iec104.agc`.
    static let keys = ConfigKeys("iec104.agc", ["expiry_s", "upper_limit_kw", "lower_limit_kw"])

    /// `iec104.agc:`. The band defaults to the site's whole rating both ways and must lie inside it;
    /// the expiry defaults to 12 s, three of the 4 s AGC periods Indian load despatch centres use.
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader, rating: Double) -> AGCConfiguration? {
        guard let fields else { return nil }
        let expiry = fields.double("expiry_s", default: 12, range: 1...300, unit: "seconds")!
        let bound = max(0, rating)
        let upper = fields.double("upper_limit_kw", default: bound, range: -bound...bound, unit: "kW (within ± the units' summed max_power_kw)")!
        var lower = fields.double("lower_limit_kw", default: -bound, range: -bound...bound, unit: "kW (within ± the units' summed max_power_kw)")!
        if lower >= upper, fields.has("lower_limit_kw") || fields.has("upper_limit_kw") {
            r.error(fields.mark("lower_limit_kw"), fields.child("lower_limit_kw"),
                    "must be below upper_limit_kw (\(format(upper)) kW)", got: format(lower))
            lower = min(lower, upper)
        }
        fields.finish(Self.keys)
        return AGCConfiguration(expiry: .seconds(fromDouble: expiry), upperLimitKW: upper, lowerLimitKW: lower)
    }
}
