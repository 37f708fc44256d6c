import BessBase
import Cycle
import BessSystem
import ControlCore
import Fieldbus
import Foundation
internal import Yams

/// Loads and validates a bessd configuration.
public enum ConfigLoader {
    /// The top-level keys.
    static let topLevelKeys = ConfigKeys("(top level)", [
        "mode", "period_ms", "control_socket", "state_directory", "bess_units", "grid_integration", "limits",
        "interlocks", "aggregator", "simulation", "realtime", "metrics_listen", "site", "scada", "grid_operator",
        "iec104", "ieee2030_5", "schedule", "optimiser", "profile_directories",
    ])

    /// The keys of `limits`.
    static let limitsKeys = ConfigKeys("limits", [
        "ramp_percent_per_s", "schedule_ramp_percent_per_s",
    ])

    /// Loads the file at `path`.
    public static func load(path: String) throws(ConfigurationError) -> BessdConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = access(path, R_OK) == 0 ? "not a readable file" : SystemError.text(errno)
            throw ConfigurationError([ConfigDiagnostic(
                code: .unreadable, file: path, line: nil, keyPath: "", message: "cannot read the file: \(reason)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError([ConfigDiagnostic(
                code: .unreadable, file: path, line: nil, keyPath: "", message: "the file is not UTF-8 text")])
        }
        return try parse(text, file: path)
    }

    /// Loads the file at `path`, or the embedded simulated site when `path` is nil. When the
    /// configuration is invalid, writes each diagnostic (`FILE:LINE: key.path: problem`) to standard
    /// error, one a line, and returns nil: the one place bessd and bess-hil turn a configuration
    /// error into lines for a person (each then exits 1).
    public static func loadReporting(path: String?) -> BessdConfiguration? {
        do {
            if let path { return try load(path: path) }
            return try parse(EmbeddedConfiguration.simulationYAML, file: "<embedded simulation.yaml>")
        } catch {
            for diagnostic in error.diagnostics { FileHandle.standardError.write(Data("\(diagnostic)\n".utf8)) }
            return nil
        }
    }

    /// Parses configuration text; `file` names it in diagnostics. The secret files it names are held
    /// to `KeyPermissions` for `account` (bessd: the process's own user and group).
    public static func parse(_ text: String, file: String,
                             account: KeyPermissions.Account = .current) throws(ConfigurationError) -> BessdConfiguration {
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
        let profiles = ProfileResolver()
        let configuration = decode(root, reader, profiles: profiles)
        let keys = KeyPermissions.diagnostics(root, file: file, account: account)
        if reader.hasErrors || configuration == nil || !keys.isEmpty {
            // The configuration's errors top to bottom like the file, then those of the profiles it names.
            var errors = byLine(reader.diagnostics.filter { $0.severity == .error } + keys) + profiles.fileErrors
            if errors.isEmpty {
                // Never a refusal that says nothing: the fuzz target fails on this message too.
                errors = [ConfigDiagnostic(code: .unexplained, file: file, line: nil, keyPath: "",
                                           message: "refused without a specific error: a bug in bessd; please report this file")]
            }
            throw ConfigurationError(errors)
        }
        var loaded = configuration!
        loaded.notices = reader.diagnostics.filter { $0.severity == .notice } + profiles.notices
        return loaded
    }

    /// `diagnostics` in a stable sort by line, so they read top to bottom like the file.
    static func byLine(_ diagnostics: [ConfigDiagnostic]) -> [ConfigDiagnostic] {
        diagnostics.enumerated().sorted { ($0.element.line ?? 0, $0.offset) < ($1.element.line ?? 0, $1.offset) }.map(\.element)
    }

    /// The keys each section's decoder asked for while reading `text`, by `ConfigKeys.section`, whether
    /// the file was valid or not: the tests hold them to the keys each section declares.
    static func keysRead(_ text: String, file: String) -> [String: Set<String>] {
        guard let root = try? Yams.compose(yaml: text) else { return [:] }
        let reader = ConfigReader(file: file)
        _ = decode(root, reader, profiles: ProfileResolver())
        return reader.keysRead
    }

    static func idPattern(_ text: String) -> Bool { IdentifierRule.accepts(text) }

    /// The whole file: the top-level keys, each section by its own decoder, then the checks across sections.
    static func decode(_ root: Node, _ r: ConfigReader, profiles: ProfileResolver) -> BessdConfiguration? {
        guard let top = r.fields(root, "") else { return nil }
        let mode = decodeMode(top, r)
        let directories = decodeProfileDirectories(top, r)
        profiles.load(directories: directories)
        let period = top.int("period_ms", default: 100, range: 10...1000, unit: "milliseconds")!
        let socket = top.string("control_socket", default: "/run/bessd/control.sock",
                                pattern: { $0.hasPrefix("/") && $0.utf8.count < 108 },
                                rule: "must be an absolute path shorter than 108 bytes")!
        let state = top.string("state_directory", default: "/var/lib/bessd", pattern: { $0.hasPrefix("/") },
                               rule: "must be an absolute path")!
        let grid = GridConfiguration.decode(top.fields("grid_integration"), r, top, mode: mode)
        let units = UnitConfiguration.decodeList(top, r, mode: mode, profiles: profiles)
        var limitRamp = 10.0
        var scheduleRamp = 10.0
        if let limits = top.fields("limits") {
            limitRamp = limits.double("ramp_percent_per_s", default: 10, range: 0...1000, exclusiveLower: true, unit: "%/s")!
            scheduleRamp = limits.double("schedule_ramp_percent_per_s", default: 10, range: 0...1000,
                                         exclusiveLower: true, unit: "%/s")!
            limits.finish(Self.limitsKeys)
        }
        let interlocks = InterlockOverride.decodeTable(top.fields("interlocks"), r)
        var aggregator = top.fields("aggregator").map { AggregatorConfiguration.decode($0, r) }
        let simulation = SimulationConfiguration.decode(top.fields("simulation"), grid?.droop.nominal.value ?? 50,
                                                 units: units?.map(\.id) ?? [], file: r.file, r)
        if mode == .hardware, !simulation.faults.isEmpty, let faults = top.fields("simulation")?.mark("faults") {
            r.error(faults, "simulation.faults", Self.notInHardware)
        }
        let realtime = top.fields("realtime").map { RealtimeSettings.decode($0, r) }
        let metrics = top.string("metrics_listen", pattern: { ListenAddress($0, allowsPortZero: true) != nil },
                                 rule: "must be IPV4:PORT, e.g. 127.0.0.1:9464")
        let site = SiteConfiguration.decode(top.fields("site"), r, mode: mode, units: units ?? [],
                                            unitReactive: grid?.reactivePower ?? ReactivePowerConfiguration())
        let scada = ScadaConfiguration.decode(top.fields("scada"), r, units: units ?? [])
        let inputs = GridLimitInputsConfiguration.decode(top.fields("grid_operator"), r, units: units ?? [], site: site, scada: scada)
        let iec104 = IEC104Configuration.decode(top.fields("iec104"), r, units: units ?? [])
        let ieee2030_5 = IEEE2030_5Settings.decode(top.fields("ieee2030_5"), r)
        let schedule = top.fields("schedule").map { ScheduleConfiguration.decode($0, r) }
        let optimiserFields = top.fields("optimiser")
        let optimiser = optimiserFields.map { OptimiserConfiguration.decode($0, r) }
        if let optimiser, let optimiserFields {
            OptimiserConfiguration.check(optimiser, schedule: schedule, aggregator: aggregator, optimiserFields, r)
        }
        top.finish(Self.topLevelKeys)
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
        configuration.iec104 = iec104
        configuration.ieee2030_5 = ieee2030_5
        configuration.schedule = schedule
        configuration.optimiser = optimiser
        configuration.profileDirectories = directories
        return configuration
    }

    /// `profile_directories:` — where device profiles are read, earlier first (wins on a name clash).
    static func decodeProfileDirectories(_ top: ConfigReader.Fields, _ r: ConfigReader) -> [String] {
        guard let list = top.sequence("profile_directories") else { return ProfileLibrary.defaultDirectories }
        var directories: [String] = []
        for node in list {
            if case .scalar(let scalar) = node, scalar.string.hasPrefix("/") { directories.append(scalar.string) } else {
                r.error(node, "profile_directories", "expected absolute directory paths", got: ConfigReader.shown(node))
            }
        }
        return directories
    }

    /// `mode:` — simulation, hil or hardware. The seed's names for mixed rigs mean `hil`.
    static func decodeMode(_ top: ConfigReader.Fields, _ r: ConfigReader) -> RunMode {
        let aliases = ["hardware-in-loop", "hardware_in_loop", "grid-connected-simulation", "grid_connected_simulation"]
        if let name = top.node("mode")?.scalar?.string, aliases.contains(name) {
            r.notice(top.mark("mode"), "mode", "'\(name)' is read as mode hil (real and simulated devices mixed)")
            return .hil
        }
        return top.choice("mode", RunMode.allCases.map { ($0.rawValue, $0) }, default: .simulation)
    }

    /// The message for a simulated input in hardware mode.
    static let notInHardware = "not allowed in mode hardware; use mode hil"
}
