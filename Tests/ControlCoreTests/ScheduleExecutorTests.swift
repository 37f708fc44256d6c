import ControlCore
import Foundation
import Testing

/// The block schedule in the site's cycle (docs/design/0011-block-schedule.md): executed by energy
/// where the application stands, resting under every request, droop's energy reported apart, the
/// fallback announced. Three 100 kW units following in ~0.2 s (`MeteredSite`), 60 s blocks, so a
/// block's rated energy is 5 kWh and 1 % of it 0.05 kWh.
@Suite("Schedule executor")
struct ScheduleExecutorTests {
    /// `MeteredSite`'s wall clock at t = 0 s, a multiple of 60 and of 900.
    static let t0: Int64 = 1_800_000_000

    /// A window of 60 s blocks with `targets`, the first starting `first` blocks after `t0`, as the
    /// store makes it at `t0` + `at` seconds.
    static func window(_ targets: [Double], first: Int64 = 1, at: Int64 = 0) -> ScheduleWindow {
        let blocks = targets.enumerated().map { ScheduleBlock(startUnixSeconds: t0 + (first + Int64($0.offset)) * 60, targetKWh: $0.element) }
        return ScheduleWindow(Schedule(id: "test", revision: 1, source: .operator, lengthSeconds: 60, blocks: blocks),
                              from: t0 + at, generation: 1)
    }

    static func site(metered: Bool = true, fallback: ScheduleFallback = .application, application: SiteApplication = .none,
                     schedule: Bool = true) -> SiteController {
        let site = ConnectionPointTests.site(units: 3, SiteSettings(hasMeter: metered, application: application, meterMaxLag: .seconds(1)))
        site.schedule.configure(schedule ? ScheduleSettings(lengthSeconds: 60, fallback: fallback) : nil, rampPercentPerSecond: 10)
        return site
    }

    /// A metered site with `targets` from 60 s on, a steady 50 kW load and a meter 0.5 s late, run
    /// for `seconds` from 0.
    static func started(_ targets: [Double], seconds: Double) -> (SiteController, MeteredSite) {
        let site = Self.site()
        site.schedule.window = Self.window(targets)
        var plant = MeteredSite(units: 3, lag: 0.5) { _ in 50_000 }
        plant.run(site, from: 0, seconds: seconds)
        return (site, plant)
    }

    static func reports(_ site: SiteController) -> [ScheduleBlockReport] {
        var reports: [ScheduleBlockReport] = []
        site.schedule.drainReports { reports.append($0) }
        return reports
    }

    static func events(_ site: SiteController) -> [ControlEvent] {
        var events: [ControlEvent] = []
        while let event = site.events.pop() {
            if event.kind == .scheduleFallback || event.kind == .scheduleResumed { events.append(event) }
        }
        return events
    }

    /// A load (load − PV) that moves: 50 kW ± 20 kW over 17 s.
    static func load(_ t: Double) -> Double { 50_000 + 20_000 * sin(t * 2 * .pi / 17) }

    @Test("each block's energy meets its target within 1 % of its rated energy, with a meter and without",
          arguments: [true, false])
    func meetsTargets(metered: Bool) {
        let site = Self.site(metered: metered)
        site.schedule.window = Self.window([2, -1, 0.5, 0, 3])
        var plant = MeteredSite(units: 3, lag: metered ? 0.5 : 0, load: Self.load)
        plant.run(site, from: 0, seconds: 370)
        let reports = Self.reports(site)
        #expect(reports.count == 5)
        for (i, report) in reports.enumerated() {
            #expect(report.startUnixSeconds == Self.t0 + Int64(i + 1) * 60 && report.lengthSeconds == 60)
            #expect(abs(report.ratedKWh - 5) < 1e-9 && report.revision == 1)
            #expect(abs(report.deviationPercent) < 1, "block \(i): target \(report.targetKWh) delivered \(report.deliveredKWh) kWh")
            #expect(report.boundBy == .none && abs(report.droopKWh) < 1e-9)
        }
        // At 3 kWh (180 kW at the meter over a 50 kW load) the units give about 230 kW.
        #expect(reports.last.map { abs($0.deliveredKWh - 3) < 0.05 } == true)
        // Fallback until the first block, resumed, fallback again past the last block.
        #expect(Self.events(site).map(\.kind) == [.scheduleFallback, .scheduleResumed, .scheduleFallback])
        #expect(site.schedule.fallbackActive && site.schedule.open == nil)
    }

