import ControlCore
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
}
