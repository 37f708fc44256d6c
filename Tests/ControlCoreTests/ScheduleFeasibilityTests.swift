import ControlCore
import Testing

/// The arrival check (docs/design/0011-block-schedule.md): a walk of the stored energy that names
/// the first block a schedule cannot meet and the kWh it misses.
@Suite("Schedule feasibility")
struct ScheduleFeasibilityTests {
    static func schedule(_ targets: [Double], length: Int64 = 900) -> Schedule {
        Schedule(id: "f", revision: 1, source: .operator, lengthSeconds: length,
                 blocks: targets.enumerated().map { ScheduleBlock(startUnixSeconds: 9_000 + Int64($0.offset) * length, targetKWh: $0.element) })
    }

    static func input(soc: Double = 50, lower: Double = 10, upper: Double = 100, etaC: Double = 1, etaD: Double = 1,
                      power: Double = 50, metered: Bool = false, importKW: Double? = nil, exportKW: Double? = nil,
                      load: Double? = nil) -> ScheduleFeasibilityInput {
        ScheduleFeasibilityInput(socKWh: soc, capacityKWh: 100, lowerKWh: lower, upperKWh: upper, chargeEfficiency: etaC,
                                 dischargeEfficiency: etaD, maxChargeKW: power, maxDischargeKW: power, importLimitKW: importKW,
                                 exportLimitKW: exportKW, loadForecastKW: { _ in load }, metered: metered)
    }

    static func close(_ a: Double?, _ b: Double) -> Bool { a.map { abs($0 - b) < 1e-9 } ?? false }

    @Test("the reserve: four 10 kWh blocks from 50 kWh reach the 10 kWh reserve, the fifth misses all of its 10 kWh")
    func reserve() {
        #expect(ScheduleFeasibility.check(Self.schedule([10, 10, 10, 10]), from: 9_000, Self.input()) == nil)
        let short = ScheduleFeasibility.check(Self.schedule([10, 10, 10, 10, 10, 10]), from: 9_000, Self.input())
        #expect(short?.blockStartUnixSeconds == 9_000 + 4 * 900 && Self.close(short?.shortKWh, 10))
    }

    @Test("discharge efficiency: at η_d 0.9 each 10 kWh draws 11.1 kWh, so the fourth block misses 4 kWh")
    func dischargeEfficiency() {
        let short = ScheduleFeasibility.check(Self.schedule([10, 10, 10, 10]), from: 9_000, Self.input(etaD: 0.9))
        #expect(short?.blockStartUnixSeconds == 9_000 + 3 * 900 && Self.close(short?.shortKWh, 4), "\(String(describing: short))")
    }

    @Test("charge efficiency and the top: at η_c 0.8, 80 → 88 kWh, then 2 kWh of room takes 2.5 kWh: 7.5 kWh short")
    func chargeEfficiency() {
        let short = ScheduleFeasibility.check(Self.schedule([-10, -10]), from: 9_000, Self.input(soc: 80, upper: 90, etaC: 0.8))
        #expect(short?.blockStartUnixSeconds == 9_900 && Self.close(short?.shortKWh, 7.5), "\(String(describing: short))")
    }

    @Test("power: 20 kWh in a quarter hour is 80 kW against 50 kW: 7.5 kWh short in the first block")
    func power() {
        let short = ScheduleFeasibility.check(Self.schedule([5, 20]), from: 9_000, Self.input())
        #expect(short?.blockStartUnixSeconds == 9_900 && Self.close(short?.shortKWh, 7.5))
    }

    @Test("with a meter the load counts and the grid limits bind: 20 kW export over a 30 kW load against a 10 kW export limit")
    func meteredGridLimits() {
        // 5 kWh export = 20 kW at the meter: the batteries give 50 kW (load 30 kW), inside 50 kW.
        #expect(ScheduleFeasibility.check(Self.schedule([5]), from: 9_000, Self.input(metered: true, load: 30)) == nil)
        let short = ScheduleFeasibility.check(Self.schedule([5]), from: 9_000, Self.input(metered: true, exportKW: 10, load: 30))
        #expect(short?.blockStartUnixSeconds == 9_000 && Self.close(short?.shortKWh, 2.5))
        // 80 kW import over a 70 kW load (the batteries charging 10 kW) against a 60 kW import limit: the
        // batteries must give 10 kW instead, 20 kW × 0.25 h short.
        let floor = ScheduleFeasibility.check(Self.schedule([-20]), from: 9_000, Self.input(metered: true, importKW: 60, load: 70))
        #expect(floor?.blockStartUnixSeconds == 9_000 && Self.close(floor?.shortKWh, 5), "\(String(describing: floor))")
        // Without a meter the same targets are the units' energy and the grid limits are not judged.
        #expect(ScheduleFeasibility.check(Self.schedule([5]), from: 9_000, Self.input(exportKW: 10, load: 30)) == nil)
    }

    @Test("from the middle of a block: ended blocks skipped, the running one in proportion to what is left")
    func fromMidBlock() {
        // 1,350 s in: the first block has ended, half the second is left (5 of 10 kWh at 40 kW).
        #expect(ScheduleFeasibility.check(Self.schedule([100, 10, 10]), from: 10_350, Self.input(soc: 25)) == nil)
        let short = ScheduleFeasibility.check(Self.schedule([100, 10, 10]), from: 10_350, Self.input(soc: 22.5))
        #expect(short?.blockStartUnixSeconds == 10_800 && Self.close(short?.shortKWh, 2.5))
    }
}
