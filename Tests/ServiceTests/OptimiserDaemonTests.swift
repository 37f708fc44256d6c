import BessSystem
import Foundation
import Glibc
import TestSupport
import Testing

/// The optimiser against a running bessd (issue 60 §2): a plan made on its own thread from the
/// configured tariff and forecast file, followed as the optimiser's schedule, made again when the
/// forecast file changes, shown by `bessctl plan`, and held back by the operator's schedule.
@Suite("Optimiser against a running bessd", .serialized)
struct OptimiserDaemonTests {
    /// Two 100 kW units, 500 kWh at 60 %; one-minute blocks; a flat tariff and a stored kWh worth 3 at
    /// the end: serving the forecast load from the battery saves 5 × 0.95, exporting earns 2 × 0.95, so
    /// the plan discharges exactly the load.
    static func yaml(forecast: String) -> String {
        daemonYAML + """

            schedule: {block_s: 60}
            optimiser:
              enabled: true
              horizon_blocks: 8
              time_zone: UTC
              forecast_file: \(forecast)
              wear_per_kwh: 0.01
              value_end_per_kwh: 3
              tariff:
                weekdays: [{from: "00:00", to: "24:00", import_per_kwh: 5, export_per_kwh: 2}]
                weekends: [{from: "00:00", to: "24:00", import_per_kwh: 5, export_per_kwh: 2}]
            """
    }

