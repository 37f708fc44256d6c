public import GridSupport
public import IEEE2030_5

/// The site's apparent power rating, nominal voltage and IEEE 1547-2018 category, as DERCapability
/// (`rtgMaxVA`, `rtgVNom`, `rtgNormalCategory`) and DERSettings (`setMaxVA`, `setVNom`, `setVRef` =
/// `setVNom`, `setVRefOfs` 0) say them while some unit has var points: the references of the
/// reactive controls and curves (docs/design/0010-reactive-power.md, the 2030.5 bullet).
public struct Sep2ReferenceRatings: Sendable, Equatable {
    /// Σ units' `VAMax` (`max_apparent_power_kva`, else `max_power_kw`), VA; nil: not said.
    public var maxVA: Double?
    /// The nominal voltage, line to neutral, V (`reactive_power.nominal_voltage_v`); nil: not said.
    public var nominalVoltageV: Double?
    /// The configured profile's category; nil: not said.
    public var normalCategory: NormalCategory?

    /// Ratings; every one nil unless given.
    public init(maxVA: Double? = nil, nominalVoltageV: Double? = nil, normalCategory: NormalCategory? = nil) {
        self.maxVA = maxVA.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        self.nominalVoltageV = nominalVoltageV.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        self.normalCategory = normalCategory
    }

    /// The profile the site's settings come from, as its category says it (Category A's for `.a`, else
    /// Category B's, the configuration's default): a received curve without `openLoopTms` takes its
    /// response time (`DERCurve.applied(as:varScale:profile:)`).
    public var profile: GridSupportProfile { normalCategory == .a ? .ieee1547_2018_cat_a : .ieee1547_2018_cat_b }

    /// `c` with `rtgMaxVA` (where it is not below `rtgMaxW`), `rtgVNom` and `rtgNormalCategory`.
    func apply(to c: inout DERCapabilityReport) {
        if let maxVA, maxVA >= c.ratedMaxW { c.ratedMaxVA = maxVA }
        c.ratedVNom = nominalVoltageV
        c.ratedNormalCategory = normalCategory
    }

    /// `d` with `setMaxVA` (where it is not below `setMaxW`), `setVNom`, `setVRef` = `setVNom` and
    /// `setVRefOfs` 0 (the point of common coupling is the reference: no offset is known).
    func apply(to d: inout DERSettingsReport) {
        if let maxVA, maxVA >= d.setMaxW { d.setMaxVA = maxVA }
        d.setVNom = nominalVoltageV
        d.setVRef = nominalVoltageV
        d.setVRefOfs = nominalVoltageV == nil ? nil : 0
    }
}
