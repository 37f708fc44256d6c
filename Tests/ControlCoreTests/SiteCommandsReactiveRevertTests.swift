import ControlCore
import Testing

/// The reactive setpoints (704 `VarSet`, `PFWInj`, `PFWAbs`; IEC 104 3003 and 3004) reverting for
/// want of a refresh: each reported by the cycle as `WSet` is (`siteSetpointReverted`), so a var
/// or power factor that ends is never silent.
@Suite("SCADA commands: the reactive setpoints' reversions are events")
struct SiteCommandsReactiveRevertTests {
    @Test("VarSet reverts to its value then ends; PFWInj and PFWAbs end: one event each, with the value now in force")
    func reversionsReported() {
        let site = SiteCommandsTests.site()
        var meter = MeteredSite(units: 3) { _ in 0 }
        meter.run(site, from: 0, seconds: 2)
        site.events.drain { _ in }
        // An enabled command with its expiry and reversion, as SiteCommandsTests writes a limit.
        site.commands.reactive = SiteCommandsTests.limit(20_000, until: 3, revert: (true, 5_000))
        site.commands.powerFactorInjecting = SiteCommandsTests.limit(0.95, until: 3, revert: (false, 1))
        site.commands.powerFactorAbsorbing = SiteCommandsTests.limit(-0.95, until: 4, revert: (false, 1))
        var events: [ControlEvent] = []
        meter.run(site, from: 2, seconds: 0.8)
        site.events.drain { events.append($0) }
        #expect(!events.contains { $0.kind == .siteReactiveReverted || $0.kind == .sitePowerFactorInjectingReverted },
                "nothing before the expiry: \(events.map(\.kind))")

        events = []
        meter.run(site, from: 2.8, seconds: 0.4)
        site.events.drain { events.append($0) }
        let reactive = events.filter { $0.kind == .siteReactiveReverted }
        #expect(reactive.count == 1 && reactive.first?.value == 5, "VarSetRvrt 5 kvar in force: \(reactive)")
        let injecting = events.filter { $0.kind == .sitePowerFactorInjectingReverted }
        #expect(injecting.count == 1 && injecting.first?.value.isNaN == true, "PFWInj ended: \(injecting)")
        #expect(!events.contains { $0.kind == .sitePowerFactorAbsorbingReverted }, "PFWAbs holds until 4 s")
        #expect(events.allSatisfy { $0.unit == -1 })

        events = []
        meter.run(site, from: 3.2, seconds: 1)
        site.events.drain { events.append($0) }
        let absorbing = events.filter { $0.kind == .sitePowerFactorAbsorbingReverted }
        #expect(absorbing.count == 1 && absorbing.first?.value.isNaN == true, "PFWAbs ended: \(absorbing)")
        #expect(!events.contains { $0.kind == .siteReactiveReverted }, "the reverted VarSet holds max_hold_s, reported once")

        // The reverted var setpoint holds max_hold_s (60 s), then ends: reported again, nothing in force.
        events = []
        meter.run(site, from: 4.2, seconds: 59)
        site.events.drain { events.append($0) }
        let ended = events.filter { $0.kind == .siteReactiveReverted }
        #expect(ended.count == 1 && ended.first?.value.isNaN == true, "VarSet's reversion ended: \(ended)")
    }
}
