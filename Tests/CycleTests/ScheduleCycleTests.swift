import BessSystem
import ControlCore
@testable import Config
@testable import Cycle
import Simulation
import Testing

/// The block schedule through the cycle's front door and out of its outbox
/// (docs/design/0011-block-schedule.md): `SharedState.publishSchedule` in, taken once per period
/// through the inbox; closed blocks out through `takeScheduleReports`; the open block in the site
/// view. On the embedded simulated site: 100 + 250 kW, a meter, a load stepping 180 → 420 → 120 kW
/// every 40 s, a frequency walking ±0.15 Hz (so droop acts), 60 s blocks: 1 % is 0.058 kWh.
@Suite("Schedule in the cycle")
struct ScheduleCycleTests {
    /// The wall clock at monotonic 0, a multiple of 60.
    static let t0: Int64 = 1_800_000_000

    static func runner(fallback: ScheduleFallback = .application) throws -> (SiteRunner, SharedState) {
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        var settings = runner.settings
        settings.schedule = ScheduleSettings(lengthSeconds: 60, fallback: fallback)
        try runner.reconfigure(settings, now: .zero)
        let shared = SharedState(units: c.units.count)
        runner.attach(shared)
        return (runner, shared)
    }

    /// Runs from `from` to `to` seconds at 100 ms, the wall clock `t0` + t.
    static func run(_ runner: SiteRunner, from: Double, to: Double) {
        var k = Int((from * 10).rounded())
        while Double(k) / 10 < to - 1e-9 {
            k += 1
            runner.run(now: MonotonicInstant(nanoseconds: Int64(k) * 100_000_000), lateness: .zero, wallClock: Double(t0) + Double(k) / 10)
        }
    }

    static func window(_ targets: [Double], first: Int64, generation: UInt64 = 1) -> ScheduleWindow {
        let blocks = targets.enumerated().map { ScheduleBlock(startUnixSeconds: t0 + (first + Int64($0.offset)) * 60, targetKWh: $0.element) }
        return ScheduleWindow(Schedule(id: "cycle", revision: 2, source: .aggregator, lengthSeconds: 60, blocks: blocks), from: t0,
                              generation: generation)
    }

    @Test("a published window is followed; closed blocks come out within 1 % with droop apart, the open one in the site view")
    func windowInReportsOut() throws {
        let (runner, shared) = try Self.runner()
        Self.run(runner, from: 0, to: 30)
        #expect(shared.site.scheduleFallback && shared.view.scheduleBlock == nil)
        shared.publishSchedule(Self.window([-2, -4], first: 1))
        Self.run(runner, from: 30, to: 90)
        let open = try #require(shared.view.scheduleBlock)
        #expect(open.startUnixSeconds == Self.t0 + 60 && open.targetKWh == -2 && open.revision == 2 && !shared.site.scheduleFallback)
        #expect(open.deliveredKWh < -0.5, "half way: \(open)")
        #expect(shared.takeScheduleReports().isEmpty)
        Self.run(runner, from: 90, to: 150)
        #expect(shared.view.scheduleBlock?.targetKWh == -4)
        var reports = shared.takeScheduleReports()
        #expect(reports.map(\.startUnixSeconds) == [Self.t0 + 60])
        #expect(shared.takeScheduleReports().isEmpty, "taken once")
        Self.run(runner, from: 150, to: 190)
        reports = shared.takeScheduleReports()
        #expect(reports.map(\.startUnixSeconds) == [Self.t0 + 120] && reports.allSatisfy { abs($0.deviationPercent) < 1 })
        #expect(shared.site.scheduleFallback && shared.view.scheduleBlock == nil)
        let kinds = shared.takeEvents().map(\.kind).filter { $0 == .scheduleFallback || $0 == .scheduleResumed }
        #expect(kinds == [.scheduleFallback, .scheduleResumed, .scheduleFallback])
    }

    @Test("each block meets its target within 1 % of its rated energy on the simulated site, droop reported apart")
    func simulatedSiteFollows() throws {
        let (runner, shared) = try Self.runner()
        shared.publishSchedule(Self.window([-2, -4, -1, -3], first: 1))
        Self.run(runner, from: 0, to: 300)
        let reports = shared.takeScheduleReports()
        #expect(reports.count == 4)
        for report in reports {
            #expect(abs(report.ratedKWh - 350 * 60 / 3600.0) < 1e-9)
            #expect(abs(report.deviationPercent) < 1, "\(report)")
        }
        // The frequency walks through the deadband's edges: droop's energy is there, and apart.
        #expect(reports.contains { abs($0.droopKWh) > 0.001 }, "\(reports.map(\.droopKWh))")
    }

    @Test("a reload carries the block under way, its energy so far and its window")
    func reloadCarriesTheBlock() throws {
        let (runner, shared) = try Self.runner(fallback: .zero)
        shared.publishSchedule(Self.window([-3], first: 1))
        Self.run(runner, from: 0, to: 90)
        let before = try #require(shared.view.scheduleBlock)
        var settings = runner.settings
        settings.schedule = ScheduleSettings(lengthSeconds: 60, fallback: .application)
        try runner.reconfigure(settings, now: MonotonicInstant(nanoseconds: 90_000_000_000))
        #expect(runner.controller.schedule.settings?.fallback == .application)
        #expect(runner.controller.schedule.open?.deliveredKWh == before.deliveredKWh)
        Self.run(runner, from: 90, to: 125)
        let report = try #require(shared.takeScheduleReports().first)
        #expect(abs(report.deviationPercent) < 1, "\(report)")
        // Cleared: the fallback at once.
        shared.publishSchedule(nil)
        Self.run(runner, from: 125, to: 126)
        #expect(runner.controller.schedule.window == nil && shared.site.scheduleFallback)
    }
}