    @Test("a shortfall early in a block is made up later in the same block; what held it is named")
    func midBlockCorrection() {
        var (site, plant) = Self.started([1.5], seconds: 60)
        // The first 15 s of the block in standby: the load is imported meanwhile.
        site.setOperatorMode(.standby)
        plant.run(site, from: 60, seconds: 15)
        #expect(site.schedule.open.map { $0.deliveredKWh < 0 } == true, "\(String(describing: site.schedule.open))")
        site.setOperatorMode(.auto)
        plant.run(site, from: 75, seconds: 15)
        // Undisturbed the block asks 90 kW at the meter, 140 kW of the units; after the shortfall more.
        #expect(site.schedule.askW > 160_000, "ask \(site.schedule.askW) W")
        plant.run(site, from: 90, seconds: 35)
        let report = Self.reports(site).first
        #expect(report.map { abs($0.deviationPercent) < 1 } == true, "\(String(describing: report))")
        #expect(report?.boundBy == .standby)
    }

    @Test("droop's energy is measured and reported apart: a frequency dip mid-block is not corrected away")
    func droopApart() {
        var (site, plant) = Self.started([1], seconds: 75)
        // 49.5 Hz for 20 s: 0.4 Hz past the 49.9 Hz edge at 5 % droop, 16 % of 300 kW = 48 kW, 0.27 kWh.
        plant.run(site, from: 75, seconds: 20, frequency: 49.5)
        plant.run(site, from: 95, seconds: 30)
        let report = Self.reports(site).first
        #expect(report.map { abs($0.droopKWh - 48 * 20 / 3600) < 0.02 } == true, "\(String(describing: report))")
        // Delivered = target + droop's energy (the droop stays in the meter's energy), the deviation ~0.
        #expect(report.map { abs($0.deliveredKWh - 1 - $0.droopKWh) < 0.05 && abs($0.deviationPercent) < 1 } == true)
        #expect(report?.boundBy == ScheduleBinding.none)
    }

    @Test("every request outranks the schedule, which rests; the one that spoke is named in bound_by")
    func higherAuthorityWins() {
        var (site, plant) = Self.started([1, 1, 1], seconds: 60)
        // Block 1: SCADA's setpoint, 30 kW, until 120 s.
        var setpoint = ExpiringCommand(value: 30_000, revertValue: 0)
        setpoint.enabled = true
        setpoint.expiresAt = Fixture.instant(120)
        site.commands.setpoint = setpoint
        plant.run(site, from: 60, seconds: 50)
        #expect(abs(site.siteDecision.delivered - 30_000) < 1_000 && site.schedule.askW == 0)
        plant.run(site, from: 110, seconds: 10)
        // Block 2: an operator override on unit 0; block 3: an aggregator dispatch of the site.
        plant.run(site, from: 120, seconds: 120) { i, inputs, now in
            let t = Double(now.nanoseconds) / 1e9
            if t < 180, i == 0 { inputs.override = PowerCommand(power: .kilowatts(10), expiresAt: Fixture.instant(180)) }
            if t >= 180 { inputs.dispatch = PowerCommand(power: .kilowatts(-20), expiresAt: Fixture.instant(240)) }
        }
        let reports = Self.reports(site)
        #expect(reports.map(\.boundBy) == [.scada, .operatorOverride, .aggregatorDispatch])
        // Resting, the block delivered what the parties asked, not its target.
        #expect(reports.count == 3 && reports[2].deliveredKWh < -0.5)
    }

