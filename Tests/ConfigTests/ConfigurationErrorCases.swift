@testable import Config
import Testing

/// The refused files of `ConfigurationTests`: each with the line, key path and message its error names.
extension ConfigurationTests {
    struct Bad: Sendable, CustomTestStringConvertible {
        let name: String
        let yaml: String
        let line: Int?
        let keyPath: String
        let message: String
        var testDescription: String { name }
    }

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
        Bad(name: "frequency from a PMU without its block", yaml: unit + "grid_integration:\n  frequency_source: pmu\n",
            line: 6, keyPath: "grid_integration.frequency_source", message: "needs grid_integration.pmu"),
        Bad(name: "a PMU without its IDCODE", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n    host: 10.0.0.7\n",
            line: 8, keyPath: "grid_integration.pmu.idcode", message: "is required"),
        Bad(name: "a PMU without its host", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n    idcode: 7\n",
            line: 8, keyPath: "grid_integration.pmu.host", message: "is required"),
        Bad(name: "a PMU on a host that is no address", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    idcode: 7\n    host: 10.0.0.300\n",
            line: 9, keyPath: "grid_integration.pmu.host", message: "is not an IPv4 address"),
        Bad(name: "a PMU over serial", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 7, transport: serial}\n",
            line: 8, keyPath: "grid_integration.pmu.transport", message: "must be one of tcp, udp"),
        Bad(name: "a PMU's data over UDP without the port it comes to", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 7, transport: tcp_udp}\n",
            line: 8, keyPath: "grid_integration.pmu.local_port", message: "is required with transport tcp_udp"),
        Bad(name: "a PMU streaming unasked without the port it streams to", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    transport: udp_spontaneous\n    host: pmu.local\n    idcode: 7\n",
            line: 8, keyPath: "grid_integration.pmu.local_port", message: "is required with transport udp_spontaneous"),
        Bad(name: "a local port for a PMU over TCP", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    host: pmu.local\n    idcode: 7\n    local_port: 4713\n",
            line: 10, keyPath: "grid_integration.pmu.local_port", message: "has no use with transport tcp"),
        Bad(name: "a command port for a PMU that takes no commands", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 7, transport: udp_spontaneous, local_port: 4713, port: 4712}\n",
            line: 8, keyPath: "grid_integration.pmu.port", message: "is not used with transport udp_spontaneous"),
        Bad(name: "a PMU's local port out of range", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 7, transport: tcp_udp, local_port: 0}\n",
            line: 8, keyPath: "grid_integration.pmu.local_port", message: "from 1 to 65535"),
        Bad(name: "a PMU's IDCODE out of range", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 70000}\n",
            line: 8, keyPath: "grid_integration.pmu.idcode", message: "from 1 to 65535"),
        Bad(name: "a PMU's maximum age below one frame", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 7, max_age_ms: 5}\n",
            line: 8, keyPath: "grid_integration.pmu.max_age_ms", message: "from 20 to 2000"),
        // The controller treats frequency older than 2 s as stale: a longer max_age would hold off
        // the fallback to the inverters while no droop acts.
        Bad(name: "a PMU's maximum age past the controller's staleness", yaml: unit + "grid_integration:\n  frequency_source: pmu\n  pmu:\n"
                + "    {host: pmu.local, idcode: 7, max_age_ms: 2001}\n",
            line: 8, keyPath: "grid_integration.pmu.max_age_ms", message: "from 20 to 2000"),
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
}
