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
        subcommands: [Status.self, Site.self, Faults.self, Events.self, ScheduleCommand.self, PlanCommand.self, IEEE2030_5Command.self, Reset.self, Mode.self, Override.self, Codes.self, Probe.self, Diag.self, Profiles.self])

    /// Options that apply to every verb work where people type them: `bessctl --socket PATH status`
    /// is `bessctl status --socket PATH`.
    static func main() {
        main(globalOptionsMoved(Array(CommandLine.arguments.dropFirst())))
    }

    /// Moves `--socket PATH` / `--socket=PATH` given before the verb (or, for `probe` and `schedule`,
    /// between the verb and its subcommand) to the end, where every verb takes it.
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
        if let verb = rest.first, verb == "probe" || verb == "schedule" {
            let (kept, tail) = takeSockets(rest.dropFirst())
            rest = [verb] + kept + Array(tail)
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
    func send(_ request: ControlRequest) throws -> ControlAnswer {
        let answer: ControlAnswer
        do {
            answer = try ControlClient.answer(request, socket: socket)
        } catch {
            FileHandle.standardError.write(Data("bessctl: \(error)\n".utf8))
            throw ExitCode(3)
        }
        if let refusal = answer.refusal {
            FileHandle.standardError.write(Data("bessctl: \(refusal.code): \(refusal.message)\n".utf8))
            throw ExitCode(2)
        }
        return answer
    }

    /// Sends a request and decodes its reply; exits non-zero when bessd refuses or answers
    /// something else.
    func send<R: ControlReply>(_ request: ControlRequest, expecting type: R.Type) throws -> R {
        try decode(send(request), as: type)
    }

    /// The answer as a reply of `type`; says so and exits non-zero when it is not one.
    func decode<R: ControlReply>(_ answer: ControlAnswer, as type: R.Type) throws -> R {
        do {
            return try answer.reply(as: type)
        } catch {
            FileHandle.standardError.write(Data("bessctl: \(error)\n".utf8))
            throw ExitCode(3)
        }
    }
}

/// `--socket PATH` on a verb that talks to no bessd (`codes`, `probe`): accepted, so every verb takes
/// it in the same places, and unused.
struct IgnoredSocketOption: ParsableArguments {
    @Option(name: .long, help: "Accepted as on every verb; this one does not talk to bessd.")
    var socket: String?
}

func number(_ value: Double?, scale: Double = 1, digits: Int = 1) -> String {
    guard let value, value.isFinite else { return "--" }
    return String(format: "%.\(digits)f", value / scale)
}

/// bessd's answer as the JSON bessctl prints (`--json`, diag's files): the line it sent,
/// indented, keys sorted. The one place bessctl reads an answer as an untyped tree (a JSON edge).
func json(_ line: [UInt8]) -> String {
    guard let tree = try? JSONSerialization.jsonObject(with: Data(line)),
          let data = try? JSONSerialization.data(withJSONObject: tree, options: [.prettyPrinted, .sortedKeys])
    else { return String(decoding: line, as: UTF8.self) }
    return String(decoding: data, as: UTF8.self)
}

/// Prints rows (the first is the header) in columns padded to their widest cell.
func printTable(_ rows: [[String]]) {
    for line in tableLines(rows) { print(line) }
}

/// Rows (the first is the header) as lines of columns padded to their widest cell.
func tableLines(_ rows: [[String]]) -> [String] {
    let widths = (rows.first ?? []).indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
        row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: "  ")
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
            print(bessctl.json(answer.bytes))
            return
        }
        let status = try connection.decode(answer, as: StatusReply.self)
        let cycle = status.cycle
        print("bessd \(status.version)  mode \(status.mode)  f \(number(status.frequencyHz, digits: 3)) Hz\(Self.sourceText(status))  "
              + "cycle \(cycle.periodMs) ms  jitter p99 \(cycle.jitterP99Us) µs  max \(cycle.jitterMaxUs) µs  "
              + "overruns \(cycle.overruns)")
        if let uplink = status.uplink { print(Self.uplinkLine(uplink, now: Date().timeIntervalSince1970)) }
        if let line = Self.clockLine(status.clock) { print(line) }
        for line in Self.healthLines(status.health) { print(line) }
        if let holdState = status.holdState { print(holdState + "; every unit started in the operator's standby (bessctl mode auto lifts it)") }
        for line in Self.gridOperatorLines(status.gridOperator) { print(line) }
        if let line = status.agc.flatMap(Self.agcLine) { print(line) }
        let header = ["UNIT", "STATE", "MODE", "SOC %", "POWER kW", "SETPOINT kW", "Q kvar", "V p.u.", "TRIPS"]
        var rows = [header]
        for unit in status.units {
            let trips = unit.trips.map { code in unit.latched.contains(code) ? code + " (latched)" : code }
            rows.append([unit.id, unit.state, Self.modeText(unit), number(unit.socPercent),
                         number(unit.powerW, scale: 1000), number(unit.setpointW, scale: 1000),
                         number(unit.reactiveKvar), number(unit.voltagePU, digits: 3),
                         trips.isEmpty ? "-" : trips.joined(separator: ", ")])
        }
        printTable(rows)
    }
}

