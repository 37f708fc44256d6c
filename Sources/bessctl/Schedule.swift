import ArgumentParser
import ControlCore
import ControlProtocol
import Foundation

/// The block schedule bessd follows (docs/optimiser.md): what is in force, each block's target and
/// what it delivered; loaded from a file as the operator's, or ended.
struct ScheduleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Show the block schedule (target, delivered, droop, deviation, what bound each block); load or clear it.",
        subcommands: [Show.self, Load.self, Clear.self], defaultSubcommand: Show.self)

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show the schedule in force: closed blocks, the open one so far, the blocks to come.")
        @OptionGroup var connection: SocketOption
        @Flag(help: "Print bessd's answer as JSON (blocks[] with start, target_kwh, delivered_kwh, deviation_kwh, droop_kwh, bound_by).")
        var json = false

        func run() throws {
            let answer = try connection.send(ControlRequest(.schedule))
            if json {
                print(bessctl.json(answer.bytes))
                return
            }
            print(ScheduleCommand.text(try connection.decode(answer, as: ScheduleReply.self)))
        }
    }

    struct Load: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a schedule as the operator's: JSON {\"id\", \"revision\", \"blocks\": [{\"start\" (RFC 3339), \"energy_kwh\" (+ = export)}]}.")
        @OptionGroup var connection: SocketOption
        @Argument(help: "The schedule file.") var file: String

        /// The largest file taken: what the control socket takes in one request.
        static let maximumBytes = 60_000

        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                FileHandle.standardError.write(Data("bessctl: SCHEDULE_INVALID: cannot read \(file)\n".utf8))
                throw ExitCode(2)
            }
            guard data.count <= Self.maximumBytes, let text = String(data: data, encoding: .utf8) else {
                FileHandle.standardError.write(Data("bessctl: SCHEDULE_INVALID: \(file) is not UTF-8 text of at most \(Self.maximumBytes) bytes\n".utf8))
                throw ExitCode(2)
            }
            var request = ControlRequest(.scheduleLoad)
            request.schedule = text
            let reply = try connection.send(request, expecting: ScheduleReply.self)
            print(reply.repeated ? "schedule \(reply.id ?? "?") revision \(reply.revision.map(String.init) ?? "?") was taken before; not acted on again"
                  : "schedule loaded: \(reply.id ?? "?") revision \(reply.revision.map(String.init) ?? "?") (operator)")
            if let warning = reply.warning { print("warning: \(warning)") }
            if let problem = reply.stateProblem { FileHandle.standardError.write(Data("bessctl: \(problem)\n".utf8)) }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End the schedule in force, whoever set it: the fallback runs.")
        @OptionGroup var connection: SocketOption

        func run() throws {
            let reply = try connection.send(ControlRequest(.scheduleClear), expecting: ScheduleReply.self)
            print("schedule cleared; the fallback (\(reply.fallback)) runs")
        }
    }

    /// The schedule as a person reads it: a line on what is in force, then a row per block.
    static func text(_ reply: ScheduleReply) -> String {
        var lines: [String] = []
        if let id = reply.id {
            lines.append("schedule \(id) revision \(reply.revision.map(String.init) ?? "?") from the \(reply.source ?? "?"), \(reply.blockS) s blocks"
                         + (reply.fallbackActive ? "; no block in force now: fallback \(reply.fallback)" : ""))
        } else {
            lines.append("no schedule in force: fallback \(reply.fallback) (\(reply.blockS) s blocks)")
        }
        if let problem = reply.stateProblem { lines.append("state file: \(problem)") }
        guard !reply.blocks.isEmpty else { return lines.joined(separator: "\n") }
        var rows = [["START", "STATE", "TARGET kWh", "DELIVERED kWh", "DROOP kWh", "DEVIATION kWh", "DEV %", "BOUND BY"]]
        for b in reply.blocks {
            rows.append([b.start, b.state, number(b.targetKWh, digits: 2), number(b.deliveredKWh, digits: 2), number(b.droopKWh, digits: 2),
                         number(b.deviationKWh, digits: 2), number(b.deviationPct, digits: 1), b.boundBy ?? "-"])
        }
        return (lines + tableLines(rows)).joined(separator: "\n")
    }
}
