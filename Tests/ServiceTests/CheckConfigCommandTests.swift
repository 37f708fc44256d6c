import ControlCore
import Foundation
import TestSupport
import Testing

@Suite("bessd check-config")
struct CheckConfigCommandTests {
    @Test("exit 0 for a valid file, non-zero with every error on stderr for a bad one")
    func command() throws {
        let ok = try Package.run("bessd", ["check-config", "config/seed.yaml"])
        #expect(ok.status == 0)
        #expect(ok.out.contains("OK"))
        let path = NSTemporaryDirectory() + "bessd-bad-\(getpid()).yaml"
        try "period_ms: 5\nbess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: -1\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let bad = try Package.run("bessd", ["check-config", path])
        #expect(bad.status == 1)
        let lines = bad.err.split(separator: "\n").map(String.init)
        #expect(lines == [
            "\(path):1: period_ms: must be from 10 to 1000 milliseconds (got '5')",
            "\(path):5: bess_units[0].max_power_kw: must be greater than 0 and at most 100000 kW (got '-1')",
        ])
        let missing = try Package.run("bessd", ["check-config", "/nonexistent/bessd.yaml"])
        #expect(missing.status == 1)
        #expect(missing.err.contains("No such file or directory"))
        // An empty unit list names the key (it once exited 1 printing nothing).
        for empty in ["bess_units:\n", "bess_units: []\n", "bess_units: ~\n"] {
            try ("mode: simulation\n" + empty).write(toFile: path, atomically: true, encoding: .utf8)
            let none = try Package.run("bessd", ["check-config", path])
            #expect(none.status == 1)
            #expect(none.err.contains("bess_units: list at least one unit"), "\(empty): \(none.err)")
        }
    }
}

@Suite("Documentation stays true")
struct DocumentationTests {
    @Test("docs/interlocks.md holds the table bessctl prints")
    func interlockTable() throws {
        let generated = try Package.run("bessctl", ["codes", "--markdown"])
        #expect(generated.status == 0)
        let doc = try String(contentsOf: Package.root.appendingPathComponent("docs/interlocks.md"), encoding: .utf8)
        #expect(doc.contains(generated.out), "regenerate the table with: bessctl codes --markdown")
        for code in TripCode.allCases { #expect(doc.contains("`\(code.name)`")) }
    }
}