extension Status {
    /// ` (pmu, 12 ms old)`: where the frequency came from and its age; empty from a bessd that predates it.
    static func sourceText(_ status: StatusReply) -> String {
        guard let source = status.frequencySource else { return "" }
        return " (\(source)" + (status.frequencyAgeMs.map { ", \(number($0, digits: 0)) ms old" } ?? "") + ")"
    }

    /// `clock NOT synchronised (CLOCK_UNSYNCED, kernel): records and energy blocks are flagged`, or
    /// nil when the clock is synchronised and never stepped (nothing to say).
    static func clockLine(_ c: ClockReply) -> String? {
        let steps = c.steps
        let stepped = steps > 0
            ? ", \(steps) step\(steps == 1 ? "" : "s") seen (CLOCK_STEPPED, last \(number(c.lastStepS, digits: 1)) s)" : ""
        switch c.synchronized {
        case false?:
            return "clock NOT synchronised (CLOCK_UNSYNCED, \(c.source)): records and energy blocks are flagged" + stepped
        case true?:
            return stepped.isEmpty ? nil : "clock synchronised" + stepped
        case nil:
            return "clock synchronisation unknown (no adjtimex, no systemd-timesyncd)" + stepped
        }
    }

    /// `uplink mqtt mqtt://broker:8883 connected, last ack 1 s ago, backlog 0 records`
    static func uplinkLine(_ u: UplinkReply, now: Double) -> String {
        var line = "uplink \(u.transport) \(u.url) "
        line += u.connected == true ? "connected" : "not connected"
        if let error = u.lastError { line += " (\(error))" }
        if let last = u.lastAckUnix { line += ", last ack \(Int((now - last).rounded())) s ago" }
        if let backlog = u.backlogRecords { line += ", backlog \(backlog) records" }
        return line
    }

    /// `grid operator limit 30 % (SCADA, reverts in 8 s; relay inputs --) → cap 60.0 kW, limiting`
    /// and `SCADA setpoint 150.0 kW (reverts in 25 s)`, when they stand.
    static func gridOperatorLines(_ g: GridOperatorReply) -> [String] {
        var lines: [String] = []
        if let percent = g.limitPercent {
            var sources: [String] = []
            if let scada = g.scadaLimit {
                sources.append(scada.reverted
                    ? "SCADA reversion value \(number(scada.percent, digits: 0)) %, holds until written"
                    : "SCADA \(number(scada.percent, digits: 0)) %, reverts in \(number(scada.remainingS, digits: 0)) s")
            }
            if let input = g.inputLimitPercent { sources.append("relay inputs \(number(input, digits: 0)) %") }
            lines.append("grid operator limit \(number(percent, digits: 0)) % (\(sources.joined(separator: "; "))) → cap "
                         + "\(number(g.capW, scale: 1000)) kW" + (g.limiting ? ", limiting" : ""))
        } else if let cap = g.capW {
            lines.append("grid operator limit ended; cap rising at the limit ramp, now \(number(cap, scale: 1000)) kW")
        }
        if g.inputs.lost == true {
            lines.append("GRID_LIMIT_INPUT_LOST  the relay contacts' I/O module does not answer; the last limit holds")
        }
        if let setpoint = g.scadaSetpoint {
            lines.append("SCADA setpoint \(number(setpoint.powerW, scale: 1000)) kW (reverts in \(number(setpoint.remainingS, digits: 0)) s)")
        }
        return lines
    }

