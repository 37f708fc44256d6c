import BessSystem
import ControlCore
import Fieldbus
import Foundation
internal import Yams

/// Loads and validates a bessd configuration.
public enum ConfigLoader {
    /// Loads the file at `path`.
    public static func load(path: String) throws(ConfigurationError) -> BessdConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = access(path, R_OK) == 0 ? "not a readable file" : SystemError.text(errno)
            throw ConfigurationError([ConfigDiagnostic(
                code: "CONFIG_UNREADABLE", file: path, line: nil, keyPath: "", message: "cannot read the file: \(reason)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError([ConfigDiagnostic(
                code: "CONFIG_UNREADABLE", file: path, line: nil, keyPath: "", message: "the file is not UTF-8 text")])
        }
        return try parse(text, file: path)
    }

    /// Parses configuration text; `file` names it in diagnostics.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> BessdConfiguration {
        // Found before libyaml, which refuses such a file without saying where.
        let control = ConfigSyntax.controlCharacters(in: text, file: file)
        if !control.isEmpty { throw ConfigurationError(control) }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw ConfigurationError([ConfigSyntax.diagnostic(error, text: text, file: file)])
        }
        guard let root else {
            throw ConfigurationError([ConfigDiagnostic(file: file, line: 1, keyPath: "", message: "the file is empty")])
        }
        let reader = ConfigReader(file: file)
        let configuration = decode(root, reader)
        if reader.hasErrors || configuration == nil {
            // Stable sort by line, so errors read top to bottom like the file.
            var errors = reader.diagnostics.filter { $0.severity == .error }.enumerated()
                .sorted { ($0.element.line ?? 0, $0.offset) < ($1.element.line ?? 0, $1.offset) }.map(\.element)
            if errors.isEmpty {
                // Never a refusal that says nothing: the fuzz target fails on this message too.
                errors = [ConfigDiagnostic(code: "CONFIG_UNEXPLAINED", file: file, line: nil, keyPath: "",
                                           message: "refused without a specific error: a bug in bessd; please report this file")]
            }
            throw ConfigurationError(errors)
        }
        var loaded = configuration!
        loaded.notices = reader.diagnostics.filter { $0.severity == .notice }
        return loaded
    }

    static func idPattern(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 64
            && text.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "_-.".unicodeScalars.contains($0)
            }
    }

    static func decode(_ root: Node, _ r: ConfigReader) -> BessdConfiguration? {
        guard let top = r.fields(root, "") else { return nil }
        let mode = decodeMode(top, r)
        let period = top.int("period_ms", default: 100, range: 10...1000, unit: "milliseconds")!
        let socket = top.string("control_socket", default: "/run/bessd/control.sock",
                                pattern: { $0.hasPrefix("/") && $0.utf8.count < 108 },
                                rule: "must be an absolute path shorter than 108 bytes")!
        let state = top.string("state_directory", default: "/var/lib/bessd", pattern: { $0.hasPrefix("/") },
                               rule: "must be an absolute path")!
        let grid = decodeGrid(top.fields("grid_integration"), r, top, mode: mode)
        let units = decodeUnits(top, r, mode: mode)
        var limitRamp = 10.0
        var scheduleRamp = 10.0
        if let limits = top.fields("limits") {
            limitRamp = limits.double("ramp_percent_per_s", default: 10, range: 0...1000, exclusiveLower: true, unit: "%/s")!
            scheduleRamp = limits.double("schedule_ramp_percent_per_s", default: 10, range: 0...1000,
                                         exclusiveLower: true, unit: "%/s")!
            limits.finish(known: "ramp_percent_per_s, schedule_ramp_percent_per_s")
        }
        let interlocks = decodeInterlocks(top.fields("interlocks"), r)
        var aggregator: AggregatorConfiguration?
        if let fields = top.fields("aggregator") {
            let transportName = fields.string("transport", pattern: { $0 == "http" || $0 == "mqtt" }, rule: "must be http or mqtt")
            let transport = AggregatorConfiguration.Transport(rawValue: transportName ?? "http") ?? .http
            let url = transport == .http
                ? fields.string("url", pattern: { ($0.hasPrefix("https://") || $0.hasPrefix("http://")) && HostAddress.urlHasValidHost($0) },
                                rule: "must be an http:// or https:// URL with a valid host (transport: http)")
                : fields.string("url", pattern: { ($0.hasPrefix("mqtt://") || $0.hasPrefix("mqtts://")) && MQTTAddress.valid($0) },
                                rule: "must be an mqtt://host[:port] or mqtts://host[:port] URL (transport: mqtt)")
            if url == nil, !fields.has("url") { r.error(fields.node, fields.child("url"), "is required") }
            let token = fields.string("token_file", pattern: { $0.hasPrefix("/") }, rule: "must be an absolute path")
            let interval = fields.double("interval_s", default: 1, range: 0.1...3600, unit: "seconds")!
            let site = fields.string("site_id", pattern: idPattern, rule: "must be 1–64 letters, digits, '_', '-' or '.'")
            let absolute: (String) -> Bool = { $0.hasPrefix("/") }
            let ca = fields.string("ca_file", pattern: absolute, rule: "must be an absolute path")
            let cert = fields.string("client_cert_file", pattern: absolute, rule: "must be an absolute path")
            let key = fields.string("client_key_file", pattern: absolute, rule: "must be an absolute path")
            if (cert == nil) != (key == nil), fields.has("client_cert_file") || fields.has("client_key_file") {
                r.error(fields.node, fields.child("client_key_file"), "client_cert_file and client_key_file go together")
            }
            let spoolMB = fields.int("spool_max_mb", default: 64, range: 1...65536, unit: "MB")!
            let username = fields.string("username", pattern: { !$0.isEmpty && $0.count <= 128 }, rule: "must be 1–128 characters")
            let password = fields.string("password_file", pattern: absolute, rule: "must be an absolute path")
            let keepalive = fields.int("keepalive_s", default: 30, range: 5...3600, unit: "seconds")!
            let sessionExpiry = fields.int("session_expiry_s", default: 86_400, range: 0...604_800, unit: "seconds")!
            if transport == .http {
                for name in ["username", "password_file", "keepalive_s", "session_expiry_s"] where fields.has(name) {
                    r.error(fields.node, fields.child(name), "applies to transport: mqtt only")
                }
            } else if fields.has("token_file") {
                r.error(fields.node, fields.child("token_file"), "applies to transport: http only (MQTT uses username + password_file or a client certificate)")
            }
            fields.finish(known: "transport, url, token_file, interval_s, site_id, ca_file, client_cert_file, client_key_file, spool_max_mb, username, password_file, keepalive_s, session_expiry_s")
            aggregator = AggregatorConfiguration(transport: transport, url: url ?? "", tokenFile: token, intervalSeconds: interval,
                                                 siteID: site ?? "", caFile: ca, clientCertFile: cert, clientKeyFile: key,
                                                 spoolMaxMB: spoolMB, username: username, passwordFile: password,
                                                 keepaliveSeconds: keepalive, sessionExpirySeconds: sessionExpiry)
        }
        let simulation = decodeSimulation(top.fields("simulation"), grid?.droop.nominal.value ?? 50,
                                          units: units?.map(\.id) ?? [], file: r.file, r)
        if mode == .hardware, !simulation.faults.isEmpty, let faults = top.fields("simulation")?.mark("faults") {
            r.error(faults, "simulation.faults", Self.notInHardware)
        }
        var realtime: RealtimeSettings?
        if let rt = top.fields("realtime") {
            let priority = rt.int("priority", default: 60, range: 1...99)!
            let lock = rt.bool("lock_memory", default: true)
            let latency = rt.int("cpu_dma_latency_us", range: 0...10_000, unit: "µs")
            let cpu = decodeCPU(rt, r)
            rt.finish(known: "priority, lock_memory, cpu_dma_latency_us, cpu")
            realtime = RealtimeSettings(priority: priority, lockMemory: lock,
                                        cpuDMALatencyMicroseconds: rt.has("cpu_dma_latency_us") ? latency : 0, cpu: cpu)
        }
        let metrics = top.string("metrics_listen", pattern: { text in
            let parts = text.split(separator: ":")
            return parts.count == 2 && UInt16(parts[1]) != nil && IPv4Network.parse(String(parts[0])) != nil
        }, rule: "must be IPV4:PORT, e.g. 127.0.0.1:9464")
        let site = decodeSite(top.fields("site"), r, mode: mode, units: units ?? [])
        let scada = decodeScada(top.fields("scada"), r, units: units ?? [])
        let inputs = decodeGridOperator(top.fields("grid_operator"), r, units: units ?? [], site: site, scada: scada)
        top.finish(known: "mode, period_ms, control_socket, state_directory, bess_units, grid_integration, limits, interlocks, aggregator, simulation, realtime, metrics_listen, site, scada, grid_operator")
        if grid?.frequencySource == .meter, site.meter == nil {
            r.error(top.fields("grid_integration")?.mark("frequency_source"), "grid_integration.frequency_source",
                    "needs site.meter (the meter whose frequency it reads)", got: "meter")
        }
        if site.meter == nil, let faults = top.fields("simulation")?.sequence("faults") {
            for (index, node) in faults.enumerated() {
                if let kind = node.mapping?["kind"]?.string, kind.hasPrefix("meter_") {
                    r.error(node, "simulation.faults[\(index)].kind", "needs site.meter (there is no meter to fault)", got: kind)
                }
            }
        }
        guard let grid, let units else { return nil }
        if var a = aggregator, a.siteID.isEmpty {
            a.siteID = units.first?.campusID.flatMap { idPattern($0) ? $0 : nil } ?? "site"
            aggregator = a
        }
        // An empty list, or one whose every unit was refused, has its own errors already.
        if grid.frequencySource == .inverter, units.isEmpty, !r.hasErrors {
            r.error(top.mark("grid_integration"), "grid_integration.frequency_source", "needs at least one unit")
        }
        var configuration = BessdConfiguration(
            mode: mode, periodMs: period, controlSocket: socket, stateDirectory: state, units: units, grid: grid,
            limitRampPercentPerSecond: limitRamp, scheduleRampPercentPerSecond: scheduleRamp, interlocks: interlocks,
            aggregator: aggregator, simulation: simulation, realtime: realtime, metricsListen: metrics, notices: [])
        configuration.site = site
        configuration.scada = scada
        configuration.gridLimitInputs = inputs
        return configuration
    }

    /// `grid_operator:` — the grid operator's relay contacts through a Modbus I/O module.
    static func decodeGridOperator(_ fields: ConfigReader.Fields?, _ r: ConfigReader, units: [UnitConfiguration],
                                   site: SiteConfiguration, scada: ScadaConfiguration?) -> GridLimitInputsConfiguration? {
        guard let fields else { return nil }
        defer { fields.finish(known: "inputs") }
        guard let i = fields.fields("inputs") else {
            if !fields.has("inputs") { r.error(fields.node, fields.child("inputs"), "is required (the relay contacts and their module)") }
            return nil
        }
        var modbus: ModbusSettings?
        if let m = i.fields("modbus") {
            modbus = decodeModbus(m, r)
            // One context per serial line: the module may not share a tty with another Modbus user.
            if case .rtu(let line)? = modbus?.transport {
                let taken = units.contains { if case .rtu(let u)? = $0.modbus?.transport { u.device == line.device } else { false } }
                    || { if case .rtu(let u)? = site.meter?.modbus?.transport { u.device == line.device } else { false } }()
                    || scada?.serial?.device == line.device
                if taken {
                    r.error(m.mark("device"), m.child("device"),
                            "is already another Modbus line's (a unit's, the meter's or SCADA's); give the I/O module a line of its own",
                            got: line.device)
                }
            }
        } else if !i.has("modbus") {
            r.error(i.node, i.child("modbus"), "is required: the Modbus I/O module (host or device, unit_id)")
        }
        let function = i.choice("function", [("discrete_inputs", GridLimitInputsConfiguration.Function.discreteInputs),
                                             ("coils", .coils)], default: .discreteInputs)
        let active = i.choice("active", [("high", true), ("low", false)], default: true)
        let debounce = i.int("debounce_ms", default: 100, range: 0...10_000, unit: "milliseconds")!
        let poll = i.int("poll_ms", default: 200, range: 20...5_000, unit: "milliseconds")!
        let lost = i.double("lost_after_s", default: 3, range: 0.1...60, unit: "seconds")!
        var contacts: [RelayContacts.Contact] = []
        if let list = i.sequence("contacts") {
            if list.isEmpty || list.count > 4 {
                r.error(i.mark("contacts"), i.child("contacts"), "lists one to four relay contacts", got: "\(list.count)")
            }
            var seen: [Int: Int] = [:]
            for (index, node) in list.enumerated() {
                guard let c = r.fields(node, i.child("contacts[\(index)]")) else { continue }
                let input = c.int("input", range: 0...65535)
                if input == nil, !c.has("input") { r.error(node, c.child("input"), "is required (the input or coil address on the module)") }
                let limit = c.double("limit_percent", range: 0...100, unit: "%")
                if limit == nil, !c.has("limit_percent") { r.error(node, c.child("limit_percent"), "is required (0–100)") }
                c.finish(known: "input, limit_percent")
                if let input {
                    if let first = seen[input] {
                        r.error(c.mark("input"), c.child("input"), "is contacts[\(first)]'s input too", got: String(input))
                    }
                    seen[input] = index
                }
                if let input, let limit { contacts.append(.init(input: input, limitPercent: limit)) }
            }
            if let low = contacts.map(\.input).min(), let high = contacts.map(\.input).max(), high - low >= 2000 {
                r.error(i.mark("contacts"), i.child("contacts"), "must lie within 2000 inputs of each other (read in one request)")
            }
        } else if !i.has("contacts") {
            r.error(i.node, i.child("contacts"), "is required: one to four {input, limit_percent}")
        }
        i.finish(known: "modbus, function, active, debounce_ms, poll_ms, lost_after_s, contacts")
        guard let modbus, !contacts.isEmpty else { return nil }
        return GridLimitInputsConfiguration(modbus: modbus, function: function, activeHigh: active, debounceMs: debounce,
                                            pollMs: poll, lostAfterSeconds: lost, contacts: contacts)
    }

    /// `scada:` — the site as a SunSpec device on Modbus TCP.
    static func decodeScada(_ fields: ConfigReader.Fields?, _ r: ConfigReader, units: [UnitConfiguration]) -> ScadaConfiguration? {
        guard let fields else { return nil }
        var host = "127.0.0.1", port = 502
        if let listen = fields.string("listen", pattern: { text in
            let parts = text.split(separator: ":")
            return parts.count == 2 && UInt16(parts[1]).map { $0 > 0 } == true && IPv4Network.parse(String(parts[0])) != nil
        }, rule: "must be IPV4:PORT, e.g. 0.0.0.0:502") {
            let parts = listen.split(separator: ":")
            host = String(parts[0])
            port = Int(parts[1]) ?? 502
        } else if !fields.has("listen") {
            r.error(fields.node, fields.child("listen"), "is required (IPV4:PORT, e.g. 0.0.0.0:502)")
        }
        let unitID = fields.int("unit_id", default: 1, range: 1...247)!
        var allow: [IPv4Network] = []
        if let list = fields.sequence("allow_from") {
            for (index, node) in list.enumerated() {
                guard let text = node.string, let network = IPv4Network(text) else {
                    r.error(node, fields.child("allow_from[\(index)]"), "must be an IPv4 address or network (10.1.2.0/24)",
                            got: ConfigReader.shown(node))
                    continue
                }
                allow.append(network)
            }
        }
        let writes = fields.bool("writes", default: false)
        if writes, let open = allow.first(where: { $0.prefix < 8 }) {
            // A grid operator limit or setpoint from anywhere on the network is no interface.
            r.error(fields.mark("writes"), fields.child("writes"),
                    "needs allow_from to name the SCADA hosts: \(open) lets anyone write the site's limit and setpoint",
                    got: "true")
        }
        let hold = fields.double("max_hold_s", default: 60, range: 1...3600, unit: "seconds")!
        let idle = fields.double("idle_timeout_s", default: 60, range: 1...3600, unit: "seconds")!
        let clients = fields.int("max_clients", default: 32, range: 1...256)!
        var serial: SerialSettings?
        var serialUnit = 1
        if let line = fields.fields("serial") {
            switch decodeModbus(line, r) {
            case .some(let settings):
                if case .rtu(let s) = settings.transport {
                    serial = s
                    serialUnit = settings.unitID
                    if let i = units.firstIndex(where: {
                        if case .rtu(let u)? = $0.modbus?.transport { return u.device == s.device }
                        return false
                    }) {
                        r.error(line.mark("device"), line.child("device"),
                                "is bess_units[\(i)]'s line; SCADA needs a serial line of its own", got: s.device)
                    }
                } else {
                    r.error(line.mark("host"), line.child("host"), "SCADA's serial line needs device (Modbus RTU); TCP is listen")
                }
            case .none:
                break
            }
        }
        fields.finish(known: "listen, unit_id, allow_from, writes, max_hold_s, idle_timeout_s, max_clients, serial")
        var scada = ScadaConfiguration(host: host, port: port, unitID: unitID, allowFrom: allow, writes: writes,
                                       maxHoldSeconds: hold, idleTimeoutSeconds: idle, maxClients: clients)
        scada.serial = serial
        scada.serialUnitID = serialUnit
        return scada
    }

    /// `site:` — the grid connection point: its meter, limits and application.
    static func decodeSite(_ fields: ConfigReader.Fields?, _ r: ConfigReader, mode: RunMode, units: [UnitConfiguration])
        -> SiteConfiguration
    {
        var site = SiteConfiguration()
        guard let fields else { return site }
        if let m = fields.fields("meter") {
            let simulated = m.bool("simulated", default: false)
            if mode == .hardware, simulated {
                r.error(m.mark("simulated"), m.child("simulated"), Self.notInHardware, got: "true")
            }
            let modbusFields = m.fields("modbus")
            let modbus = modbusFields.flatMap { decodeModbus($0, r) }
            let protocolName = m.choice("protocol", [("sunspec", MeterConfiguration.MeterProtocol.sunspec),
                                                     ("register_map", .registerMap)], default: .sunspec)
            var map: MeterRegisterMap?
            if let mapFields = m.fields("register_map") {
                let power = decodeRegister(mapFields, "power", r, required: true)
                let frequency = decodeRegister(mapFields, "frequency", r, required: false)
                let imported = decodeRegister(mapFields, "imported_energy", r, required: false)
                let exported = decodeRegister(mapFields, "exported_energy", r, required: false)
                mapFields.finish(known: "power, frequency, imported_energy, exported_energy")
                map = power.map { MeterRegisterMap(power: $0, frequency: frequency, importedEnergy: imported, exportedEnergy: exported) }
                if protocolName != .registerMap {
                    r.error(m.mark("register_map"), m.child("register_map"), "needs protocol: register_map")
                }
            } else if protocolName == .registerMap {
                r.error(m.mark("protocol"), m.child("register_map"), "is required for protocol: register_map")
            }
            let importPositive = m.bool("import_positive", default: true)
            let stale = m.double("stale_after_s", default: 3, range: 0.05...60, unit: "seconds")!
            let lag = m.double("max_lag_s", default: 1, range: 0...10, unit: "seconds")!
            m.finish(known: "simulated, modbus, protocol, register_map, import_positive, stale_after_s, max_lag_s")
            let real = mode == .hardware || (mode == .hil && !simulated)
            if real, modbus == nil, !m.has("modbus") {
                r.error(m.node, m.child("modbus"), "is required for a real meter in mode \(mode.rawValue)"
                        + (mode == .hil ? " (or set simulated: true)" : ""))
            }
            if let modbus, let modbusFields = m.fields("modbus") {
                for (index, unit) in units.enumerated() {
                    guard let other = unit.modbus, other.endpoint.line == modbus.endpoint.line, other.unitID == modbus.unitID else { continue }
                    r.error(modbusFields.mark("unit_id"), modbusFields.child("unit_id"),
                            "is the same device as bess_units[\(index)]'s inverter (same endpoint and unit id)",
                            got: String(modbus.unitID))
                }
            }
            site.meter = MeterConfiguration(simulated: simulated, modbus: modbus, protocolName: protocolName, registerMap: map,
                                            importPositive: importPositive, staleAfterSeconds: stale, maxLagSeconds: lag)
        }
        if let limits = fields.fields("grid_limits") {
            site.importMaxKW = limits.double("import_max_kw", range: 0...1_000_000, unit: "kW")
            site.exportMaxKW = limits.double("export_max_kw", range: 0...1_000_000, unit: "kW")
            limits.finish(known: "import_max_kw, export_max_kw")
            if site.meter == nil { r.error(fields.mark("grid_limits"), fields.child("grid_limits"), "needs site.meter (limits are held at the meter)") }
        }
        let application = fields.choice("application", [("none", "none"), ("peak_shaving", "peak_shaving"),
                                                        ("self_consumption", "self_consumption")], default: "none")
        let peak = fields.fields("peak_shaving")
        let selfConsumption = fields.fields("self_consumption")
        let importMax = peak?.double("import_max_kw", range: 0...1_000_000, unit: "kW")
        let recharge = peak?.double("recharge_below_kw", range: -1_000_000...1_000_000, unit: "kW")
        let target = selfConsumption?.double("target_grid_kw", default: 0, range: -1_000_000...1_000_000, unit: "kW") ?? 0
        if let importMax, let recharge, recharge > importMax {
            r.error(peak?.mark("recharge_below_kw"), fields.child("peak_shaving.recharge_below_kw"),
                    "must not be above peak_shaving.import_max_kw (\(format(importMax)) kW): the batteries would charge into the peak",
                    got: format(recharge))
        }
        switch application {
        case "peak_shaving":
            if importMax == nil, !(peak?.has("import_max_kw") ?? false) {
                r.error(peak?.node ?? fields.mark("application"), fields.child("peak_shaving.import_max_kw"), "is required for application: peak_shaving")
            }
            if let limit = site.importMaxKW, let importMax, importMax > limit {
                r.notice(peak?.mark("import_max_kw"), fields.child("peak_shaving.import_max_kw"),
                         "is above grid_limits.import_max_kw (\(format(limit)) kW); the grid limit binds first")
            }
            if let importMax { site.application = .peakShaving(importMax: .kilowatts(importMax), rechargeBelow: recharge.map { .kilowatts($0) }) }
        case "self_consumption":
            site.application = .selfConsumption(targetGrid: .kilowatts(target))
        default: break
        }
        peak?.finish(known: "import_max_kw, recharge_below_kw")
        selfConsumption?.finish(known: "target_grid_kw")
        if application != "peak_shaving", let peak {
            r.error(peak.node, fields.child("peak_shaving"), "applies only to application: peak_shaving", got: "application: \(application)")
        }
        if application != "self_consumption", let selfConsumption {
            r.error(selfConsumption.node, fields.child("self_consumption"), "applies only to application: self_consumption",
                    got: "application: \(application)")
        }
        if application != "none", site.meter == nil {
            r.error(fields.mark("application"), fields.child("application"), "needs site.meter (the application steers grid power)",
                    got: application)
        }
        site.socReservePercent = fields.double("soc_reserve_percent", default: 0, range: 0...100, unit: "%")!
        fields.finish(known: "meter, grid_limits, application, peak_shaving, self_consumption, soc_reserve_percent")
        return site
    }

    /// `realtime.cpu`: a CPU number this machine has, `last` (the default) or `none`.
    static func decodeCPU(_ rt: ConfigReader.Fields, _ r: ConfigReader) -> RealtimeSettings.CPU {
        guard let node = rt.node("cpu") else { return .last }
        let machine = CurrentThread.machineCPUs
        if case .scalar(let scalar) = node {
            switch scalar.string.lowercased() {
            case "last": return .last
            case "none": return .none
            default: break
            }
            if let number = node.int, number >= 0 {
                if let problem = cpuProblem(number, machineCPUs: machine) {
                    r.error(node, rt.child("cpu"), problem, got: ConfigReader.shown(node))
                    return .last
                }
                return .index(number)
            }
        }
        r.error(node, rt.child("cpu"), "must be a CPU number (\(cpuList(machine)) here), last or none", got: ConfigReader.shown(node))
        return .last
    }

    /// Why CPU `number` cannot be used on a machine of `machineCPUs`, or nil.
    static func cpuProblem(_ number: Int, machineCPUs: Int) -> String? {
        // The pin's mask holds CPUs 0–1023 (the C library's CPU_SETSIZE).
        number < min(machineCPUs, 1024) ? nil : "CPU \(number) does not exist: this machine has \(cpuList(min(machineCPUs, 1024)))"
    }

    static func cpuList(_ machineCPUs: Int) -> String { machineCPUs == 1 ? "CPU 0" : "CPUs 0–\(machineCPUs - 1)" }

    /// `mode:` — simulation, hil or hardware. The seed's names for mixed rigs mean `hil`.
    static func decodeMode(_ top: ConfigReader.Fields, _ r: ConfigReader) -> RunMode {
        let aliases = ["hardware-in-loop", "hardware_in_loop", "grid-connected-simulation", "grid_connected_simulation"]
        if let name = top.node("mode")?.scalar?.string, aliases.contains(name) {
            r.notice(top.mark("mode"), "mode", "'\(name)' is read as mode hil (real and simulated devices mixed)")
            return .hil
        }
        return top.choice("mode", RunMode.allCases.map { ($0.rawValue, $0) }, default: .simulation)
    }

    /// The frequency source a mode uses when the file names none: only `simulation` simulates it.
    static func defaultFrequencySource(_ mode: RunMode) -> FrequencySource {
        mode == .simulation ? .simulated : .inverter
    }

    static func decodeGrid(_ fields: ConfigReader.Fields?, _ r: ConfigReader, _ top: ConfigReader.Fields, mode runMode: RunMode)
        -> GridConfiguration?
    {
        guard let fields else {
            // Absent, or `grid_integration:` with no value (found by make fuzz: that refused the file
            // printing nothing): the defaults. Any other value was reported by `fields` already.
            if top.node("grid_integration") == nil {
                return GridConfiguration(mode: "simulation", frequencySource: defaultFrequencySource(runMode), droop: .seedDefault)
            }
            return nil
        }
        let mode = fields.choice("mode", [("simulation", "simulation"), ("posoco", "posoco"), ("pmu", "pmu")],
                                 default: "simulation")
        if mode != "simulation" {
            r.notice(fields.mark("mode"), fields.child("mode"),
                     "'\(mode)' frequency feeds are not part of bessd; frequency comes from frequency_source")
        }
        let source = fields.choice("frequency_source", [("simulated", FrequencySource.simulated), ("inverter", .inverter),
                                                        ("meter", .meter)],
                                   default: defaultFrequencySource(runMode))
        if runMode == .hardware, source == .simulated {
            r.error(fields.mark("frequency_source"), fields.child("frequency_source"), Self.notInHardware, got: "simulated")
        }
        fields.acknowledge("scada_enabled", "the key is ignored; the scada: block serves the site to plant SCADA")
        var droop = DroopSettings.seedDefault
        if let d = fields.fields("droop_settings") {
            droop.enabled = d.bool("enabled", default: true)
            droop.nominal = Hertz(d.choice("nominal_hz", [("50", 50.0), ("60", 60.0)], default: 50))
            if let band = d.sequence("deadband_hz") {
                let values = band.map { $0.int.map(Double.init) ?? $0.float }
                if values.count != 2 || values.contains(where: { $0 == nil }) {
                    r.error(d.mark("deadband_hz"), d.child("deadband_hz"), "expected two numbers [low, high] in Hz",
                            got: "[" + band.map { $0.scalar?.string ?? "?" }.joined(separator: ", ") + "]")
                } else {
                    let low = values[0]!, high = values[1]!
                    let nominal = droop.nominal.value
                    if !(low <= high) {
                        r.error(d.mark("deadband_hz"), d.child("deadband_hz"), "low edge must not be above the high edge",
                                got: "[\(format(low)), \(format(high))]")
                    } else if !(low <= nominal && nominal <= high) || nominal - low > 1 || high - nominal > 1 {
                        r.error(d.mark("deadband_hz"), d.child("deadband_hz"),
                                "must contain the nominal \(format(nominal)) Hz and lie within 1 Hz of it",
                                got: "[\(format(low)), \(format(high))]")
                    } else {
                        droop.deadbandLow = Hertz(low)
                        droop.deadbandHigh = Hertz(high)
                    }
                }
            }
            let both = d.double("droop_percent", default: 5, range: 0...100, exclusiveLower: true, unit: "%")!
            droop.droopUnderPercent = d.double("droop_percent_under", default: both, range: 0...100, exclusiveLower: true, unit: "%")!
            droop.droopOverPercent = d.double("droop_percent_over", default: both, range: 0...100, exclusiveLower: true, unit: "%")!
            droop.reference = d.choice("reference", [("edge", DroopReference.edge), ("nominal", .nominal)], default: .edge)
            let response = d.double("response_time_s", default: 5, range: 0...600, unit: "seconds")!
            droop.responseTime = .seconds(fromDouble: response)
            d.finish(known: "enabled, nominal_hz, deadband_hz, droop_percent, droop_percent_under, droop_percent_over, reference, response_time_s")
        }
        fields.finish(known: "mode, frequency_source, scada_enabled, droop_settings")
        return GridConfiguration(mode: mode, frequencySource: source, droop: droop)
    }

    /// The message for a simulated input in hardware mode.
    static let notInHardware = "not allowed in mode hardware; use mode hil"

    static func decodeUnits(_ top: ConfigReader.Fields, _ r: ConfigReader, mode: RunMode) -> [UnitConfiguration]? {
        guard let list = top.sequence("bess_units") else {
            if !top.has("bess_units") {
                r.error(top.node, "bess_units", "is required: list at least one unit")
            } else if top.mark("bess_units").map({ if case .scalar = $0 { true } else { false } }) ?? false {
                // `bess_units:` with nothing after it, or `~`.
                r.error(top.mark("bess_units"), "bess_units", "list at least one unit", got: "an empty value")
            }
            return nil
        }
        if list.isEmpty { r.error(top.mark("bess_units"), "bess_units", "list at least one unit", got: "[]") }
        var units: [UnitConfiguration] = []
        var seen: [String: Int] = [:]
        var endpoints: [(index: Int, settings: ModbusSettings, fields: ConfigReader.Fields)] = []
        for (index, node) in list.enumerated() {
            let path = "bess_units[\(index)]"
            guard let u = r.fields(node, path) else { continue }
            let id = u.string("id", pattern: idPattern, rule: "must be 1–64 letters, digits, '_', '-' or '.'")
            // `key:` with no value is "the default", and these have none (make fuzz found
            // `max_power_kw:` left empty accepted as a site of 0 units).
            if id == nil && u.node("id") == nil { r.error(u.mark("id"), "\(path).id", "is required") }
            if let id {
                if let first = seen[id] {
                    r.error(u.mark("id"), "\(path).id", "duplicates bess_units[\(first)].id", got: "'\(id)'")
                }
                seen[id] = index
            }
            let campus = u.string("campus_id")
            let capacity = u.double("capacity_kwh", range: 0...1_000_000, exclusiveLower: true, unit: "kWh")
            if capacity == nil && u.node("capacity_kwh") == nil { r.error(u.mark("capacity_kwh"), "\(path).capacity_kwh", "is required") }
            let power = u.double("max_power_kw", range: 0...100_000, exclusiveLower: true, unit: "kW")
            if power == nil && u.node("max_power_kw") == nil { r.error(u.mark("max_power_kw"), "\(path).max_power_kw", "is required") }
            let modbusFields = u.fields("modbus")
            let modbus = modbusFields.flatMap { decodeModbus($0, r) }
            if let modbus, let fields = modbusFields { endpoints.append((index, modbus, fields)) }
            var inverter = InverterSettings(simulated: false, protocolName: .sunspec)
            var inverterStale = 3.0
            var inverterGrace = 30.0
            if let inv = u.fields("inverter") {
                inverter.simulated = inv.bool("simulated", default: false)
                if mode == .hardware, inverter.simulated {
                    r.error(inv.mark("simulated"), inv.child("simulated"), Self.notInHardware, got: "true")
                }
                inverter.protocolName = inv.choice("protocol", [("sunspec", .sunspec), ("register_map", .registerMap)],
                                                   default: .sunspec)
                inverterStale = inv.double("stale_after_s", default: 3, range: 0.05...60, unit: "seconds")!
                inverterGrace = inv.double("startup_grace_s", default: 30, range: 0...3600, unit: "seconds")!
                if let map = inv.fields("register_map") {
                    inverter.registerMap = decodeRegisterMap(map, r)
                    if inverter.protocolName != .registerMap {
                        r.error(inv.mark("register_map"), inv.child("register_map"), "needs protocol: register_map")
                    }
                } else if inverter.protocolName == .registerMap {
                    r.error(inv.mark("protocol"), inv.child("register_map"), "is required for protocol: register_map")
                }
                inv.finish(known: "simulated, protocol, stale_after_s, startup_grace_s, register_map")
            }
            var bms = BMSSettings(simulated: false, interface: "can0", protocolName: .pylontech, bitrate: 500_000,
                                  staleAfterSeconds: 3, cellsInSeries: 16)
            if let b = u.fields("bms") {
                bms.simulated = b.bool("simulated", default: false)
                if mode == .hardware, bms.simulated {
                    r.error(b.mark("simulated"), b.child("simulated"), Self.notInHardware, got: "true")
                }
                bms.interface = b.string("interface", default: "can0",
                                         pattern: { !$0.isEmpty && $0.utf8.count <= 15 && !$0.contains("/") && !$0.contains(" ") },
                                         rule: "must be a network interface name of at most 15 characters")!
                bms.protocolName = b.choice("protocol", [("pylontech", .pylontech)], default: .pylontech)
                bms.bitrate = b.int("bitrate", default: 500_000, range: 10_000...1_000_000, unit: "bit/s")!
                bms.staleAfterSeconds = b.double("stale_after_s", default: 3, range: 0.1...60, unit: "seconds")!
                bms.startupGraceSeconds = b.double("startup_grace_s", default: 30, range: 0...3600, unit: "seconds")!
                bms.cellsInSeries = b.int("cells_in_series", default: 16, range: 1...1000)!
                bms.manageInterface = b.bool("manage_interface", default: false)
                bms.restartMs = b.int("restart_ms", default: 100, range: 0...60_000, unit: "milliseconds")!
                b.finish(known: "simulated, interface, protocol, bitrate, stale_after_s, startup_grace_s, cells_in_series, manage_interface, restart_ms")
            }
            if mode != .simulation, !inverter.simulated, modbus == nil, !u.has("modbus") {
                r.error(node, "\(path).modbus", "is required for a real inverter in mode \(mode.rawValue)"
                        + (mode == .hil ? " (or set inverter.simulated: true)" : ""))
            }
            u.finish(known: "id, campus_id, capacity_kwh, max_power_kw, modbus, inverter, bms")
            if let id, let capacity, let power {
                units.append(UnitConfiguration(
                    id: id, campusID: campus, capacityKWh: capacity, maxPowerKW: power, modbus: modbus,
                    inverter: inverter, bms: bms, inverterStaleAfterSeconds: inverterStale))
                units[units.count - 1].inverterStartupGraceSeconds = inverterGrace
            }
        }
        // One serial line has one set of line settings, and one device (endpoint, unit id) one unit:
        // two units commanding the same inverter would fight over its setpoint.
        for (k, b) in endpoints.enumerated() {
            for a in endpoints[..<k] {
                switch (a.settings.transport, b.settings.transport) {
                case (.rtu(let x), .rtu(let y)) where x.device == y.device && x != y:
                    r.error(b.fields.mark("device"), b.fields.child("device"),
                            "shares \(y.device) with bess_units[\(a.index)], whose line settings differ "
                            + "(\(x.baud) \(x.dataBits)\(x.parity.rawValue.prefix(1).uppercased())\(x.stopBits)\(x.rs485 ? " rs485" : "")); "
                            + "one serial line has one set of settings",
                            got: "\(y.baud) \(y.dataBits)\(y.parity.rawValue.prefix(1).uppercased())\(y.stopBits)\(y.rs485 ? " rs485" : "")")
                default: break
                }
                let sameLine: Bool
                switch (a.settings.transport, b.settings.transport) {
                case (.rtu(let x), .rtu(let y)): sameLine = x.device == y.device
                case (.tcp(let h1, let p1), .tcp(let h2, let p2)): sameLine = h1 == h2 && p1 == p2
                default: sameLine = false
                }
                if sameLine, a.settings.unitID == b.settings.unitID {
                    r.error(b.fields.mark("unit_id"), b.fields.child("unit_id"),
                            "is the same device as bess_units[\(a.index)] (same endpoint and unit id); each unit needs its own inverter",
                            got: String(b.settings.unitID))
                }
            }
        }
        // One BMS per CAN interface: the profile's frame IDs cannot tell two apart.
        var interfaces: [String: String] = [:]
        for unit in units where !(mode == .simulation || unit.bms.simulated) {
            if let other = interfaces[unit.bms.interface] {
                r.error(top.mark("bess_units"), "bess_units", "units \(other) and \(unit.id) share CAN interface "
                        + "\(unit.bms.interface); each BMS needs its own", got: unit.bms.interface)
            }
            interfaces[unit.bms.interface] = unit.id
        }
        return units
    }

    static func decodeRegister(_ parent: ConfigReader.Fields, _ key: String, _ r: ConfigReader, required: Bool)
        -> MappedRegister?
    {
        guard let f = parent.fields(key) else {
            if required { r.error(parent.node, parent.child(key), "is required") }
            return nil
        }
        let address = f.int("address", range: 0...65535)
        if address == nil, !f.has("address") { r.error(f.node, f.child("address"), "is required") }
        let type = f.choice("type", MappedRegister.ValueType.allCases.map { ($0.rawValue, $0) }, default: .int16)
        let scale = f.double("scale", default: 1)!
        if scale == 0 { r.error(f.mark("scale"), f.child("scale"), "must not be 0", got: "0") }
        let order = f.choice("word_order", [("high_first", false), ("low_first", true)], default: false)
        f.finish(known: "address, type, scale, word_order")
        guard let address, scale != 0 else { return nil }
        if address + (type == .int16 || type == .uint16 ? 1 : 2) > 65536 {
            r.error(f.mark("address"), f.child("address"), "the value runs past register 65535", got: String(address))
            return nil
        }
        return MappedRegister(address: address, type: type, scale: scale, lowWordFirst: order)
    }

    static func decodeRegisterMap(_ m: ConfigReader.Fields, _ r: ConfigReader) -> RegisterMapSpec? {
        let power = decodeRegister(m, "power", r, required: true)
        let frequency = decodeRegister(m, "frequency", r, required: false)
        let fault = decodeRegister(m, "fault", r, required: false)
        var faultValues: [Int64] = []
        if let list = m.sequence("fault_values") {
            for node in list {
                if let value = node.int { faultValues.append(Int64(value)) } else {
                    r.error(node, m.child("fault_values"), "expected whole numbers", got: ConfigReader.shown(node))
                }
            }
        }
        let setpoint = decodeRegister(m, "setpoint", r, required: true)
        // The revert timer is not optional: a dead bessd must leave a safe inverter.
        let revert = decodeRegister(m, "revert_timeout", r, required: true)
        let enable = decodeRegister(m, "enable", r, required: false)
        let enableValue = m.double("enable_value", default: 1)!
        let rating = m.double("rating_kw", range: 0...100_000, exclusiveLower: true, unit: "kW")
        m.finish(known: "power, frequency, fault, fault_values, setpoint, revert_timeout, enable, enable_value, rating_kw")
        guard let power, let setpoint, let revert else { return nil }
        return RegisterMapSpec(power: power, frequency: frequency, fault: fault, faultValues: faultValues, setpoint: setpoint,
                               revertTimeout: revert, enable: enable, enableValue: enableValue,
                               rating: rating.map { Watts.kilowatts($0) })
    }

    static func decodeModbus(_ m: ConfigReader.Fields, _ r: ConfigReader) -> ModbusSettings? {
        var host = m.string("host")
        if let text = host, let problem = HostAddress.problem(text) {
            r.error(m.mark("host"), m.child("host"), "\(HostAddress.rule); this \(problem)",
                    got: m.mark("host").map(ConfigReader.shown))
            host = nil
        }
        let device = m.string("device", pattern: { $0.hasPrefix("/dev/") || $0.hasPrefix("/") },
                              rule: "must be an absolute device path such as /dev/ttyUSB0")
        let port = m.int("port", default: 502, range: 1...65535)!
        let timeout = m.int("timeout_ms", default: 500, range: 10...10_000, unit: "milliseconds")!
        let serialKeys = ["baud", "parity", "data_bits", "stop_bits", "rs485"]
        var transport: ModbusTransport?
        var unitRange = 0...255
        if host != nil && device != nil {
            r.error(m.mark("device"), m.child("device"), "give either host (Modbus TCP) or device (Modbus RTU), not both")
        } else if let device {
            unitRange = 1...247
            let baud = m.int("baud", default: 9600, range: 1200...921_600, unit: "baud")!
            let standard = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 921_600]
            if !standard.contains(baud) {
                r.error(m.mark("baud"), m.child("baud"), "must be a standard rate (\(standard.map(String.init).joined(separator: ", ")))",
                        got: String(baud))
            }
            let parity = m.choice("parity", [("none", SerialSettings.Parity.none), ("n", .none), ("even", .even), ("e", .even),
                                             ("odd", .odd), ("o", .odd)], default: .even)
            let dataBits = m.int("data_bits", default: 8, range: 7...8)!
            let stopBits = m.int("stop_bits", default: 1, range: 1...2)!
            let rs485 = m.bool("rs485", default: false)
            transport = .rtu(SerialSettings(device: device, baud: baud, parity: parity, dataBits: dataBits,
                                            stopBits: stopBits, rs485: rs485))
        } else if let host {
            for key in serialKeys where m.has(key) {
                _ = m.node(key)
                r.error(m.mark(key), m.child(key), "is a serial (RTU) setting; this endpoint is Modbus TCP (host)")
            }
            transport = .tcp(host: host, port: port)
        } else if !m.has("host") && !m.has("device") {
            r.error(m.node, m.path, "needs host (Modbus TCP) or device (Modbus RTU)")
        }
        let unitID = m.int("unit_id", default: 1, range: unitRange)!
        m.finish(known: "host, port, device, baud, parity, data_bits, stop_bits, rs485, unit_id, timeout_ms")
        return transport.map { ModbusSettings(transport: $0, unitID: unitID, timeoutMs: timeout) }
    }

    static func decodeInterlocks(_ fields: ConfigReader.Fields?, _ r: ConfigReader) -> [TripCode: InterlockOverride] {
        guard let fields, case .mapping(let mapping) = fields.node else { return [:] }
        var result: [TripCode: InterlockOverride] = [:]
        let defaults = InterlockRule.defaultTable()
        for (keyNode, valueNode) in mapping {
            let name = keyNode.scalar?.string ?? ""
            _ = fields.node(name)
            let path = fields.child(name)
            guard let code = TripCode(name: name), let rule = defaults.first(where: { $0.code == code }) else {
                r.error(keyNode, path, "unknown interlock; see docs/interlocks.md for the codes")
                continue
            }
            guard let o = r.fields(valueNode, path) else { continue }
            var entry = InterlockOverride(enabled: o.bool("enabled", default: true))
            let latches = rule.severity == .latch || o.node("severity")?.scalar?.string == "latch"
            let essential = latches || code == .bmsCommLost || code == .inverterCommLost
            if !entry.enabled, essential {
                let why = latches ? "is a safety latch" : "stops power on stale data"
                r.error(o.mark("enabled"), "\(path).enabled",
                        "cannot be disabled: \(code.name) \(why); adjust its threshold instead", got: "false")
            }
            let physical = physicalRange(rule.metric)
            entry.threshold = o.double("threshold", range: physical, unit: "\(rule.metric.unitSymbol)")
            entry.hysteresis = o.double("hysteresis", range: 0...(physical.upperBound - physical.lowerBound),
                                        unit: "\(rule.metric.unitSymbol)")
            entry.delaySeconds = o.double("delay_s", range: 0...3600, unit: "seconds")
            entry.holdSeconds = o.double("hold_s", range: 0...86_400, unit: "seconds")
            entry.severity = o.choice("severity", [("warn", "warn"), ("derate", "derate"), ("trip", "trip"), ("latch", "latch")],
                                      default: nil as String?)
            entry.derateStart = o.double("derate_start", range: physical, unit: "\(rule.metric.unitSymbol)")
            entry.direction = o.choice("direction", [("charge", PowerDirection.charge), ("discharge", .discharge), ("both", .both)],
                                       default: nil as PowerDirection?)
            let isDerate = entry.severity.map { $0 == "derate" } ?? (rule.severity != .trip && { if case .derate = rule.severity { return true }; return false }())
            if isDerate {
                var start = entry.derateStart
                if start == nil, case .derate(let s) = rule.severity { start = s }
                let threshold = entry.threshold ?? rule.threshold
                if let start {
                    let ordered = rule.comparison == .above ? start < threshold : start > threshold
                    if !ordered {
                        r.error(o.mark("derate_start"), "\(path).derate_start",
                                "must be \(rule.comparison == .above ? "below" : "above") the threshold \(format(threshold))",
                                got: format(start))
                    }
                } else {
                    r.error(o.node, "\(path).derate_start", "is required for severity derate")
                }
            } else if entry.derateStart != nil {
                r.error(o.mark("derate_start"), "\(path).derate_start", "applies only to severity derate")
            }
            if rule.severity == .latch, let severity = entry.severity, severity != "latch" {
                r.error(o.mark("severity"), "\(path).severity",
                        "cannot be lowered: \(code.name) is a safety latch that only an operator reset clears",
                        got: severity)
            }
            o.finish(known: "enabled, threshold, hysteresis, delay_s, hold_s, severity, derate_start, direction")
            result[code] = entry
        }
        return result
    }

    /// The values a metric can physically take; a threshold outside them would never act (or always).
    static func physicalRange(_ metric: InterlockMetric) -> ClosedRange<Double> {
        switch metric {
        case .cellVoltageMax, .cellVoltageMin: 0...5
        case .cellVoltageSpread: 0...5
        case .packVoltage: 0...1500
        case .chargeCurrentPercentOfLimit, .dischargeCurrentPercentOfLimit: 0...1000
        case .temperatureMax, .temperatureMin: -60...200
        case .temperatureRiseRate: 0...100
        case .soc: 0...100
        case .bmsProtection, .bmsAlarm, .bmsCritical, .bmsChargeDisabled, .bmsDischargeDisabled, .inverterFault: 0...1
        case .frequencyDeviation: -10...10
        case .rocof: 0...100
        case .bmsDataAge, .inverterDataAge, .frequencyDataAge: 0...3600
        case .bmsGroupsMissing: 0...255  // a bit per optional BMS group
        }
    }

    static func decodeSimulation(_ fields: ConfigReader.Fields?, _ nominal: Double, units: [String], file: String,
                                 _ r: ConfigReader) -> SimulationConfiguration {
        var simulation = SimulationConfiguration(
            initialSOCPercent: 60, ambientCelsius: 25, frequencyProfile: .walk, baseHz: nominal, amplitudeHz: 0.15,
            stepPeriodSeconds: 30, seed: 1, rampToHz: nominal, rampStartSeconds: 0, rampDurationSeconds: 60, trace: [],
            faults: [])
        guard let fields else { return simulation }
        simulation.initialSOCPercent = fields.double("initial_soc_percent", default: 60, range: 0...100, unit: "%")!
        if let byUnit = fields.fields("initial_soc_percent_by_unit"), case .mapping(let mapping) = byUnit.node {
            for (key, _) in mapping {
                guard let id = key.string else { continue }
                if !units.contains(id) {
                    _ = byUnit.node(id)
                    r.error(key, byUnit.child(id), "names no unit of bess_units", got: id)
                    continue
                }
                if let soc = byUnit.double(id, range: 0...100, unit: "%") { simulation.initialSOCByUnit[id] = soc }
            }
            byUnit.finish()
        }
        simulation.ambientCelsius = fields.double("ambient_c", default: 25, range: -40...60, unit: "°C")!
        simulation.frequencyProfile = fields.choice(
            "frequency_profile",
            [("steady", .steady), ("walk", .walk), ("steps", .steps), ("ramp", .ramp), ("trace", .trace)], default: .walk)
        simulation.baseHz = fields.double("base_hz", default: nominal, range: 40...70, unit: "Hz")!
        simulation.amplitudeHz = fields.double("amplitude_hz", default: 0.15, range: 0...5, unit: "Hz")!
        simulation.stepPeriodSeconds = fields.double("step_period_s", default: 30, range: 1...3600, unit: "seconds")!
        simulation.seed = UInt64(fields.int("seed", default: 1, range: 0...Int.max)!)
        simulation.rampToHz = fields.double("ramp_to_hz", default: simulation.baseHz, range: 40...70, unit: "Hz")!
        simulation.rampStartSeconds = fields.double("ramp_start_s", default: 0, range: 0...86_400, unit: "seconds")!
        simulation.rampDurationSeconds = fields.double("ramp_duration_s", default: 60, range: 0...86_400, unit: "seconds")!
        if let traceFile = fields.string("trace_file") {
            simulation.trace = loadTrace(traceFile, relativeTo: file, node: fields.mark("trace_file"),
                                         path: fields.child("trace_file"), r)
        } else if simulation.frequencyProfile == .trace {
            r.error(fields.mark("frequency_profile"), fields.child("trace_file"), "is required for frequency_profile: trace")
        }
        if let list = fields.sequence("faults") {
            for (index, node) in list.enumerated() {
                let path = fields.child("faults[\(index)]")
                guard let f = r.fields(node, path) else { continue }
                let kinds = FaultInjection.Kind.allCases.map { ($0.rawValue, Optional($0)) }
                let kind = f.choice("kind", kinds, default: nil)
                if kind == nil, !f.has("kind") { r.error(node, "\(path).kind", "is required") }
                let unit = f.string("unit", pattern: { units.contains($0) }, rule: "must name a unit of bess_units")
                let at = f.double("at_s", default: 0, range: 0...86_400, unit: "seconds")!
                let duration = f.double("duration_s", default: 0, range: 0...86_400, unit: "seconds")!
                let delay = f.double("delay_s", default: 0, range: 0...60, unit: "seconds")!
                if kind.map({ $0.rawValue.hasPrefix("meter_") }) == true, f.has("unit") {
                    r.error(f.mark("unit"), "\(path).unit", "a meter fault acts on the site's meter; it names no unit")
                }
                if (kind == .bmsDelay || kind == .modbusDelay || kind == .meterDelay) && delay <= 0 {
                    r.error(node, "\(path).delay_s", "is required (> 0) for \(kind!.rawValue)")
                }
                var values: BMSOverride?
                if kind == .bmsValues {
                    if let b = f.fields("bms") {
                        values = Self.loadBMSOverride(b, r)
                    } else {
                        r.error(node, "\(path).bms", "is required for bms_values (the values the BMS reports)")
                    }
                } else if f.has("bms") {
                    r.error(f.mark("bms"), "\(path).bms", "applies only to kind: bms_values")
                }
                var groups = BMSGroups()
                if kind == .bmsGroupSilence {
                    groups = f.choice("group", [("cells", BMSGroups.cells), ("protection", .protection), ("requests", .requests)],
                                      default: BMSGroups())
                    if groups.isEmpty, !f.has("group") {
                        r.error(node, "\(path).group", "is required for bms_group_silence (cells, protection or requests)")
                    }
                } else if f.has("group") {
                    r.error(f.mark("group"), "\(path).group", "applies only to kind: bms_group_silence")
                }
                f.finish(known: "kind, unit, at_s, duration_s, delay_s, bms, group")
                if let kind {
                    simulation.faults.append(FaultInjection(kind: kind, unit: unit, atSeconds: at, durationSeconds: duration,
                                                            delaySeconds: delay, bmsValues: values, silencedGroups: groups))
                }
            }
        }
        simulation.hottestCellAbovePackK = fields.double("hottest_cell_above_pack_c", default: 2, range: 0...20, unit: "°C")!
        if let load = fields.fields("load") { simulation.load = decodeProfile(load, file: file, r) }
        if let pv = fields.fields("pv") { simulation.pv = decodeProfile(pv, file: file, r, nonNegative: true) }
        simulation.meterModel = fields.choice(
            "meter_model", [("201", UInt16(201)), ("202", 202), ("203", 203), ("204", 204)], default: 203)
        fields.finish(known: "initial_soc_percent, initial_soc_percent_by_unit, ambient_c, frequency_profile, base_hz, amplitude_hz, step_period_s, seed, ramp_to_hz, ramp_start_s, ramp_duration_s, trace_file, faults, hottest_cell_above_pack_c, load, pv, meter_model")
        return simulation
    }

    /// `simulation.load` / `simulation.pv`: steady, steps or a `seconds,kw` trace.
    static func decodeProfile(_ f: ConfigReader.Fields, file: String, _ r: ConfigReader, nonNegative: Bool = false) -> PowerProfile {
        let range: ClosedRange<Double> = nonNegative ? 0...1_000_000 : -1_000_000...1_000_000
        var profile = PowerProfile(base: f.double("base_kw", default: 0, range: range, unit: "kW")!)
        profile.shape = f.choice("profile", PowerProfile.Shape.allCases.map { ($0.rawValue, $0) }, default: .steady)
        if let levels = f.sequence("levels_kw") {
            for node in levels {
                if let value = node.int.map(Double.init) ?? node.float, range.contains(value) {
                    profile.levelsKW.append(value)
                } else {
                    r.error(node, f.child("levels_kw"), "expected numbers in \(format(range.lowerBound))…\(format(range.upperBound)) kW",
                            got: ConfigReader.shown(node))
                }
            }
        }
        profile.stepPeriodSeconds = f.double("step_period_s", default: 30, range: 0.1...86_400, unit: "seconds")!
        if let name = f.string("trace_file") {
            profile.trace = loadPoints(name, relativeTo: file, node: f.mark("trace_file"), path: f.child("trace_file"), column: "kw",
                                       valid: { range.contains($0) }, rule: "kw in \(format(range.lowerBound))…\(format(range.upperBound))", r)
                .map { PowerPoint(seconds: $0.0, kilowatts: $0.1) }
        }
        switch profile.shape {
        case .steps where profile.levelsKW.isEmpty:
            r.error(f.mark("profile"), f.child("levels_kw"), "is required for profile: steps (the levels after base_kw)")
        case .trace where !f.has("trace_file"):
            r.error(f.mark("profile"), f.child("trace_file"), "is required for profile: trace")
        default: break
        }
        f.finish(known: "profile, base_kw, levels_kw, step_period_s, trace_file")
        return profile
    }

    static let bmsConditionNames: [(String, BMSConditions)] = [
        ("cell_overvoltage", .cellOvervoltage), ("cell_undervoltage", .cellUndervoltage),
        ("overtemperature", .overtemperature), ("undertemperature", .undertemperature),
        ("discharge_overcurrent", .dischargeOvercurrent), ("charge_overcurrent", .chargeOvercurrent),
        ("system_error", .systemError), ("internal_communication", .internalCommunication),
    ]

    /// The `bms:` block of a `bms_values` fault: every key optional, at least one given.
    static func loadBMSOverride(_ b: ConfigReader.Fields, _ r: ConfigReader) -> BMSOverride {
        var o = BMSOverride()
        o.socPercent = b.double("soc_percent", range: 0...100, unit: "%")
        o.packVoltage = b.double("pack_voltage_v", range: 0...1500, unit: "V")
        o.packCurrent = b.double("pack_current_a", range: -5000...5000, unit: "A")
        o.cellVoltageMin = b.double("cell_voltage_min_v", range: 0...5, unit: "V")
        o.cellVoltageMax = b.double("cell_voltage_max_v", range: 0...5, unit: "V")
        o.temperatureMin = b.double("temperature_min_c", range: -60...200, unit: "°C")
        o.temperatureMax = b.double("temperature_max_c", range: -60...200, unit: "°C")
        o.chargeCurrentLimit = b.double("charge_current_limit_a", range: 0...5000, unit: "A")
        o.dischargeCurrentLimit = b.double("discharge_current_limit_a", range: 0...5000, unit: "A")
        if b.has("charge_enabled") { o.chargeEnabled = b.bool("charge_enabled", default: true) }
        if b.has("discharge_enabled") { o.dischargeEnabled = b.bool("discharge_enabled", default: true) }
        for key in ["protections", "alarms"] {
            guard let list = b.sequence(key) else { continue }
            var set = BMSConditions()
            for item in list {
                guard let name = item.string, let c = bmsConditionNames.first(where: { $0.0 == name }) else {
                    r.error(item, b.child(key), "unknown condition (got \(item.string ?? "?")); one of "
                        + bmsConditionNames.map(\.0).joined(separator: ", "))
                    continue
                }
                set.insert(c.1)
            }
            if key == "protections" { o.protections = set } else { o.alarms = set }
        }
        let known = "soc_percent, pack_voltage_v, pack_current_a, cell_voltage_min_v, cell_voltage_max_v, temperature_min_c, temperature_max_c, charge_current_limit_a, discharge_current_limit_a, charge_enabled, discharge_enabled, protections, alarms"
        if !known.split(separator: ",").contains(where: { b.has($0.trimmingCharacters(in: .whitespaces)) }) {
            r.error(b.mark(""), b.path, "names no value to report; known: \(known)")
        }
        b.finish(known: known)
        return o
    }

    /// Reads a `seconds,hz` CSV (a header line is allowed); errors name the CSV line.
    static func loadTrace(_ name: String, relativeTo file: String, node: Node?, path: String, _ r: ConfigReader) -> [TracePoint] {
        loadPoints(name, relativeTo: file, node: node, path: path, column: "hz", valid: { $0 > 40 && $0 < 70 },
                   rule: "40 < hz < 70", r).map { TracePoint(seconds: $0.0, hz: $0.1) }
    }

    /// Reads a `seconds,VALUE` CSV; `valid` checks each value (`rule` says what it wants).
    static func loadPoints(_ name: String, relativeTo file: String, node: Node?, path: String, column: String,
                           valid: (Double) -> Bool, rule: String, _ r: ConfigReader) -> [(Double, Double)] {
        var location = name
        if !name.hasPrefix("/"), let slash = file.lastIndex(of: "/") { location = String(file[...slash]) + name }
        guard let data = FileManager.default.contents(atPath: location), let text = String(data: data, encoding: .utf8) else {
            r.error(node, path, "cannot read the trace file", got: location)
            return []
        }
        var points: [(Double, Double)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty || trimmed.hasPrefix("#") || (number == 0 && trimmed.first?.isLetter == true) { continue }
            let cells = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let t = Double(cells[0]), let value = Double(cells[1]), t.isFinite, value.isFinite, valid(value) else {
                r.error(node, path, "\(location) line \(number + 1): expected seconds,\(column) with \(rule)", got: trimmed)
                return []
            }
            if let last = points.last, t <= last.0 {
                r.error(node, path, "\(location) line \(number + 1): times must increase", got: trimmed)
                return []
            }
            points.append((t, value))
        }
        if points.isEmpty { r.error(node, path, "the trace file has no points", got: location) }
        return points
    }
}

/// The shape of an MQTT broker URL: `mqtt[s]://host[:port]`, a host by `HostAddress`'s rule and a
/// port in 1–65535.
enum MQTTAddress {
    static func valid(_ url: String) -> Bool {
        guard HostAddress.urlHasValidHost(url), let scheme = url.range(of: "://") else { return false }
        let rest = url[scheme.upperBound...].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard !rest.isEmpty else { return false }
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else { return false }
            return colon > rest.startIndex
        }
        return true
    }
}