    /// A forecast of `loadKW` for every one-minute block from 2 minutes ago to 20 ahead.
    static func writeForecast(_ path: String, loadKW: Double) throws {
        let now = Int64(Date().timeIntervalSince1970) / 60 * 60
        let lines = (-2...20).map { "\(ScheduleDaemonTests.rfc3339(now + Int64($0) * 60)),\(loadKW),0" }
        try (["start,load_kw,pv_kw"] + lines).joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func plan(_ socket: String) -> [String: Any] {
        ScheduleDaemonTests.json((try? Package.run("bessctl", ["plan", "--json", "--socket", socket]).out) ?? "")
    }

    /// The discharge the plan's first whole block asks, kW (nil before a plan).
    static func firstBlockDischarge(_ plan: [String: Any]) -> Double? {
        (plan["slots"] as? [[String: Any]])?.dropFirst().first?["discharge_kw"] as? Double
    }

    @Test("a plan from the tariff and the forecast file, followed as the optimiser's schedule, made again on a new forecast")
    func plansAndFollows() throws {
        let directory = NSTemporaryDirectory() + "bessd-optimiser-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let forecast = directory + "/forecast.csv"
        try Self.writeForecast(forecast, loadKW: 50)
        var daemon = try RunningDaemon(yaml: Self.yaml(forecast: forecast), directory: directory)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }

        var plan: [String: Any] = [:]
        #expect(waitFor(seconds: 10) { plan = Self.plan(daemon.socket); return plan["made_at"] is String })
        let slots = plan["slots"] as? [[String: Any]] ?? []
        #expect(slots.count == 8, "\(plan)")
        #expect(plan["optimal"] as? Bool == true && (plan["solve_ms"] as? Double ?? -1) > 0, "\(plan)")
        #expect(plan["answer"] as? String == "followed", "\(plan)")
        for slot in slots {
            let charge = slot["charge_kw"] as? Double ?? .nan, discharge = slot["discharge_kw"] as? Double ?? .nan
            #expect(charge == 0 || discharge == 0, "\(slot)")
            #expect(slot["price_import_per_kwh"] as? Double == 5 && slot["price_export_per_kwh"] as? Double == 2)
        }
        // The battery serves the 50 kW load and exports nothing.
        #expect(abs((Self.firstBlockDischarge(plan) ?? 0) - 50) < 0.5, "\(plan)")
        let schedule = ScheduleDaemonTests.json(try Package.run("bessctl", ["schedule", "--json", "--socket", daemon.socket]).out)
        #expect(schedule["source"] as? String == "optimiser" && schedule["id"] as? String == "optimiser", "\(schedule)")
        let upcoming = (schedule["blocks"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "upcoming" }
        #expect(!upcoming.isEmpty && upcoming.allSatisfy { abs(($0["target_kwh"] as? Double ?? 0) - 50.0 / 60) < 0.01 }, "\(schedule)")
        let text = try Package.run("bessctl", ["plan", "--socket", daemon.socket])
        #expect(text.status == 0 && text.out.contains("plan made ") && text.out.contains("DISCHARGE kW"), "\(text.out)")

        // A new forecast file: a new plan, on its load.
        try Self.writeForecast(forecast, loadKW: 150)
        #expect(waitFor(seconds: 10) { abs((Self.firstBlockDischarge(Self.plan(daemon.socket)) ?? 0) - 150) < 0.5 },
                "\(Self.plan(daemon.socket))")

        // The operator's schedule outranks the optimiser's: the next plan is held back, and says so.
        let (path, _) = try ScheduleDaemonTests.file(directory, id: "op", kWh: 0.2)
        #expect(try Package.run("bessctl", ["schedule", "load", path, "--socket", daemon.socket]).status == 0)
        try Self.writeForecast(forecast, loadKW: 80)
        #expect(waitFor(seconds: 10) { (Self.plan(daemon.socket)["answer"] as? String ?? "").hasPrefix("SCHEDULE_HELD") },
                "\(Self.plan(daemon.socket))")
        let held = ScheduleDaemonTests.json(try Package.run("bessctl", ["schedule", "--json", "--socket", daemon.socket]).out)
        #expect(held["source"] as? String == "operator" && held["id"] as? String == "op", "\(held)")
        daemon.signal(SIGTERM)
        let (status, log) = daemon.finish()
        #expect(status == 0)
        #expect(log.contains("PLAN_FORECAST_READ") || log.contains("forecast file read"), "\(log.suffix(600))")
    }

    @Test("HTTP: the aggregator's prices and forecast commands price and load the plan; a bad start is refused")
    func pushed() throws {
        let stub = try AggregatorStub(seconds: 120)
        let state = NSTemporaryDirectory() + "bessd-optimiser-http-\(getpid())"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        // No tariff: nothing prices the plan until the aggregator does.
        let daemon = try RunningDaemon(yaml: daemonYAML + """

            state_directory: \(state)
            schedule: {block_s: 60}
            optimiser: {enabled: true, horizon_blocks: 6, value_end_per_kwh: 3}
            aggregator: {url: "http://127.0.0.1:\(stub.port)", interval_s: 0.2, site_id: PLAN_SITE}
            """)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(waitFor(seconds: 10) { (Self.plan(daemon.socket)["problem"] as? String ?? "").hasPrefix("PLAN_PRICE_MISSING") },
                "\(Self.plan(daemon.socket))")
        func answers(_ id: String) -> [[String: Any]] {
            ((try? stub.state()["acks"] as? [[String: Any]]) ?? []).filter { $0["id"] as? String == id }
        }
        let now = Int64(Date().timeIntervalSince1970) / 60 * 60
        let starts = (-1...12).map { ScheduleDaemonTests.rfc3339(now + Int64($0) * 60) }
        let expires = Date().timeIntervalSince1970 + 300
        try stub.admin("/admin/command", ["id": "p-1", "kind": "prices", "expires_unix": expires,
                                          "prices": starts.map { ["start": $0, "import_per_kwh": 6.5, "export_per_kwh": 2.5] }])
        try stub.admin("/admin/command", ["id": "f-1", "kind": "forecast", "expires_unix": expires,
                                          "forecast": starts.map { ["start": $0, "load_kw": 70, "pv_kw": 10] }])
        #expect(waitFor(seconds: 15) { answers("p-1").count == 1 && answers("f-1").count == 1 }, "not answered")
        #expect(answers("p-1").first?["accepted"] as? Bool == true && answers("f-1").first?["accepted"] as? Bool == true)
        // Priced at 6.5 / 2.5 and loaded with 60 kW net: the battery serves it.
        #expect(waitFor(seconds: 10) { abs((Self.firstBlockDischarge(Self.plan(daemon.socket)) ?? 0) - 60) < 0.5 },
                "\(Self.plan(daemon.socket))")
        let slots = Self.plan(daemon.socket)["slots"] as? [[String: Any]] ?? []
        #expect(slots.allSatisfy { $0["price_import_per_kwh"] as? Double == 6.5 && $0["price_export_per_kwh"] as? Double == 2.5 }, "\(slots)")
        try stub.admin("/admin/command", ["id": "p-2", "kind": "prices", "expires_unix": expires,
                                          "prices": [["start": "tomorrow", "import_per_kwh": 1, "export_per_kwh": 1]]])
        #expect(waitFor(seconds: 15) { answers("p-2").count == 1 })
        #expect(answers("p-2").first?["accepted"] as? Bool == false, "\(answers("p-2"))")
        #expect((answers("p-2").first?["reason"] as? String)?.contains("prices[0].start \"tomorrow\" is not RFC 3339") == true, "\(answers("p-2"))")
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
    }

    @Test("without optimiser.enabled bessctl plan is refused OPTIMISER_DISABLED")
    func disabled() throws {
        var daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let refused = try Package.run("bessctl", ["plan", "--socket", daemon.socket])
        #expect(refused.status != 0 && refused.err.contains("OPTIMISER_DISABLED"), "\(refused.err)")
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }
}