    /// `AGC in service, target 150.0 kW, following 120.0 kW (fresh 10 s; band -150.0…200.0 kW, ramp 30.0 kW/s)`,
    /// `AGC in service, AGC_SIGNAL_LOST: the schedule decides`, `AGC out of service`; nil when not configured.
    static func agcLine(_ a: AGCReply) -> String? {
        guard a.configured else { return nil }
        guard a.inService else { return "AGC out of service" }
        var line = "AGC in service"
        if a.signalLost {
            line += ", AGC_SIGNAL_LOST: the schedule decides"
        } else if let target = a.targetW {
            line += ", target \(number(target, scale: 1000)) kW, following \(number(a.followedW, scale: 1000)) kW "
                + "(fresh \(number(a.remainingS, digits: 0)) s"
        } else {
            line += ", no target yet (fresh \(number(a.remainingS, digits: 0)) s"
        }
        if !a.signalLost {
            line += "; band \(number(a.lowerLimitW, scale: 1000))…\(number(a.upperLimitW, scale: 1000)) kW, "
                + "ramp \(number(a.rampWPerS, scale: 1000)) kW/s)"
        }
        return line
    }

    /// The mode and who holds it: `standby (operator)`, `standby (aggregator until 14:05:00)`,
    /// `auto (override -20.0 kW until 14:20:00)`, `auto (dispatch 30.0 kW)`, `auto`.
    static func modeText(_ unit: UnitReply) -> String {
        let mode = unit.mode
        let until = unit.heldUntilUnix.map { " until " + clock($0) } ?? ""
        switch unit.heldBy {
        case "operator": return "\(mode) (operator)"
        case "operator_site": return "\(mode) (operator, whole site)"
        case "aggregator": return "\(mode) (aggregator\(until))"
        case "aggregator_emergency_stop": return "\(mode) (aggregator emergency stop\(until))"
        case "override":
            return "\(mode) (override \(number(unit.override?.powerW, scale: 1000)) kW\(until))"
        case "dispatch":
            return "\(mode) (dispatch \(number(unit.dispatch?.powerW, scale: 1000)) kW)"
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
            print(bessctl.json(answer.bytes))
            return
        }
        let site = try connection.decode(answer, as: SiteReply.self)
        let decision = site.decision
        var grid = "no meter"
        if site.meter.configured {
            grid = site.meter.stale == true ? "-- (METER_STALE)" : "\(number(site.gridPowerW, scale: 1000)) kW (+ = import)"
        }
        print("grid      \(grid)")
        var reactiveShort = site.reactiveShortfallKvar.map { abs($0) >= 0.001 ? ", \(number($0)) kvar not delivered" : "" } ?? ""
        if let source = site.reactive {
            reactiveShort = ", setpoint \(number(site.reactiveSetpointKvar)) kvar (\(source))" + reactiveShort
        }
        print("voltage   \(number(site.voltagePU, digits: 3)) p.u., reactive \(number(site.reactiveKvar)) kvar (+ = injecting)\(reactiveShort)")
        print("limits    import \(number(site.limits.importMaxW, scale: 1000)) kW, export \(number(site.limits.exportMaxW, scale: 1000)) kW"
              + (site.limits.binding.map { ", \($0) limit binding" } ?? ""))
        let application = site.application
        var app = application.name
        if app != "none" {
            app += application.active ? ", active, target \(number(application.targetW, scale: 1000)) kW" : ", resting"
            app += ", SOC reserve \(number(application.socReservePercent)) %"
        }
        print("app       \(app)")
        if let reserve = site.responseReserve { print("reserve   \(Self.reserveLine(reserve))") }
        for line in Status.gridOperatorLines(site.gridOperator) { print("operator  \(line)") }
        if let line = site.agc.flatMap(Status.agcLine) { print("agc       \(line)") }
        if let utility = site.utility { print("utility   \(Self.utilityLine(utility, units: site.units))") }
        print("decision  asked \(number(decision.requestedW, scale: 1000)) kW + application \(number(decision.applicationW, scale: 1000)) kW"
              + " → pool \(number(decision.poolW, scale: 1000)) kW, held \(number(decision.heldW, scale: 1000)) kW, "
              + "delivered \(number(decision.deliveredW, scale: 1000)) kW")
        if site.shortfall.active {
            print("SITE_SHORTFALL  \(number(site.shortfall.missingW, scale: 1000)) kW the units cannot deliver")
        }
        let header = ["UNIT", "SHARE", "WHY", "SOC %", "ALLOWED −/+ kW"]
        var rows = [header]
        for unit in site.units {
            rows.append([unit.id, number(unit.setpointW, scale: 1000), unit.share, number(unit.socPercent),
                         "\(number(unit.allowedChargeW, scale: 1000)) / \(number(unit.allowedDischargeW, scale: 1000))"])
        }
        printTable(rows)
    }
}

