import ControlCore
import GridSupport
import Testing

/// The site's requests (AGC, the utility's 2030.5 request, SCADA's WSet) resolved by one arbiter
/// before allocation, in the order of authority `RequestSource` writes down.
@Suite("Request arbiter")
struct RequestArbiterTests {
    static func request(_ source: RequestSource, _ watts: Double, until seconds: Double? = nil) -> SiteRequest {
        SiteRequest(source: source, activePower: watts, expiresAt: seconds.map { Fixture.instant($0) })
    }

    @Test("the arbiter picks the request of the highest authority present, whatever the order offered")
    func highestAuthorityWins() {
        var arbiter = RequestArbiter()
        let now = Fixture.instant(10)
        arbiter.offer(Self.request(.scada, 30_000))
        arbiter.offer(Self.request(.agc, 10_000))
        arbiter.offer(Self.request(.utility, 20_000))
        #expect(arbiter.resolve(at: now)?.source == .agc)
        #expect(arbiter.winner?.activePower == 10_000)
        arbiter.clear()
        arbiter.offer(Self.request(.scada, 30_000))
        arbiter.offer(Self.request(.utility, 20_000))
        #expect(arbiter.resolve(at: now)?.source == .utility)
        arbiter.clear()
        arbiter.offer(Self.request(.scada, 30_000))
        #expect(arbiter.resolve(at: now)?.activePower == 30_000)
        arbiter.clear()
        #expect(arbiter.resolve(at: now) == nil)
        // The table: operator override, AGC, utility, SCADA, aggregator, each outranking the next.
        #expect(RequestSource.allCases.sorted() == [.operatorOverride, .agc, .utility, .scada, .aggregator])
    }

    @Test("an expired request is ignored on the cycle: at its expiry the next authority in force wins")
    func expiredIgnored() {
        var arbiter = RequestArbiter()
        arbiter.offer(Self.request(.agc, 10_000, until: 5))
        arbiter.offer(Self.request(.scada, 30_000, until: 9))
        #expect(arbiter.resolve(at: Fixture.instant(4.9))?.source == .agc)
        #expect(arbiter.resolve(at: Fixture.instant(5))?.source == .scada, "AGC expired at 5 s")
        #expect(arbiter.inForce(.agc, at: Fixture.instant(5)) == nil)
        #expect(arbiter.resolve(at: Fixture.instant(9)) == nil, "both expired")
    }

    @Test("on the site AGC outranks the utility, which outranks SCADA's WSet; the winner shared by rating")
    func siteFollowsTheWinner() {
        let site = SiteCommandsTests.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 12)
        var setpoint = ExpiringCommand(value: 150_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(100)
        site.commands.setpoint = setpoint
        var utility = UtilityLimits()
        utility.targetW = -60_000
        utility.validUntil = Fixture.instant(100)
        site.utilityLimits = utility
        meter.run(site, from: 12, seconds: 0.2)
        #expect(site.requestInForce?.source == .utility)
        #expect(abs(SiteCommandsTests.sum(site) + 60_000) < 1, "\(SiteCommandsTests.sum(site)) W")
        #expect(site.siteDecision.scadaSetpoint == 150_000, "SCADA's setpoint stands, outranked")
        var agc = AGCCommand(limits: AGCLimits(upper: 200_000, lower: -200_000, expiry: .seconds(12)))
        agc.signal.enabled = true
        agc.signal.value = 90_000
        agc.signal.expiresAt = Fixture.instant(100)
        site.agc = agc
        meter.run(site, from: 12.2, seconds: 0.2)
        #expect(site.requestInForce?.source == .agc)
        #expect(abs(site.decision(unit: 1).setpoint.value - 30_000) < 1)
        #expect(abs(SiteCommandsTests.sum(site) - 90_000) < 1)
    }

    /// Nobody settled the record.
    @Test("a SCADA setpoint past expiry stops moving power at the cycle, judged there alone")
    func scadaExpiryOnTheCycle() {
        let site = SiteCommandsTests.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 12)
        var setpoint = ExpiringCommand(value: 120_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(12.95)
        site.commands.setpoint = setpoint
        meter.run(site, from: 12, seconds: 0.9)
        #expect(site.requestInForce?.source == .scada)
        #expect(abs(SiteCommandsTests.sum(site) - 120_000) < 1)
        meter.run(site, from: 12.9, seconds: 0.1)
        #expect(site.requestInForce == nil, "expired at 12.95 s")
        #expect(site.siteDecision.scadaSetpoint == nil && !site.commands.setpoint.enabled)
        #expect(abs(SiteCommandsTests.sum(site)) < 1, "\(SiteCommandsTests.sum(site)) W after expiry")
    }

    /// SCADA's commands as written: each enabled, expiring at `until` seconds (nil: never).
    static func enabled(_ value: Double, until seconds: Double? = nil, revert: Double = 0) -> ExpiringCommand {
        var command = ExpiringCommand(value: value, revertValue: revert)
        command.enabled = true
        command.expiresAt = seconds.map { Fixture.instant($0) }
        return command
    }

