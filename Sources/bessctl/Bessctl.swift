import ArgumentParser
import ControlCore
import Foundation
import ControlProtocol

@main
struct Bessctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bessctl",
        abstract: "Operator tool for bessd.",
        version: BessdVersion.string,
        subcommands: [Status.self, Site.self, Faults.self, Reset.self, Mode.self, Override.self, Codes.self, Probe.self, Diag.self])

    /// Options that apply to every verb work where people type them: `bessctl --socket PATH status`
    /// is `bessctl status --socket PATH`.
    static func main() {
        main(globalOptionsMoved(Array(CommandLine.arguments.dropFirst())))
    }

    /// Moves `--socket PATH` / `--socket=PATH` given before the verb (or, for `probe`, between the
    /// verb and its subcommand) to the end, where every verb takes it.
    static func globalOptionsMoved(_ arguments: [String]) -> [String] {
        var moved: [String] = []
        /// Takes the `--socket` options at the front of `arguments` (other options stay, in order).
        func takeSockets(_ arguments: ArraySlice<String>) -> (kept: [String], rest: ArraySlice<String>) {
            var kept: [String] = []
            var rest = arguments
            while let argument = rest.first, argument.hasPrefix("-"), argument != "--" {
                if argument == "--socket", rest.count > 1 {
                    moved += [argument, rest[rest.startIndex + 1]]
                    rest = rest.dropFirst(2)
                } else if argument.hasPrefix("--socket=") {
                    moved.append(argument)
                    rest = rest.dropFirst()
                } else {
                    kept.append(argument)
                    rest = rest.dropFirst()
                }
            }
            return (kept, rest)
        }
        let (before, afterOptions) = takeSockets(arguments[...])
        var rest = Array(afterOptions)
        if rest.first == "probe" {
            let (kept, tail) = takeSockets(rest.dropFirst())
            rest = ["probe"] + kept + Array(tail)
        }
        if moved.isEmpty { return before + rest }
        if let terminator = rest.firstIndex(of: "--") {
            return before + rest[..<terminator] + moved + rest[terminator...]
        }
        return before + rest + moved
    }
}

/// Lists every interlock code with its default rule, so a field engineer can read a trip without the docs.
struct Codes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List every interlock code with its default rule.")

    @Argument(help: "Show only this code (e.g. CELL_OVERVOLTAGE).")
    var code: String?

    @Flag(help: "Print the table as Markdown (docs/interlocks.md is made from it).")
    var markdown = false

    @OptionGroup var connection: IgnoredSocketOption

    func run() throws {
        var rules = InterlockRule.defaultTable()
        if let code {
            guard let wanted = TripCode(name: code) else {
                throw ValidationError("unknown code '\(code)'; run 'bessctl codes' for the list")
            }
            rules = rules.filter { $0.code == wanted }
        }
        if markdown {
            print(Self.markdownTable(rules))
            return
        }
        for rule in rules {
            let op = rule.comparison == .above ? ">" : "<"
            var condition = "\(rule.metric) \(op) \(rule.threshold) \(rule.metric.unitSymbol)"
            if case .derate(let start) = rule.severity {
                condition = "\(rule.metric) from \(start) to \(rule.threshold) \(rule.metric.unitSymbol)"
            }
            print("\(rule.code.name)  [\(rule.severity.name), \(rule.direction.rawValue)]  \(condition)")
            print("    \(rule.code.explanation)")
        }
    }

    static func markdownTable(_ rules: [InterlockRule]) -> String {
        var lines = [
            "| Code | Watches | Acts when | Hysteresis | Delay | Hold | Severity | Direction | What it means |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for rule in rules {
            let unit = "\(rule.metric.unitSymbol)"
            let op = rule.comparison == .above ? ">" : "<"
            var when = "\(op) \(number(rule.threshold)) \(unit)"
            if case .derate(let start) = rule.severity {
                when = "from \(number(start)) (full) to \(number(rule.threshold)) \(unit) (zero)"
            }
            let hold = rule.severity == .latch ? "operator reset" : "\(number(rule.hold.secondsDouble)) s"
            lines.append(
                "| `\(rule.code.name)` | \(rule.metric) | \(when) | \(number(rule.hysteresis)) | "
                    + "\(number(rule.delay.secondsDouble)) s | \(hold) | \(rule.severity.name) | \(rule.direction.rawValue) | "
                    + "\(rule.code.explanation) |")
        }
        return lines.joined(separator: "\n")
    }

    static func number(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }
}

