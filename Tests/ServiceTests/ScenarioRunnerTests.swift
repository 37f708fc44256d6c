import Foundation
import TestSupport
import Testing

/// `bess-hil scenario` checks what it needs before the run: a missing bessd fails at once, and a
/// missing gnuplot costs the picture, never the verdict.
@Suite("Scenario runner: helpers checked up front")
struct ScenarioRunnerTests {
    static func scenario(in directory: String) throws -> String {
        let rig = Package.root.appendingPathComponent("hil/rigs/scenario.yaml").path
        let path = directory + "/short.yaml"
        try """
        name: short
        description: "an override of 5 kW reaches the wire"
        rig: \(rig)
        duration_s: 5
        timeline:
          - {at_s: 1, override_kw: 5, for_s: 60}
        expect:
          - {from_s: 3.5, to_s: 5, setpoint_kw: 5, tolerance: 1}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func hil(_ arguments: [String], path: String? = nil) throws -> (status: Int32, out: String) {
        var environment = ProcessInfo.processInfo.environment
        if let path { environment["PATH"] = path }
        let result = try Package.capture(try #require(Package.executable("bess-hil")), ["scenario"] + arguments,
                                         environment: environment, merged: true)
        return (result.status, result.out)
    }

    @Test("no bessd: refused before the scenario starts, with a code")
    func missingBessd() throws {
        let directory = NSTemporaryDirectory() + "bess-scenario-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.scenario(in: directory)
        let result = try Self.hil(["--bessd", directory + "/no-such-bessd", "--output", directory, file])
        #expect(result.status == 2)
        #expect(result.out.contains("ERROR short: SCENARIO_BESSD_MISSING"), "\(result.out)")
        #expect(!result.out.contains("RUN  short"), "nothing ran")
    }

    @Test("no gnuplot: said up front; the verdict stands, the CSV is written, the plot is not")
    func missingGnuplot() throws {
        let directory = NSTemporaryDirectory() + "bess-scenario-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/empty", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.scenario(in: directory)
        let bessd = try #require(Package.executable("bessd")).path
        let result = try Self.hil(["--bessd", bessd, "--output", directory, file], path: directory + "/empty")
        #expect(result.out.hasPrefix("NOTE gnuplot is not installed"), "\(result.out)")
        #expect(result.status == 0, "\(result.out)")
        #expect(result.out.contains("PASS short: 1 expectations met; no plot: gnuplot is not installed"), "\(result.out)")
        #expect(FileManager.default.fileExists(atPath: directory + "/short.csv"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/short.png"))
    }
}