    @Test("SCADA's request: WSet alone asks P only; VarSet alone asks Q only and wins no P; each keeps its own expiry")
    func scadaAxes() throws {
        var commands = SiteCommands()
        #expect(RequestArbiter.scadaRequest(commands, sitePower: 0) == nil, "nothing enabled: no request")
        commands.setpoint = Self.enabled(50_000, until: 30)
        let active = try #require(RequestArbiter.scadaRequest(commands, sitePower: 0))
        #expect(active.activePower == 50_000 && active.reactive == nil && active.expiresAt == Fixture.instant(30))
        commands.setpoint = ExpiringCommand(value: 0, revertValue: 0)
        commands.reactive = Self.enabled(-40_000, until: 20)
        let reactive = try #require(RequestArbiter.scadaRequest(commands, sitePower: 0))
        #expect(reactive.activePower == nil && reactive.reactive == ReactiveRequest(.vars(-40_000), expiresAt: Fixture.instant(20)))
        var arbiter = RequestArbiter()
        arbiter.offer(agc: AGCCommand(), utility: nil, scada: commands)
        #expect(arbiter.resolve(at: Fixture.instant(10)) == nil, "a Q-only request wins no P")
        #expect(arbiter.inForce(.scada, at: Fixture.instant(10)) == nil)
        #expect(arbiter.reactiveWinner?.source == .scada)
        // Both axes, apart: P holds to 30 s, Q to 20 s.
        commands.setpoint = Self.enabled(50_000, until: 30)
        arbiter.offer(agc: AGCCommand(), utility: nil, scada: commands)
        arbiter.resolve(at: Fixture.instant(20))
        #expect(arbiter.winner?.source == .scada && arbiter.reactiveWinner == nil, "VarSet expired at 20 s, WSet stands")
        arbiter.resolve(at: Fixture.instant(19.9))
        #expect(arbiter.winner?.source == .scada && arbiter.reactiveWinner?.source == .scada)
    }

    @Test("AGC in service wins P and leaves SCADA's var setpoint the Q: the axes are resolved apart")
    func agcLeavesQ() {
        var agc = AGCCommand(limits: AGCLimits(upper: 200_000, lower: -200_000, expiry: .seconds(12)))
        agc.signal.enabled = true
        agc.signal.value = 90_000
        agc.signal.expiresAt = Fixture.instant(100)
        var commands = SiteCommands()
        commands.setpoint = Self.enabled(30_000)
        commands.reactive = Self.enabled(25_000)
        var arbiter = RequestArbiter()
        arbiter.offer(agc: agc, utility: nil, scada: commands)
        #expect(arbiter.resolve(at: Fixture.instant(10))?.source == .agc)
        #expect(arbiter.reactiveWinner?.source == .scada)
        #expect(arbiter.reactiveWinner?.reactive(at: Fixture.instant(10))?.ask == .vars(25_000))
    }

    @Test("SCADA's power factor: PFWInj for discharging, PFWAbs for charging, signed by excitation; the other direction unity")
    func scadaPowerFactor() throws {
        var commands = SiteCommands()
        commands.powerFactorInjecting = Self.enabled(0.9, until: 40)
        let one = try #require(RequestArbiter.scadaRequest(commands, sitePower: 0)?.reactive)
        guard case .powerFactor(let pf) = one.ask else { Issue.record("\(one)"); return }
        #expect(pf.discharging == PowerFactorSetting(0.9, .injecting) && pf.charging == .unity && one.expiresAt == Fixture.instant(40))
        commands.powerFactorAbsorbing = Self.enabled(-0.95, until: 25)
        let both = try #require(RequestArbiter.scadaRequest(commands, sitePower: 0)?.reactive)
        guard case .powerFactor(let pf2) = both.ask else { Issue.record("\(both)"); return }
        #expect(pf2.charging == PowerFactorSetting(0.95, .absorbing), "− is under-excited: absorbing")
        #expect(both.expiresAt == Fixture.instant(25), "held until the first of the two reverts")
        // Out of (0, 1]: not a power factor (refused when written), so not asked.
        commands.powerFactorInjecting = Self.enabled(1.5)
        commands.powerFactorAbsorbing = Self.enabled(0)
        #expect(RequestArbiter.scadaRequest(commands, sitePower: 0) == nil)
    }

    @Test("SCADA's var and power factor both enabled: the least |Q| at the site's power of the last period")
    func leastVar() throws {
        var commands = SiteCommands()
        commands.reactive = Self.enabled(30_000, until: 20)
        commands.powerFactorInjecting = Self.enabled(0.9, until: 50)
        // At 100 kW, PF 0.9 asks 48.4 kvar: the var setpoint's 30 kvar is less.
        let high = try #require(RequestArbiter.scadaRequest(commands, sitePower: 100_000)?.reactive)
        #expect(high == ReactiveRequest(.vars(30_000), expiresAt: Fixture.instant(20)))
        // At 20 kW, PF 0.9 asks 9.7 kvar.
        let low = try #require(RequestArbiter.scadaRequest(commands, sitePower: 20_000)?.reactive)
        guard case .powerFactor = low.ask else { Issue.record("\(low)"); return }
        #expect(low.expiresAt == Fixture.instant(50))
        // Charging, with PFWAbs not enabled: no power factor is asked, so the var setpoint holds
        // (a unity there would ask 0 var and always win).
        let charging = try #require(RequestArbiter.scadaRequest(commands, sitePower: -100_000)?.reactive)
        #expect(charging == ReactiveRequest(.vars(30_000), expiresAt: Fixture.instant(20)))
        // PF alone, charging on a direction not enabled: nothing asked, the configured mode holds.
        commands.reactive = SiteCommands().reactive
        #expect(RequestArbiter.scadaRequest(commands, sitePower: -100_000) == nil)
        #expect(RequestArbiter.scadaRequest(commands, sitePower: 100_000)?.reactive?.expiresAt == Fixture.instant(50))
        commands.powerFactorInjecting = SiteCommands().powerFactorInjecting
        commands.powerFactorAbsorbing = Self.enabled(-0.95, until: 60)
        #expect(RequestArbiter.scadaRequest(commands, sitePower: 0) == nil, "PFWAbs alone, not charging")
        #expect(RequestArbiter.scadaRequest(commands, sitePower: -1)?.reactive?.expiresAt == Fixture.instant(60))
    }
}