extension Site {
    /// `export 50.0 kW, import -- kW, discharge ≤ 30.0 kW, charge ≤ -- kW, request -- kW; generation binding`
    static func utilityLine(_ u: UtilityReply, units: [SiteUnitReply] = []) -> String {
        if u.disconnected {
            // Each unit's contactor: opened where its inverter has SunSpec model 123 (Conn), else at zero only.
            var line = "disconnected (opModConnect/opModEnergize false): every unit at zero"
            for state in ["opening", "open", "cannot_open"] {
                let ids = units.filter { $0.contactor == state }.map(\.id)
                if !ids.isEmpty { line += "; \(state.replacingOccurrences(of: "_", with: " ")): \(ids.joined(separator: ", "))" }
            }
            if units.contains(where: { $0.contactor == "cannot_open" }) { line += " (CONTACTOR_UNAVAILABLE: no usable SunSpec 123 Conn)" }
            return line
        }
        var line = "export \(number(u.exportLimitW, scale: 1000)) kW, import \(number(u.importLimitW, scale: 1000)) kW, "
            + "discharge ≤ \(number(u.dischargeCapW, scale: 1000)) kW, charge ≤ \(number(u.chargeCapW, scale: 1000)) kW, "
            + "request \(number(u.requestW, scale: 1000)) kW"
        if u.unmetered { line += " (no meter reading: export/import bound the units' sum)" }
        if let binding = u.binding { line += "; \(binding) binding" }
        return line
    }

    /// `frequency response 300 s: 8.3 kWh discharge, 8.2 kWh charge; schedule within SOC 8.3–91.7 %`
    /// with `, discharge reserve reached` when dispatch stops that way.
    static func reserveLine(_ r: ResponseReserveReply) -> String {
        var line = "frequency response \(number(r.sustainS, digits: 0)) s: \(number(r.dischargeWh, scale: 1000)) kWh discharge, "
            + "\(number(r.chargeWh, scale: 1000)) kWh charge; schedule within SOC \(number(r.socLowPercent))–\(number(r.socHighPercent)) %"
        if r.dischargeReached { line += ", discharge reserve reached" }
        if r.chargeReached { line += ", charge reserve reached" }
        return line
    }
}

struct Faults: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List active trips with what they mean; latched ones need bessctl reset.")
    @OptionGroup var connection: SocketOption

    func run() throws {
        let faults = try connection.send(ControlRequest(.faults), expecting: FaultsReply.self).faults
        if faults.isEmpty {
            print("no active faults")
            return
        }
        for fault in faults {
            let latched = fault.latched ? " LATCHED (bessctl reset)" : ""
            print("\(fault.unit)  \(fault.code)\(latched)\n    \(fault.explanation)")
        }
    }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reset latched faults of one unit (or all); refused while a condition is still present.")
    @OptionGroup var connection: SocketOption
    @Argument(help: "The unit id (default: every unit).") var unit: String?
    @Flag(help: "Clear the latches kept for unit ids the configuration no longer has (LATCH_STATE_ORPHANED).")
    var orphaned = false

    func validate() throws {
        if orphaned, unit != nil { throw ValidationError("--orphaned takes no unit: it clears every unit id the configuration lacks") }
    }

    func run() throws {
        var request = ControlRequest(.reset, unit: unit)
        request.orphaned = orphaned
        let answer = try connection.send(request, expecting: ResetReply.self)
        let cleared = answer.cleared
        let refused = answer.refused
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
        let answer = try connection.send(ControlRequest(.mode, unit: unit, mode: mode), expecting: ModeReply.self)
        print(Self.reply(mode: mode, unit: unit, stillStandby: answer.stillStandby.map { ($0.unit, $0.heldBy) }))
        if let holdState = answer.holdState { FileHandle.standardError.write(Data((holdState + "\n").utf8)) }
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
