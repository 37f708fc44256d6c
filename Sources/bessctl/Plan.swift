import ArgumentParser
import ControlProtocol
import Foundation

/// The optimiser's last plan (docs/optimiser.md): its slots, objective, violated limits and solve time.
struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show the optimiser's last plan: charge, discharge, import, export and SOC per slot, the objective, violated limits.")
    @OptionGroup var connection: SocketOption
    @Flag(help: "Print bessd's answer as JSON (slots[], objective, objective_parts, violations[], solve_ms).")
    var json = false

    func run() throws {
        let answer = try connection.send(ControlRequest(.plan))
        if json {
            print(bessctl.json(answer.bytes))
            return
        }
        print(Self.text(try connection.decode(answer, as: PlanReply.self)))
    }

    /// The plan as a person reads it: what was made and when, then a row per slot.
    static func text(_ reply: PlanReply) -> String {
        var lines: [String] = []
        if let made = reply.madeAt {
            lines.append("plan made \(made): objective \(number(reply.objective, digits: 2)), solved in \(number(reply.solveMs, digits: 1)) ms"
                         + (reply.optimal == false ? " (not proven optimal)" : "") + "; schedule: \(reply.answer ?? "-")")
        } else {
            lines.append("no plan made yet")
        }
        if let parts = reply.objectiveParts {
            lines.append("  energy \(number(parts.energy, digits: 2)), wear \(number(parts.wear, digits: 2)), demand \(number(parts.demand, digits: 2)), "
                         + "end value \(number(parts.endValue, digits: 2)), penalty \(number(parts.penalty, digits: 2))")
        }
        if let problem = reply.problem { lines.append("last try: \(problem)") }
        for v in reply.violations { lines.append("  violated: \(v.limit) at \(v.start) by \(number(v.amount, digits: 3))") }
        guard !reply.slots.isEmpty else { return lines.joined(separator: "\n") }
        var rows = [["START", "CHARGE kW", "DISCHARGE kW", "IMPORT kW", "EXPORT kW", "SOC kWh", "IMPORT PRICE", "EXPORT PRICE"]]
        for s in reply.slots {
            rows.append([s.start, number(s.chargeKW, digits: 1), number(s.dischargeKW, digits: 1), number(s.importKW, digits: 1),
                         number(s.exportKW, digits: 1), number(s.socKWh, digits: 1), number(s.priceImportPerKWh, digits: 3),
                         number(s.priceExportPerKWh, digits: 3)])
        }
        return (lines + tableLines(rows)).joined(separator: "\n")
    }
}
