import ControlCore
import GridSupport
import TestSupport
import Testing

/// The reactive stage in the cycle (docs/design/0010-reactive-power.md, "The per-unit path"): each
/// unit's IEEE 1547-2018 law stepped by `SiteController` on its allocated P and its measured voltage,
/// against EPRI OpenDER 2.2.0 (hil/peers/opender_reactive_peer.py) fed the same voltage and P.
@Suite("ReactiveCycleTests: each unit's reactive mode in the cycle", .serialized)
struct ReactiveCycleTests {
    static let nominalV = 230.0
    static let va = 100_000.0
    static let catB = GridSupportProfile.ieee1547_2018_cat_b

    /// Constant power factor 0.90: injecting while discharging (`pf`), absorbing while charging
    /// (`pf_absorb`), 5 s.
    static let powerFactor = ReactivePowerMode.constantPowerFactor(ConstantPowerFactorSettings(
        discharging: PowerFactorSetting(0.90, .injecting), charging: PowerFactorSetting(0.90, .absorbing), responseTime: .seconds(5)))

    static func constantVar(_ percent: Double) -> ReactivePowerMode {
        .constantVar(ConstantVarSettings(percent: percent, responseTime: .seconds(5)))
    }

    /// A site of one 100 kW unit on a 230 V (line to neutral) connection running `support`; its
    /// `VAMax` is `apparentPowerVA`, else its rating.
    static func site(_ support: GridSupportSettings?, apparentPowerVA: Double? = nil) -> SiteController {
        var unit = UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000))
        unit.gridSupport = support
        unit.nominalVoltageV = nominalV
        unit.apparentPowerRating = apparentPowerVA
        return SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: [unit], startedAt: .zero)
    }

    /// The unit held at `powerW` by its own dispatch, its inverter measuring `volts` (nil: no voltage).
    static func inputs(at now: MonotonicInstant, powerW: Double, volts: Double?, bms: BMSSnapshot? = nil) -> UnitInputs {
        UnitInputs(
            bms: bms ?? Fixture.healthyBMS(at: now),
            inverter: Timestamped(InverterReading(activePower: Watts(powerW), ratedPower: Fixture.rating, voltage: volts), at: now),
            dispatch: PowerCommand(power: Watts(powerW), expiresAt: now + .seconds(5), pinned: true))
    }

    /// Runs `site` from `start` for `seconds` with the unit at `powerW` and `voltagePU`; the last decision.
    @discardableResult
    static func run(_ site: SiteController, from start: Double = 0, seconds: Double, period: Double = 0.1, powerW: Double,
                    voltagePU: Double?) -> UnitDecision {
        Fixture.run(site, from: start, seconds: seconds, period: period) { inputs(at: $0, powerW: powerW, volts: voltagePU.map { $0 * nominalV }) }
    }

    @Test("each mode's steady state in the cycle is OpenDER's within ±1 % of rating; the setpoint is never raised")
    func steadyStateAgainstOpenDER() throws {
        let modes: [(settings: GridSupportSettings, source: ReactiveSource)] = [
            (GridSupportSettings(reactive: Self.powerFactor), .constantPowerFactor),
            (GridSupportSettings(reactive: Self.constantVar(30)), .constantVar),
            (GridSupportSettings(reactive: .wattVar(Self.catB.wattVar)), .wattVar),
            (GridSupportSettings(reactive: .voltVar(Self.catB.voltVar)), .voltVar),
        ]
        let powers: [Double] = [-1.0, -0.5, 0, 0.5, 0.85, 1.0]
        let grid: [(v: Double, p: Double)] = [0.90, 0.95, 0.98, 1.00, 1.03, 1.06, 1.10].flatMap { v in powers.map { (v: v, p: $0) } }
        // OpenDER's snapshot (period 100000 s: its filters bypassed), one step per point.
        let traces = try OpenDER.run(modes.map { mode in
            OpenDER.Case(settings: OpenDER.parameters(mode.settings), period: 100_000, steps: grid.map { (1, $0.v, $0.p, [:]) })
        })
        for (mode, trace) in zip(modes, traces) {
            var worst = 0.0
            for (i, point) in grid.enumerated() {
                let asked = point.p * Self.va
                let d = Self.run(Self.site(mode.settings), seconds: 60, period: 0.5, powerW: asked, voltagePU: point.v)
                let q = try #require(d.reactive, "\(mode.source) \(point)")
                let deviation = max(abs(d.setpoint.value - trace.p[i]), abs(q - trace.q[i])) / Self.va * 100
                worst = max(worst, deviation)
                #expect(deviation <= 1, "\(mode.source) at \(point): bessd (\(d.setpoint.value), \(q)), OpenDER (\(trace.p[i]), \(trace.q[i]))")
                #expect(d.reactiveSource == mode.source)
                let p = d.setpoint.value
                let lowered = asked >= 0 ? p <= asked + 1e-6 : (p >= asked - 1e-6 && p <= 0)
                #expect(lowered, "\(mode.source) at \(point): the law only lowers |P|")
                #expect(p * p + q * q <= Self.va * Self.va * (1 + 1e-9), "inside VAMax")
            }
            print("ReactiveCycleTests: \(mode.source) against OpenDER, worst \(worst) % of rating over \(grid.count) points")
        }
        // The power factor's sign follows the direction: injecting while discharging, absorbing while charging.
        let discharging = Self.run(Self.site(GridSupportSettings(reactive: Self.powerFactor)), seconds: 60, powerW: 50_000, voltagePU: 1)
        let charging = Self.run(Self.site(GridSupportSettings(reactive: Self.powerFactor)), seconds: 60, powerW: -50_000, voltagePU: 1)
        let ratio = (1 - 0.81).squareRoot() / 0.9
        #expect(abs((discharging.reactive ?? .nan) - 50_000 * ratio) < 1 && abs((charging.reactive ?? .nan) + 50_000 * ratio) < 1)
    }

    @Test("at VAMax reactive priority cuts P and active priority cuts Q to Table 7's 44 %, as OpenDER; max_apparent_power sets VAMax")
    func priorityAtVAMax() throws {
        let priorities = [true, false]
        let settings = priorities.map { GridSupportSettings(reactive: Self.constantVar(60), reactivePriority: $0) }
        let traces = try OpenDER.run(settings.map {
            OpenDER.Case(settings: OpenDER.parameters($0), period: 100_000, steps: [(1, 1.0, 1.0, [:]), (1, 1.0, -1.0, [:])])
        })
        for (i, s) in settings.enumerated() {
            for (k, p) in [1.0, -1.0].enumerated() {
                let d = Self.run(Self.site(s), seconds: 60, period: 0.5, powerW: p * Self.va, voltagePU: 1)
                let q = try #require(d.reactive)
                #expect(abs(d.setpoint.value - traces[i].p[k]) <= 0.01 * Self.va && abs(q - traces[i].q[k]) <= 0.01 * Self.va,
                        "priority \(s.reactivePriority), P \(p): bessd (\(d.setpoint.value), \(q)), OpenDER (\(traces[i].p[k]), \(traces[i].q[k]))")
                if s.reactivePriority {
                    #expect(abs(q - 60_000) < 1 && abs(abs(d.setpoint.value) - 80_000) < 1, "Q kept, P cut")
                } else {
                    #expect(abs(q - 44_000) < 1 && abs(abs(d.setpoint.value) - (1 - 0.44 * 0.44).squareRoot() * Self.va) < 1, "P kept as far as Table 7 lets it")
                }
                #expect(p > 0 ? d.setpoint.value > 0 : d.setpoint.value < 0, "the direction kept")
            }
        }
        // 110 kVA: 40 % is 44 kvar, and 100 kW with 44 kvar fits inside it.
        let wide = Self.run(Self.site(GridSupportSettings(reactive: Self.constantVar(40)), apparentPowerVA: 110_000), seconds: 60, powerW: 100_000,
                            voltagePU: 1)
        #expect(abs((wide.reactive ?? .nan) - 44_000) < 1 && abs(wide.setpoint.value - 100_000) < 1e-6)
        let narrow = Self.run(Self.site(GridSupportSettings(reactive: Self.constantVar(40))), seconds: 60, powerW: 100_000, voltagePU: 1)
        #expect(abs((narrow.reactive ?? .nan) - 40_000) < 1 && abs(narrow.setpoint.value - (1 - 0.16).squareRoot() * Self.va) < 1)
    }

    @Test("a tripped or standby unit is asked 0 var and its law starts again from 0 var when it runs again")
    func stoppedUnit() throws {
        let site = Self.site(GridSupportSettings(reactive: Self.constantVar(30)))
        var t = 0.0
        func step(bms: (MonotonicInstant) -> BMSSnapshot = { Fixture.healthyBMS(at: $0) }) -> UnitDecision {
            t += 0.1
            let now = Fixture.instant(t)
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [Self.inputs(at: now, powerW: 50_000, volts: Self.nominalV, bms: bms(now))],
                      now: now, wallClock: 1_800_000_000 + t)
            return site.decision(unit: 0)
        }
        for _ in 0..<300 { _ = step() }
        #expect(abs((site.decision(unit: 0).reactive ?? .nan) - 30_000) < 1)
        // A BMS protection trips both directions.
        var d = step { Fixture.healthyBMS(at: $0, protections: [.cellOvervoltage]) }
        #expect(d.state == .tripped && d.reactive == 0 && d.reactiveSource == .stopped && d.setpoint.value == 0)
        for _ in 0..<20 { d = step { Fixture.healthyBMS(at: $0, protections: [.cellOvervoltage]) } }
        #expect(d.state == .tripped && d.reactive == 0)
        // Cleared: the trip holds 10 s, then the unit runs and Q rises again from 0 through its 5 s response.
        var steps = 0
        repeat {
            d = step()
            steps += 1
        } while !d.state.mayOperate && steps < 300
        try #require(d.state.mayOperate, "the unit runs again")
        let first = try #require(d.reactive)
        #expect(first > 0 && first < 0.05 * 30_000, "from 0 var, not from where it stood: \(first)")
        #expect(d.reactiveSource == .constantVar)
        // Standby: 0 var too.
        site.setOperatorMode(.standby)
        d = step()
        #expect(d.state == .standby && d.reactive == 0 && d.reactiveSource == .stopped)
    }

    @Test("a stale inverter reading, and the utility's opModConnect false, ask 0 var as well as 0 W")
    func staleOrCeasedUnit() throws {
        let site = Self.site(GridSupportSettings(reactive: Self.constantVar(30)))
        Self.run(site, seconds: 30, powerW: 50_000, voltagePU: 1)
        #expect(abs((site.decision(unit: 0).reactive ?? .nan) - 30_000) < 1)
        // The inverter's reading stops coming: once it is stale (3 s) the unit is at zero power and
        // zero var in every period (INVERTER_COMM_LOST), and Q never holds its last value.
        let lastReading = Fixture.instant(30)
        var t = 30.0
        var d = site.decision(unit: 0)
        while t < 40 {
            d = Fixture.run(site, from: t, seconds: 0.1, period: 0.1) { now in
                UnitInputs(bms: Fixture.healthyBMS(at: now),
                           inverter: Timestamped(InverterReading(activePower: .kilowatts(50), ratedPower: Fixture.rating,
                                                                 voltage: Self.nominalV), at: lastReading),
                           dispatch: PowerCommand(power: .kilowatts(50), expiresAt: now + .seconds(5), pinned: true))
            }
            t += 0.1
            if t > 33.15 { #expect(d.setpoint.value == 0 && d.reactive == 0 && d.reactiveSource == .stopped, "\(t) s: \(d)") }
        }
        // Fresh again: Q comes back through its response.
        d = Self.run(site, from: 40, seconds: 30, powerW: 50_000, voltagePU: 1)
        #expect(abs((d.reactive ?? .nan) - 30_000) < 1)
        // The utility ceases energising: 0 W and 0 var before the contactor opens.
        var limits = UtilityLimits()
        limits.connect = false
        site.utilityLimits = limits
        d = Self.run(site, from: 70, seconds: 0.2, powerW: 50_000, voltagePU: 1)
        #expect(site.siteDecision.utility.disconnected && d.setpoint.value == 0, "\(d)")
        #expect(d.reactive == 0 && d.reactiveSource == .stopped, "\(d)")
    }

    @Test("a voltage mode without a plausible voltage writes 0 var (stale_voltage); a mode that reads none goes on")
    func staleVoltage() throws {
        let site = Self.site(GridSupportSettings(reactive: .voltVar(Self.catB.voltVar)))
        var t = 60.0
        let held = Self.run(site, seconds: 60, powerW: 20_000, voltagePU: 0.92)
        #expect(abs((held.reactive ?? .nan) - 44_000) < 1 && held.reactiveSource == .voltVar)
        // No voltage, 0 V, a ×10 scale factor, line to line taken for line to neutral.
        for volts in [nil, 0, 10 * Self.nominalV, 3.0.squareRoot() * Self.nominalV] as [Double?] {
            let now = Fixture.instant(t + 0.1)
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [Self.inputs(at: now, powerW: 20_000, volts: volts)], now: now,
                      wallClock: 1_800_000_000 + t)
            t += 0.1
            let d = site.decision(unit: 0)
            #expect(d.reactive == 0 && d.reactiveSource == .staleVoltage && d.voltagePU == nil, "\(String(describing: volts)) V")
            #expect(d.setpoint.value == 20_000, "P goes on")
        }
        // Fresh again: Q rises from 0 through the response (5 s), not back at once.
        let again = Self.run(site, from: t, seconds: 0.1, powerW: 20_000, voltagePU: 0.92)
        #expect((again.reactive ?? .nan) > 0 && (again.reactive ?? .nan) < 0.1 * 44_000)
        // Constant var reads no voltage: it goes on without one.
        let fixed = Self.run(Self.site(GridSupportSettings(reactive: Self.constantVar(30))), seconds: 60, powerW: 20_000, voltagePU: nil)
        #expect(abs((fixed.reactive ?? .nan) - 30_000) < 1 && fixed.reactiveSource == .constantVar)
    }

    @Test("no mode: the inverter's Q is left alone and P is the pool's; volt-watt alone lowers P and leaves Q alone")
    func noMode() throws {
        let plain = Self.run(Self.site(nil), seconds: 10, powerW: 80_000, voltagePU: 1.08)
        #expect(plain.reactive == nil && plain.reactiveSource == .off && plain.setpoint.value == 80_000)
        #expect(abs((plain.voltagePU ?? .nan) - 1.08) < 1e-12)
        // Category B volt-watt: 1.06 p.u. 100 %, 1.10 p.u. 0 %: 50 % at 1.08 p.u.
        let limited = Self.run(Self.site(GridSupportSettings(reactive: nil, voltWatt: Self.catB.voltWatt)), seconds: 120, powerW: 80_000,
                               voltagePU: 1.08)
        #expect(limited.reactive == nil && limited.reactiveSource == .off)
        #expect(abs(limited.setpoint.value - 50_000) < 1, "\(limited.setpoint.value)")
    }

    @Test("an interlock that forbids charging outranks a negative volt-watt limit")
    func voltWattInsideAllowedPower() throws {
        let storage = VoltWattSettings(curve: try GridCurve([(1.06, 100), (1.10, -50)]), responseTime: .seconds(1))
        let site = Self.site(GridSupportSettings(reactive: nil, voltWatt: storage))
        let free = Self.run(site, seconds: 30, powerW: 20_000, voltagePU: 1.10)
        #expect(abs(free.setpoint.value + 50_000) < 1, "charges at high voltage: \(free.setpoint.value)")
        let barred = Fixture.run(site, from: 30, seconds: 30) {
            Self.inputs(at: $0, powerW: 20_000, volts: 1.10 * Self.nominalV, bms: Fixture.healthyBMS(at: $0, chargeA: 0))
        }
        #expect(barred.allowedCharge.value == 0 && barred.setpoint.value == 0, "\(barred.setpoint.value)")
    }

    @Test("volt-watt, and under reactive priority Q's room in VAMax, cap the unit's discharge from the next period; the pool gives the rest to the others")
    func capReshared() throws {
        var settings: [UnitSettings] = []
        for _ in 0..<2 {
            var unit = UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000))
            unit.gridSupport = GridSupportSettings(reactive: nil, voltWatt: Self.catB.voltWatt)
            unit.nominalVoltageV = Self.nominalV
            settings.append(unit)
        }
        let site = SiteController(
            control: ControlSettings(droop: Fixture.immediateDroop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: settings, startedAt: .zero)
        // Unit 0 at 1.08 p.u. (Category B volt-watt: 50 %), unit 1 at 1.00; both pooled, 120 kW together.
        var t = 0.0
        for _ in 0..<600 {
            t += 0.1
            let now = Fixture.instant(t)
            let inputs = [(80_000.0, 1.08), (40_000.0, 1.0)].map { power, pu in
                UnitInputs(bms: Fixture.healthyBMS(at: now),
                           inverter: Timestamped(InverterReading(activePower: Watts(power), ratedPower: Fixture.rating, voltage: pu * Self.nominalV), at: now),
                           dispatch: PowerCommand(power: Watts(power), expiresAt: now + .seconds(5)))
            }
            site.step(frequency: Timestamped(Hertz(50), at: now), inputs: inputs, now: now, wallClock: 1_800_000_000 + t)
            let a = site.decision(unit: 0).setpoint.value
            #expect(a <= 50_000 + 1, "never above volt-watt's limit at \(t) s: \(a)")
        }
        let a = site.decision(unit: 0), b = site.decision(unit: 1)
        #expect(a.dischargeLimitedBy == .voltWatt && abs(a.allowedDischarge.value - 50_000) < 1, "\(a.dischargeLimitedBy) \(a.allowedDischarge.value)")
        #expect(abs(a.setpoint.value + b.setpoint.value - 120_000) < 1, "the other unit takes the rest: \(a.setpoint.value) + \(b.setpoint.value)")
        #expect(abs(site.siteDecision.delivered - 120_000) < 1)
        #expect(b.dischargeLimitedBy != .voltWatt)
        // Constant var 60 % under reactive priority leaves √(1 − 0.6²) = 80 % for P.
        let held = Self.site(GridSupportSettings(reactive: Self.constantVar(60)))
        let d = Self.run(held, seconds: 60, powerW: 100_000, voltagePU: 1)
        #expect(d.dischargeLimitedBy == .voltWatt && abs(d.allowedDischarge.value - 80_000) < 1 && abs(d.setpoint.value - 80_000) < 1)
        // Active priority: P keeps its allowed power.
        let active = Self.run(Self.site(GridSupportSettings(reactive: Self.constantVar(60), reactivePriority: false)), seconds: 60, powerW: 100_000,
                              voltagePU: 1)
        #expect(active.dischargeLimitedBy == .rating && active.allowedDischarge.value == 100_000)
    }

    @Test("a reload carries Q on from where it stood through the new mode's response")
    func reloadContinues() throws {
        let old = Self.site(GridSupportSettings(reactive: Self.constantVar(30)))
        Self.run(old, seconds: 60, powerW: 0, voltagePU: 1)
        let new = Self.site(GridSupportSettings(reactive: Self.constantVar(-30)))
        new.adopt(from: old, mapping: [0])
        let next = Self.run(new, from: 60, seconds: 0.1, powerW: 0, voltagePU: 1)
        let q = try #require(next.reactive)
        #expect(q > 25_000 && q < 30_000, "one period of 5 s from +30 kvar toward −30 kvar: \(q)")
    }

    @Test("the cycle's reactive storage is plain values: with a mode configured a step copies and allocates nothing")
    func plainValues() {
        #expect(_isPOD(UnitDecision.self))
        #expect(_isPOD(GridSupportController.self))
        #expect(_isPOD(ReactiveSource.self))
    }
}
