import BessSystem
import ControlCore
@testable import Config
@testable import Cycle
import Testing

/// The cycle's front door: `takeInputs` fills the inbox from the posted orders and the slots, and
/// the same cycle's `decide` acts on it.
@Suite("Cycle inbox")
struct CycleInboxTests {
    static func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: ms * 1_000_000) }

    /// A 2-unit runner and a shared state, the runner attached to it unless `attached` is false.
    static func cycle(attached: Bool = true) throws -> (SiteRunner, SharedState) {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")  // 2 units
        let runner = SiteCycle(configuration: c, io: WireBudgetTests.ScriptedSite(units: c.units.count),
                               phase: CyclePhase(period: .milliseconds(100)), startedAt: .zero)
        let shared = SharedState(units: c.units.count)
        if attached { runner.attach(shared) }
        return (runner, shared)
    }

    @Test("orders posted before a cycle are decided and published by that same cycle")
    func ordersSeenByTheNextCycle() throws {
        let (runner, shared) = try Self.cycle()
        runner.run(now: Self.at(1000), lateness: .zero)
        #expect(shared.units[0].mode == .auto && shared.site.inputLimitPercent.isNaN)
        let generation = shared.post { $0.mode[0] = .standby }
        shared.setInputLimit(40)
        runner.run(now: Self.at(1100), lateness: .zero)
        #expect(shared.appliedGeneration == generation, "the mailbox was taken by this cycle")
        #expect(shared.units[0].mode == .standby && shared.units[1].mode == .auto, "unit 0's standby decided this cycle")
        #expect(shared.units[0].setpoint == 0)
        #expect(shared.site.inputLimitPercent == 40, "the relay limit taken this cycle")
        #expect(runner.controller.inputLimitPercent == 40)
    }

    /// Never published, published, slot gone.
    @Test("the slots are read afresh each cycle; no PMU read unless followed")
    func slotsReadEachCycle() throws {
        let (runner, _) = try Self.cycle()
        let slot = UtilityLimitSlot()
        runner.utilityLimits = slot
        runner.run(now: Self.at(1000), lateness: .zero)
        #expect(runner.inbox.utility == .neverPublished)
        var limits = UtilityLimits()
        limits.exportLimitW = 1000
        slot.publish(limits)
        runner.run(now: Self.at(1100), lateness: .zero)
        #expect(runner.inbox.utility == .limits(limits) && runner.controller.utilityLimits == limits)
        runner.utilityLimits = nil
        runner.run(now: Self.at(1200), lateness: .zero)
        #expect(runner.inbox.utility == .none, "no slot: nothing read, not the last cycle's reading")
        #expect(runner.controller.utilityLimits == limits, "nothing read: the controller keeps what it had")
        let pmu = FrequencySampleSlot()
        pmu.publish(PMUSample(frequency: Hertz(50), rocofHzPerSecond: nil, takenAt: Self.at(1250), frameTime: 0))
        runner.pmuSamples = pmu
        runner.run(now: Self.at(1300), lateness: .zero)
        #expect(runner.inbox.pmu == nil, "the site follows the simulated frequency: the PMU slot is not read")
    }

    @Test("a runner run without the shared state takes no orders: what a test set on its controller stands")
    func runAloneTakesNoOrders() throws {
        let (runner, shared) = try Self.cycle(attached: false)
        shared.setInputLimit(40)
        runner.controller.inputLimitPercent = 70
        runner.run(now: Self.at(1000), lateness: .zero, wallClock: 1_800_000_000)
        #expect(!runner.inbox.ordersTaken && runner.controller.inputLimitPercent == 70)
        #expect(runner.inbox.wallClock == 1_800_000_000, "the wall clock is the cycle's reading too")
    }
}
