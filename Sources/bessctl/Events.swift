import ArgumentParser
import ControlCore
import ControlProtocol
import Foundation

/// The frequency events bessd assessed since it started: what the settings required, what the site
/// delivered, the shortfall and why (docs/frequency-events.md).
struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List recent frequency events (newest last): required vs delivered power, shortfall, score and cause.")
    @OptionGroup var connection: SocketOption
    @Flag(help: "Print the events as a JSON list (start/end Unix seconds, powers W, cause null or a name).") var json = false

    func run() throws {
        let reply = try connection.send(ControlRequest(.events), expecting: EventsReply.self)
        if json {
            print(bessctl.json(JSONText.encode(reply.events)))
            return
        }
        print(Self.summary(reply))
        if !reply.events.isEmpty { printTable(Self.rows(reply)) }
        if let last = reply.events.last, let units = Self.unitRows(last) {
            print("\nunits of event \(last.sequence) (--json lists every event's):")
            printTable(units)
        }
    }

    /// The last event's units, one row each; nil when it itemises none.
    static func unitRows(_ e: FrequencyEventReply) -> [[String]]? {
        guard let units = e.units, !units.isEmpty else { return nil }
        var rows = [["UNIT", "REQUIRED kW", "DELIVERED kW", "SHORTFALL kW", "MEAN REQ/DEL kW"]]
        for u in units {
            rows.append([u.unit, number(u.requiredW, scale: 1000), number(u.deliveredW, scale: 1000), number(u.shortfallW, scale: 1000),
                         "\(number(u.requiredMeanW, scale: 1000)) / \(number(u.deliveredMeanW, scale: 1000))"])
        }
        if let omitted = e.unitsOmitted, omitted > 0 { rows.append(["+\(omitted) more", "", "", "", ""]) }
        return rows
    }

    /// How many events there were in all and how many are shown.
    static func summary(_ reply: EventsReply) -> String {
        guard !reply.events.isEmpty else { return "no frequency event since bessd started" }
        let shown = reply.events.count
        return "\(reply.total) frequency event\(reply.total == 1 ? "" : "s") since bessd started"
            + (UInt64(shown) < reply.total ? "; the last \(shown) shown" : "")
    }

    /// One row per event, newest last, under a header.
    static func rows(_ reply: EventsReply) -> [[String]] {
        var rows = [["#", "START", "LENGTH s", "DIR", "EXTREME Hz", "REQUIRED kW", "DELIVERED kW", "SHORTFALL kW", "MEAN REQ/DEL kW",
                     "MAX SHORT kW", "BASIS", "SCORE", "CAUSE"]]
        for e in reply.events {
            let cause = [e.cause, e.causeCode, e.causeUnit].compactMap { $0 }.joined(separator: " ")
            rows.append(["\(e.sequence)", Status.clock(e.start), number(e.end - e.start, digits: 0), e.direction,
                         number(e.extremeHz, digits: 3), number(e.requiredW, scale: 1000), number(e.deliveredW, scale: 1000),
                         number(e.shortfallW, scale: 1000),
                         "\(number(e.requiredMeanW, scale: 1000)) / \(number(e.deliveredMeanW, scale: 1000))",
                         number(e.maxShortfallW, scale: 1000), e.metered.map { $0 ? "meter" : "units" } ?? "-",
                         number(e.score, digits: 2), cause.isEmpty ? "-" : cause])
        }
        return rows
    }
}
