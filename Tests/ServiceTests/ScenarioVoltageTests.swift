@testable import bess_hil
import BessBase
import Foundation
import Testing

/// A scenario's `voltage_pu` step (the plant's V0) and the `voltage_pu` signal.
@Suite("Scenario files: the plant's grid voltage, voltage_pu steps and signal")
struct ScenarioVoltageTests {
    @Test("a voltage_pu step is read as V0, and voltage_pu is a signal an expectation may compare")
    func stepAndSignal() throws {
        let scenario = try ScenarioIEC104FileTests.load("""
            timeline:
              - {at_s: 2, voltage_pu: 1.06}
              - {at_s: 8, voltage_pu: 0.94, label: "V0 down"}
            expect:
              - {from_s: 3, to_s: 7, voltage_pu_min: 1.05}
              - {at_s: 9, voltage_pu: 0.95, tolerance: 0.02}
            """).get()
        guard case .voltage(let up) = scenario.actions[0].kind, case .voltage(let down) = scenario.actions[1].kind else {
            Issue.record("not voltage actions: \(scenario.actions.map(\.label))")
            return
        }
        #expect(up == 1.06 && down == 0.94)
        #expect(scenario.actions.map(\.label) == ["V0→1.06 pu", "V0 down"])
        #expect(scenario.expectations[0].bounds.map(\.signal) == ["voltage_pu"])
        #expect(scenario.expectations[1].numeric.map(\.signal) == ["voltage_pu"])
        var sample = Sample(t: 9, frequency: 50, setpointKW: 0, powerKW: 0, socPercent: 50, reverted: false, bessdUp: true)
        sample.voltagePU = 0.951
        #expect(sample.check(scenario.expectations[1]) == nil)
        sample.voltagePU = 0.99
        #expect(sample.check(scenario.expectations[1])?.contains("voltage_pu") == true)
    }

    @Test("the CSV's last columns are the plant's voltage and the units' var, and gnuplot draws it on the frequency panel's right axis")
    func csvAndPlot() throws {
        let scenario = try ScenarioIEC104FileTests.load("timeline:\n  - {at_s: 1, voltage_pu: 1.06}\nexpect:\n  - {at_s: 1.5, voltage_pu_min: 1.04}\n").get()
        let samples = [0.5, 1.5].map { t in
            var s = Sample(t: t, frequency: 50, setpointKW: 0, powerKW: 0, socPercent: 50, reverted: false, bessdUp: true)
            s.voltagePU = t < 1 ? 0.9871 : 1.0471
            s.reactiveKVAr = t < 1 ? 0 : -12.5
            return s
        }
        let directory = NSTemporaryDirectory() + "bess-scenario-voltage-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let report = ScenarioReport(scenario: scenario, samples: samples, executed: [(1, "V0→1.06 pu", "(plant)")], runDirectory: directory,
                                    outputDirectory: directory, units: 1, hasPMU: false, hasSep2: false, events: nil)
        let gnuplot = FileManager.default.isExecutableFile(atPath: "/usr/bin/gnuplot") ? "/usr/bin/gnuplot" : nil
        let why = try report.write(plotter: gnuplot)
        let lines = try String(contentsOfFile: directory + "/t.csv", encoding: .utf8).split(separator: "\n")
        #expect(lines.first?.hasSuffix(",voltage_pu,reactive_kvar") == true)
        #expect(lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).suffix(2) } == [["0.9871", "0.000"], ["1.0471", "-12.500"]])
        if gnuplot != nil {
            #expect(why == nil, "\(why ?? "")")
            #expect(FileManager.default.fileExists(atPath: directory + "/t.png"))
        }
    }

    @Test("a voltage_pu outside 0.5–1.5 p.u. is refused, named")
    func refused() throws {
        let result = try ScenarioIEC104FileTests.load("""
            timeline:
              - {at_s: 2, voltage_pu: 230}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        #expect(error.message.contains("timeline[0].voltage_pu: a voltage, 0.5–1.5 p.u."), "\(error)")
    }
}
