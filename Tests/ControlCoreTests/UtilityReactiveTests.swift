import ControlCore
import GridSupport
import Testing

/// The utility's reactive controls (IEEE 2030.5 `opModFixedPF…`, `opModFixedVar`, `opModTargetVar`) on
/// the site's request (docs/design/0010-reactive-power.md, "Why Q follows P's order"): rank 2, over
/// SCADA; several at once, the least |Q|; ended, not held, when the value goes stale.
@Suite("UtilityReactiveTests: the utility's reactive controls in the authority order", .serialized)
struct UtilityReactiveTests {
    typealias Cycle = ReactiveRequestCycleTests

    static func utility(until seconds: Double, _ set: (inout UtilityLimits) -> Void) -> UtilityLimits {
        var limits = UtilityLimits()
        limits.validUntil = Fixture.instant(seconds)
        set(&limits)
        return limits
    }

    @Test("several reactive controls at once: the least |Q| at the site's P, the power factor on a tie; a direction not set is unity")
    func leastVar() throws {
        var limits = Self.utility(until: 100) {
            $0.powerFactorInjecting = 0.9
            $0.targetVar = 30_000
            $0.fixedVar = -20_000
        }
        // At 100 kW a PF of 0.9 is 48.4 kvar: the fixed var's 20 kvar is the least.
        var request = try #require(RequestArbiter.utilityReactive(limits, sitePower: 100_000, expiresAt: Fixture.instant(100)))
        #expect(request.ask == .vars(-20_000) && request.expiresAt == Fixture.instant(100))
        // At 10 kW the PF's 4.8 kvar is.
        request = try #require(RequestArbiter.utilityReactive(limits, sitePower: 10_000, expiresAt: nil))
        guard case .powerFactor(let pf) = request.ask else { Issue.record("\(request.ask)"); return }
        #expect(pf.discharging == PowerFactorSetting(0.9, .injecting) && pf.charging == .unity, "absorbing not set: unity")
        // Charging with only the injecting PF set: unity, 0 var, the least.
        request = try #require(RequestArbiter.utilityReactive(limits, sitePower: -50_000, expiresAt: nil))
        #expect(request.ask == .powerFactor(pf))
        limits.powerFactorInjecting = nil
        limits.powerFactorAbsorbing = -0.95
        #expect(RequestArbiter.utilityReactive(limits, sitePower: 100_000, expiresAt: nil)?.ask == .powerFactor(
            ConstantPowerFactorSettings(discharging: .unity, charging: PowerFactorSetting(0.95, .absorbing), responseTime: .zero)))
        limits.powerFactorAbsorbing = nil
        limits.fixedVar = nil
        #expect(RequestArbiter.utilityReactive(limits, sitePower: 0, expiresAt: nil)?.ask == .vars(30_000))
        limits.targetVar = .nan
        #expect(RequestArbiter.utilityReactive(limits, sitePower: 0, expiresAt: nil) == nil, "nothing set (NaN is nothing)")
    }

    @Test("the utility's Q outranks SCADA's; a Q-only utility control wins no P; SCADA's P still stands")
    func arbiterOrder() {
        var commands = SiteCommands()
        commands.reactive = RequestArbiterTests.enabled(-40_000)
        commands.setpoint = RequestArbiterTests.enabled(50_000)
        var arbiter = RequestArbiter()
        let limits = Self.utility(until: 30) { $0.targetVar = 25_000 }
        arbiter.offer(agc: AGCCommand(), utility: limits, scada: commands)
        arbiter.resolve(at: Fixture.instant(10))
        #expect(arbiter.reactiveWinner?.source == .utility && arbiter.reactiveWinner?.reactive?.ask == .vars(25_000))
        #expect(arbiter.winner?.source == .scada && arbiter.winner?.activePower == 50_000, "the utility asks no P")
        #expect(arbiter.inForce(.utility, at: Fixture.instant(10)) == nil)
        // Its value's validUntil (inclusive) passed: it ends and SCADA's var takes Q.
        arbiter.resolve(at: Fixture.instant(30))
        #expect(arbiter.reactiveWinner?.source == .utility)
        arbiter.resolve(at: Fixture.instant(30.001))
        #expect(arbiter.reactiveWinner?.source == .scada && arbiter.reactiveWinner?.reactive?.ask == .vars(-40_000))
    }

    @Test("in the cycle: the utility's target var over SCADA's; stale, it ends and the configured mode takes Q on without a step")
    func staleEnds() throws {
        let site = Cycle.site([Cycle.constantVar(30), nil])
        let units = [Cycle.Unit(powerW: 0), Cycle.Unit(powerW: 0)]
        Cycle.run(site, from: 0, seconds: 20, units)
        #expect(abs(Cycle.q(site, 0) - 30_000) < 10 && site.decision(unit: 0).reactiveSource == .constantVar)
        site.commands.reactive = Cycle.enabled(-100_000, until: 30)
        site.utilityLimits = Self.utility(until: 40) { $0.targetVar = 80_000 }
        Cycle.run(site, from: 20, seconds: 5, units)
        #expect(abs(Cycle.q(site, 0) + Cycle.q(site, 1) - 80_000) < 200, "\(Cycle.q(site, 0)) \(Cycle.q(site, 1))")
        #expect(site.decision(unit: 0).reactiveSource == .utility && site.reactiveRequestInForce?.source == .utility)
        // SCADA's setpoint ended at 30 s; the utility's value goes stale after 40 s (no republication).
        Cycle.run(site, from: 25, seconds: 14.9, units)
        let before = Cycle.q(site, 0)
        #expect(abs(before - 40_000) < 100, "\(before)")
        Cycle.run(site, from: 39.9, seconds: 0.2, units)
        #expect(site.reactiveRequestInForce == nil, "a stale utility value's reactive control ends")
        #expect(site.decision(unit: 0).reactiveSource == .constantVar)
        let after = Cycle.q(site, 0)
        #expect(after < before && before - after < 0.05 * 100_000, "toward 30 kvar, no step: \(before) → \(after)")
    }
}
