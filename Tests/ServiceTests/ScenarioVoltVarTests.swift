import Foundation
import TestSupport
import Testing

/// hil/scenarios/volt-var-step.yaml played by `bess-hil scenario` against a real bessd, and its
/// steady-state var compared with EPRI OpenDER's volt-var (the independent oracle) at the voltage the
/// plant measured at each sample: IEEE 1547-2018 Category B, within 1 % of the 100 kVA rating.
@Suite("Scenario volt-var-step: the closed voltage loop against OpenDER")
struct ScenarioVoltVarTests {
    @Test("the scenario passes, and each held sample's var is OpenDER's Cat. B volt-var at its voltage ± 1 %")
    func steadyStateMatchesOpenDER() throws {
        let output = NSTemporaryDirectory() + "volt-var-step-\(ProcessInfo.processInfo.processIdentifier)"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let run = try Package.run("bess-hil", ["scenario", "--output", output, "hil/scenarios/volt-var-step.yaml"])
        #expect(run.status == 0, "bess-hil scenario: \(run.out.suffix(2000)) \(run.err.suffix(1000))")
        let csv = try String(contentsOfFile: output + "/volt-var-step.csv", encoding: .utf8)
        let rows = csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let header = try #require(rows.first)
        let t = try #require(header.firstIndex(of: "t_s")), v = try #require(header.firstIndex(of: "voltage_pu"))
        let q = try #require(header.firstIndex(of: "reactive_kvar"))
        // The held windows of the file's expectations: V0 1.06 (9–14 s) and V0 0.94 (20–26 s).
        let held = rows.dropFirst().compactMap { row -> (v: Double, kvar: Double)? in
            guard row.count == header.count, let time = Double(row[t]), let pu = Double(row[v]), let kvar = Double(row[q]),
                  (9..<14).contains(time) || (20..<26).contains(time) else { return nil }
            return (pu, kvar)
        }
        #expect(held.count > 80, "samples in the held windows: \(held.count)")
        #expect(held.contains { $0.kvar < -10 } && held.contains { $0.kvar > 10 }, "absorbing at 1.06, injecting at 0.94")
        // OpenDER's snapshot (period 100000 s: filters bypassed) at each measured voltage, P = 0.
        var settings = OpenDER.nameplate()
        settings["QV_MODE_ENABLE"] = true
        for (i, point) in [(0.92, 0.44), (0.98, 0.0), (1.02, 0.0), (1.08, -0.44)].enumerated() {
            settings["QV_CURVE_V\(i + 1)"] = point.0
            settings["QV_CURVE_Q\(i + 1)"] = point.1
        }
        settings["QV_VREF"] = 1.0
        settings["QV_OLRT"] = 1.0
        let oracle = try OpenDER.run([OpenDER.Case(settings: settings, period: 100_000,
                                                   steps: held.map { (count: 1, v: $0.v, p: 0, change: [:]) })])
        let expected = try #require(oracle.first).q
        try #require(expected.count == held.count)
        let worst = zip(held, expected).map { abs($0.kvar * 1000 - $1) }.max() ?? .infinity
        #expect(worst <= 1000, "worst |var − OpenDER's| \(worst) var, 1 % of 100 kVA is 1000")
    }
}
