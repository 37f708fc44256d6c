import ControlCore
import GridSupport
import Testing

/// The reactive axis of the site's request in the cycle (docs/design/0010-reactive-power.md, the
/// authority table and "The site path", Allocation): SCADA's var and power-factor setpoints, the
/// aggregator's var for one unit, shared by free apparent power, and the configured mode's return.
@Suite("ReactiveRequestCycleTests: who sets Q, and how a site's var is shared", .serialized)
struct ReactiveRequestCycleTests {
    static let nominalV = 230.0

    static func constantVar(_ percent: Double) -> GridSupportSettings {
        GridSupportSettings(reactive: .constantVar(ConstantVarSettings(percent: percent, responseTime: .seconds(5))))
    }

    /// A site of 100 kW units (`VAMax` 100 kVA), one per entry, each running its configured law (nil: none).
    static func site(_ supports: [GridSupportSettings?]) -> SiteController {
        SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: supports.map { support in
                var unit = UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000))
                unit.gridSupport = support
                unit.nominalVoltageV = nominalV
                return unit
            },
            startedAt: .zero)
    }

    /// What one unit is given in a period.
    struct Unit {
        /// Held at this power by its own dispatch (nil: it shares the site's request).
        var powerW: Double?
        /// The aggregator's var on that dispatch.
        var dispatchVar: Double? = nil
        var protections: BMSConditions = []
        /// 702's `VarMaxInj`, var.
        var varMaxInjecting: Double? = nil
        /// An operator override's power, W.
        var overrideW: Double? = nil
        /// The inverter's voltage, p.u. of nominal.
        var voltagePU = 1.0
        /// When the inverter's reading was taken, s (nil: this period).
        var readAt: Double? = nil
    }

    static func inputs(_ unit: Unit, at now: MonotonicInstant) -> UnitInputs {
        var reading = InverterReading(activePower: Watts(unit.powerW ?? 0), ratedPower: Fixture.rating, voltage: nominalV * unit.voltagePU)
        reading.varMaxInjecting = unit.varMaxInjecting
        let dispatch = unit.powerW.map { PowerCommand(power: Watts($0), reactive: unit.dispatchVar, expiresAt: now + .seconds(5), pinned: true) }
        return UnitInputs(bms: Fixture.healthyBMS(at: now, protections: unit.protections), inverter: Timestamped(reading, at: unit.readAt.map { Fixture.instant($0) } ?? now), dispatch: dispatch,
                          override: unit.overrideW.map { PowerCommand(power: Watts($0), expiresAt: now + .seconds(5)) })
    }

    /// Runs `site` from `start` for `seconds` in 0.1 s periods with `units`; returns the end time.
    @discardableResult
    static func run(_ site: SiteController, from start: Double, seconds: Double, _ units: [Unit]) -> Double {
        var t = start
        for _ in 0..<Int((seconds / 0.1).rounded()) {
            t += 0.1
            let now = Fixture.instant(t)
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: units.map { inputs($0, at: now) }, now: now,
                      wallClock: 1_800_000_000 + t)
        }
        return t
    }

    static func q(_ site: SiteController, _ unit: Int) -> Double { site.decision(unit: unit).reactive ?? .nan }

    static func enabled(_ value: Double, until seconds: Double? = nil) -> ExpiringCommand {
        var command = ExpiringCommand(value: value, revertValue: 0)
        command.enabled = true
        command.expiresAt = seconds.map { Fixture.instant($0) }
        return command
    }

    @Test("a SCADA var setpoint is shared by free apparent power: a unit at more P gets less; P is untouched; it wins no P")
    func sharedByFreeVA() {
        let site = Self.site([nil, nil])
        let units = [Unit(powerW: 80_000), Unit(powerW: 0)]
        Self.run(site, from: 0, seconds: 5, units)
        #expect(site.decision(unit: 0).reactive == nil && site.decision(unit: 0).reactiveSource == .off, "no mode, nobody asks")
        site.commands.reactive = Self.enabled(80_000)
        Self.run(site, from: 5, seconds: 1, units)
        // Free: min(100 kvar, √(100² − 80²) = 60 kvar) and 100 kvar: 80 kvar is 30 + 50.
        #expect(abs(Self.q(site, 0) - 30_000) < 100 && abs(Self.q(site, 1) - 50_000) < 100, "\(Self.q(site, 0)) \(Self.q(site, 1))")
        #expect(abs(Self.q(site, 0) + Self.q(site, 1) - 80_000) < 200)
        #expect(site.decision(unit: 0).reactiveSource == .scada && site.decision(unit: 1).reactiveSource == .scada)
        #expect(site.decision(unit: 0).setpoint.value == 80_000 && site.decision(unit: 1).setpoint.value == 0, "P as held")
        #expect(site.requestInForce == nil && site.reactiveRequestInForce?.source == .scada, "a Q-only request wins no P")
        // Beyond Σ free (160 kvar), under reactive priority, the unit at 80 kW takes the rest of its
        // capability and gives up P: 170 kvar is 70 + 100, and unit 0's P falls to √(100² − 70²).
        site.commands.reactive = Self.enabled(170_000)
        Self.run(site, from: 6, seconds: 1, units)
        #expect(abs(Self.q(site, 0) - 70_000) < 100 && abs(Self.q(site, 1) - 100_000) < 100, "\(Self.q(site, 0)) \(Self.q(site, 1))")
        let p = site.decision(unit: 0).setpoint.value
        #expect(abs(p - (100_000.0 * 100_000 - 70_000.0 * 70_000).squareRoot()) < 200, "\(p)")
        #expect(abs(site.reactiveShortfall) < 1)
    }

    @Test("a SCADA power factor holds each unit's: PFWInj while it discharges, PFWAbs while it charges, over a configured mode")
    func powerFactor() {
        let site = Self.site([Self.constantVar(30), nil])
        let units = [Unit(powerW: 50_000), Unit(powerW: -50_000)]
        Self.run(site, from: 0, seconds: 2, units)
        site.commands.powerFactorInjecting = Self.enabled(0.9)
        site.commands.powerFactorAbsorbing = Self.enabled(-0.95)
        Self.run(site, from: 2, seconds: 0.5, units)
        let injecting = 50_000 * (1 - 0.81).squareRoot() / 0.9, absorbing = -50_000 * (1 - 0.9025).squareRoot() / 0.95
        #expect(abs(Self.q(site, 0) - injecting) < 1 && abs(Self.q(site, 1) - absorbing) < 1, "\(Self.q(site, 0)) \(Self.q(site, 1))")
        #expect(site.decision(unit: 0).reactiveSource == .scada && site.decision(unit: 1).reactiveSource == .scada)
    }

    @Test("at its expiry the configured mode takes Q on from where it stands, without a step; a unit with no mode returns to being left alone")
    func expiryReturns() throws {
        let site = Self.site([Self.constantVar(30), nil])
        let units = [Unit(powerW: 0), Unit(powerW: 0)]
        Self.run(site, from: 0, seconds: 20, units)
        #expect(abs(Self.q(site, 0) - 30_000) < 10 && site.decision(unit: 0).reactiveSource == .constantVar)
        site.commands.reactive = Self.enabled(-100_000, until: 40)
        Self.run(site, from: 20, seconds: 19.9, units)
        let before = (Self.q(site, 0), Self.q(site, 1))
        #expect(abs(before.0 + 50_000) < 100 && abs(before.1 + 50_000) < 100, "\(before)")
        Self.run(site, from: 39.9, seconds: 0.1, units)
        #expect(site.reactiveRequestInForce == nil, "expired at 40 s")
        let after = (Self.q(site, 0), try #require(site.decision(unit: 1).reactive, "released through 0 var, not dropped"))
        // One 0.1 s period of the 5 s response toward +30 kvar (10 s toward 0 for the unit without a mode).
        #expect(after.0 > before.0 && after.0 - before.0 < 0.05 * 80_000, "\(before.0) → \(after.0)")
        #expect(after.1 > before.1 && after.1 - before.1 < 0.05 * 50_000, "\(before.1) → \(after.1)")
        #expect(site.decision(unit: 0).reactiveSource == .constantVar && site.decision(unit: 1).reactiveSource == .off)
        Self.run(site, from: 40, seconds: 60, units)
        #expect(abs(Self.q(site, 0) - 30_000) < 1)
        #expect(site.decision(unit: 1).reactive == nil && site.decision(unit: 1).reactiveSource == .off, "left alone again")
    }

    @Test("a reload carries a request in force on from where Q stands, and the new mode takes over from there when it ends")
    func reloadDuringRequest() {
        let units = [Unit(powerW: 0)]
        let old = Self.site([Self.constantVar(30)])
        old.commands.reactive = Self.enabled(-50_000)
        Self.run(old, from: 0, seconds: 5, units)
        #expect(abs(Self.q(old, 0) + 50_000) < 100)
        let new = Self.site([Self.constantVar(-30)])
        new.adopt(from: old, mapping: [0])
        Self.run(new, from: 5, seconds: 0.1, units)
        #expect(abs(Self.q(new, 0) + 50_000) < 100 && new.decision(unit: 0).reactiveSource == .scada, "\(Self.q(new, 0))")
        new.commands.reactive = ExpiringCommand(value: 0, revertValue: 0)
        Self.run(new, from: 5.1, seconds: 0.1, units)
        let q = Self.q(new, 0)
        #expect(q > -50_000 && q < -48_000 && new.decision(unit: 0).reactiveSource == .constantVar, "one period from −50 toward −30 kvar: \(q)")
    }

    @Test("a reload under a steady var request: the unit takes the new settings (volt-watt) at once, the request's Q kept")
    func reloadTakesNewSettings() throws {
        let old = Self.site([Self.constantVar(10)])
        old.commands.reactive = Self.enabled(30_000)
        let units = [Unit(powerW: 80_000, voltagePU: 1.08)]
        Self.run(old, from: 0, seconds: 2, units)
        #expect(abs(Self.q(old, 0) - 30_000) < 100 && abs(old.decision(unit: 0).setpoint.value - 80_000) < 1)
        var settings = Self.constantVar(10)
        // At 1.08 p.u. this curve allows 25 % of P.
        settings.voltWatt = VoltWattSettings(curve: try GridCurve([(1.06, 100), (1.10, -50)]), responseTime: .seconds(1))
        let new = Self.site([settings])
        new.adopt(from: old, mapping: [0])
        new.commands.reactive = old.commands.reactive
        Self.run(new, from: 2, seconds: 10, units)
        let d = new.decision(unit: 0)
        // One unit: its share stays 30 kvar, so only the reload can bring the curve in.
        #expect(abs(Self.q(new, 0) - 30_000) < 100 && d.reactiveSource == .scada, "\(Self.q(new, 0))")
        #expect(d.dischargeLimitedBy == .voltWatt && abs(d.setpoint.value - 25_000) < 100, "\(d.dischargeLimitedBy) \(d.setpoint.value)")
    }

    @Test("AGC in service moves P while SCADA's var setpoint moves Q: both act")
    func agcAndScadaVar() {
        let site = Self.site([nil, nil])
        var agc = AGCCommand(limits: AGCLimits(upper: 200_000, lower: -200_000, expiry: .seconds(12)))
        agc.signal.enabled = true
        agc.signal.value = 90_000
        agc.signal.expiresAt = Fixture.instant(100)
        site.agc = agc
        site.commands.reactive = Self.enabled(-40_000)
        let units = [Unit(powerW: nil), Unit(powerW: nil)]
        Self.run(site, from: 0, seconds: 15, units)
        #expect(site.requestInForce?.source == .agc && site.reactiveRequestInForce?.source == .scada)
        let p = site.decision(unit: 0).setpoint.value + site.decision(unit: 1).setpoint.value
        #expect(abs(p - 90_000) < 1, "\(p)")
        #expect(abs(Self.q(site, 0) + 20_000) < 100 && abs(Self.q(site, 1) + 20_000) < 100, "\(Self.q(site, 0)) \(Self.q(site, 1))")
        #expect(site.decision(unit: 0).reactiveSource == .scada)
    }

    @Test("the aggregator's var holds its unit's Q where no site request holds; SCADA's outranks it")
    func aggregatorUnitVar() {
        let site = Self.site([nil, Self.constantVar(30)])
        let units = [Unit(powerW: 20_000, dispatchVar: -25_000), Unit(powerW: 0)]
        Self.run(site, from: 0, seconds: 1, units)
        #expect(Self.q(site, 0) == -25_000 && site.decision(unit: 0).reactiveSource == .aggregator)
        #expect(site.decision(unit: 1).reactiveSource == .constantVar, "the other unit runs its mode")
        site.commands.reactive = Self.enabled(60_000)
        Self.run(site, from: 1, seconds: 1, units)
        #expect(site.decision(unit: 0).reactiveSource == .scada && Self.q(site, 0) > 0)
        // Free: √(100² − 20²) = 98.0 and 100 kvar.
        let free0 = (100_000.0 * 100_000 - 20_000.0 * 20_000).squareRoot()
        #expect(abs(Self.q(site, 0) - 60_000 * free0 / (free0 + 100_000)) < 100, "\(Self.q(site, 0))")
        site.commands.reactive = ExpiringCommand(value: 0, revertValue: 0)
        Self.run(site, from: 2, seconds: 0.1, units)
        #expect(Self.q(site, 0) == -25_000 && site.decision(unit: 0).reactiveSource == .aggregator)
    }

    @Test("an operator override holds the unit's P, not its Q: the unit still carries its part of the site's vars")
    func overrideCarriesQ() {
        let site = Self.site([nil, nil])
        site.commands.reactive = Self.enabled(-90_000)
        Self.run(site, from: 0, seconds: 2, [Unit(powerW: nil, overrideW: 60_000), Unit(powerW: 0)])
        let held = site.decision(unit: 0)
        #expect(!held.pooled && abs(held.setpoint.value - 60_000) < 1, "\(held.setpoint.value)")
        // Free: √(100² − 60²) = 80 and 100 kvar: −90 kvar is −40 and −50.
        #expect(abs(Self.q(site, 0) + 40_000) < 100 && abs(Self.q(site, 1) + 50_000) < 100, "\(Self.q(site, 0)) \(Self.q(site, 1))")
        #expect(held.reactiveSource == .scada)
    }

    /// Two idle units sharing SCADA's var `q` half each for 2 s, then `stopping` (unit 0 changed, from
    /// 2 s for `seconds`): unit 0 must be at 0 var (`stopped`) and unit 1 carry all of `q`.
    static func shareMoves(_ q: Double, seconds: Double = 0.1, _ stopping: Unit, before: (SiteController) -> Void = { _ in }) -> UnitDecision {
        let site = Self.site([nil, nil])
        site.commands.reactive = Self.enabled(q)
        Self.run(site, from: 0, seconds: 2, [Unit(powerW: 0), Unit(powerW: 0)])
        #expect(abs(Self.q(site, 0) - q / 2) < 100 && abs(Self.q(site, 1) - q / 2) < 100)
        before(site)
        Self.run(site, from: 2, seconds: seconds, [stopping, Unit(powerW: 0)])
        let d = site.decision(unit: 0)
        #expect(d.setpoint.value == 0 && d.reactive == 0 && d.reactiveSource == .stopped, "\(d)")
        #expect(abs(Self.q(site, 1) - q) < 100 && site.decision(unit: 1).reactiveSource == .scada, "\(Self.q(site, 1))")
        return d
    }

    @Test("a unit that trips gives its share to the others in the same period")
    func trippedShareMoves() {
        #expect(Self.shareMoves(100_000, Unit(powerW: 0, protections: [.cellOvervoltage])).state == .tripped)
    }

    @Test("a unit an operator puts in standby gets 0 var; the other units take its share")
    func standbyShareMoves() {
        let d = Self.shareMoves(-100_000, Unit(powerW: 0)) { $0.setOperatorMode(.standby, unit: 0) }
        #expect(d.state == .standby)
    }

    @Test("a unit whose inverter data go stale gets 0 var; the other units take its share")
    func staleShareMoves() {
        // Unit 0's last reading is from 2 s; past the 3 s staleness it is at zero power and zero var.
        _ = Self.shareMoves(100_000, seconds: 3.5, Unit(powerW: 0, readAt: 2))
    }

    @Test("a var beyond capability is clamped: VarMaxInj and VAMax bound each share, the rest is the shortfall")
    func beyondCapability() {
        let site = Self.site([nil, nil])
        site.commands.reactive = Self.enabled(300_000)
        let units = [Unit(powerW: 0), Unit(powerW: 0, varMaxInjecting: 50_000)]
        Self.run(site, from: 0, seconds: 1, units)
        let capability = (site.reactiveCapability(unit: 0), site.reactiveCapability(unit: 1))
        #expect(capability.0.injecting == 100_000 && capability.0.absorbing == 100_000)
        #expect(capability.1.injecting == 50_000 && capability.1.absorbing == 100_000, "702's VarMaxInj, VAMax the other way")
        #expect(abs(Self.q(site, 0) - 100_000) < 100 && abs(Self.q(site, 1) - 50_000) < 100, "\(Self.q(site, 0)) \(Self.q(site, 1))")
        #expect(abs(site.reactiveShortfall - 150_000) < 100, "\(site.reactiveShortfall)")
        // The aggregator's var for one unit: clamped to its capability.
        site.commands.reactive = ExpiringCommand(value: 0, revertValue: 0)
        Self.run(site, from: 1, seconds: 0.5, [Unit(powerW: 0, dispatchVar: 150_000), Unit(powerW: 0, dispatchVar: -150_000, varMaxInjecting: 50_000)])
        #expect(Self.q(site, 0) == 100_000 && Self.q(site, 1) == -100_000, "\(Self.q(site, 0)) \(Self.q(site, 1))")
    }

    @Test("the reactive axis's request, settings, law and dispatch types are plain values (POD): no reference counting")
    func plainValues() {
        #expect(_isPOD(ReactiveAsk.self) && _isPOD(ReactiveRequest.self) && _isPOD(SiteRequest.self))
        #expect(_isPOD(GridSupportSettings.self) && _isPOD(GridSupportController.self) && _isPOD(PowerCommand.self))
    }
}
