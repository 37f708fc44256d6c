import ArgumentParser
import ControlCore
import Runtime

@main
struct Bessctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bessctl",
        abstract: "Operator tool for bessd.",
        version: BessdVersion.string,
        subcommands: [Codes.self])
}

/// Lists every interlock code with its default rule, so a field engineer can read a trip without the docs.
struct Codes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List every interlock code with its default rule.")

    @Argument(help: "Show only this code (e.g. CELL_OVERVOLTAGE).")
    var code: String?

    @Flag(help: "Print the table as Markdown (docs/interlocks.md is made from it).")
    var markdown = false

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
