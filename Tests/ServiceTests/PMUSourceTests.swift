import BessSystem
import ControlCore
import Foundation
import Glibc
import Simulation
@testable import Config
@testable import Cycle
import TestSupport
import Testing

@Suite("The PMU as bessd's frequency source", .serialized)
struct PMUSourceTests {
    /// Steps `runner` every 100 ms from `start` for `seconds`, publishing a PMU sample at 49.8 Hz (DFREQ
    /// −0.3 Hz/s) taken at each step's instant while `pmu` says so.
    static func advance(_ runner: SiteRunner, _ slot: FrequencySampleSlot, from start: Double, seconds: Double,
                        pmu: Bool) {
        for k in 1...Int(seconds * 10) {
            let t = start + Double(k) / 10
            let now = MonotonicInstant(nanoseconds: Int64((t * 1e9).rounded()))
            if pmu { slot.publish(PMUSample(frequency: Hertz(49.8), rocofHzPerSecond: -0.3, takenAt: now, frameTime: 1_800_000_000 + t)) }
            runner.run(now: now, lateness: .zero, wallClock: 1_800_000_000 + t)
        }
    }

    static func drain(_ runner: SiteRunner) -> [ControlEvent] {
        var events: [ControlEvent] = []
        while let event = runner.controller.events.pop() { events.append(event) }
        return events
    }

    /// PMU frequency and DFREQ as ROCOF; older than max_age_ms: inverters' median with one FREQUENCY_SOURCE_FALLBACK, and one restore when the PMU is fresh again.
    @Test("the cycle follows a fresh PMU sample, else the inverters' median, with one notice each way")
    func followsFallsBackAndReturns() throws {
        var c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        c.site = SiteConfiguration()
        c.grid.frequencySource = .pmu
        c.grid.pmu = PMUSettings(host: "127.0.0.1", port: 4712, idcode: 1410, maxAge: .milliseconds(250))
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let slot = FrequencySampleSlot()
        runner.pmuSamples = slot
        // The inverters measure 50.2 Hz (charge); the PMU 49.8 Hz (discharge).
        runner.simulation!.setFrequency(.steady(hz: 50.2))

        Self.advance(runner, slot, from: 0, seconds: 15, pmu: true)
        #expect(runner.frequencySourceInUse == .pmu)
        #expect(runner.controller.site.frequency?.value == 49.8)
        #expect(runner.controller.site.rocof == 0.3, "DFREQ is the site's ROCOF")
        #expect((0..<2).allSatisfy { runner.controller.decision(unit: $0).droop.value > 2_000 }, "droop discharges on the PMU's 49.8 Hz")
        #expect(Self.drain(runner).filter { $0.kind == .frequencySourceFallback || $0.kind == .frequencySourceRestored }.isEmpty)

        // The PMU goes quiet: its last sample ages past 250 ms within three steps.
        Self.advance(runner, slot, from: 15, seconds: 0.2, pmu: false)
        #expect(runner.frequencySourceInUse == .pmu, "200 ms old: still young enough")
        Self.advance(runner, slot, from: 15.2, seconds: 0.1, pmu: false)
        #expect(runner.frequencySourceInUse == .inverter && runner.frequencyFallback)
        #expect(runner.controller.site.frequency?.value == 50.2, "the inverters' median")
        Self.advance(runner, slot, from: 15.3, seconds: 15, pmu: false)
        #expect((0..<2).allSatisfy { runner.controller.decision(unit: $0).droop.value < -2_000 }, "droop charges on the inverters' 50.2 Hz")
        let down = Self.drain(runner).filter { $0.kind == .frequencySourceFallback || $0.kind == .frequencySourceRestored }
        #expect(down.map(\.kind) == [.frequencySourceFallback], "once: \(down)")
        #expect(down.first?.unit == -1 && down.first?.threshold == 250 && (down.first?.value ?? 0) > 250)

        Self.advance(runner, slot, from: 30.3, seconds: 15, pmu: true)
        #expect(runner.frequencySourceInUse == .pmu && !runner.frequencyFallback)
        #expect((0..<2).allSatisfy { runner.controller.decision(unit: $0).droop.value > 2_000 })
        let up = Self.drain(runner).filter { $0.kind == .frequencySourceFallback || $0.kind == .frequencySourceRestored }
        #expect(up.map(\.kind) == [.frequencySourceRestored], "once: \(up)")
    }

    /// FREQUENCY_SOURCE_FALLBACK once after the start's 10 s grace.
    @Test("a PMU that never delivers: inverters from the first cycle, one fallback notice after the grace")
    func neverDelivers() throws {
        var c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        c.site = SiteConfiguration()
        c.grid.frequencySource = .pmu
        c.grid.pmu = PMUSettings(host: "127.0.0.1", port: 4712, idcode: 1410)
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let slot = FrequencySampleSlot()
        runner.pmuSamples = slot
        runner.simulation!.setFrequency(.steady(hz: 50.2))
        Self.advance(runner, slot, from: 0, seconds: 9.5, pmu: false)
        #expect(runner.frequencySourceInUse == .inverter && runner.controller.site.frequency?.value == 50.2)
        #expect(!Self.drain(runner).contains { $0.kind == .frequencySourceFallback })
        Self.advance(runner, slot, from: 9.5, seconds: 5, pmu: false)
        let events = Self.drain(runner).filter { $0.kind == .frequencySourceFallback }
        #expect(events.count == 1 && events.first?.value.isNaN == true, "\(events)")
    }

    @Test("a reload changing grid_integration.pmu is refused by name: the connection is made at start")
    func pmuNeedsRestart() throws {
        let base = "mode: hardware\n" + "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100, modbus: {host: 10.0.0.5}}\n"
            + "grid_integration:\n  frequency_source: pmu\n"
        let old = try ConfigLoader.parse(base + "  pmu: {host: 10.0.0.7, idcode: 1410}\n", file: "a.yaml").cycleSettings
        let moved = try ConfigLoader.parse(base + "  pmu: {host: 10.0.0.8, idcode: 1410}\n", file: "b.yaml").cycleSettings
        let slower = try ConfigLoader.parse(base + "  pmu: {host: 10.0.0.7, idcode: 1410, max_age_ms: 200}\n", file: "c.yaml").cycleSettings
        #expect(CycleSettings.reloadRules.restartNeeded(from: old, to: moved)?.keys == ["grid_integration.pmu"])
        #expect(CycleSettings.reloadRules.restartNeeded(from: old, to: slower)?.description
                == "grid_integration.pmu changed; restart bessd to apply")
        #expect(CycleSettings.reloadRules.restartNeeded(from: old, to: old) == nil)
    }
}
