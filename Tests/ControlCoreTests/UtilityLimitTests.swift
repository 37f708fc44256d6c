import ControlCore
import Foundation
import Testing

/// The utility's controls (IEEE 2030.5, CSIP-AUS) in the site's order of authority
/// (docs/design/0009-utility-limits.md): limits with the grid operator's rank, requests between AGC
/// and the SCADA setpoint.
@Suite("Utility limits in the site")
struct UtilityLimitTests {
    /// Three 100 kW units (300 kW); limits ramp at 10 %/s (30 kW/s), schedules at 1000 %/s.
    static func site(_ settings: SiteSettings = .none) -> SiteController { SiteCommandsTests.site(settings) }

    static func sum(_ site: SiteController) -> Double { SiteCommandsTests.sum(site) }

    /// Every unit dispatched to `kw`.
    static func dispatch(_ kw: Double) -> (Int, inout UnitInputs, MonotonicInstant) -> Void {
        { _, inputs, _ in inputs.dispatch = PowerCommand(power: .kilowatts(kw), expiresAt: Fixture.instant(10_000)) }
    }

    static func limits(_ body: (inout UtilityLimits) -> Void) -> UtilityLimits {
        var limits = UtilityLimits()
        body(&limits)
        return limits
    }

    @Test("opModExpLimW holds export through load steps; the lower of it and export_max_kw applies")
    func exportLimitAtTheConnectionPoint() {
        let site = Self.site(SiteSettings(hasMeter: true, exportMax: .kilowatts(80), meterMaxLag: .seconds(0.5)))
        var load = 100_000.0
        var meter = MeteredSite(units: 3, lag: 0.2) { _ in load }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        #expect(abs(meter.grid(at: 15) + 80_000) < 2_000, "the configured 80 kW: grid \(meter.grid(at: 15))")
        #expect(site.siteDecision.utility.binding == .none)
        site.utilityLimits = Self.limits { $0.exportLimitW = 50_000 }
        meter.run(site, from: 15, seconds: 5, extra: Self.dispatch(100))
        #expect(abs(meter.grid(at: 20) + 50_000) < 2_000, "the utility's 50 kW: grid \(meter.grid(at: 20))")
        #expect(site.siteDecision.utility.binding == .export && !site.siteDecision.utility.unmetered)
        for (t, kw) in [(20.0, 20.0), (30, 150), (40, 60)] {
            load = kw * 1000
            meter.run(site, from: t, seconds: 10, extra: Self.dispatch(100))
            let settled = meter.grid(from: t + 3)
            #expect(settled.allSatisfy { $0 >= -50_000 - 2_000 }, "load \(kw) kW: export past the limit \(settled.min() ?? 0)")
            #expect(abs(meter.grid(at: t + 10) + 50_000) < 2_000, "load \(kw) kW: held at the limit, grid \(meter.grid(at: t + 10))")
        }
        // A utility limit above the configured one: the configured 80 kW applies again (ramped up).
        site.utilityLimits = Self.limits { $0.exportLimitW = 120_000 }
        meter.run(site, from: 50, seconds: 10, extra: Self.dispatch(100))
        #expect(abs(meter.grid(at: 60) + 80_000) < 2_000 && site.siteDecision.utility.binding == .none)
    }