    @Test("a grid limit below the block's target holds it there and is named; the block delivers what the limit allows")
    func gridLimitNamed() {
        let site = ConnectionPointTests.site(units: 3, SiteSettings(hasMeter: true, exportMax: .kilowatts(40), meterMaxLag: .seconds(1)))
        site.schedule.configure(ScheduleSettings(lengthSeconds: 60, fallback: .zero), rampPercentPerSecond: 10)
        site.schedule.window = Self.window([2])
        var plant = MeteredSite(units: 3, lag: 0.5) { _ in 50_000 }
        plant.run(site, from: 0, seconds: 125)
        let report = Self.reports(site).first
        // 120 kW asked at the meter, 40 kW allowed: about 0.67 kWh of 2.
        #expect(report?.boundBy == .exportLimit && report.map { abs($0.deliveredKWh - 40.0 * 60 / 3600) < 0.1 } == true,
                "\(String(describing: report))")
    }

    @Test("no block in force: fallback application runs the application, zero asks 0; events once each way",
          arguments: [ScheduleFallback.application, .zero])
    func fallback(_ fallback: ScheduleFallback) {
        let site = Self.site(fallback: fallback, application: .selfConsumption(targetGrid: .zero))
        var plant = MeteredSite(units: 3, lag: 0) { _ in 60_000 }
        plant.run(site, from: 0, seconds: 30)
        let sum = site.units.indices.reduce(0.0) { $0 + site.decision(unit: $1).setpoint.value }
        if fallback == .application {
            #expect(site.siteDecision.applicationActive && abs(sum - 60_000) < 2_000, "self-consumption covers the load: \(sum) W")
        } else {
            #expect(!site.siteDecision.applicationActive && abs(sum) < 1, "the schedule asks 0: \(sum) W")
        }
        var events = Self.events(site)
        #expect(events.map(\.kind) == [.scheduleFallback] && events.first?.value == (fallback == .zero ? 1 : 0))
        // A block in force: the application rests, whichever the fallback.
        site.schedule.window = Self.window([0.5], first: 1)
        plant.run(site, from: 30, seconds: 60)
        #expect(!site.siteDecision.applicationActive && site.schedule.open != nil)
        events = Self.events(site)
        #expect(events.map(\.kind) == [.scheduleResumed] && events.first?.value == 0.5)
        // Past the last block: the fallback again, announced once.
        plant.run(site, from: 90, seconds: 60)
        #expect(site.siteDecision.applicationActive == (fallback == .application))
        #expect(Self.events(site).map(\.kind) == [.scheduleFallback] && Self.reports(site).count == 1)
    }

    @Test("without a schedule layer the site is as before: the application, no schedule events")
    func noLayer() {
        let site = Self.site(application: .selfConsumption(targetGrid: .zero), schedule: false)
        site.schedule.window = Self.window([2])
        var plant = MeteredSite(units: 3, lag: 0) { _ in 60_000 }
        plant.run(site, from: 0, seconds: 90)
        #expect(site.siteDecision.applicationActive && Self.events(site).isEmpty && Self.reports(site).isEmpty)
    }

    @Test("a window past its last block, or with no blocks, is a fallback at once; a block joined late is reported for its part")
    func pastItsLastBlock() {
        let site = Self.site(fallback: .zero)
        // Made at −150 s: two blocks that ended at −120 and −60 s.
        site.schedule.window = Self.window([1, 1], first: -3, at: -150)
        #expect(site.schedule.window?.count == 2)
        var plant = MeteredSite(units: 3, lag: 0) { _ in 50_000 }
        plant.run(site, from: 0, seconds: 5)
        #expect(site.schedule.fallbackActive && site.schedule.open == nil && Self.reports(site).isEmpty)
        // The same made now holds no block.
        site.schedule.window = Self.window([1, 1], first: -3)
        #expect(site.schedule.window?.count == 0)
        plant.run(site, from: 5, seconds: 5)
        #expect(Self.events(site).map(\.kind) == [.scheduleFallback], "announced once")
        // A block that began 10 s before the window came: 50 s of it run, 50/60 of its target asked.
        site.schedule.window = Self.window([2], first: 0)
        plant.run(site, from: 10, seconds: 40)  // to 50 s: the block is 0–60 s
        site.schedule.window = Self.window([2], first: 0)
        plant.run(site, from: 50, seconds: 20)
        let report = Self.reports(site).first
        #expect(report.map { abs($0.targetKWh - 2 * 50 / 60) < 0.01 && abs($0.deviationPercent) < 1 } == true, "\(String(describing: report))")
        site.schedule.window = nil
        plant.run(site, from: 70, seconds: 1)
        #expect(site.schedule.fallbackActive)
    }
}
