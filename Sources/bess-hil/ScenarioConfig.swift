import Config
import Foundation
import Yams

/// bessd's configuration for a run: the scenario's, with what the rig needs around it (loopback
/// ports, a private control socket and state directory, the frequency trace, the BMS transport,
/// the plant's PMU and 2030.5 server), written with the scenario's faults on bessd's own clock.
struct ScenarioConfig {
    let scenario: Scenario
    let runDirectory: String
    /// The configuration as the timeline left it (a `reload` step merges into it).
    var config: Node
    /// bessd's SCADA server (when the timeline writes to it) and IEC 104 outstation (when the
    /// timeline commands through it): their loopback ports.
    var scadaPort = 0
    var iec104Port = 0

    init(scenario: Scenario, runDirectory: String) {
        self.scenario = scenario
        self.runDirectory = runDirectory
        config = scenario.config
    }

    /// The IDCODE of the plant PMU's data stream.
    static let pmuIDCode: UInt16 = 1410

    /// The scenario's `grid_integration.pmu.transport` when it is `udp`, else `tcp`.
    static func pmuTransport(_ scenario: Scenario) -> String {
        scenario.config["grid_integration"]?["pmu"]?["transport"]?.string == "udp" ? "udp" : "tcp"
    }

    /// Sets what the rig needs around the scenario's configuration: loopback ports, a private
    /// control socket and state directory, the frequency trace, the BMS transport.
    mutating func prepare(controlSocket: String, canInterface: String, pmu: PMUSender?, sep2Server: Sep2Plant?) throws(ScenarioError) {
        let trace = frequencyTrace.map { "\($0.0),\($0.1)" }.joined(separator: "\n")
        let tracePath = runDirectory + "/frequency.csv"
        guard (try? ("seconds,hz\n" + trace + "\n").write(toFile: tracePath, atomically: true, encoding: .utf8)) != nil else {
            throw ScenarioError(.io, "cannot write \(tracePath)")
        }
        var root = config.mapping ?? [:]
        root["mode"] = Node("hil")  // scenarios inject faults and may simulate the BMS
        root["control_socket"] = Node(controlSocket)
        root["state_directory"] = Node(runDirectory + "/state")
        root["metrics_listen"] = nil
        var units = root["bess_units"]?.sequence ?? []
        for i in units.indices {
            guard var unit = units[i].mapping else { continue }
            var modbus = unit["modbus"]?.mapping ?? [:]
            modbus["host"] = Node("127.0.0.1")
            modbus["port"] = Node(String(freeLoopbackPort()))  // one simulated inverter server per unit
            modbus["unit_id"] = Node("1")
            unit["modbus"] = .mapping(modbus)
            var bms = unit["bms"]?.mapping ?? [:]
            if bms["transport"]?.string == "modbus" {
                // A Modbus BMS (a profile's registers) the plant serves on a loopback port of its own.
                var endpoint = bms["modbus"]?.mapping ?? [:]
                endpoint["host"] = Node("127.0.0.1")
                endpoint["port"] = Node(String(freeLoopbackPort()))
                if endpoint["unit_id"] == nil { endpoint["unit_id"] = Node("1") }
                bms["modbus"] = .mapping(endpoint)
                bms["simulated"] = nil
            } else if scenario.requiresCAN {
                bms["simulated"] = nil
                bms["interface"] = Node(canInterface)
            } else {
                bms["simulated"] = Node("true")
            }
            unit["bms"] = .mapping(bms)
            units[i] = .mapping(unit)
        }
        root["bess_units"] = .sequence(Node.Sequence(units))
        // A site meter the plant serves (unless the scenario simulates it inside bessd).
        if var site = root["site"]?.mapping, var meter = site["meter"]?.mapping, meter["simulated"]?.string != "true" {
            var modbus = meter["modbus"]?.mapping ?? [:]
            modbus["host"] = Node("127.0.0.1")
            modbus["port"] = Node(String(freeLoopbackPort()))
            modbus["unit_id"] = Node("1")
            meter["modbus"] = .mapping(modbus)
            site["meter"] = .mapping(meter)
            root["site"] = .mapping(site)
        }
        // SCADA on a free loopback port, writes on, when the timeline writes to it, or when the file
        // has a `scada:` block without `listen` (for its `max_hold_s`, which IEC 104's set-points keep too).
        if scenario.actions.contains(where: { if case .scada = $0.kind { true } else { false } })
            || (root["scada"]?.mapping.map { $0[Node("listen")] == nil } ?? false) {
            scadaPort = freeLoopbackPort()
            var scada = root["scada"]?.mapping ?? [:]
            scada["listen"] = Node("127.0.0.1:\(scadaPort)")
            scada["allow_from"] = .sequence([Node("127.0.0.1")])
            if scada["writes"] == nil { scada["writes"] = Node("true") }
            root["scada"] = .mapping(scada)
        }
        // The IEC 104 outstation on a free loopback port when the timeline commands through it; without
        // groups of its own, one group of loopback clients that may command AGC and the setpoint.
        if scenario.needsIEC104 {
            iec104Port = freeLoopbackPort()
            var iec104 = root["iec104"]?.mapping ?? [:]
            iec104["listen"] = Node("127.0.0.1:\(iec104Port)")
            if iec104["groups"] == nil {
                iec104["groups"] = .sequence([.mapping([Node("name"): Node("hil"), Node("allow_from"): .sequence([Node("127.0.0.1")]),
                                                        Node("commands"): .sequence([Node("agc"), Node("setpoint")])])])
            }
            root["iec104"] = .mapping(iec104)
        }
        var grid = root["grid_integration"]?.mapping ?? [:]
        configureFrequencySource(&grid, pmu: pmu)
        root["grid_integration"] = .mapping(grid)
        var simulation = root["simulation"]?.mapping ?? [:]
        simulation["frequency_profile"] = Node("trace")
        simulation["trace_file"] = Node(tracePath)
        root["simulation"] = .mapping(simulation)
        configureSep2(&root, server: sep2Server)
        config = .mapping(root)
    }