    @Test("an export limit lowered with a stale meter bounds the units' sum at once")
    func exportLimitLoweredWhileMeterStale() {
        let site = Self.site(SiteSettings(hasMeter: true, meterMaxLag: .seconds(0.5)))
        var meter = MeteredSite(units: 3) { _ in 100_000 }
        site.utilityLimits = Self.limits { $0.exportLimitW = 50_000 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        #expect(abs(meter.grid(at: 15) + 50_000) < 2_000, "held at the 50 kW limit: grid \(meter.grid(at: 15))")
        meter.meterSilent = { $0 > 15 }
        meter.run(site, from: 15, seconds: 5, extra: Self.dispatch(100))
        #expect(site.connection.stale, "the meter is stale after 3 s of silence")
        site.utilityLimits = Self.limits { $0.exportLimitW = 0 }
        meter.run(site, from: 20, seconds: 0.1, extra: Self.dispatch(100))
        #expect(Self.sum(site) <= 1, "the lowered limit falls at once: Σ setpoints \(Self.sum(site)) W")
        #expect(site.siteDecision.utility.unmetered)
    }

    /// The open gateway never applied it to charging.
    @Test("opModImpLimW caps battery charging at the connection point")
    func importLimitCapsCharging() {
        let site = Self.site(SiteSettings(hasMeter: true, meterMaxLag: .seconds(0.5)))
        var meter = MeteredSite(units: 3) { _ in 50_000 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(-100))
        #expect(Self.sum(site) < -290_000, "charging 300 kW before the limit")
        site.utilityLimits = Self.limits { $0.importLimitW = 100_000 }
        meter.run(site, from: 15, seconds: 5, extra: Self.dispatch(-100))
        #expect(abs(Self.sum(site) + 50_000) < 2_000, "load 50 kW + charge 50 kW = 100 kW import: \(Self.sum(site))")
        #expect(abs(meter.grid(at: 20) - 100_000) < 2_000)
        #expect(site.siteDecision.utility.binding == .import)
    }

    /// opModLoadLimW and opModImpLimW.
    @Test("without a meter, load and import limits cap charge; the decision says the import is unmetered")
    func loadLimitCapsChargingWithoutMeter() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(-100))
        site.utilityLimits = Self.limits { $0.loadLimitW = 40_000 }
        meter.run(site, from: 15, seconds: 0.1, extra: Self.dispatch(-100))
        #expect(abs(Self.sum(site) + 40_000) < 1 && site.siteDecision.utility.binding == .load)
        #expect(!site.siteDecision.utility.unmetered)
        site.utilityLimits = Self.limits { $0.loadLimitW = 40_000; $0.importLimitW = 25_000 }
        meter.run(site, from: 15.1, seconds: 0.1, extra: Self.dispatch(-100))
        #expect(abs(Self.sum(site) + 25_000) < 1 && site.siteDecision.utility.binding == .import)
        #expect(site.siteDecision.utility.unmetered)
        // Discharge is not touched by a charge limit.
        meter.run(site, from: 15.2, seconds: 0.5, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 300_000) < 1)
    }

    @Test("opModGenLimW and opModMaxLimW cap the site's discharge (the lower applies); charging is not touched")
    func generationLimitCapsDischarge() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 120_000 }
        meter.run(site, from: 15, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 120_000) < 1 && site.siteDecision.utility.binding == .generation)
        site.utilityLimits = Self.limits { $0.generationLimitW = 120_000; $0.maxLimW = 90_000 }
        meter.run(site, from: 15.1, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 90_000) < 1 && site.siteDecision.utility.binding == .maxLimit)
        meter.run(site, from: 15.2, seconds: 0.5, extra: Self.dispatch(-100))
        #expect(abs(Self.sum(site) + 300_000) < 1)
    }

    @Test("opModConnect or opModEnergize false holds every unit at zero despite dispatch and override")
    func disconnectBringsTheSiteToZero() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        func inputs(_ i: Int, _ unit: inout UnitInputs, _ now: MonotonicInstant) {
            unit.dispatch = PowerCommand(power: .kilowatts(-60), expiresAt: Fixture.instant(10_000))
            if i == 0 { unit.override = PowerCommand(power: .kilowatts(80), expiresAt: Fixture.instant(10_000)) }
        }
        meter.run(site, from: 0, seconds: 15, extra: inputs)
        #expect(abs(site.decision(unit: 0).setpoint.value - 80_000) < 1)
        site.utilityLimits = Self.limits { $0.connect = false }
        meter.run(site, from: 15, seconds: 0.1, extra: inputs)
        #expect(site.units.indices.allSatisfy { site.decision(unit: $0).setpoint.value == 0 }, "each unit, not only the sum")
        #expect(site.siteDecision.utility.binding == .disconnected && site.siteDecision.utility.disconnected)
        site.utilityLimits = Self.limits { $0.energize = false }
        meter.run(site, from: 15.1, seconds: 1, frequency: 49.7, extra: inputs)
        #expect(site.units.indices.allSatisfy { site.decision(unit: $0).setpoint.value == 0 }, "frequency response too")
        // Connected again: the site's sum comes back at the limit ramp (30 kW/s), not at once.
        site.utilityLimits = Self.limits { _ in }
        meter.run(site, from: 16.1, seconds: 1, extra: inputs)
        #expect(abs(Self.sum(site)) <= 30_000 + 1 && site.decision(unit: 0).setpoint.value > 0, "after 1 s: \(Self.sum(site))")
    }

    @Test("a utility limit bounds the local operator's override")
    func limitBoundsTheOverride() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        func inputs(_ i: Int, _ unit: inout UnitInputs, _ now: MonotonicInstant) {
            if i == 0 { unit.override = PowerCommand(power: .kilowatts(100), expiresAt: Fixture.instant(10_000)) }
        }
        meter.run(site, from: 0, seconds: 15, extra: inputs)
        site.utilityLimits = Self.limits { $0.generationLimitW = 30_000 }
        meter.run(site, from: 15, seconds: 0.1, extra: inputs)
        #expect(abs(site.decision(unit: 0).setpoint.value - 30_000) < 1 && Self.sum(site) <= 30_000 + 1)
        #expect(site.siteDecision.utility.binding == .generation)
    }

    @Test("interlocks outrank the utility: a BMS limit holds while the import floor asks for more")
    func interlocksOutrank() {
        let site = Self.site(SiteSettings(hasMeter: true, meterMaxLag: .seconds(0.5)))
        var meter = MeteredSite(units: 3) { _ in 300_000 }
        // Unit 0's BMS allows 200 A × 52 V = 10.4 kW of discharge.
        func inputs(_ i: Int, _ unit: inout UnitInputs, _ now: MonotonicInstant) {
            if i == 0 { unit.bms = Fixture.healthyBMS(at: now, dischargeA: 200) }
        }
        meter.run(site, from: 0, seconds: 15, extra: inputs)
        site.utilityLimits = Self.limits { $0.importLimitW = 50_000 }
        meter.run(site, from: 15, seconds: 5, extra: inputs)
        #expect(site.decision(unit: 0).setpoint.value <= 10_400 + 1, "unit 0: \(site.decision(unit: 0).setpoint.value)")
        #expect(Self.sum(site) > 200_000 && Self.sum(site) <= 210_400 + 1, "the others give what they can: \(Self.sum(site))")
    }

    @Test("operator standby holds against the utility's opModTargetW; in auto the target is followed, bounded")
    func standbyHoldsAgainstTarget() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(10))
        site.setOperatorMode(.standby)
        site.utilityLimits = Self.limits { $0.targetW = 200_000 }
        meter.run(site, from: 15, seconds: 2, extra: Self.dispatch(10))
        #expect(site.units.indices.allSatisfy { site.decision(unit: $0).setpoint.value == 0 })
        site.setOperatorMode(.auto)
        meter.run(site, from: 17, seconds: 15, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) - 200_000) < 1, "the target stands in for the dispatch: \(Self.sum(site))")
        #expect(site.siteDecision.utility.request == 200_000)
        site.utilityLimits = Self.limits { $0.targetW = 200_000; $0.generationLimitW = 150_000 }
        meter.run(site, from: 32, seconds: 0.1, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) - 150_000) < 1)
    }

    /// opModStorageTargetW before opModTargetW before opModFixedW.
    @Test("the utility's request outranks SCADA and dispatch; StorageTargetW, TargetW, FixedW in that order")
    func requestRank() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        var setpoint = ExpiringCommand(value: 60_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(1000)
        site.commands.setpoint = setpoint
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) - 60_000) < 1)
        site.utilityLimits = Self.limits { $0.fixedW = -90_000 }
        meter.run(site, from: 15, seconds: 0.2, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) + 90_000) < 1)
        site.utilityLimits = Self.limits { $0.fixedW = -90_000; $0.targetW = 30_000 }
        meter.run(site, from: 15.2, seconds: 0.2, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) - 30_000) < 1)
        site.utilityLimits = Self.limits { $0.fixedW = -90_000; $0.targetW = 30_000; $0.storageTargetW = 120_000 }
        meter.run(site, from: 15.4, seconds: 0.2, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) - 120_000) < 1)
        site.utilityLimits = nil
        meter.run(site, from: 15.6, seconds: 0.2, extra: Self.dispatch(10))
        #expect(abs(Self.sum(site) - 60_000) < 1, "the SCADA setpoint again")
    }

    /// Ramp: rampTms when given, else the site's limit ramp.
    @Test("a utility limit falls at once and rises ramped; lifted, it is gone past the rating")
    func fallsAtOnceRisesRamped() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 60_000 }
        meter.run(site, from: 15, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 60_000) < 1, "at once: \(Self.sum(site))")
        // Raised to 200 kW without rampTms: 30 kW/s (10 %/s of 300 kW).
        site.utilityLimits = Self.limits { $0.generationLimitW = 200_000 }
        meter.run(site, from: 15.1, seconds: 1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 90_000) < 1, "one second later: \(Self.sum(site))")
        // Down to 60 kW again, then up to 200 kW with rampTms 10 s: 14 kW/s.
        site.utilityLimits = Self.limits { $0.generationLimitW = 60_000 }
        meter.run(site, from: 16.1, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 60_000) < 1)
        site.utilityLimits = Self.limits { $0.generationLimitW = 200_000; $0.rampSeconds = 10 }
        meter.run(site, from: 16.2, seconds: 1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 74_000) < 1, "rampTms: \(Self.sum(site))")
        meter.run(site, from: 17.2, seconds: 9.5, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 200_000) < 1)
        // Lifted: the site's limit ramp up to the rating, then no cap at all.
        site.utilityLimits = Self.limits { _ in }
        meter.run(site, from: 26.7, seconds: 1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 230_000) < 1, "lifted: \(Self.sum(site))")
        meter.run(site, from: 27.7, seconds: 3, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 300_000) < 1 && site.siteDecision.utility.dischargeCap == .infinity)
    }

    /// The default's setGradW applies to a rising limit without rampTms.
    @Test("ALL-13, ALL-25: rising limits ramp at setGradW unless rampTms; 0 is no limit; limits fall at once")
    func setGradWRamp() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 60_000; $0.gradientWPerSecond = 6_000 }
        meter.run(site, from: 15, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 60_000) < 1, "falls at once whatever setGradW: \(Self.sum(site))")
        // setGradW 200 (2 %/s of 300 kW = 6 kW/s), not the site's 30 kW/s.
        site.utilityLimits = Self.limits { $0.generationLimitW = 200_000; $0.gradientWPerSecond = 6_000 }
        meter.run(site, from: 15.1, seconds: 2, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 72_000) < 1, "setGradW: \(Self.sum(site))")
        // rampTms given: it decides (from 72 kW to 180 kW over 4 s: 27 kW/s).
        site.utilityLimits = Self.limits { $0.generationLimitW = 180_000; $0.gradientWPerSecond = 6_000; $0.rampSeconds = 4 }
        meter.run(site, from: 17.1, seconds: 1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 99_000) < 1, "rampTms over setGradW: \(Self.sum(site))")
        // Lifted altogether: setGradW still paces it up to the rating.
        site.utilityLimits = Self.limits { $0.gradientWPerSecond = 6_000 }
        meter.run(site, from: 18.1, seconds: 1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 105_000) < 1, "lifted at setGradW: \(Self.sum(site))")
        // setGradW 0: no utility bound on the rise, the site's limit ramp (30 kW/s) still paces it.
        site.utilityLimits = Self.limits { $0.generationLimitW = 60_000; $0.gradientWPerSecond = .infinity }
        meter.run(site, from: 19.1, seconds: 0.1, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.gradientWPerSecond = .infinity }
        meter.run(site, from: 19.2, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 63_000) < 1, "setGradW 0 rises at the site's ramp: \(Self.sum(site))")
    }

    /// setGradW 0 or above it, rampTms 0 or shorter, out of stale or opModConnect false.
    @Test("the site's limit ramp bounds every rise, whatever setGradW, rampTms, staleness or opModConnect")
    func siteRampBoundsEveryRise() {
        let rate = 30_000.0  // 10 %/s of 300 kW
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        // Published, then stale: the site at zero.
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.validUntil = Fixture.instant(15.5) }
        meter.run(site, from: 15, seconds: 1, extra: Self.dispatch(100))
        #expect(Self.sum(site) == 0 && site.siteDecision.utility.stale)
        // Fresh with setGradW 0 (infinite): from zero at the site's ramp, not at once.
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.gradientWPerSecond = .infinity }
        meter.run(site, from: 16, seconds: 0.1, extra: Self.dispatch(100))
        #expect(Self.sum(site) <= rate * 0.1 + 1, "out of stale with setGradW 0: \(Self.sum(site))")
        // opModConnect false, then true with a setGradW far above the site's ramp (100 %/s of 300 kW).
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.connect = false }
        meter.run(site, from: 16.1, seconds: 0.1, extra: Self.dispatch(100))
        #expect(Self.sum(site) == 0)
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.gradientWPerSecond = 300_000 }
        meter.run(site, from: 16.2, seconds: 0.1, extra: Self.dispatch(100))
        #expect(Self.sum(site) <= rate * 0.1 + 1, "setGradW above the site's ramp: \(Self.sum(site))")
        // rampTms 0 and rampTms shorter than the site's ramp allows: the site's ramp.
        site.utilityLimits = Self.limits { $0.generationLimitW = 0 }
        meter.run(site, from: 16.3, seconds: 0.1, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.rampSeconds = 0 }
        meter.run(site, from: 16.4, seconds: 0.1, extra: Self.dispatch(100))
        #expect(Self.sum(site) <= rate * 0.1 + 1, "rampTms 0: \(Self.sum(site))")
        site.utilityLimits = Self.limits { $0.generationLimitW = 0 }
        meter.run(site, from: 16.5, seconds: 0.1, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 250_000; $0.rampSeconds = 1 }
        meter.run(site, from: 16.6, seconds: 0.1, extra: Self.dispatch(100))
        #expect(Self.sum(site) <= rate * 0.1 + 1, "rampTms 1 s over 250 kW: \(Self.sum(site))")
    }

    @Test("the utility's droop is measured from the dead-band edge (IEEE 1547), whatever reference is set")
    func utilityDroopFromTheEdge() {
        var configured = DroopSettings.seedDefault
        configured.reference = .nominal
        let droop = UtilityDroop(deadbandOverHz: 0.5, deadbandUnderHz: 0.5, droopOverPercent: 5, droopUnderPercent: 5, responseTime: .zero)
        let curve = DroopCurve(droop.applied(to: configured))
        let over = curve.perUnitChange(at: Hertz(50.501)), under = curve.perUnitChange(at: Hertz(49.499))
        #expect(abs(over + 0.0004) < 1e-6, "0.001 Hz past the edge at 5 %: \(over)")
        #expect(abs(under - 0.0004) < 1e-6, "\(under)")
        #expect(DroopCurve(configured).settings.reference == .nominal, "the configured droop keeps its reference")
    }

    @Test("opModFreqDroop in force replaces the configured droop without reload; ended or stale, it reverts")
    func freqDroopApplied() {
        let site = Fixture.site()  // the seed's droop: 49.90 / 50.05 Hz, 5 % both ways, immediate
        let r = Fixture.rating.value
        #expect(Fixture.run(site, seconds: 1, frequency: 49.95).droop.value == 0, "inside the configured dead-band")
        let quick = UtilityDroop(deadbandOverHz: 0.01, deadbandUnderHz: 0.02, droopOverPercent: 2, droopUnderPercent: 5, responseTime: .zero)
        site.utilityLimits = Self.limits { $0.droop = quick }
        var d = Fixture.run(site, from: 1, seconds: 0.2, frequency: 49.95)
        #expect(abs(d.droop.value - 0.03 / 2.5 * r) < 1, "(49.98 − 49.95) / (50 × 5 %): \(d.droop.value)")
        #expect(abs(site.frequencyEvents.curve.settings.deadbandLow.value - 49.98) < 1e-9, "events are judged by the droop in force")
        d = Fixture.run(site, from: 1.2, seconds: 0.2, frequency: 50.03)
        #expect(abs(d.droop.value + 0.02 / 1.0 * r) < 1, "−(50.03 − 50.01) / (50 × 2 %): \(d.droop.value)")
        d = Fixture.run(site, from: 1.4, seconds: 0.2, frequency: 50)
        #expect(d.droop.value == 0)
        // openLoopTms 10 s: one second into a step, 1 − e^(−ln 10 / 10) of it.
        var slow = quick
        slow.responseTime = .seconds(10)
        site.utilityLimits = Self.limits { $0.droop = slow }
        d = Fixture.run(site, from: 1.6, seconds: 1, frequency: 49.95)
        let part = 1 - exp(-log(10.0) / 10)
        #expect(abs(d.droop.value - 0.012 * r * part) < 1, "\(d.droop.value) vs \(0.012 * r * part)")
        // Ended: the configured droop (immediate, 49.95 inside its dead-band).
        site.utilityLimits = Self.limits { _ in }
        #expect(Fixture.run(site, from: 2.6, seconds: 0.2, frequency: 49.95).droop.value == 0)
        #expect(site.frequencyEvents.curve.settings == Fixture.immediateDroop)
        // Stale: the configured droop too (and the site at zero on the utility's account).
        site.utilityLimits = Self.limits { $0.droop = quick; $0.validUntil = Fixture.instant(2.8) }
        d = Fixture.run(site, from: 2.8, seconds: 0.3, frequency: 50.03)
        #expect(d.droop.value == 0 && site.siteDecision.utility.stale, "\(d.droop.value)")
        d = Fixture.run(site, from: 3.1, seconds: 0.2, frequency: 50.1)
        #expect(abs(d.droop.value + 0.05 / 2.5 * r) < 1, "the configured 5 % from 50.05 Hz: \(d.droop.value)")
    }

    @Test("a value read past validUntil holds the site at zero (stale); a fresh one lifts it at the ramp")
    func staleMeansZero() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(-100))
        // Never published: no utility control.
        #expect(!site.siteDecision.utility.active && Self.sum(site) < -290_000)
        site.utilityLimits = Self.limits { $0.generationLimitW = 200_000; $0.validUntil = Fixture.instant(16) }
        meter.run(site, from: 15, seconds: 1, extra: Self.dispatch(-100))
        #expect(Self.sum(site) < -290_000 && site.siteDecision.utility.binding == .none, "fresh: charging is not capped")
        meter.run(site, from: 16, seconds: 0.1, extra: Self.dispatch(-100))
        let stale = site.siteDecision.utility
        #expect(Self.sum(site) == 0, "past validUntil the site holds zero, charging too: \(Self.sum(site))")
        #expect(stale.active && stale.stale && stale.binding == .stale && "\(stale.binding)" == "stale")
        #expect(stale.dischargeCap == 0 && stale.chargeCap == 0 && stale.request == nil)
        meter.run(site, from: 16.1, seconds: 5, extra: Self.dispatch(100))
        #expect(Self.sum(site) == 0 && site.siteDecision.utility.binding == .stale, "discharge held too")
        // A fresh value: the caps rise from zero at the site's limit ramp (30 kW/s), not at once.
        site.utilityLimits = Self.limits { $0.generationLimitW = 200_000; $0.validUntil = Fixture.instant(30) }
        meter.run(site, from: 21.1, seconds: 1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(site) - 30_000) < 1 && !site.siteDecision.utility.stale, "one second after: \(Self.sum(site))")
    }

    @Test("AGC in service and fresh outranks the utility's request; the utility's limit still bounds AGC")
    func agcOutranksTheRequest() {
        var meter = MeteredSite(units: 3) { _ in 0 }
        let site = AGCTests.following(&meter)
        site.utilityLimits = Self.limits { $0.targetW = -100_000 }
        meter.run(site, from: 21, seconds: 2, extra: AGCTests.dispatch)
        #expect(abs(Self.sum(site) - 150_000) < 1, "AGC decides: \(Self.sum(site))")
        site.utilityLimits = Self.limits { $0.targetW = -100_000; $0.generationLimitW = 90_000 }
        meter.run(site, from: 23, seconds: 0.1, extra: AGCTests.dispatch)
        #expect(abs(Self.sum(site) - 90_000) < 1 && site.siteDecision.utility.binding == .generation)
    }

    @Test("a reload carries the utility's ramps: a rising limit keeps rising from where it stood")
    func reloadKeepsTheRamp() {
        let site = Self.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 15, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 60_000 }
        meter.run(site, from: 15, seconds: 0.1, extra: Self.dispatch(100))
        site.utilityLimits = Self.limits { $0.generationLimitW = 200_000 }
        meter.run(site, from: 15.1, seconds: 1, extra: Self.dispatch(100))
        let reloaded = Self.site()
        reloaded.adopt(from: site, mapping: [0, 1, 2])
        reloaded.utilityLimits = site.utilityLimits
        meter.run(reloaded, from: 16.1, seconds: 0.1, extra: Self.dispatch(100))
        #expect(abs(Self.sum(reloaded) - 93_000) < 1, "90 kW + one step at 30 kW/s: \(Self.sum(reloaded))")
    }
}
