@testable import Config
import ControlCore
import Cycle
import Foundation
import TestSupport
import Testing

/// `schedule:` as the configuration file states it (config/bessd.yaml, docs/optimiser.md).
@Suite("Schedule (configuration)")
struct ScheduleConfigTests {
    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n"

    @Test("left out: no schedule layer; `schedule: {}`: 900 s blocks, the application as fallback, gate 0 align 1")
    func defaults() throws {
        let none = try ConfigLoader.parse(Self.unit, file: "n.yaml")
        #expect(none.schedule == nil)
        #expect(none.cycleSettings.schedule == nil)
        let plain = try ConfigLoader.parse(Self.unit + "schedule: {}\n", file: "p.yaml")
        let schedule = try #require(plain.schedule)
        #expect(schedule.blockSeconds == 900 && schedule.fallback == .application)
        #expect(schedule.revisionGateBlocks == 0 && schedule.revisionGateAlign == 1)
        #expect(plain.cycleSettings.schedule?.lengthSeconds == 900)
        #expect(plain.cycleSettings.schedule?.fallback == .application)
    }

    @Test("every key reaches the configuration, the cycle's settings and the gate")
    func keys() throws {
        let set = try ConfigLoader.parse(Self.unit + """
            schedule:
              block_s: 60
              fallback: zero
              revision_gate_blocks: 6
              revision_gate_align: 2
            """, file: "s.yaml")
        let schedule = try #require(set.schedule)
        #expect(schedule == ScheduleConfiguration(blockSeconds: 60, fallback: .zero, revisionGateBlocks: 6, revisionGateAlign: 2))
        #expect(set.cycleSettings.schedule?.lengthSeconds == 60 && set.cycleSettings.schedule?.fallback == .zero)
        let gate = schedule.gate(utcOffsetSeconds: 19_800)
        #expect(gate.blocks == 6 && gate.align == 2 && gate.utcOffsetSeconds == 19_800)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var yaml: String
        var line: Int
        var keyPath: String
        var message: String
        var testDescription: String { "\(keyPath): \(message)" }
    }

    static let badCases: [Bad] = [
        Bad(yaml: "schedule:\n  block_s: 30\n", line: 6, keyPath: "schedule.block_s", message: "must be from 60 to 3600 seconds"),
        Bad(yaml: "schedule:\n  block_s: 3601\n", line: 6, keyPath: "schedule.block_s", message: "must be from 60 to 3600 seconds"),
        Bad(yaml: "schedule:\n  block_s: 7\n", line: 6, keyPath: "schedule.block_s", message: "must be from 60 to 3600"),
        Bad(yaml: "schedule:\n  block_s: 700\n", line: 6, keyPath: "schedule.block_s", message: "must divide a day (86400 s)"),
        Bad(yaml: "schedule:\n  block_s: 900.5\n", line: 6, keyPath: "schedule.block_s", message: "expected a whole number"),
        Bad(yaml: "schedule:\n  block_s: fifteen\n", line: 6, keyPath: "schedule.block_s", message: "expected a whole number"),
        Bad(yaml: "schedule:\n  fallback: hold\n", line: 6, keyPath: "schedule.fallback", message: "must be one of application, zero"),
        Bad(yaml: "schedule:\n  block_s: 900\n  revision_gate_blocks: -1\n", line: 7, keyPath: "schedule.revision_gate_blocks",
            message: "must be from 0 to 96 blocks"),
        Bad(yaml: "schedule:\n  revision_gate_blocks: 97\n", line: 6, keyPath: "schedule.revision_gate_blocks",
            message: "must be from 0 to 96 blocks"),
        Bad(yaml: "schedule:\n  revision_gate_align: 0\n", line: 6, keyPath: "schedule.revision_gate_align",
            message: "must be from 1 to 96 blocks"),
        Bad(yaml: "schedule:\n  revision_gate_align: [2]\n", line: 6, keyPath: "schedule.revision_gate_align",
            message: "expected a whole number"),
        Bad(yaml: "schedule:\n  block_s: 900\n  gate: 6\n", line: 7, keyPath: "schedule.gate", message: "unknown key"),
        Bad(yaml: "schedule: 900\n", line: 5, keyPath: "schedule", message: "expected a mapping of keys"),
    ]

    @Test("a wrong type, a value out of range or an unknown key is refused at its line, with its key path",
          arguments: badCases)
    func refused(bad: Bad) {
        let error = #expect(throws: ConfigurationError.self) {
            _ = try ConfigLoader.parse(Self.unit + bad.yaml, file: "bad.yaml")
        }
        let diagnostics = error?.diagnostics ?? []
        #expect(diagnostics.count == 1, "\(String(describing: error))")
        #expect(diagnostics.first?.keyPath == bad.keyPath, "\(String(describing: error))")
        #expect(diagnostics.first?.line == bad.line, "\(String(describing: error))")
        #expect(diagnostics.first?.message.contains(bad.message) == true, "\(String(describing: error))")
    }

    @Test("config/bessd.yaml documents the section with every key (commented: no layer unless written in)")
    func reference() throws {
        let text = try String(contentsOf: Package.root.appendingPathComponent("config/bessd.yaml"), encoding: .utf8)
        #expect(text.contains("# schedule:\n"))
        for key in ScheduleConfiguration.keys.names { #expect(text.contains("#   \(key):"), "\(key)") }
    }
}
