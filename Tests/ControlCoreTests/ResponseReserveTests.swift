import ControlCore
import Testing

/// The sustain time's energy reserve and the named profiles (issue 47 §2; docs/frequency-response.md).
@Suite("Response reserve and profiles")
struct ResponseReserveTests {
    /// Healthy inputs at `soc` with an aggregator dispatch of `kW` (+ = discharge).
    static func dispatching(_ kW: Double, soc: Double) -> (MonotonicInstant) -> UnitInputs {
        { now in
            UnitInputs(bms: Fixture.healthyBMS(at: now, soc: soc),
                       inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: Fixture.rating), at: now),
                       dispatch: PowerCommand(power: .kilowatts(kW), expiresAt: now + .seconds(5)))
        }
    }

    static func sustaining(_ seconds: Int64) -> SiteController {
        var droop = Fixture.immediateDroop
        droop.sustain = .seconds(seconds)
        return Fixture.site(droop: droop)
    }

    @Test("the reserve: full response power for the sustain time, each way, as an SOC band inside the SOC trips")
    func reserveSize() {
        let reserve = Self.sustaining(900).responseReserve
        // Under-frequency: GRID_UNDERFREQUENCY stops the unit at 47.0 Hz, where 5 % droop from the
        // 49.90 Hz edge asks 116 % → full 100 kW; 100 kW × 15 min = 25 kWh = 10 % of 250 kWh above
        // SOC_LOW's 5 %. Over: GRID_OVERFREQUENCY at 52.5 Hz asks (52.5 − 50.05) / 2.5 = 98 kW →
        // 24.5 kWh = 9.8 % below SOC_HIGH's 95 %.
        #expect(abs(reserve.dischargeWh - 25_000) < 1e-6 && abs(reserve.chargeWh - 24_500) < 1e-6)
        #expect(abs(reserve.socBand.low - 15) < 1e-9 && abs(reserve.socBand.high - 85.2) < 1e-9)
        var fixed = Fixture.immediateDroop
        fixed.sustain = .seconds(300)
        fixed.responsePowerPercent = 40
        let configured = ResponseReserve(droop: fixed, units: [UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000))])
        #expect(abs(configured.dischargeWh - 40_000.0 * 300 / 3600) < 1e-6 && configured.chargeWh == configured.dischargeWh)
        #expect(Self.sustaining(0).responseReserve.isEmpty)
    }

    @Test("dispatch stops discharging at the reserve; a frequency event still discharges below it")
    func dispatchStopsAtReserve() {
        let site = Self.sustaining(900)
        let above = Fixture.run(site, seconds: 1, inputs: Self.dispatching(50, soc: 16))
        #expect(abs(above.setpoint.value - 50_000) < 1)
        let at = Fixture.run(site, from: 1, seconds: 1, inputs: Self.dispatching(50, soc: 14.9))
        #expect(site.reserveReached.discharge && !site.reserveReached.charge)
        #expect(abs(at.setpoint.value) < 1, "the dispatch eats no reserve")
        // 49.40 Hz: (49.90 − 49.40) / 2.5 = 20 % → 20 kW of response, from the reserve, at 14.9 % and at 10 %.
        let event = Fixture.run(site, from: 2, seconds: 1, frequency: 49.4, inputs: Self.dispatching(50, soc: 14.9))
        #expect(abs(event.setpoint.value - 20_000) < 1)
        let deeper = Fixture.run(site, from: 3, seconds: 1, frequency: 49.4, inputs: Self.dispatching(50, soc: 10))
        #expect(abs(deeper.setpoint.value - 20_000) < 1)
        // Without a sustain time the same dispatch goes on into the band (the behaviour before).
        let plain = Self.sustaining(0)
        #expect(abs(Fixture.run(plain, seconds: 1, inputs: Self.dispatching(50, soc: 10)).setpoint.value - 50_000) < 1)
    }

    @Test("an event that began above the reserve: the latched dispatch stops at it, the response goes on")
    func latchedBaseStopsAtReserve() {
        let site = Self.sustaining(900)
        Fixture.run(site, seconds: 1, inputs: Self.dispatching(50, soc: 30))
        let during = Fixture.run(site, from: 1, seconds: 1, frequency: 49.4, inputs: Self.dispatching(50, soc: 30))
        #expect(abs(during.setpoint.value - 70_000) < 1, "50 kW latched + 20 kW response")
        let reached = Fixture.run(site, from: 2, seconds: 1, frequency: 49.4, inputs: Self.dispatching(50, soc: 14))
        #expect(abs(reached.setpoint.value - 20_000) < 1)
        // A full-power event: the response's room is the whole rating, not what the latched dispatch left.
        let full = Fixture.run(site, from: 3, seconds: 1, frequency: 47.4, inputs: Self.dispatching(50, soc: 14))
        #expect(abs(full.setpoint.value - 100_000) < 1)
    }

    @Test("charging dispatch stops at the reserve's upper edge; over-frequency still charges above it")
    func chargeStopsAtReserve() {
        let site = Self.sustaining(900)
        #expect(abs(Fixture.run(site, seconds: 1, inputs: Self.dispatching(-50, soc: 85)).setpoint.value + 50_000) < 1)
        #expect(abs(Fixture.run(site, from: 1, seconds: 1, inputs: Self.dispatching(-50, soc: 86)).setpoint.value) < 1)
        #expect(site.reserveReached.charge)
        // 50.55 Hz: (50.55 − 50.05) / 2.5 = 20 % → 20 kW of charge.
        let event = Fixture.run(site, from: 2, seconds: 1, frequency: 50.55, inputs: Self.dispatching(-50, soc: 90))
        #expect(abs(event.setpoint.value + 20_000) < 1)
        // Discharge dispatch is not held back by the charge reserve.
        #expect(abs(Fixture.run(site, from: 3, seconds: 1, inputs: Self.dispatching(30, soc: 90)).setpoint.value - 30_000) < 1)
    }

    @Test("profiles: the seed's settings and IEEE 1547-2018's default droop, as they are")
    func profiles() {
        #expect(DroopProfile.seed.settings(nominal: Hertz(50)) == DroopSettings.seedDefault)
        let ieee = DroopProfile.ieee1547_2018.settings(nominal: Hertz(60))
        #expect(ieee.deadbandLow.millihertz == 59_964 && ieee.deadbandHigh.millihertz == 60_036)
        #expect(ieee.droopUnderPercent == 5 && ieee.droopOverPercent == 5 && ieee.reference == .edge)
        #expect(ieee.responseTime == .seconds(5) && ieee.sustain == .zero)
        // REFERENCE.md §1.6 C, characteristic 1: 59.90 Hz → p_pre + (59.964 − 59.90) / (60 · 0.05) = +0.02133 pu.
        #expect(abs(DroopCurve(ieee).perUnitChange(at: Hertz(59.9)) - 0.064 / 3) < 1e-9)
    }

    @Test("the site application stops at the reserve: self-consumption neither discharges nor charges into it")
    func applicationStopsAtReserve() {
        func site(sustain: Int64) -> SiteController {
            var droop = Fixture.immediateDroop
            droop.sustain = .seconds(sustain)
            return SiteController(
                control: ControlSettings(droop: droop, limitRampPercentPerSecond: 10, scheduleRampPercentPerSecond: 10),
                units: (0..<3).map { _ in UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000)) },
                startedAt: .zero, site: SiteSettings(hasMeter: true, application: .selfConsumption(targetGrid: .zero)))
        }
        // A 60 kW load at 14 % SOC (the band starts at 15 %): nothing from the batteries.
        var low = MeteredSite(units: 3, soc: 14) { _ in 60_000 }
        low.run(site(sustain: 900), from: 0, seconds: 20)
        #expect(abs(low.battery.reduce(0, +)) < 1_000)
        // 90 kW of PV surplus at 90 % (the band ends at 85.2 %): nothing into them.
        var full = MeteredSite(units: 3, soc: 90) { _ in -90_000 }
        full.run(site(sustain: 900), from: 0, seconds: 20)
        #expect(abs(full.battery.reduce(0, +)) < 1_000)
        // Without a sustain time the same application covers the load (the behaviour before).
        var plain = MeteredSite(units: 3, soc: 14) { _ in 60_000 }
        plain.run(site(sustain: 0), from: 0, seconds: 20)
        #expect(abs(plain.battery.reduce(0, +) - 60_000) <= 3_000)
    }

    @Test("each unit against its own reserve: dispatch stops on the drained unit only; an event still uses both")
    func perUnitReserve() {
        var droop = Fixture.immediateDroop
        droop.sustain = .seconds(900)
        let site = SiteController(
            control: ControlSettings(droop: droop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: (0..<2).map { _ in UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000)) }, startedAt: .zero)
        // Unit 0 at 14.9 % (its reserve starts at 15 %), unit 1 at 40 %: the site's sum is far above
        // the summed reserve, but unit 0's own share of the response is at stake.
        let socs = [14.9, 40.0]
        func inputs(_ unit: Int, _ now: MonotonicInstant) -> UnitInputs {
            Self.dispatching(50, soc: socs[unit])(now)
        }
        SiteAllocationTests.run(site, from: 0, seconds: 1, inputs)
        #expect(site.unitReserveReached[0].discharge && !site.unitReserveReached[1].discharge)
        #expect(abs(site.decision(unit: 0).setpoint.value) < 1, "no dispatch from the unit at its reserve")
        #expect(abs(site.decision(unit: 1).setpoint.value - 50_000) < 1, "the other unit's dispatch goes on")
        // 49.40 Hz: 20 kW of response per unit; unit 0 still gives its share.
        SiteAllocationTests.run(site, from: 1, seconds: 1, frequency: 49.4, inputs)
        let first = site.decision(unit: 0).setpoint.value, second = site.decision(unit: 1).setpoint.value
        #expect(first > 1_000, "unit 0 answers the event: \(first) W")
        #expect(abs(first + second - 90_000) < 1, "50 kW dispatch + 2 × 20 kW response: \(first) + \(second) W")
        // The site's figures are the sums of the units'.
        let reserve = site.responseReserve
        #expect(abs(reserve.dischargeWh - reserve.units.reduce(0) { $0 + $1.dischargeWh }) < 1e-9 && abs(reserve.dischargeWh - 50_000) < 1e-6)
    }

    @Test("SOC jitter across the reserve does not toggle dispatch; it resumes 0.5 % SOC above")
    func reserveHysteresis() {
        let site = Self.sustaining(900)
        Fixture.run(site, seconds: 1, inputs: Self.dispatching(50, soc: 16))
        var t = 1.0, setpoints: [Double] = []
        for cycle in 0..<20 {
            setpoints.append(Fixture.run(site, from: t, seconds: 0.1, inputs: Self.dispatching(50, soc: cycle % 2 == 0 ? 14.95 : 15.05)).setpoint.value)
            t += 0.1
        }
        #expect(setpoints.allSatisfy { abs($0) < 1 }, "held at zero through the jitter: \(setpoints)")
        #expect(abs(Fixture.run(site, from: t, seconds: 0.1, inputs: Self.dispatching(50, soc: 15.4)).setpoint.value) < 1)
        #expect(ResponseReserve.resumeMarginPercent == 0.5)
        #expect(abs(Fixture.run(site, from: t + 0.1, seconds: 0.1, inputs: Self.dispatching(50, soc: 15.6)).setpoint.value - 50_000) < 1)
        #expect(!site.reserveReached.discharge)
    }
}
