import ControlCore
import GridSupport
@testable import Config
@testable import Cycle
import Foundation
import Synchronization
import TestSupport
import Testing

/// The slot between the 2030.5 worker and the cycle.
@Suite("Utility limit slot")
struct UtilityLimitSlotTests {
    static func limits(_ k: Int) -> UtilityLimits {
        var l = UtilityLimits()
        let w = Double(k)
        l.exportLimitW = w
        l.importLimitW = k % 2 == 0 ? nil : w + 1
        l.generationLimitW = w + 2
        l.loadLimitW = k % 3 == 0 ? nil : w + 3
        l.fixedW = k % 5 == 0 ? w + 4 : nil
        l.targetW = -w
        l.maxLimW = w + 6
        l.storageTargetW = k % 7 == 0 ? nil : w + 7
        l.rampSeconds = k % 2 == 0 ? Double(k % 60) : nil
        l.gradientWPerSecond = k % 3 == 1 ? nil : w + 9
        l.droop = k % 4 == 3 ? nil : UtilityDroop(deadbandOverHz: w + 10, deadbandUnderHz: w + 11, droopOverPercent: w + 12,
                                                   droopUnderPercent: w + 13, responseTime: .milliseconds(Int64(k % 1000)))
        l.powerFactorInjecting = k % 2 == 0 ? nil : 0.9
        l.powerFactorAbsorbing = k % 3 == 0 ? -0.95 : nil
        l.fixedVar = k % 5 == 0 ? nil : -w - 14
        l.targetVar = k % 2 == 0 ? w + 15 : nil
        l.connect = k % 4 != 1
        l.energize = k % 4 != 2
        l.validUntil = k % 3 == 0 ? nil : MonotonicInstant(nanoseconds: Int64(k) * 1_000)
        // A curve too, read beside the atomics under its own lock.
        l.voltWatt = k % 2 == 0 ? nil : VoltWattSettings(curve: try! GridCurve([(1.06, 100), (1.10, Double(k % 100))]), responseTime: .seconds(1))
        return l
    }

    @Test("nothing before the first publication; every field of the last one after, nil fields included")
    func lastValue() {
        let slot = UtilityLimitSlot()
        #expect(slot.read() == nil && !slot.published)
        for k in [1, 2, 3, 4, 5, 6, 7, 30, 35, 42] {
            slot.publish(Self.limits(k))
            #expect(slot.read() == Self.limits(k), "publication \(k)")
        }
        slot.publish(UtilityLimits())
        #expect(slot.read() == UtilityLimits(), "an empty value clears every field")
    }

    @Test("a reader never sees a value torn between two publications")
    func untorn() {
        let slot = UtilityLimitSlot()
        slot.publish(Self.limits(1))
        let stop = Flag()
        let finished = Flag()
        let writer = Thread {
            var k = 1
            while !stop.done.load(ordering: .relaxed) {
                k += 1
                slot.publish(Self.limits(k))
            }
            finished.done.store(true, ordering: .releasing)
        }
        writer.start()
        var torn = 0
        var reads = 0
        while reads < 100_000 {
            guard let got = slot.read() else { continue }
            reads += 1
            if got != Self.limits(Int(got.exportLimitW ?? -1)) { torn += 1 }
        }
        stop.done.store(true, ordering: .relaxed)
        #expect(waitFor { finished.done.load(ordering: .acquiring) }, "the writer did not stop")
        #expect(torn == 0, "\(torn) of \(reads) reads mixed two values")
    }
}

extension UtilityLimitSlotTests {
    @Test("a read never waits for the curves' lock: cells whose curves are being written read back at once, without them")
    func readNeverWaits() {
        let cells = UtilityLimitCells()
        cells.store(Self.limits(3))
        #expect(cells.load() == Self.limits(3))
        let held = Flag(), release = Flag(), returned = Flag()
        let writer = Thread {
            cells.curves.withLock { _ in
                held.done.store(true, ordering: .releasing)
                while !release.done.load(ordering: .acquiring) {}
            }
        }
        writer.start()
        #expect(waitFor { held.done.load(ordering: .acquiring) }, "the writer did not take the lock")
        let read = Mutex<UtilityLimits?>(nil)
        let reader = Thread {
            let value = cells.load()
            read.withLock { $0 = value }
            returned.done.store(true, ordering: .releasing)
        }
        reader.start()
        let atOnce = waitFor { returned.done.load(ordering: .acquiring) }
        release.done.store(true, ordering: .releasing)
        #expect(atOnce, "the read waited for the writer's lock")
        #expect(waitFor { returned.done.load(ordering: .acquiring) })
        // The slot discards such a read (the writer had overtaken it); the atomics are still there.
        let got = read.withLock { $0 }
        #expect(got?.exportLimitW == 3 && got?.voltWatt == nil)
        #expect(waitFor { cells.load() == Self.limits(3) }, "the curves again once the lock is free")
    }
}

/// The runner hands the slot's value to the controller every cycle.
@Suite("Utility limits through the cycle")
struct UtilityLimitCycleTests {
    @Test("utility control: none unpublished, applied when published, zero and stale past validUntil")
    func runnerHandsTheSlotOver() throws {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        let runner = SiteCycle(configuration: c, io: WireBudgetTests.ScriptedSite(units: c.units.count),
                                phase: CyclePhase(period: .milliseconds(100)), startedAt: .zero)
        func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: ms * 1_000_000) }
        let slot = UtilityLimitSlot()
        runner.utilityLimits = slot
        runner.run(now: at(1000), lateness: .zero, wallClock: 1_800_000_001)
        #expect(runner.controller.utilityLimits == nil && !runner.controller.siteDecision.utility.active)
        var limits = UtilityLimits()
        limits.generationLimitW = 0
        limits.validUntil = at(2000)
        slot.publish(limits)
        runner.run(now: at(1100), lateness: .zero, wallClock: 1_800_000_001.1)
        #expect(runner.controller.utilityLimits == limits)
        #expect(runner.controller.siteDecision.utility.active && runner.controller.siteDecision.utility.dischargeCap == 0)
        runner.run(now: at(2100), lateness: .zero, wallClock: 1_800_000_002.1)
        let stale = runner.controller.siteDecision.utility
        #expect(stale.active && stale.stale && stale.binding == .stale, "read after validUntil: the stale binding")
        #expect(stale.dischargeCap == 0 && stale.chargeCap == 0, "read after validUntil: the site held at zero")
    }
}
