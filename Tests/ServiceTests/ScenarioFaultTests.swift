import BessSystem
import ControlCore
import Fieldbus
import Foundation
import Simulation
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
import Testing

@Suite("Fault injection for scenarios")
struct ScenarioFaultTests {
    /// One simulated unit; each test adds its faults.
    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n"

    @Test("bms_values: the BMS reports the given values inside the window, the model's outside")
    func bmsValues() throws {
        let c = try ConfigLoader.parse(Self.unit + """
            simulation:
              faults:
                - kind: bms_values
                  at_s: 10
                  duration_s: 5
                  bms: {temperature_max_c: 58, soc_percent: 96, protections: [system_error], discharge_enabled: false}
                - kind: frequency_loss
                  at_s: 20
            """, file: "faults.yaml")
        #expect(c.simulation.activeBMSOverride(at: .seconds(9), unitID: "U1").isEmpty)
        // The window is [at_s, at_s + duration_s): on at 10 s itself, off at 15 s itself.
        #expect(c.simulation.activeBMSOverride(at: .seconds(10) - .nanoseconds(1), unitID: "U1").isEmpty)
        #expect(!c.simulation.activeBMSOverride(at: .seconds(10), unitID: "U1").isEmpty)
        #expect(!c.simulation.activeBMSOverride(at: .seconds(15) - .nanoseconds(1), unitID: "U1").isEmpty)
        #expect(c.simulation.activeBMSOverride(at: .seconds(15), unitID: "U1").isEmpty)
        let o = c.simulation.activeBMSOverride(at: .seconds(12), unitID: "U1")
        #expect(o.temperatureMax == 58 && o.socPercent == 96 && o.protections == [.systemError] && o.dischargeEnabled == false)
        #expect(c.simulation.activeBMSOverride(at: .milliseconds(15_100), unitID: "U1").isEmpty)
        #expect(c.simulation.activeFaults(at: .seconds(21), unitID: "U1").contains(.frequencyLoss))
        #expect(!c.simulation.activeFaults(at: .seconds(19), unitID: "U1").contains(.frequencyLoss))

        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        unit.bmsOverride = o
        let snapshot = unit.bmsSnapshot(at: MonotonicInstant(nanoseconds: 0))
        #expect(snapshot.cells?.value.maxTemperature.value == 58)
        #expect(snapshot.status?.value.soc.value == 96)
        #expect(snapshot.protection?.value.protections == [.systemError])
        #expect(snapshot.requests?.value.dischargeEnabled == false)
        // The same values go out on CAN, and the decoder reads them back.
        let state = unit.pylontechState
        #expect(state.maxCellTemperature == 58 && state.soc == 96 && !state.dischargeEnabled)
        unit.bmsOverride = BMSOverride()
        #expect(unit.bmsSnapshot(at: MonotonicInstant(nanoseconds: 0)).status?.value.soc.value == 60)
    }

    @Test("bms_group_silence: a group absent inside the window is warned by name, simulated and on CAN")
    func bmsGroupSilence() throws {
        let c = try ConfigLoader.parse(Self.unit + """
            simulation:
              hottest_cell_above_pack_c: 3
              faults:
                - {kind: bms_group_silence, group: cells, at_s: 10, duration_s: 5}
                - {kind: bms_group_silence, group: requests, at_s: 12, duration_s: 5}
            """, file: "faults.yaml")
        #expect(c.simulation.hottestCellAbovePackK == 3)
        #expect(c.simulation.activeSilencedGroups(at: .seconds(9), unitID: "U1").isEmpty)
        #expect(c.simulation.activeSilencedGroups(at: .seconds(11), unitID: "U1") == .cells)
        #expect(c.simulation.activeSilencedGroups(at: .seconds(13), unitID: "U1") == [.cells, .requests])
        #expect(c.simulation.activeSilencedGroups(at: .seconds(16), unitID: "U1") == .requests)

        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60,
                                 hottestCellAbovePackK: c.simulation.hottestCellAbovePackK)
        var snapshot = unit.bmsSnapshot(at: MonotonicInstant(nanoseconds: 0))
        let pack = try #require(snapshot.measurements?.value.temperature.value)
        let hottest = try #require(snapshot.cells?.value.maxTemperature.value)
        #expect(abs(hottest - pack - 3) < 1e-9, "hottest cell \(hottest) °C, pack \(pack) °C")
        #expect(abs(unit.pylontechState.maxCellTemperature - unit.pylontechState.temperature - 3) < 1e-9)
        unit.silentGroups = c.simulation.activeSilencedGroups(at: .seconds(13), unitID: "U1")
        snapshot = unit.bmsSnapshot(at: MonotonicInstant(nanoseconds: 0))
        #expect(snapshot.cells == nil && snapshot.requests == nil)
        #expect(snapshot.protection != nil && snapshot.limits != nil && snapshot.measurements != nil)

        let event = ControlEvent(kind: .raised, unit: 0, code: .bmsGroupMissing, severity: .warn,
                                 metric: .bmsGroupsMissing, value: Double(BMSGroups([.cells, .requests]).rawValue),
                                 threshold: 0.5, at: .zero)
        let line = EventText.line(event, unitID: "U1")
        #expect(line.contains("U1 BMS_GROUP_MISSING warning"))
        #expect(line.hasSuffix("(missing: 0x373 cells, 0x35C requests)"), "\(line)")
    }

    @Test("every interlock code is tripped (or raised) and cleared by some scenario in hil/scenarios/")
    func everyRuleHasAScenario() throws {
        let directory = Package.root.appendingPathComponent("hil/scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
        var raised = Set<String>()
        var cleared = Set<String>()
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("expect") || line.trimmingCharacters(in: .whitespaces).hasPrefix("- {") {
                for code in TripCode.allCases {
                    let name = "\(code.name)"
                    guard line.contains(name) else { continue }
                    if line.contains("active: \(name)") && !line.contains("inactive: \(name)") || line.contains(" latched: \(name)") {
                        raised.insert(name)
                    }
                    if line.contains("inactive: \(name)") || line.contains("not_latched: \(name)") { cleared.insert(name) }
                }
            }
        }
        // Every code of the interlock table (LATCH_STATE_CORRUPT is no rule: DaemonTests restart on a damaged file).
        for code in InterlockRule.defaultTable().map(\.code) {
            #expect(raised.contains("\(code.name)"), "no scenario expects \(code.name) to act")
            #expect(cleared.contains("\(code.name)"), "no scenario expects \(code.name) to clear")
        }
    }
}