/// `--socket PATH`, shared by every verb that talks to bessd.
struct SocketOption: ParsableArguments {
    @Option(name: .long, help: "bessd's control socket.")
    var socket: String = "/run/bessd/control.sock"

    /// Sends a request; prints bessd's error and exits non-zero when it refuses.
    func send(_ request: ControlRequest) throws -> [String: Any] {
        let answer: [String: Any]
        do {
            answer = try ControlClient.request(request, socket: socket)
        } catch {
            FileHandle.standardError.write(Data("bessctl: \(error)\n".utf8))
            throw ExitCode(3)
        }
        guard answer["ok"] as? Bool == true else {
            let code = answer["code"] as? String ?? "ERROR"
            FileHandle.standardError.write(Data("bessctl: \(code): \(answer["message"] as? String ?? "refused")\n".utf8))
            throw ExitCode(2)
        }
        return answer
    }
}

/// `--socket PATH` on a verb that talks to no bessd (`codes`, `probe`): accepted, so every verb takes
/// it in the same places, and unused.
struct IgnoredSocketOption: ParsableArguments {
    @Option(name: .long, help: "Accepted as on every verb; this one does not talk to bessd.")
    var socket: String?
}

func number(_ value: Any?, scale: Double = 1, digits: Int = 1) -> String {
    guard let n = (value as? NSNumber)?.doubleValue, n.isFinite else { return "--" }
    return String(format: "%.\(digits)f", n / scale)
}

func json(_ object: [String: Any]) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// Prints rows (the first is the header) in columns padded to their widest cell.
func printTable(_ rows: [[String]]) {
    let widths = (rows.first ?? []).indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    for row in rows {
        print(row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
            .joined(separator: "  "))
    }
}

/// A table a person reads at a glance.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show every unit's state, power and trips, and cycle health.")
    @OptionGroup var connection: SocketOption
    @Flag(help: "Print bessd's answer as JSON.") var json = false

    func run() throws {
        let answer = try connection.send(ControlRequest(.status))
        if json {
            print(bessctl.json(answer))
            return
        }
        let cycle = answer["cycle"] as? [String: Any] ?? [:]
        print("bessd \(answer["version"] ?? "?")  mode \(answer["mode"] ?? "?")  f \(number(answer["frequency_hz"], digits: 3)) Hz  "
              + "cycle \(cycle["period_ms"] ?? "?") ms  jitter p99 \(cycle["jitter_p99_us"] ?? "?") µs  max \(cycle["jitter_max_us"] ?? "?") µs  "
              + "overruns \(cycle["overruns"] ?? "?")")
        if let uplink = answer["uplink"] as? [String: Any] { print(Self.uplinkLine(uplink, now: Date().timeIntervalSince1970)) }
        if let clock = answer["clock"] as? [String: Any], let line = Self.clockLine(clock) { print(line) }
        for line in Self.gridOperatorLines(answer["grid_operator"] as? [String: Any] ?? [:]) { print(line) }
        let header = ["UNIT", "STATE", "MODE", "SOC %", "POWER kW", "SETPOINT kW", "TRIPS"]
        var rows = [header]
        for unit in answer["units"] as? [[String: Any]] ?? [] {
            let trips = (unit["trips"] as? [String] ?? []).map { code in
                (unit["latched"] as? [String] ?? []).contains(code) ? code + " (latched)" : code
            }
            let mode = Self.modeText(unit)
            rows.append([unit["id"] as? String ?? "?", unit["state"] as? String ?? "?", mode, number(unit["soc_percent"]),
                         number(unit["power_w"], scale: 1000), number(unit["setpoint_w"], scale: 1000),
                         trips.isEmpty ? "-" : trips.joined(separator: ", ")])
        }
        printTable(rows)
    }
}

