import ControlCore
import IEEE2030_5
import Testing

/// `ActiveControls` → `UtilityLimits`: what the site applies of the controls in force.
@Suite("IEEE 2030.5 controls as the site's utility limits")
struct UtilityLimitsConversionTests {
    @Test("ActivePower is value × 10^multiplier W (ALL-24's multipliers 0, 1, 2 and a negative one)")
    func multipliers() {
        var controls = ActiveControls()
        controls.base.exportLimitW = ActivePower(value: 1500, multiplier: 0)
        controls.base.importLimitW = ActivePower(value: 150, multiplier: 1)
        controls.base.generationLimitW = ActivePower(value: 15, multiplier: 2)
        controls.base.loadLimitW = ActivePower(value: 15_000, multiplier: -1)
        controls.base.targetW = ActivePower(value: -25, multiplier: 3)
        controls.base.storageTargetW = ActivePower(value: 7, multiplier: 3)
        let limits = controls.utilityLimits(siteRatingW: 200_000)
        #expect(limits.exportLimitW == 1500)
        #expect(limits.importLimitW == 1500)
        #expect(limits.generationLimitW == 1500)
        #expect(limits.loadLimitW == 1500)
        #expect(limits.targetW == -25_000)
        #expect(limits.storageTargetW == 7_000)
        #expect(limits.fixedW == nil && limits.maxLimW == nil && limits.rampSeconds == nil && limits.validUntil == nil)
        #expect(limits.connect && limits.energize)
    }

    /// Hundredths of a percent of the rating per second.
    @Test("setGradW in force comes from the highest-priority default that gives one; 0 is no limit")
    func setGradW() {
        func program(_ mRID: String, _ primacy: UInt8, _ gradient: UInt16?) -> ProgramSchedule {
            ProgramSchedule(mRID: mRID, primacy: primacy, controls: [],
                            defaultControl: DefaultDERControl(mRID: "D" + mRID, base: DERControlBase(), setGradW: gradient))
        }
        let programs = [program("P3", 3, 100), program("P1", 1, nil), program("P2", 2, 27)]
        let active = EventRules.resolve(programs, now: 1_800_000_000)
        #expect(active.setGradW == 27, "P1's default gives none: P2's")
        #expect(active.utilityLimits(siteRatingW: 200_000).gradientWPerSecond == 540, "0.27 %/s of 200 kW")
        #expect(EventRules.resolve([program("P1", 1, 0)], now: 0).utilityLimits(siteRatingW: 200_000).gradientWPerSecond == .infinity)
        #expect(EventRules.resolve([program("P1", 1, nil)], now: 0).utilityLimits(siteRatingW: 200_000).gradientWPerSecond == nil)
    }

    @Test("opModFixedW, opModMaxLimW in hundredths of a percent of rating; rampTms in hundredths of a second")
    func percentsAndRamp() {
        var controls = ActiveControls()
        controls.base.fixedWHundredthsPercent = -2_500
        controls.base.maxLimWHundredthsPercent = 4_000
        controls.base.rampTimeHundredthsSecond = 6_000
        controls.base.connect = false
        controls.base.energize = true
        let limits = controls.utilityLimits(siteRatingW: 200_000)
        #expect(limits.fixedW == -50_000, "−25 % of 200 kW")
        #expect(limits.maxLimW == 80_000, "40 % of 200 kW")
        #expect(limits.rampSeconds == 60)
        #expect(!limits.connect && limits.energize)
        #expect(limits.request == -50_000, "fixedW is the request when nothing else asks")
        #expect(controls.utilityLimits(siteRatingW: .nan).fixedW == 0, "a rating that is not a number counts as zero")
    }

    @Test("nothing in force → no utility control at all")
    func nothing() {
        #expect(ActiveControls().utilityLimits(siteRatingW: 100_000) == UtilityLimits())
    }
}
