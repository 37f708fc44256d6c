public import GridSupport

/// What the utility's DER server (IEEE 2030.5, CSIP / CSIP-AUS) commands the site now, in watts,
/// site-wide (+ = discharge for requests; limits are magnitudes). Each field is nil when no control of
/// its type is in force. The 2030.5 worker resolves the server's programs and publishes this value;
/// the cycle hands it to `SiteController.utilityLimits`, which applies it in the order of authority
/// of docs/design/0009-utility-limits.md: the limits rank with the grid operator's, the requests with
/// the SCADA setpoint.
///
/// A value never published means no utility control. A value read after its `validUntil` is stale
/// and holds the site at zero (both caps 0, binding `stale`) until a fresh one arrives: the worker
/// republishes at least every second — the cached schedule, then the DefaultDERControl through an
/// outage of the server — so a stale value means the worker is stuck or dead, and stale data means
/// zero power, never "no limit".
public struct UtilityLimits: Sendable, Equatable {
    /// `csipaus:opModExpLimW`: grid export at the connection point ≤ this.
    public var exportLimitW: Double?
    /// `csipaus:opModImpLimW`: grid import at the connection point ≤ this.
    public var importLimitW: Double?
    /// `csipaus:opModGenLimW`: the site's discharge ≤ this.
    public var generationLimitW: Double?
    /// `csipaus:opModLoadLimW`: the site's charge ≤ this (magnitude).
    public var loadLimitW: Double?
    /// `opModConnect`: false brings the site to zero (contactors opened where the site can).
    public var connect = true
    /// `opModEnergize`: false brings the site to zero, as `connect` false does.
    public var energize = true
    /// `opModFixedW` resolved to W (hundredths of a percent of the site's rating × the rating).
    public var fixedW: Double?
    /// `opModTargetW`, W (+ = discharge).
    public var targetW: Double?
    /// `opModMaxLimW` resolved to W: the site's discharge ≤ this.
    public var maxLimW: Double?
    /// `csipaus:opModStorageTargetW` (CSIP-AUS 1.3), W (+ = discharge).
    public var storageTargetW: Double?
    /// `rampTms` / 100: how long a rising limit takes to reach its new value, s; nil when the
    /// control gives none. No rise is faster than the site's limit ramp (0: the site's ramp).
    public var rampSeconds: Double?
    /// The DefaultDERControl's `setGradW` in W/s (infinite for its 0: no utility bound): how fast a
    /// limit rises where `rampSeconds` is nil, never faster than the site's limit ramp; nil when no
    /// default gives one (the site's limit ramp applies).
    public var gradientWPerSecond: Double?
    /// `opModFreqDroop`: the frequency response's dead-bands, droops and response time while it is in
    /// force (`UtilityDroop.applied(to:)`); nil: the configured droop.
    public var droop: UtilityDroop?
    /// `opModFixedPFInjectW` / `opModFixedPFAbsorbW`: the power factor while discharging / charging,
    /// signed by excitation (+ over-excited, injecting; − under-excited); nil: not set (unity that way
    /// while the other is set). The reader bounds |pf| to (0, 1].
    public var powerFactorInjecting: Double?
    public var powerFactorAbsorbing: Double?
    /// `opModFixedVar` resolved to var (of the site's rating or var capability), + = injecting.
    public var fixedVar: Double?
    /// `opModTargetVar`, var (+ = injecting).
    public var targetVar: Double?
    /// `opModVoltVar`, `opModWattVar`: the curve of the linked `DERCurve` as the law takes it (each unit's
    /// law follows it while in force, a reactive request of rank 2: `RequestArbiter.utilityReactive`);
    /// nil: none in force, or its curve not applied. Fixed-size values: the cycle copies them.
    public var voltVar: VoltVarSettings?
    public var wattVar: WattVarSettings?
    /// `opModVoltWatt`'s curve: while in force it replaces the configured volt-watt (not a request).
    public var voltWatt: VoltWattSettings?
    /// After this instant the value is stale and the site holds zero (the worker republishes at least
    /// every second); nil: valid until replaced.
    public var validUntil: MonotonicInstant?

    /// No utility control.
    public init() {}

    /// This value when it is still valid at `now`, else nil (stale: `SiteController` then holds zero).
    public func inForce(at now: MonotonicInstant) -> UtilityLimits? {
        if let validUntil, now > validUntil { return nil }
        return self
    }

    /// The request the site follows, W (+ = discharge): `opModStorageTargetW`, else `opModTargetW`,
    /// else `opModFixedW` (the storage-specific control first); nil when none is in force or it is
    /// not a number.
    public var request: Double? {
        guard let value = storageTargetW ?? targetW ?? fixedW, value.isFinite else { return nil }
        return value
    }
}

/// `opModFreqDroop` as the site applies it: the dead-band each way around the configured nominal
/// frequency, the droop each way (percent: full power at that frequency change) and the open-loop
/// response time. The reader bounds every value (IEEE2030_5 `FreqDroop`).
public struct UtilityDroop: Sendable, Equatable {
    /// `dBOF`, Hz above nominal.
    public var deadbandOverHz: Double
    /// `dBUF`, Hz below nominal.
    public var deadbandUnderHz: Double
    /// `kOF` as a percent droop.
    public var droopOverPercent: Double
    /// `kUF` as a percent droop.
    public var droopUnderPercent: Double
    /// `openLoopTms`.
    public var responseTime: Duration

    public init(deadbandOverHz: Double, deadbandUnderHz: Double, droopOverPercent: Double, droopUnderPercent: Double, responseTime: Duration) {
        self.deadbandOverHz = deadbandOverHz
        self.deadbandUnderHz = deadbandUnderHz
        self.droopOverPercent = droopOverPercent
        self.droopUnderPercent = droopUnderPercent
        self.responseTime = responseTime
    }

    /// `configured` with these dead-bands, droops and response time, measured from the dead-band edge
    /// (2030.5's FreqDroopType follows IEEE 1547, whatever reference is configured); whether the response
    /// is enabled, the nominal frequency and the reserve stay as configured.
    public func applied(to configured: DroopSettings) -> DroopSettings {
        var out = configured
        out.reference = .edge
        out.deadbandLow = Hertz(configured.nominal.value - deadbandUnderHz)
        out.deadbandHigh = Hertz(configured.nominal.value + deadbandOverHz)
        out.droopUnderPercent = droopUnderPercent
        out.droopOverPercent = droopOverPercent
        out.responseTime = responseTime
        return out
    }
}
