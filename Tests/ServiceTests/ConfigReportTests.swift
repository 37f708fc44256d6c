import Foundation
import TestSupport
import Testing

@Suite("A bad configuration reads the same from every command")
struct ConfigReportTests {
    @Test("check-config, run and bess-hil plant print the same diagnostics and exit 1")
    func sameLines() throws {
        let path = NSTemporaryDirectory() + "bessd-report-\(getpid()).yaml"
        try "period_ms: 5\nbess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: -1\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let expected = [
            "\(path):1: period_ms: must be from 10 to 1000 milliseconds (got '5')",
            "\(path):5: bess_units[0].max_power_kw: must be greater than 0 and at most 100000 kW (got '-1')",
        ]
        for (program, arguments) in [("bessd", ["check-config", path]), ("bessd", ["run", "--config", path]),
                                     ("bess-hil", ["plant", "--config", path])] {
            let result = try Package.run(program, arguments)
            #expect(result.status == 1, "\(program) \(arguments)")
            #expect(result.err.split(separator: "\n").map(String.init) == expected, "\(program) \(arguments): \(result.err)")
        }
    }
}