extension Status {
    /// `clock NOT synchronised (CLOCK_UNSYNCED, kernel): records and energy blocks are flagged`, or
    /// nil when the clock is synchronised and never stepped (nothing to say).
    static func clockLine(_ c: [String: Any]) -> String? {
        let steps = c["steps"] as? Int ?? 0
        let stepped = steps > 0
            ? ", \(steps) step\(steps == 1 ? "" : "s") seen (CLOCK_STEPPED, last \(number(c["last_step_s"], digits: 1)) s)" : ""
        switch c["synchronized"] as? Bool {
        case false?:
            return "clock NOT synchronised (CLOCK_UNSYNCED, \(c["source"] as? String ?? "?")): records and energy blocks are flagged" + stepped
        case true?:
            return stepped.isEmpty ? nil : "clock synchronised" + stepped
        case nil:
            return "clock synchronisation unknown (no adjtimex, no systemd-timesyncd)" + stepped
        }
    }

    /// `uplink mqtt mqtt://broker:8883 connected, last ack 1 s ago, backlog 0 records`
    static func uplinkLine(_ u: [String: Any], now: Double) -> String {
        var line = "uplink \(u["transport"] as? String ?? "?") \(u["url"] as? String ?? "?") "
        line += (u["connected"] as? Bool == true) ? "connected" : "not connected"
        if let error = u["last_error"] as? String { line += " (\(error))" }
        if let last = u["last_ack_unix"] as? NSNumber { line += ", last ack \(Int((now - last.doubleValue).rounded())) s ago" }
        if let backlog = u["backlog_records"] as? NSNumber { line += ", backlog \(backlog) records" }
        return line
    }

    /// `grid operator limit 30 % (SCADA, reverts in 8 s; relay inputs --) → cap 60.0 kW, limiting`
    /// and `SCADA setpoint 150.0 kW (reverts in 25 s)`, when they stand.
    static func gridOperatorLines(_ g: [String: Any]) -> [String] {
        var lines: [String] = []
        if let percent = g["limit_percent"] as? NSNumber {
            let scada = g["scada_limit"] as? [String: Any]
            var sources: [String] = []
            if let scada {
                sources.append(scada["reverted"] as? Bool == true
                    ? "SCADA reversion value \(number(scada["percent"], digits: 0)) %, holds until written"
                    : "SCADA \(number(scada["percent"], digits: 0)) %, reverts in \(number(scada["remaining_s"], digits: 0)) s")
            }
            if let input = g["input_limit_percent"] as? NSNumber { sources.append("relay inputs \(number(input, digits: 0)) %") }
            lines.append("grid operator limit \(number(percent, digits: 0)) % (\(sources.joined(separator: "; "))) → cap "
                         + "\(number(g["cap_w"], scale: 1000)) kW" + (g["limiting"] as? Bool == true ? ", limiting" : ""))
        } else if let cap = g["cap_w"] as? NSNumber {
            lines.append("grid operator limit ended; cap rising at the limit ramp, now \(number(cap, scale: 1000)) kW")
        }
        if (g["inputs"] as? [String: Any])?["lost"] as? Bool == true {
            lines.append("GRID_LIMIT_INPUT_LOST  the relay contacts' I/O module does not answer; the last limit holds")
        }
        if let setpoint = g["scada_setpoint"] as? [String: Any] {
            lines.append("SCADA setpoint \(number(setpoint["power_w"], scale: 1000)) kW (reverts in \(number(setpoint["remaining_s"], digits: 0)) s)")
        }
        return lines
    }

