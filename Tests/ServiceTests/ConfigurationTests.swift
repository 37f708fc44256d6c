import BessSystem
import ControlCore
import Fieldbus
import Foundation
import Simulation
@testable import Service
@testable import Cycle
@testable import Config
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    /// The seed design's example blocks, exactly as the issue gives them, pasted together.
    static let seedText = """
        mode: simulation  # or 'hardware'
        bess_units:
          - id: BESS_DC01_01
            campus_id: CAMPUS_MUMBAI_ANDHERI
            modbus:
              host: 192.168.1.100
              port: 502
            capacity_kwh: 250
            max_power_kw: 100
        grid_integration:
          mode: simulation  # or 'posoco', 'pmu'
          frequency_source: simulated
          scada_enabled: false
          droop_settings:
            deadband_hz: [49.9, 50.05]
            droop_percent: 5.0
        """

    @Test("the seed design's blocks load unchanged, with a notice for scada_enabled")
    func seedLoads() throws {
        let c = try ConfigLoader.parse(Self.seedText, file: "seed.yaml")
        #expect(c.mode == .simulation)
        #expect(c.units.count == 1)
        let unit = c.units[0]
        #expect(unit.id == "BESS_DC01_01")
        #expect(unit.campusID == "CAMPUS_MUMBAI_ANDHERI")
        #expect(unit.modbus == ModbusSettings(transport: .tcp(host: "192.168.1.100", port: 502), unitID: 1, timeoutMs: 500))
        #expect(unit.capacityKWh == 250 && unit.maxPowerKW == 100)
        #expect(c.grid.droop.deadbandLow == Hertz(49.9) && c.grid.droop.deadbandHigh == Hertz(50.05))
        #expect(c.grid.droop.droopUnderPercent == 5 && c.grid.droop.droopOverPercent == 5)
        #expect(c.grid.droop.reference == .edge)
        #expect(c.periodMs == 100)
        #expect(c.controlSocket == "/run/bessd/control.sock")
        #expect(c.notices.count == 1)
        #expect(c.notices.first?.keyPath == "grid_integration.scada_enabled")
        #expect(c.notices.first?.line == 13)
        // config/seed.yaml is the same text.
        let file = try String(contentsOf: Package.root.appendingPathComponent("config/seed.yaml"), encoding: .utf8)
        #expect(file.contains(Self.seedText))
    }

    @Test("every file in config/ is valid")
    func shippedFilesValid() throws {
        let directory = Package.root.appendingPathComponent("config")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
        #expect(files.count >= 3)
        for file in files {
            do {
                _ = try ConfigLoader.load(path: directory.appendingPathComponent(file).path)
            } catch {
                Issue.record("config/\(file) is invalid:\n\(error)")
            }
        }
    }

    @Test("the embedded default is config/simulation.yaml, byte for byte")
    func embeddedMatchesFile() throws {
        let file = try String(contentsOf: Package.root.appendingPathComponent("config/simulation.yaml"), encoding: .utf8)
        #expect(EmbeddedConfiguration.simulationYAML + "\n" == file,
                "run scripts/embed-default-config.sh after editing config/simulation.yaml")
        let c = try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
        #expect(c.mode == .simulation)
        #expect(c.units.count >= 1)
    }

    @Test("the reference file documents every key the loader reads")
    func referenceHasEveryKey() throws {
        let text = try String(contentsOf: Package.root.appendingPathComponent("config/bessd.yaml"), encoding: .utf8)
        for section in ConfigKeys.all {
            for key in section.names {
                // Written as a key: at a line's start (commented or not, a list item's) or in a flow mapping.
                let documented = text.contains(try Regex("(?m)(^|[\\s{,#-])\(key):"))
                #expect(documented, "config/bessd.yaml lacks \(key): (\(section.section))")
            }
        }
        for kind in FaultInjection.Kind.allCases {
            let documented = text.contains(kind.rawValue)
            #expect(documented, "config/bessd.yaml lacks the fault kind \(kind.rawValue)")
        }
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let name: String
        let yaml: String
        let line: Int?
        let keyPath: String
        let message: String
        var testDescription: String { name }
    }

    static let unit = "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n"

    static let badCases: [Bad] = [
        Bad(name: "unknown top-level key", yaml: unit + "colour: blue\n", line: 5, keyPath: "colour", message: "unknown key"),
        Bad(name: "period too short", yaml: "period_ms: 5\n" + unit, line: 1, keyPath: "period_ms", message: "from 10 to 1000"),
        Bad(name: "period too long", yaml: "period_ms: 1001\n" + unit, line: 1, keyPath: "period_ms", message: "from 10 to 1000"),
        Bad(name: "period not a number", yaml: "period_ms: fast\n" + unit, line: 1, keyPath: "period_ms", message: "whole number"),
        Bad(name: "negative power", yaml: "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: -100\n",
            line: 4, keyPath: "bess_units[0].max_power_kw", message: "greater than 0"),
        Bad(name: "capacity as text", yaml: "bess_units:\n  - id: U1\n    capacity_kwh: big\n    max_power_kw: 100\n",
            line: 3, keyPath: "bess_units[0].capacity_kwh", message: "expected a number"),
        Bad(name: "inverted deadband",
            yaml: unit + "grid_integration:\n  droop_settings:\n    deadband_hz: [50.05, 49.9]\n",
            line: 7, keyPath: "grid_integration.droop_settings.deadband_hz", message: "low edge"),
        Bad(name: "deadband of one value",
            yaml: unit + "grid_integration:\n  droop_settings:\n    deadband_hz: [49.9]\n",
            line: 7, keyPath: "grid_integration.droop_settings.deadband_hz", message: "two numbers"),
        Bad(name: "unknown droop reference",
            yaml: unit + "grid_integration:\n  droop_settings:\n    reference: middle\n",
            line: 7, keyPath: "grid_integration.droop_settings.reference", message: "edge, nominal"),
        Bad(name: "wrong mode", yaml: "mode: production\n" + unit, line: 1, keyPath: "mode", message: "simulation, hil, hardware"),
        Bad(name: "no units", yaml: "mode: simulation\n", line: 1, keyPath: "bess_units", message: "required"),
        Bad(name: "duplicate unit id",
            yaml: unit + "  - id: U1\n    capacity_kwh: 5\n    max_power_kw: 5\n", line: 5, keyPath: "bess_units[1].id",
            message: "duplicates"),
        Bad(name: "port out of range",
            yaml: "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n    modbus:\n      host: h\n      port: 0\n",
            line: 7, keyPath: "bess_units[0].modbus.port", message: "from 1 to 65535"),
        Bad(name: "host and device together",
            yaml: "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n    modbus:\n      host: h\n      device: /dev/ttyUSB0\n",
            line: 7, keyPath: "bess_units[0].modbus.device", message: "not both"),
        Bad(name: "RTU unit id 0",
            yaml: "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n    modbus:\n      device: /dev/ttyUSB0\n      unit_id: 0\n",
            line: 7, keyPath: "bess_units[0].modbus.unit_id", message: "from 1 to 247"),
        Bad(name: "non-standard baud",
            yaml: "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n    modbus:\n      device: /dev/ttyUSB0\n      baud: 10000\n",
            line: 7, keyPath: "bess_units[0].modbus.baud", message: "standard rate"),
        Bad(name: "CAN interface name too long",
            yaml: "bess_units:\n  - id: U1\n    capacity_kwh: 250\n    max_power_kw: 100\n    bms:\n      interface: a_very_long_can_name\n",
            line: 6, keyPath: "bess_units[0].bms.interface", message: "15 characters"),
        Bad(name: "hardware inverter without modbus", yaml: "mode: hardware\n" + unit, line: 3, keyPath: "bess_units[0].modbus",
            message: "required"),
        // Hardware mode never runs on a simulated input.
        Bad(name: "hardware with a simulated frequency",
            yaml: "mode: hardware\n" + unit + "    modbus: {host: 10.0.0.5}\ngrid_integration:\n  frequency_source: simulated\n",
            line: 8, keyPath: "grid_integration.frequency_source", message: "not allowed in mode hardware; use mode hil"),
        Bad(name: "hardware with a simulated BMS",
            yaml: "mode: hardware\n" + unit + "    modbus: {host: 10.0.0.5}\n    bms: {simulated: true}\n",
            line: 7, keyPath: "bess_units[0].bms.simulated", message: "not allowed in mode hardware; use mode hil"),
        Bad(name: "hardware with a simulated inverter",
            yaml: "mode: hardware\n" + unit + "    inverter:\n      simulated: true\n",
            line: 7, keyPath: "bess_units[0].inverter.simulated", message: "not allowed in mode hardware; use mode hil"),
        Bad(name: "hardware with a fault schedule",
            yaml: "mode: hardware\n" + unit + "    modbus: {host: 10.0.0.5}\nsimulation:\n  faults:\n    - {kind: bms_silence, at_s: 5}\n",
            line: 9, keyPath: "simulation.faults", message: "not allowed in mode hardware; use mode hil"),
        Bad(name: "max_power_kw left empty (make fuzz: it loaded as a site of 0 units)",
            yaml: "bess_units:\n  - id: A\n    capacity_kwh: 250\n    max_power_kw:\n", line: 4,
            keyPath: "bess_units[0].max_power_kw", message: "is required"),
        Bad(name: "capacity_kwh and id left empty",
            yaml: "bess_units:\n  - max_power_kw: 5\n    capacity_kwh: ~\n    id:\n", line: 3,
            keyPath: "bess_units[0].capacity_kwh", message: "is required"),
        Bad(name: "empty unit list (nothing)", yaml: "mode: simulation\nbess_units:\n", line: nil, keyPath: "bess_units",
            message: "list at least one unit"),
        Bad(name: "empty unit list ([])", yaml: "mode: simulation\nbess_units: []\n", line: 2, keyPath: "bess_units",
            message: "list at least one unit"),
        Bad(name: "empty unit list (~)", yaml: "mode: simulation\nbess_units: ~\n", line: 2, keyPath: "bess_units",
            message: "list at least one unit"),
        Bad(name: "unknown interlock", yaml: unit + "interlocks:\n  no_such_rule: {threshold: 1}\n", line: 6,
            keyPath: "interlocks.no_such_rule", message: "unknown interlock"),
        Bad(name: "latch cannot be disabled", yaml: unit + "interlocks:\n  thermal_runaway:\n    enabled: false\n", line: 7,
            keyPath: "interlocks.thermal_runaway.enabled", message: "cannot be disabled"),
        Bad(name: "stale-data trip cannot be disabled", yaml: unit + "interlocks:\n  BMS_COMM_LOST:\n    enabled: false\n",
            line: 7, keyPath: "interlocks.BMS_COMM_LOST.enabled", message: "cannot be disabled"),
        Bad(name: "a latch's severity lowered", yaml: unit + "interlocks:\n  thermal_runaway:\n    severity: trip\n", line: 7,
            keyPath: "interlocks.thermal_runaway.severity", message: "cannot be lowered"),
        Bad(name: "a rule made a latch and disabled",
            yaml: unit + "interlocks:\n  overtemperature:\n    severity: latch\n    enabled: false\n", line: 8,
            keyPath: "interlocks.overtemperature.enabled", message: "cannot be disabled"),
        Bad(name: "a temperature no battery reaches", yaml: unit + "interlocks:\n  overtemperature:\n    threshold: 900\n", line: 7,
            keyPath: "interlocks.overtemperature.threshold", message: "from -60 to 200"),
        Bad(name: "a cell voltage given in millivolts", yaml: unit + "interlocks:\n  cell_overvoltage:\n    threshold: 3650\n", line: 7,
            keyPath: "interlocks.cell_overvoltage.threshold", message: "from 0 to 5"),
        Bad(name: "an SOC above 100 %", yaml: unit + "interlocks:\n  soc_high:\n    derate_start: 90\n    severity: derate\n    threshold: 101\n",
            line: 9, keyPath: "interlocks.soc_high.threshold", message: "from 0 to 100"),
        Bad(name: "derate start on the wrong side",
            yaml: unit + "interlocks:\n  temperature_high_derate:\n    derate_start: 60\n", line: 7,
            keyPath: "interlocks.temperature_high_derate.derate_start", message: "below the threshold"),
        Bad(name: "aggregator URL", yaml: unit + "aggregator:\n  url: ftp://x\n", line: 6, keyPath: "aggregator.url",
            message: "http"),
        Bad(name: "bms_values without values",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_values\n      at_s: 1\n", line: nil,
            keyPath: "simulation.faults[0].bms", message: "is required"),
        Bad(name: "bms_values with an unknown condition",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_values\n      bms: {protections: [on_fire]}\n", line: nil,
            keyPath: "simulation.faults[0].bms.protections", message: "unknown condition"),
        Bad(name: "bms values on another fault kind",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_silence\n      bms: {soc_percent: 50}\n", line: nil,
            keyPath: "simulation.faults[0].bms", message: "only to kind: bms_values"),
        Bad(name: "bms_values SOC out of range",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_values\n      bms: {soc_percent: 150}\n", line: nil,
            keyPath: "simulation.faults[0].bms.soc_percent", message: "from 0 to 100"),
        Bad(name: "bms_group_silence without a group",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_group_silence\n      at_s: 1\n", line: nil,
            keyPath: "simulation.faults[0].group", message: "is required for bms_group_silence"),
        Bad(name: "bms_group_silence with an unknown group",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_group_silence\n      group: limits\n", line: nil,
            keyPath: "simulation.faults[0].group", message: "cells, protection, requests"),
        Bad(name: "group on another fault kind",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_silence\n      group: cells\n", line: nil,
            keyPath: "simulation.faults[0].group", message: "only to kind: bms_group_silence"),
        Bad(name: "bms_values naming nothing",
            yaml: unit + "simulation:\n  faults:\n    - kind: bms_values\n      bms: {}\n", line: nil,
            keyPath: "simulation.faults[0].bms", message: "names no value"),
        Bad(name: "two settings for one serial line",
            yaml: "mode: hil\nbess_units:\n"
                + "  - {id: A, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true}, modbus: {device: /dev/ttyBESS0, baud: 9600, unit_id: 1}}\n"
                + "  - {id: B, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true}, modbus: {device: /dev/ttyBESS0, baud: 19200, unit_id: 2}}\n",
            line: 4, keyPath: "bess_units[1].modbus.device", message: "whose line settings differ (9600 8E1)"),
        Bad(name: "two units on one inverter",
            yaml: "mode: hil\nbess_units:\n"
                + "  - {id: A, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true}, modbus: {host: 10.0.0.5, unit_id: 3}}\n"
                + "  - {id: B, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true}, modbus: {host: 10.0.0.5, port: 502, unit_id: 3}}\n",
            line: 4, keyPath: "bess_units[1].modbus.unit_id", message: "is the same device as bess_units[0]"),
        Bad(name: "SCADA without listen", yaml: unit + "scada:\n  unit_id: 3\n", line: nil,
            keyPath: "scada.listen", message: "is required"),
        Bad(name: "SCADA listening on a name", yaml: unit + "scada:\n  listen: scada.local:502\n", line: 6,
            keyPath: "scada.listen", message: "must be IPV4:PORT"),
        Bad(name: "SCADA allow_from that is no network", yaml: unit + "scada:\n  listen: 0.0.0.0:502\n  allow_from: [10.0.0.0/33]\n",
            line: 7, keyPath: "scada.allow_from[0]", message: "must be an IPv4 address or network"),
        Bad(name: "SCADA writes open to every address", yaml: unit + "scada:\n  listen: 0.0.0.0:502\n  allow_from: [0.0.0.0/0]\n  writes: true\n",
            line: 8, keyPath: "scada.writes", message: "needs allow_from to name the SCADA hosts"),
        Bad(name: "relay contacts: five of them", yaml: unit + "grid_operator:\n  inputs:\n    modbus: {host: 10.0.0.9}\n    contacts: [{input: 0, limit_percent: 0}, {input: 1, limit_percent: 30}, {input: 2, limit_percent: 60}, {input: 3, limit_percent: 90}, {input: 4, limit_percent: 100}]\n",
            line: 8, keyPath: "grid_operator.inputs.contacts", message: "lists one to four relay contacts"),
        Bad(name: "relay contacts: one input twice", yaml: unit + "grid_operator:\n  inputs:\n    modbus: {host: 10.0.0.9}\n    contacts:\n      - {input: 2, limit_percent: 0}\n      - {input: 2, limit_percent: 60}\n",
            line: 10, keyPath: "grid_operator.inputs.contacts[1].input", message: "is contacts[0]'s input too"),
        Bad(name: "relay contacts: a limit above 100 %", yaml: unit + "grid_operator:\n  inputs:\n    modbus: {host: 10.0.0.9}\n    contacts: [{input: 0, limit_percent: 130}]\n",
            line: 8, keyPath: "grid_operator.inputs.contacts[0].limit_percent", message: "100"),
        Bad(name: "relay contacts without their module", yaml: unit + "grid_operator:\n  inputs:\n    contacts: [{input: 0, limit_percent: 0}]\n",
            line: 7, keyPath: "grid_operator.inputs.modbus", message: "is required"),
        Bad(name: "SCADA unit id out of range", yaml: unit + "scada:\n  listen: 0.0.0.0:502\n  unit_id: 0\n",
            line: 7, keyPath: "scada.unit_id", message: "1"),
        Bad(name: "SCADA's serial line on a unit's line",
            yaml: "mode: hil\nbess_units:\n"
                + "  - {id: A, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true}, modbus: {device: /dev/ttyBESS0, unit_id: 1}}\n"
                + "scada:\n  listen: 0.0.0.0:502\n  serial: {device: /dev/ttyBESS0, unit_id: 2}\n",
            line: 6, keyPath: "scada.serial.device", message: "SCADA needs a serial line of its own"),
        Bad(name: "a meter model that is no meter", yaml: unit + "simulation:\n  meter_model: 103\n", line: 6,
            keyPath: "simulation.meter_model", message: "must be one of 201, 202, 203, 204"),
        Bad(name: "grid limits without a meter", yaml: unit + "site:\n  grid_limits: {import_max_kw: 100}\n", line: nil,
            keyPath: "site.grid_limits", message: "needs site.meter"),
        Bad(name: "an application without a meter", yaml: unit + "site:\n  application: self_consumption\n", line: nil,
            keyPath: "site.application", message: "needs site.meter"),
        Bad(name: "peak shaving without its limit", yaml: unit + "site:\n  meter: {protocol: sunspec}\n  application: peak_shaving\n",
            line: nil, keyPath: "site.peak_shaving.import_max_kw", message: "is required for application: peak_shaving"),
        Bad(name: "recharge above the peak", yaml: unit + "site:\n  meter: {protocol: sunspec}\n  application: peak_shaving\n"
                + "  peak_shaving:\n    import_max_kw: 100\n    recharge_below_kw: 150\n",
            line: nil, keyPath: "site.peak_shaving.recharge_below_kw", message: "must not be above peak_shaving.import_max_kw"),
        Bad(name: "self_consumption keys under peak shaving", yaml: unit + "site:\n  meter: {protocol: sunspec}\n  application: peak_shaving\n"
                + "  peak_shaving: {import_max_kw: 100}\n  self_consumption: {target_grid_kw: 0}\n",
            line: nil, keyPath: "site.self_consumption", message: "applies only to application: self_consumption"),
        Bad(name: "a negative import limit", yaml: unit + "site:\n  meter: {protocol: sunspec}\n  grid_limits: {import_max_kw: -5}\n",
            line: nil, keyPath: "site.grid_limits.import_max_kw", message: "from 0"),
        Bad(name: "SOC reserve above 100 %", yaml: unit + "site:\n  meter: {protocol: sunspec}\n  soc_reserve_percent: 120\n",
            line: nil, keyPath: "site.soc_reserve_percent", message: "from 0 to 100"),
        Bad(name: "a real meter without modbus in hil", yaml: "mode: hil\nbess_units:\n"
                + "  - {id: A, capacity_kwh: 10, max_power_kw: 5, inverter: {simulated: true}, bms: {simulated: true}}\n"
                + "site:\n  meter:\n    protocol: sunspec\n",
            line: nil, keyPath: "site.meter.modbus", message: "is required for a real meter in mode hil"),
        Bad(name: "a simulated meter in hardware mode", yaml: "mode: hardware\nbess_units:\n"
                + "  - {id: A, capacity_kwh: 10, max_power_kw: 5, modbus: {host: 10.0.0.5, unit_id: 3}}\n"
                + "site:\n  meter:\n    simulated: true\n    modbus: {host: 10.0.0.5, unit_id: 4}\n",
            line: 6, keyPath: "site.meter.simulated", message: "not allowed in mode hardware"),
        Bad(name: "the meter on an inverter's address", yaml: "mode: hil\nbess_units:\n"
                + "  - {id: A, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true}, modbus: {host: 10.0.0.5, unit_id: 3}}\n"
                + "site:\n  meter:\n    modbus: {host: 10.0.0.5, unit_id: 3}\n",
            line: 6, keyPath: "site.meter.modbus.unit_id", message: "is the same device as bess_units[0]'s inverter"),
        Bad(name: "a register-map meter without its power register", yaml: unit + "site:\n  meter:\n    protocol: register_map\n"
                + "    register_map: {frequency: {address: 10}}\n",
            line: nil, keyPath: "site.meter.register_map.power", message: "is required"),
        Bad(name: "frequency from a meter that is not there", yaml: unit + "grid_integration:\n  frequency_source: meter\n",
            line: nil, keyPath: "grid_integration.frequency_source", message: "needs site.meter"),
        Bad(name: "a meter fault naming a unit", yaml: unit + "site:\n  meter: {protocol: sunspec}\nsimulation:\n  faults:\n"
                + "    - {kind: meter_delay, delay_s: 1, unit: A}\n",
            line: nil, keyPath: "simulation.faults[0].unit", message: "names no unit"),
        Bad(name: "a meter fault without a meter", yaml: unit + "simulation:\n  faults:\n    - {kind: meter_silence}\n",
            line: nil, keyPath: "simulation.faults[0].kind", message: "needs site.meter"),
        Bad(name: "steps without levels", yaml: unit + "simulation:\n  load: {profile: steps, base_kw: 10}\n",
            line: nil, keyPath: "simulation.load.levels_kw", message: "is required for profile: steps"),
        Bad(name: "negative PV", yaml: unit + "simulation:\n  pv: {base_kw: -3}\n",
            line: nil, keyPath: "simulation.pv.base_kw", message: "from 0"),
        Bad(name: "an http URL for the MQTT transport", yaml: unit + "aggregator: {transport: mqtt, url: \"https://a.example\"}\n",
            line: nil, keyPath: "aggregator.url", message: "must be an mqtt://host[:port] or mqtts://host[:port] URL"),
        Bad(name: "an MQTT port out of range", yaml: unit + "aggregator: {transport: mqtt, url: \"mqtt://b:70000\"}\n",
            line: nil, keyPath: "aggregator.url", message: "mqtts://host[:port] URL"),
        Bad(name: "an unknown transport", yaml: unit + "aggregator: {transport: amqp, url: \"https://a.example\"}\n",
            line: nil, keyPath: "aggregator.transport", message: "must be http or mqtt"),
        Bad(name: "an MQTT key on the HTTP transport", yaml: unit + "aggregator: {url: \"https://a.example\", keepalive_s: 30}\n",
            line: nil, keyPath: "aggregator.keepalive_s", message: "applies to transport: mqtt only"),
        Bad(name: "a bearer token on the MQTT transport", yaml: unit + "aggregator: {transport: mqtt, url: \"mqtt://b\", token_file: /t}\n",
            line: nil, keyPath: "aggregator.token_file", message: "applies to transport: http only"),
        Bad(name: "YAML syntax", yaml: "bess_units: [\n", line: 2, keyPath: "", message: "YAML syntax error"),
        Bad(name: "duplicate key", yaml: unit + "period_ms: 100\nperiod_ms: 200\n", line: 6, keyPath: "",
            message: "duplicate key 'period_ms' (first at line 5)"),
        Bad(name: "a real-time CPU the machine lacks (any machine: the pin's mask ends at 1023)",
            yaml: unit + "realtime:\n  cpu: 1024\n", line: 6, keyPath: "realtime.cpu", message: "CPU 1024 does not exist: this machine has CPU"),
        Bad(name: "a real-time CPU as a word", yaml: unit + "realtime: {cpu: first}\n", line: 5, keyPath: "realtime.cpu",
            message: "must be a CPU number"),
        Bad(name: "a negative real-time CPU", yaml: unit + "realtime: {cpu: -1}\n", line: 5, keyPath: "realtime.cpu",
            message: "must be a CPU number"),
        Bad(name: "a list where a mapping belongs", yaml: "- a\n- b\n", line: 1, keyPath: "", message: "expected a mapping"),
        Bad(name: "empty file", yaml: "", line: 1, keyPath: "", message: "empty"),
    ]

    /// A file with one mistake, the line (and column) where it is, and the error's code.
    struct Located: Sendable, CustomTestStringConvertible {
        let name: String
        let yaml: String
        let line: Int
        let code: String
        let message: String
        var column: Int? = nil
        var testDescription: String { name }
    }

    /// A site in mode hardware whose indentation steps by two, as config/bessd.yaml's does.
    static let site = """
        mode: hardware
        bess_units:
          - id: U1
            capacity_kwh: 250
            max_power_kw: 100
            modbus:
              host: 10.0.0.1
              port: 502
        grid_integration:
          droop_settings:
            droop_percent: 5

        """

    /// `site` with line `number` (1-based) replaced by `text`.
    static func site(line number: Int, _ text: String) -> String {
        var lines = site.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[number - 1] = text
        return lines.joined(separator: "\n")
    }

    static let locatedCases: [Located] = [
        Located(name: "a key without its colon, a key following", yaml: site(line: 4, "    capacity_kwh 250"), line: 4,
                code: "CONFIG_SYNTAX", message: "a key without its ':'"),
        Located(name: "a key without its colon, a comment and a blank line following",
                yaml: "mode: hil\nperiod_ms 100\n\n# the units\nbess_units: []\n", line: 2,
                code: "CONFIG_SYNTAX", message: "a key without its ':'"),
        Located(name: "a key without its colon over a key of the same indentation", yaml: site(line: 1, "mode hardware"),
                line: 1, code: "CONFIG_SYNTAX", message: "a key without its ':'"),
        Located(name: "a parent key without its colon", yaml: site(line: 9, "grid_integration"), line: 9,
                code: "CONFIG_SYNTAX", message: "a key without its ':'"),
        Located(name: "a block's first line indented one too deep", yaml: site(line: 7, "       host: 10.0.0.1"), line: 7,
                code: "CONFIG_SYNTAX", message: "indented unlike the lines of its block"),
        Located(name: "a block's first line indented one too shallow", yaml: site(line: 7, "     host: 10.0.0.1"), line: 7,
                code: "CONFIG_SYNTAX", message: "indented unlike the lines of its block"),
        Located(name: "a list item indented one too deep", yaml: site(line: 3, "   - id: U1"), line: 3,
                code: "CONFIG_SYNTAX", message: "indented unlike the lines of its block"),
        Located(name: "the first line of the file indented", yaml: site(line: 1, " mode: hardware"), line: 1,
                code: "CONFIG_SYNTAX", message: "indented unlike the lines of its block"),
        Located(name: "a later line of a block indented too shallow", yaml: site(line: 8, "     port: 502"), line: 8,
                code: "CONFIG_SYNTAX", message: "did not find expected key"),
        Located(name: "a line indented too deep under a value", yaml: site(line: 5, "      max_power_kw: 100"), line: 5,
                code: "CONFIG_SYNTAX", message: "check this line's indentation"),
        Located(name: "a duplicate key, at its second occurrence", yaml: site + "period_ms: 100\nmode: hil\n", line: 13,
                code: "CONFIG_SYNTAX", message: "duplicate key 'mode' (first at line 1)"),
        Located(name: "a duplicate key in a unit, beside another duplicate",
                yaml: site(line: 5, "    max_power_kw: 100\n    capacity_kwh: 200\n    id: U2"), line: 6,
                code: "CONFIG_SYNTAX", message: "duplicate key 'capacity_kwh' (first at line 4)"),
        Located(name: "a duplicate key three times", yaml: "period_ms: 100\nperiod_ms: 200\nperiod_ms: 300\n", line: 2,
                code: "CONFIG_SYNTAX", message: "duplicate key 'period_ms' (first at line 1)"),
        Located(name: "a duplicate key in a flow mapping", yaml: site(line: 8, "      port: 502\n      rs: {a: 1,\n        a: 2}"),
                line: 10, code: "CONFIG_SYNTAX", message: "duplicate key 'a'"),
        Located(name: "an escape sequence pasted from a terminal", yaml: site(line: 7, "      host: 10.0.0.1\u{1B}[A"), line: 7,
                code: "CONFIG_SYNTAX", message: "control character U+001B at column 21", column: 21),
        Located(name: "a NUL after CRLF line ends", yaml: "mode: hil\r\nperiod_ms: 1\u{0}00\r\n", line: 2,
                code: "CONFIG_SYNTAX", message: "control character U+0000 at column 13", column: 13),
        Located(name: "one bad unit in a one-unit file, and nothing else", yaml: site(line: 4, "    capacity_kwh: -1"), line: 4,
                code: "CONFIG_INVALID", message: "bess_units[0].capacity_kwh: must be greater than 0"),
        Located(name: "an inverter host with an octet above 255", yaml: site(line: 7, "      host: 192.168.1.300"), line: 7,
                code: "CONFIG_INVALID", message: "bess_units[0].modbus.host: must be an IPv4 address, an IPv6 address or a host name; this is not an IPv4 address: 300 is above 255"),
        Located(name: "an inverter host of three numbers", yaml: site(line: 7, "      host: 10.0.1"), line: 7,
                code: "CONFIG_INVALID", message: "3 numbers where it has 4"),
        Located(name: "an inverter host that is no name", yaml: site(line: 7, "      host: inverter_1.site"), line: 7,
                code: "CONFIG_INVALID", message: "may hold only letters, digits"),
        Located(name: "an inverter host that is no IPv6 address", yaml: site(line: 7, "      host: \"fe80::1::2\""), line: 7,
                code: "CONFIG_INVALID", message: "is not an IPv6 address"),
        Located(name: "a meter host with an octet above 255",
                yaml: site + "site:\n  meter:\n    protocol: sunspec\n    modbus: {host: 10.0.0.256, unit_id: 2}\n", line: 15,
                code: "CONFIG_INVALID", message: "site.meter.modbus.host: must be an IPv4 address"),
        Located(name: "an aggregator URL whose host has an octet above 255",
                yaml: site + "aggregator:\n  url: http://10.1.2.300:8700\n", line: 13,
                code: "CONFIG_INVALID", message: "aggregator.url: must be an http:// or https:// URL with a valid host"),
        Located(name: "an MQTT broker whose host has an octet above 255",
                yaml: site + "aggregator:\n  transport: mqtt\n  url: mqtts://10.1.2.300:8883\n", line: 14,
                code: "CONFIG_INVALID", message: "aggregator.url: must be an mqtt://host[:port]"),
        Located(name: "metrics on an address with an octet above 255", yaml: site + "metrics_listen: 127.0.0.300:9464\n", line: 12,
                code: "CONFIG_INVALID", message: "metrics_listen: must be IPV4:PORT"),
    ]

    @Test("every error names the line of the mistake, YAML syntax included, and nothing else", arguments: locatedCases)
    func located(bad: Located) {
        do {
            _ = try ConfigLoader.parse(bad.yaml, file: "site.yaml")
            Issue.record("accepted a bad file")
        } catch {
            #expect(error.diagnostics.count == 1, "diagnostics were:\n\(error)")
            let first = error.diagnostics.first
            #expect(first?.line == bad.line, "\(error)")
            #expect(first.map { "\($0.code)" } == bad.code, "\(error)")
            #expect(first?.description.contains(bad.message) == true, "\(error)")
            #expect(first?.description.hasPrefix("site.yaml:\(bad.line): ") == true, "\(error)")
            if let column = bad.column { #expect(first?.message.contains("at column \(column) ") == true, "\(error)") }
        }
    }

    @Test("hosts: IPv4 and IPv6 literals and RFC 1123 names are accepted wherever a host is taken",
          arguments: ["192.168.1.30", "inverter-1.site.local", "::1", "fe80::1", "fe80::1%eth0", "localhost",
                      "255.255.255.255", "a.example.", "10.0.0.1a"])
    func hostAccepted(host: String) throws {
        let url = host.contains(":") ? "[\(host)]" : host
        let c = try ConfigLoader.parse(Self.site(line: 7, "      host: \(host)")
                                       + "aggregator:\n  transport: mqtt\n  url: mqtt://\(url):1883\n", file: "site.yaml")
        let expected = host
        #expect(c.units[0].modbus?.transport == .tcp(host: expected, port: 502))
    }

    @Test("realtime.cpu: last by default, a number, none; a CPU this machine lacks is named with the CPUs it has")
    func realtimeCPU() throws {
        let base = Self.unit + "realtime:\n  priority: 50\n"
        #expect(try ConfigLoader.parse(base, file: "rt.yaml").realtime?.cpu == .last)
        #expect(try ConfigLoader.parse(base + "  cpu: last\n", file: "rt.yaml").realtime?.cpu == .last)
        #expect(try ConfigLoader.parse(base + "  cpu: none\n", file: "rt.yaml").realtime?.cpu == RealtimeSettings.CPU.none)
        #expect(try ConfigLoader.parse(base + "  cpu: 0\n", file: "rt.yaml").realtime?.cpu == .index(0))
        #expect(try ConfigLoader.parse(Self.unit + "realtime: {priority: 50}\n", file: "rt.yaml").realtime?.cpu == .last)
        let machine = CurrentThread.machineCPUs
        do {
            _ = try ConfigLoader.parse(base + "  cpu: \(machine)\n", file: "rt.yaml")
            Issue.record("accepted CPU \(machine) on a machine of \(machine)")
        } catch {
            let text = machine == 1 ? "CPU 0" : "CPUs 0–\(machine - 1)"
            #expect(error.diagnostics.contains {
                $0.line == 7 && $0.keyPath == "realtime.cpu" && $0.message == "CPU \(machine) does not exist: this machine has \(text)"
            }, "\(error)")
        }
        // The rule itself, for machines of one and of four CPUs.
        #expect(ConfigLoader.cpuProblem(0, machineCPUs: 1) == nil)
        #expect(ConfigLoader.cpuProblem(1, machineCPUs: 1) == "CPU 1 does not exist: this machine has CPU 0")
        #expect(ConfigLoader.cpuProblem(3, machineCPUs: 4) == nil)
        #expect(ConfigLoader.cpuProblem(4, machineCPUs: 4) == "CPU 4 does not exist: this machine has CPUs 0–3")
    }

    @Test("bad files are refused with FILE:LINE: key.path: message (got X)", arguments: badCases)
    func refused(bad: Bad) {
        do {
            _ = try ConfigLoader.parse(bad.yaml, file: "bad.yaml")
            Issue.record("accepted a bad file")
        } catch {
            let match = error.diagnostics.first { $0.keyPath == bad.keyPath && $0.message.contains(bad.message) }
            #expect(match != nil, "diagnostics were:\n\(error)")
            if let match, let line = bad.line { #expect(match.line == line, "\(match)") }
            if let match {
                #expect(match.description.hasPrefix("bad.yaml:"))
                #expect(match.description.contains(": \(match.keyPath.isEmpty ? "(file)" : match.keyPath): "))
            }
        }
    }

    @Test("every top-level key left empty means its default or is refused naming it, never a silent refusal (make fuzz found grid_integration:)")
    func emptyKeys() {
        let keys = ["mode", "period_ms", "control_socket", "state_directory", "grid_integration", "limits", "interlocks",
                    "aggregator", "simulation", "realtime", "metrics_listen", "site", "scada", "grid_operator"]
        for key in keys {
            let yaml = "\(key):\nbess_units:\n  - {id: A, capacity_kwh: 1, max_power_kw: 1}\n"
            do {
                _ = try ConfigLoader.parse(yaml, file: "empty.yaml")
            } catch {
                #expect(!error.diagnostics.isEmpty && error.diagnostics.allSatisfy { $0.code != .unexplained },
                        "\(key): refused with \(error.diagnostics)")
                #expect(error.description.contains(key), "\(key): \(error)")
            }
        }
        #expect((try? ConfigLoader.parse("grid_integration:\nbess_units:\n  - {id: A, capacity_kwh: 1, max_power_kw: 1}\n",
                                         file: "empty.yaml")) != nil)
    }

    @Test("start-up grace and steady-state timeout: both read, both reach the control law, both bounded")
    func startupGrace() throws {
        let c = try ConfigLoader.parse("""
            mode: simulation
            bess_units:
              - id: U1
                capacity_kwh: 100
                max_power_kw: 50
                inverter: {stale_after_s: 2, startup_grace_s: 90}
                bms: {stale_after_s: 4, startup_grace_s: 300}
              - {id: U2, capacity_kwh: 100, max_power_kw: 50}
            """, file: "grace.yaml")
        #expect(c.units[0].bms.startupGraceSeconds == 300 && c.units[0].bms.staleAfterSeconds == 4)
        #expect(c.units[0].inverterStartupGraceSeconds == 90 && c.units[0].inverterStaleAfterSeconds == 2)
        #expect(c.units[1].bms.startupGraceSeconds == 30 && c.units[1].inverterStartupGraceSeconds == 30)
        let settings = c.unitSettings
        #expect(settings[0].bmsStartupGrace == .seconds(300) && settings[0].bmsStaleAfter == .seconds(4))
        #expect(settings[0].inverterStartupGrace == .seconds(90) && settings[0].inverterStaleAfter == .seconds(2))
        do {
            _ = try ConfigLoader.parse("""
                bess_units:
                  - {id: U1, capacity_kwh: 100, max_power_kw: 50, bms: {startup_grace_s: 7200}}
                """, file: "grace.yaml")
            Issue.record("a grace of 2 h was accepted")
        } catch {
            #expect(error.description.contains("grace.yaml:2: bess_units[0].bms.startup_grace_s:"), "\(error)")
        }
    }

    @Test("every error is reported, not only the first, in file order")
    func allErrors() {
        let yaml = "mode: x\nperiod_ms: 1\nbess_units:\n  - id: U1\n    capacity_kwh: -1\n    max_power_kw: 100\n"
        do {
            _ = try ConfigLoader.parse(yaml, file: "f.yaml")
            Issue.record("accepted")
        } catch {
            #expect(error.diagnostics.map(\.keyPath) == ["mode", "period_ms", "bess_units[0].capacity_kwh"])
            #expect(error.diagnostics[0].description == "f.yaml:1: mode: must be one of simulation, hil, hardware (got 'x')")
        }
    }

    @Test("interlock overrides reach the rule table")
    func overridesApplied() throws {
        let yaml = Self.unit + """
            interlocks:
              soc_high: {threshold: 90, hysteresis: 3, delay_s: 2, severity: trip}
              temperature_high_derate: {derate_start: 40, threshold: 50}
              bms_alarm: {enabled: false}
            """
        let c = try ConfigLoader.parse(yaml, file: "o.yaml")
        let rules = c.unitSettings[0].rules
        let soc = try #require(rules.first { $0.code == .socHigh })
        #expect(soc.threshold == 90 && soc.hysteresis == 3 && soc.delay == .seconds(2))
        let derate = try #require(rules.first { $0.code == .temperatureHighDerate })
        #expect(derate.severity == .derate(start: 40) && derate.threshold == 50)
        #expect(!rules.contains { $0.code == .bmsAlarm })
        #expect(rules.count == InterlockRule.defaultTable().count - 1)
    }

    @Test("RTU settings, per-direction droop and 60 Hz load")
    func rtuAndDroop() throws {
        let yaml = """
            mode: hardware
            bess_units:
              - id: U1
                capacity_kwh: 250
                max_power_kw: 100
                modbus: {device: /dev/rs485-inv1, baud: 19200, parity: none, stop_bits: 2, unit_id: 7, rs485: true}
            grid_integration:
              frequency_source: inverter
              droop_settings: {nominal_hz: 60, deadband_hz: [59.964, 60.036], droop_percent_under: 3, droop_percent_over: 4}
            """
        let c = try ConfigLoader.parse(yaml, file: "rtu.yaml")
        #expect(c.units[0].modbus == ModbusSettings(
            transport: .rtu(SerialSettings(device: "/dev/rs485-inv1", baud: 19200, parity: .none, dataBits: 8,
                                           stopBits: 2, rs485: true)), unitID: 7, timeoutMs: 500))
        #expect(c.grid.droop.nominal == Hertz(60))
        #expect(c.grid.droop.droopUnderPercent == 3 && c.grid.droop.droopOverPercent == 4)
        #expect(c.grid.frequencySource == .inverter)
    }
}

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

    @Test("modes: hardware reads frequency from the inverters; hil mixes; the seed's rig names mean hil")
    func modes() throws {
        let real = ConfigurationTests.unit + "    modbus: {host: 10.0.0.5}\n"
        let hardware = try ConfigLoader.parse("mode: hardware\n" + real, file: "h.yaml")
        #expect(hardware.mode == .hardware)
        #expect(hardware.grid.frequencySource == .inverter)
        #expect(!hardware.usesSimulation)
        #expect(!hardware.isSimulated(bmsOf: hardware.units[0]) && !hardware.isSimulated(inverterOf: hardware.units[0]))
        let hil = try ConfigLoader.parse("mode: hil\n" + real + "    bms: {simulated: true}\n", file: "m.yaml")
        #expect(hil.mode == .hil)
        #expect(hil.grid.frequencySource == .inverter)
        #expect(hil.isSimulated(bmsOf: hil.units[0]) && !hil.isSimulated(inverterOf: hil.units[0]))
        #expect(hil.usesSimulation)
        let simulation = try ConfigLoader.parse(ConfigurationTests.unit, file: "s.yaml")
        #expect(simulation.mode == .simulation && simulation.grid.frequencySource == .simulated)
        for alias in ["hardware-in-loop", "grid-connected-simulation"] {
            let c = try ConfigLoader.parse("mode: \(alias)\n" + real, file: "a.yaml")
            #expect(c.mode == .hil)
            #expect(c.notices.contains { $0.keyPath == "mode" && $0.message.contains("mode hil") })
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

@Suite("Register-map configuration")
struct RegisterMapConfigurationTests {
    let head = "mode: hil\nbess_units:\n  - id: U1\n    capacity_kwh: 10\n    max_power_kw: 5\n"
        + "    modbus: {host: 10.0.0.5}\n    bms: {simulated: true}\n    inverter:\n      protocol: register_map\n"

    @Test("a full map loads")
    func loads() throws {
        let yaml = head + """
                  register_map:
                    power: {address: 30775, type: int32}
                    frequency: {address: 30803, type: uint32, scale: 0.01}
                    fault: {address: 30201, type: uint16}
                    fault_values: [35, 455]
                    setpoint: {address: 40149, type: int32, word_order: low_first}
                    revert_timeout: {address: 40153, type: uint16}
                    enable: {address: 40151, type: uint16}
                    enable_value: 802
                    rating_kw: 5

            """
        let c = try ConfigLoader.parse(yaml, file: "map.yaml")
        let map = try #require(c.units[0].inverter.registerMap)
        #expect(map.setpoint == MappedRegister(address: 40149, type: .int32, scale: 1, lowWordFirst: true))
        #expect(map.faultValues == [35, 455])
        #expect(map.enableValue == 802)
        #expect(map.rating == .kilowatts(5))
    }

    @Test("a map without a revert timer is refused: the revert timer is always armed")
    func revertRequired() {
        let yaml = head + "      register_map:\n        power: {address: 1}\n        setpoint: {address: 2}\n"
        let error = #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(yaml, file: "map.yaml") }
        #expect(error?.diagnostics.contains { $0.keyPath == "bess_units[0].inverter.register_map.revert_timeout" } == true)
    }

    @Test("protocol register_map without a map, bad types and zero scales are refused")
    func refused() {
        for body in ["", "      register_map:\n        power: {address: 1, type: float}\n        setpoint: {address: 2}\n"
                         + "        revert_timeout: {address: 3}\n",
                     "      register_map:\n        power: {address: 1, scale: 0}\n        setpoint: {address: 2}\n"
                         + "        revert_timeout: {address: 3}\n"] {
            #expect(throws: ConfigurationError.self) { _ = try ConfigLoader.parse(head + body, file: "map.yaml") }
        }
    }
}

@Suite("Fault injection for scenarios")
struct ScenarioFaultTests {
    @Test("bms_values: the BMS reports the given values inside the window, the model's outside")
    func bmsValues() throws {
        let c = try ConfigLoader.parse(ConfigurationTests.unit + """
            simulation:
              faults:
                - kind: bms_values
                  at_s: 10
                  duration_s: 5
                  bms: {temperature_max_c: 58, soc_percent: 96, protections: [system_error], discharge_enabled: false}
                - kind: frequency_loss
                  at_s: 20
            """, file: "faults.yaml")
        #expect(c.simulation.activeBMSOverride(at: 9, unitID: "U1").isEmpty)
        let o = c.simulation.activeBMSOverride(at: 12, unitID: "U1")
        #expect(o.temperatureMax == 58 && o.socPercent == 96 && o.protections == [.systemError] && o.dischargeEnabled == false)
        #expect(c.simulation.activeBMSOverride(at: 15.1, unitID: "U1").isEmpty)
        #expect(c.simulation.activeFaults(at: 21, unitID: "U1").contains(.frequencyLoss))
        #expect(!c.simulation.activeFaults(at: 19, unitID: "U1").contains(.frequencyLoss))

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

    @Test("bms_group_silence: the named group is absent inside the window (bessd's simulated BMS and on CAN), and the warning names it")
    func bmsGroupSilence() throws {
        let c = try ConfigLoader.parse(ConfigurationTests.unit + """
            simulation:
              hottest_cell_above_pack_c: 3
              faults:
                - {kind: bms_group_silence, group: cells, at_s: 10, duration_s: 5}
                - {kind: bms_group_silence, group: requests, at_s: 12, duration_s: 5}
            """, file: "faults.yaml")
        #expect(c.simulation.hottestCellAbovePackK == 3)
        #expect(c.simulation.activeSilencedGroups(at: 9, unitID: "U1").isEmpty)
        #expect(c.simulation.activeSilencedGroups(at: 11, unitID: "U1") == .cells)
        #expect(c.simulation.activeSilencedGroups(at: 13, unitID: "U1") == [.cells, .requests])
        #expect(c.simulation.activeSilencedGroups(at: 16, unitID: "U1") == .requests)

        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60,
                                 hottestCellAbovePackK: c.simulation.hottestCellAbovePackK)
        var snapshot = unit.bmsSnapshot(at: MonotonicInstant(nanoseconds: 0))
        let pack = try #require(snapshot.measurements?.value.temperature.value)
        let hottest = try #require(snapshot.cells?.value.maxTemperature.value)
        #expect(abs(hottest - pack - 3) < 1e-9, "hottest cell \(hottest) °C, pack \(pack) °C")
        #expect(abs(unit.pylontechState.maxCellTemperature - unit.pylontechState.temperature - 3) < 1e-9)
        unit.silentGroups = c.simulation.activeSilencedGroups(at: 13, unitID: "U1")
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
