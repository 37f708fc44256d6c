import Foundation
import TestSupport
import Testing

/// `bess-hil soak` (make soak): its plan covers every fault kind, and its accounting — reloads
/// confirmed, an uplink outage survived with nothing lost, faults raised and cleared, resources
/// sampled — works on a short run against a real bessd and bess-aggregator.
@Suite("Soak: plan and accounting")
struct SoakTests {
    static func soak(_ arguments: [String]) throws -> (status: Int32, out: String) {
        let rig = Package.root.appendingPathComponent("hil/rigs/scenario.yaml").path
        let result = try Package.capture(try #require(Package.executable("bess-hil")), ["soak", "--rig", rig] + arguments, merged: true)
        return (result.status, result.out)
    }

    static func directory() throws -> String {
        let directory = NSTemporaryDirectory() + "bess-soak-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A fault every 30 s.
    @Test("the 30-minute plan: all 15 fault kinds, 5 reloads, 6 outages, a loading scenario")
    func plan() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Self.soak(["--plan-only", "--output", directory])
        #expect(result.status == 0, "\(result.out)")
        #expect(result.out.contains("soak: 58 faults (15 of 15 kinds), 5 reloads, 6 uplink outages"), "\(result.out)")
        let yaml = try String(contentsOfFile: directory + "/soak.yaml", encoding: .utf8)
        #expect(yaml.contains("requires: [can]"))
        #expect(yaml.contains("period_ms: 10"))
        for kind in ["bms_silence", "bms_delay", "bms_garbage", "bms_out_of_range", "can_bus_off", "thermal_runaway", "inverter_fault",
                     "modbus_silence", "modbus_delay", "bms_values", "frequency_loss", "bms_group_silence", "meter_silence",
                     "meter_delay", "meter_garbage"] {
            let injected = yaml.components(separatedBy: "fault: \(kind),").count - 1
            #expect(injected >= 3, "\(kind) injected \(injected) times")
        }
        // The latching fault is reset by the operator after each time it latched.
        #expect(yaml.components(separatedBy: "reset: true").count - 1 == yaml.components(separatedBy: "fault: thermal_runaway,").count - 1)
    }

    @Test("a 90 s soak without CAN: reload applied, no outage loss, fault raised and cleared, coverage short")
    func shortRun() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Self.soak(["--without-can", "--minutes", "1.5", "--period-ms", "100", "--reload-every", "30",
                                    "--outage-every", "40", "--outage-length", "10", "--warm-up", "20", "--output", directory])
        let report = (try? String(contentsOfFile: directory + "/soak.md", encoding: .utf8)) ?? ""
        // Eleven of fifteen kinds can run without CAN: the verdict must say the soak is not complete.
        #expect(result.status == 1, "\(result.out)")
        #expect(report.contains("**Verdict: fail**"), "\(report)")
        #expect(report.contains("| reloads (SIGHUP, droop 4 % ↔ 5 %) | 1 of 1 applied | every one applied | met |"), "\(report)")
        #expect(report.contains("| uplink across 1 outage(s) of 10 s |"), "\(report)")
        let uplink = report.split(separator: "\n").first { $0.hasPrefix("| uplink across") }.map(String.init) ?? ""
        #expect(uplink.hasSuffix("| met |"), "\(uplink)")
        #expect(uplink.contains(" 0 missing, 0 stored twice; backlog 0"), "\(uplink)")
        #expect(report.contains("| `bms_silence` | 1 | 1 | 1 | BMS_COMM_LOST |"), "\(report)")
        #expect(report.contains("1/1 raised, 1/1 cleared; 1 of 15 kinds | every fault of every kind | **missed** |"), "\(report)")
        #expect(report.contains("| scenario expectations | 3 of 3 met | all | met |"), "\(report)")
        let rows = try String(contentsOfFile: directory + "/soak-resources.csv", encoding: .utf8).split(separator: "\n")
        #expect(rows.count > 60, "one resource sample a second")
        let rss = rows.dropFirst().compactMap { Int($0.split(separator: ",")[1]) }
        #expect(rss.allSatisfy { $0 > 1000 }, "RSS read from /proc")
    }
}