    /// Writes the configuration with the scenario's faults, their times moved `offset` seconds
    /// earlier (bessd's own clock starts when it does), and returns its path.
    func write(_ name: String, offset: Double, aggregatorPort: Int) throws(ScenarioError) -> String {
        var root = config.mapping ?? [:]
        var simulation = root["simulation"]?.mapping ?? [:]
        var faults: [Node] = []
        for action in scenario.actions {
            guard case .fault(let node) = action.kind, var f = node.mapping else { continue }
            let at = action.at - offset
            let duration = f["duration_s"]?.float ?? 0
            if at < 0 {
                if duration > 0 && duration + at <= 0 { continue }  // over before bessd started
                if duration > 0 { f["duration_s"] = Node(String(duration + at)) }
            }
            f["at_s"] = Node(String(max(0, at)))
            faults.append(.mapping(f))
        }
        simulation["faults"] = .sequence(Node.Sequence(faults))
        root["simulation"] = .mapping(simulation)
        if aggregatorPort > 0 {
            root["aggregator"] = .mapping([Node("url"): Node("http://127.0.0.1:\(aggregatorPort)"), Node("interval_s"): Node("1"),
                                           Node("site_id"): Node("HIL")])
        }
        let path = runDirectory + "/" + name
        guard let text = try? Yams.serialize(node: .mapping(root)),
              (try? text.write(toFile: path, atomically: true, encoding: .utf8)) != nil
        else { throw ScenarioError(.io, "cannot write \(path)") }
        return path
    }

    /// `config` with its relative `profile_directories` made absolute against `base` (the scenario
    /// file's directory): bessd reads the configuration from the run directory.
    static func resolvingProfileDirectories(_ config: Node, base: URL) -> Node {
        guard var root = config.mapping, let directories = root["profile_directories"]?.sequence else { return config }
        let resolved = directories.map { node -> Node in
            guard let path = node.string, !path.hasPrefix("/") else { return node }
            return Node(base.appendingPathComponent(path).standardizedFileURL.path)
        }
        root["profile_directories"] = .sequence(Node.Sequence(resolved))
        return .mapping(root)
    }

    static func load(_ path: String) throws(ScenarioError) -> BessdConfiguration {
        do {
            return try ConfigLoader.load(path: path)
        } catch {
            throw ScenarioError(.configInvalid,
                                "the scenario's bessd configuration is refused:\n" + error.diagnostics.map { "  \($0)" }.joined(separator: "\n"))
        }
    }

    /// `grid_integration.frequency_source`: the plant's PMU when the timeline has `pmu` steps (its
    /// address and stream filled in over the scenario's own `pmu:` keys, such as `max_age_ms`,
    /// `reconnect_s` or `transport: udp`), else the inverters.
    func configureFrequencySource(_ grid: inout Node.Mapping, pmu: PMUSender?) {
        guard let pmu else {
            grid["frequency_source"] = Node("inverter")
            return
        }
        grid["frequency_source"] = Node("pmu")
        var settings = grid["pmu"]?.mapping ?? [:]
        settings["host"] = Node("127.0.0.1")
        settings["port"] = Node(String(pmu.port))
        settings["transport"] = Node(Self.pmuTransport(scenario))
        settings["idcode"] = Node(String(Self.pmuIDCode))
        grid["pmu"] = .mapping(settings)
    }

    /// bessd's `ieee2030_5:` block, pointing at the plant's server (the scenario's own keys of the
    /// block, such as `timeout_s`, kept).
    func configureSep2(_ root: inout Node.Mapping, server: Sep2Plant?) {
        guard let server, let settings = scenario.sep2 else { return }
        var block = root["ieee2030_5"]?.mapping ?? [:]
        block["server"] = Node("https://127.0.0.1:\(server.port)/dcap")
        block["cert_file"] = Node(server.directory + "/client.pem")
        block["key_file"] = Node(server.directory + "/client.key")
        block["ca_file"] = Node(server.directory + "/ca.pem")
        block["pin"] = Node("111115", .implicit, .doubleQuoted)
        block["poll_s"] = Node(String(settings.pollSeconds))
        if block["timeout_s"] == nil { block["timeout_s"] = Node("2") }
        root["ieee2030_5"] = .mapping(block)
    }

    /// The grid frequency as a trace of (seconds, Hz) points, from the start frequency and the
    /// timeline's steps and ramps.
    var frequencyTrace: [(Double, Double)] {
        let (startHz, actions, duration) = (scenario.startHz, scenario.actions, scenario.duration)
        var points: [(Double, Double)] = [(0, startHz)]
        // Times must increase: a step is a 1 ms ramp.
        func add(_ t: Double, _ hz: Double) { points.append((max(t, points[points.count - 1].0 + 0.001), hz)) }
        var current = startHz
        for action in actions {
            switch action.kind {
            case .frequency(let hz):
                add(action.at, current)
                add(action.at, hz)
                current = hz
            case .ramp(let to, let over):
                add(action.at, current)
                add(action.at + over, to)
                current = to
            default: continue
            }
        }
        add(duration + 1, current)
        return points
    }
}