    /// The mode and who holds it: `standby (operator)`, `standby (aggregator until 14:05:00)`,
    /// `auto (override -20.0 kW until 14:20:00)`, `auto (dispatch 30.0 kW)`, `auto`.
    static func modeText(_ unit: [String: Any]) -> String {
        let mode = unit["mode"] as? String ?? "?"
        let until = (unit["held_until_unix"] as? NSNumber).map { " until " + clock($0.doubleValue) } ?? ""
        switch unit["held_by"] as? String {
        case "operator": return "\(mode) (operator)"
        case "operator_site": return "\(mode) (operator, whole site)"
        case "aggregator": return "\(mode) (aggregator\(until))"
        case "aggregator_emergency_stop": return "\(mode) (aggregator emergency stop\(until))"
        case "override":
            let o = unit["override"] as? [String: Any] ?? [:]
            return "\(mode) (override \(number(o["power_w"], scale: 1000)) kW\(until))"
        case "dispatch":
            let d = unit["dispatch"] as? [String: Any] ?? [:]
            return "\(mode) (dispatch \(number(d["power_w"], scale: 1000)) kW)"
        default: return mode
        }
    }

    /// Local wall-clock time HH:MM:SS of a Unix time.
    static func clock(_ unix: Double) -> String {
        var t = time_t(unix)
        var parts = tm()
        localtime_r(&t, &parts)
        return String(format: "%02d:%02d:%02d", Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}

/// The site at its grid connection point.
struct Site: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show grid power, the grid limits and which binds, the site application, and each unit's share and why.")
    @OptionGroup var connection: SocketOption
    @Flag(help: "Print bessd's answer as JSON (grid_power_w: + = import).") var json = false

    func run() throws {
        let answer = try connection.send(ControlRequest(.site))
        if json {
            print(bessctl.json(answer))
            return
        }
        let meter = answer["meter"] as? [String: Any] ?? [:]
        let limits = answer["limits"] as? [String: Any] ?? [:]
        let application = answer["application"] as? [String: Any] ?? [:]
        let decision = answer["decision"] as? [String: Any] ?? [:]
        let shortfall = answer["shortfall"] as? [String: Any] ?? [:]
        var grid = "no meter"
        if meter["configured"] as? Bool == true {
            grid = meter["stale"] as? Bool == true ? "-- (METER_STALE)" : "\(number(answer["grid_power_w"], scale: 1000)) kW (+ = import)"
        }
        print("grid      \(grid)")
        let binding = limits["binding"] as? String
        print("limits    import \(number(limits["import_max_w"], scale: 1000)) kW, export \(number(limits["export_max_w"], scale: 1000)) kW"
              + (binding.map { ", \($0) limit binding" } ?? ""))
        var app = "\(application["name"] ?? "none")"
        if app != "none" {
            app += application["active"] as? Bool == true ? ", active, target \(number(application["target_w"], scale: 1000)) kW" : ", resting"
            app += ", SOC reserve \(number(application["soc_reserve_percent"])) %"
        }
        print("app       \(app)")
        for line in Status.gridOperatorLines(answer["grid_operator"] as? [String: Any] ?? [:]) { print("operator  \(line)") }
        print("decision  asked \(number(decision["requested_w"], scale: 1000)) kW + application \(number(decision["application_w"], scale: 1000)) kW"
              + " → pool \(number(decision["pool_w"], scale: 1000)) kW, held \(number(decision["held_w"], scale: 1000)) kW, "
              + "delivered \(number(decision["delivered_w"], scale: 1000)) kW")
        if shortfall["active"] as? Bool == true {
            print("SITE_SHORTFALL  \(number(shortfall["missing_w"], scale: 1000)) kW the units cannot deliver")
        }
        let header = ["UNIT", "SHARE", "WHY", "SOC %", "ALLOWED −/+ kW"]
        var rows = [header]
        for unit in answer["units"] as? [[String: Any]] ?? [] {
            rows.append([unit["id"] as? String ?? "?", number(unit["setpoint_w"], scale: 1000), unit["share"] as? String ?? "?",
                         number(unit["soc_percent"]),
                         "\(number(unit["allowed_charge_w"], scale: 1000)) / \(number(unit["allowed_discharge_w"], scale: 1000))"])
        }
        printTable(rows)
    }
}

struct Faults: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List active trips with what they mean; latched ones need bessctl reset.")
    @OptionGroup var connection: SocketOption

