import BessSystem
import ControlCore
import ControlProtocol
import Foundation
import Simulation
@testable import Service
@testable import Cycle
@testable import Config
import Testing

/// The grid operator's AGC through the entry point the IEC 104 server calls
/// (`SharedState.applyAGC`), the cycle, and what `status` / `site` and /metrics show of it.
@Suite("AGC through SharedState and the cycle")
struct AGCStatusTests {
    static func site() throws -> (SharedState, SiteRunner) {
        let yaml = EmbeddedConfiguration.simulationYAML + "\niec104:\n  agc: {expiry_s: 12, upper_limit_kw: 200, lower_limit_kw: -100}\n"
        let c = try ConfigLoader.parse(yaml, file: "embedded+agc")
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let shared = SharedState(units: c.units.count)
        shared.declareAGC(c.iec104?.agc?.limits)
        runner.attach(shared)
        return (shared, runner)
    }

    static func instant(_ t: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: Int64((t * 1e9).rounded())) }

    static func run(_ runner: SiteRunner, from: Double, seconds: Double) {
        for k in 1...Int(seconds * 10) { runner.run(now: instant(from + Double(k) / 10), lateness: .zero) }
    }

    /// The `agc` section as `status` and `site` write it.
    static func json(_ shared: SharedState) throws -> [String: Any] {
        var text = JSONText()
        StatusReport.agcReply(shared.site.agc).write(to: &text)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.bytes)) as? [String: Any])
    }

    @Test("an AGC target via SharedState.applyAGC is followed, shown in status and /metrics, lost at expiry_s")
    func appliedTargetShows() throws {
        let (shared, runner) = try Self.site()
        Self.run(runner, from: 0, seconds: 3)
        var agc = try Self.json(shared)
        #expect(agc["configured"] as? Bool == true && agc["in_service"] as? Bool == false)
        #expect(agc["upper_limit_w"] as? Double == 200_000 && agc["lower_limit_w"] as? Double == -100_000)
        // Out of band and out of service: refused through the entry point, nothing stored.
        #expect(throws: AGCRefusal.notInService) { try shared.applyAGC(.target(50_000), at: Self.instant(3)) }
        #expect(try shared.applyAGC(.inService(true), at: Self.instant(3)).inService)
        #expect(throws: AGCRefusal.outsideRegulationBand(target: 250_000, lower: -100_000, upper: 200_000)) {
            try shared.applyAGC(.target(250_000), at: Self.instant(3))
        }
        #expect(try shared.applyAGC(.target(80_000), at: Self.instant(3)).target == 80_000)
        Self.run(runner, from: 3, seconds: 2)
        agc = try Self.json(shared)
        #expect(agc["in_service"] as? Bool == true && agc["following"] as? Bool == true, "\(agc)")
        #expect(agc["target_w"] as? Double == 80_000)
        #expect((agc["followed_w"] as? Double).map { $0 > 0 && $0 <= 80_000 } == true, "\(agc)")
        #expect((agc["remaining_s"] as? Double).map { abs($0 - 10) < 0.01 } == true, "12 s from 3 s, read at 5 s: \(agc)")
        #expect(agc["signal_lost"] as? Bool == false)
        var m = MetricsText()
        MetricsExporter.agcMetrics(into: &m, shared.site.agc)
        #expect(m.lines.contains("bessd_site_agc_following 1.0") && m.lines.contains("bessd_site_agc_target_watts 80000.0"), "\(m.lines)")
        // No refresh: at 15 s the signal is lost and the schedule decides again.
        Self.run(runner, from: 5, seconds: 10.5)
        agc = try Self.json(shared)
        #expect(agc["signal_lost"] as? Bool == true && agc["following"] as? Bool == false && agc["in_service"] as? Bool == true, "\(agc)")
        #expect(agc["followed_w"] is NSNull && agc["remaining_s"] as? Double == 0)
        let events = shared.takeEvents().filter { $0.kind == .agcSignalLost }
        #expect(events.count == 1)
    }

    @Test("with every unit in local standby, SharedState refuses AGC; out of service is still accepted")
    func localControlRefused() throws {
        let (shared, runner) = try Self.site()
        Self.run(runner, from: 0, seconds: 1)
        shared.post { $0.siteMode = .standby }
        Self.run(runner, from: 1, seconds: 0.5)
        #expect(throws: AGCRefusal.localControl) { try shared.applyAGC(.inService(true), at: Self.instant(1.5)) }
        #expect(try shared.applyAGC(.inService(false), at: Self.instant(1.5)).inService == false)
        #expect(try Self.json(shared)["in_service"] as? Bool == false)
    }
}
