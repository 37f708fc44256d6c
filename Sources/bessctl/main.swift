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

    func run() throws {
        var rules = InterlockRule.defaultTable()
        if let code {
            guard let wanted = TripCode(name: code) else {
                throw ValidationError("unknown code '\(code)'; run 'bessctl codes' for the list")
            }
            rules = rules.filter { $0.code == wanted }
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
}