    func run() throws {
        let faults = try connection.send(ControlRequest(.faults))["faults"] as? [[String: Any]] ?? []
        if faults.isEmpty {
            print("no active faults")
            return
        }
        for fault in faults {
            let latched = fault["latched"] as? Bool == true ? " LATCHED (bessctl reset)" : ""
            print("\(fault["unit"] ?? "?")  \(fault["code"] ?? "?")\(latched)\n    \(fault["explanation"] ?? "")")
        }
    }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reset latched faults of one unit (or all); refused while a condition is still present.")
    @OptionGroup var connection: SocketOption
    @Argument(help: "The unit id (default: every unit).") var unit: String?

    func run() throws {
        let answer = try connection.send(ControlRequest(.reset, unit: unit))
        let cleared = answer["cleared"] as? [String] ?? []
        let refused = answer["refused"] as? [String] ?? []
        print("cleared: \(cleared.isEmpty ? "none" : cleared.joined(separator: ", "))")
        if !refused.isEmpty {
            print("still latched (condition present or unknown): \(refused.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }
}

struct Mode: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Set auto (normal operation) or standby (no power).")
    @OptionGroup var connection: SocketOption
    @Argument(help: "auto or standby") var mode: String
    @Option(help: "Only this unit.") var unit: String?

    func validate() throws {
        guard mode == "auto" || mode == "standby" else { throw ValidationError("mode must be auto or standby") }
    }

    func run() throws {
        let answer = try connection.send(ControlRequest(.mode, unit: unit, mode: mode))
        let held = answer["still_standby"] as? [[String: Any]] ?? []
        print(Self.reply(mode: mode, unit: unit, stillStandby: held.map { ($0["unit"] as? String ?? "?", $0["held_by"] as? String ?? "?") }))
    }

    /// What happened, not what was asked: `auto` lifts only the standby it names, so a unit that
    /// another hold keeps in standby is named with that hold and how to lift it.
    static func reply(mode: String, unit: String?, stillStandby: [(unit: String, by: String)]) -> String {
        var line = unit.map { "mode \(mode) on \($0)" } ?? (mode == "auto" ? "site standby lifted" : "mode standby on every unit")
        guard !stillStandby.isEmpty else { return line + (unit == nil && mode == "auto" ? ": every unit in auto" : "") }
        line += "; still in standby:"
        for (id, by) in stillStandby {
            let why = switch by {
            case "operator": "its own operator standby (bessctl mode auto --unit \(id) lifts it)"
            case "operator_site": "the site's operator standby (bessctl mode auto lifts it)"
            case "aggregator", "aggregator_emergency_stop": "the aggregator's \(by == "aggregator" ? "standby" : "emergency stop") until it ends or the aggregator lifts it"
            default: by
            }
            line += "\n  \(id): \(why)"
        }
        return line
    }
}

struct Override: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hold a unit at a power for a while (still inside every interlock), e.g. --power-kw=-20 --for 15m.")
    @OptionGroup var connection: SocketOption
    @Option(help: "The unit id.") var unit: String
    @Option(name: .customLong("power-kw"), help: "Power in kW, + = discharge; write a charge as --power-kw=-20.") var powerKw: Double?
    @Option(name: .customLong("for"), help: "How long: 90s, 15m, 2h (mandatory with --power-kw).") var duration: String?
    @Flag(help: "End the override now.") var clear = false

    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        if let last = text.last, let scale = units[last], let value = Double(text.dropLast()) { return value * scale }
        return Double(text)
    }

    func validate() throws {
        if clear { return }
        guard powerKw != nil else { throw ValidationError("give --power-kw and --for, or --clear") }
        guard let duration, let seconds = Self.seconds(duration), seconds >= 1 else {
            throw ValidationError("an override needs an expiry: --for 90s, 15m or 2h")
        }
    }

    func run() throws {
        if clear {
            _ = try connection.send(ControlRequest(.override, unit: unit, clear: true))
            print("override on \(unit) cleared")
            return
        }
        let seconds = Self.seconds(duration ?? "") ?? 0
        _ = try connection.send(ControlRequest(.override, unit: unit, powerKW: powerKw ?? 0, forSeconds: seconds))
        print("override on \(unit): \(powerKw ?? 0) kW for \(Int(seconds)) s (interlocks still apply)")
    }
}
