import BessSystem
import ControlCore
import Foundation
import Logging
@testable import Service
@testable import Cycle
@testable import Config
import Simulation
import Testing
import Uplink

/// The aggregator's `reactive_kvar` from the intake through the mailbox into the cycle's
/// `UnitInputs.dispatch?.reactive` (var, + = injecting), where the reactive stage reads it.
@Suite("Dispatch reactive_kvar through the mailbox into the cycle")
struct DispatchReactiveIntakeTests {
    /// The simulated site (BESS_SIM_01 100 kW, BESS_SIM_02 250 kW), the second with 300 kVA
    /// configured: the site's kvar bound is 100 + 300 = 400 kVA.
    static func site() throws -> (SiteRunner, SharedState, DispatchIntake) {
        var c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        c.units[1].maxApparentPowerKVA = 300
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let shared = SharedState(units: c.units.count)
        runner.attach(shared)
        let intake = DispatchIntake(shared: shared, logger: Logger(label: "test"), configured: c.units, holds: nil)
        return (runner, shared, intake)
    }

    /// One cycle at `seconds`, which takes what was posted.
    static func cycle(_ runner: SiteRunner, at seconds: Double) {
        runner.run(now: MonotonicInstant(nanoseconds: Int64((seconds * 1e9).rounded())), lateness: .zero)
    }

    @Test("a site dispatch's kvar is split by apparent rating (its power by rating) and reaches UnitInputs.dispatch")
    func siteSplit() throws {
        let (runner, shared, intake) = try Self.site()
        Self.cycle(runner, at: 0.1)
        let expires = SystemClock.wallClockSeconds() + 60
        let acks = intake.apply([DispatchCommand(id: "q-site", kind: "power", powerKW: 70, reactiveKVar: -200, expiresUnix: expires)])
        #expect(acks == [CommandAck(id: "q-site", accepted: true)])
        let posted = shared.peekMailbox().dispatch
        #expect(posted.map { $0?.reactive } == [-50_000, -150_000], "−200 kvar by 100 : 300 kVA")
        #expect(posted.map { $0?.power.value } == [20_000, 50_000], "70 kW by 100 : 250 kW")
        #expect(posted.allSatisfy { $0?.pinned == false })
        Self.cycle(runner, at: 0.2)
        #expect(runner.inputs.map { $0.dispatch?.reactive } == [-50_000, -150_000])
        #expect(runner.inputs.map { $0.dispatch?.power.value } == [20_000, 50_000])
        #expect(runner.inputs.allSatisfy { $0.dispatch?.pinned == false })
    }

    @Test("a unit's kvar holds that unit's Q up to its kVA; a dispatch without one, a refusal and a stop act as said")
    func unitDispatch() throws {
        let (runner, shared, intake) = try Self.site()
        Self.cycle(runner, at: 0.1)
        let unit = runner.settings.devices[1].id, expires = SystemClock.wallClockSeconds() + 60
        #expect(intake.apply([DispatchCommand(id: "q1", kind: "power", unit: unit, powerKW: 0, reactiveKVar: 300,
                                              expiresUnix: expires)]).allSatisfy { $0.accepted })
        Self.cycle(runner, at: 0.2)
        #expect(runner.inputs[1].dispatch?.reactive == 300_000 && runner.inputs[1].dispatch?.pinned == true)
        #expect(runner.inputs[0].dispatch == nil)
        // Beyond the unit's 300 kVA: refused, and neither the mailbox nor the cycle's inputs move.
        let generation = shared.peekMailbox().generation
        let refused = intake.apply([DispatchCommand(id: "q2", kind: "power", unit: unit, powerKW: 0, reactiveKVar: 300.5,
                                                    expiresUnix: expires)])
        #expect(refused.first?.reason == "reactive_kvar 300.5 beyond the apparent rating ±300.0 kVA")
        #expect(shared.peekMailbox().generation == generation)
        Self.cycle(runner, at: 0.3)
        #expect(runner.inputs[1].dispatch?.reactive == 300_000)
        // The next power dispatch without reactive_kvar replaces the last: it asks for no Q.
        #expect(intake.apply([DispatchCommand(id: "p3", kind: "power", unit: unit, powerKW: 10, expiresUnix: expires)]).allSatisfy { $0.accepted })
        Self.cycle(runner, at: 0.4)
        #expect(runner.inputs[1].dispatch?.power.value == 10_000)
        #expect(runner.inputs[1].dispatch.map { $0.reactive == nil } == true)
        // An emergency stop drops the dispatch, its Q with it.
        #expect(intake.apply([DispatchCommand(id: "q4", kind: "power", unit: unit, powerKW: 0, reactiveKVar: -20,
                                              expiresUnix: expires),
                              DispatchCommand(id: "s5", kind: "emergency_stop", unit: unit, expiresUnix: expires)]).allSatisfy { $0.accepted })
        Self.cycle(runner, at: 0.5)
        #expect(runner.inputs[1].dispatch == nil)
    }
}
