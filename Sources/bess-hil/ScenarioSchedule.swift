import BessBase
import ControlProtocol
import Foundation
import Yams

/// A scenario's block schedule (issue 60): the `schedule` timeline step that loads one through
/// `bessctl schedule load` or the aggregator's `schedule` command, and the `schedule_blocks` check of
/// what bessd reports per block (`bessctl schedule --json`, read at the end while bessd runs).
///
/// Blocks are wall-clock blocks, so a scenario names them by number: block 0 is the first block
/// boundary after the run's first `schedule` step (the anchor), block n starts n blocks later.
enum ScenarioSchedule {
    /// A `schedule` step: `{id, revision, from_block, energy_kwh: [...], via: bessctl|aggregator}`.
    struct Order {
        var id: String
        var revision: Int
        var fromBlock: Int
        var energies: [Double]
        var viaAggregator: Bool

        var label: String {
            "schedule \(id) r\(revision) from block \(fromBlock): \(energies.map { "\($0)" }.joined(separator: ", ")) kWh"
                + (viaAggregator ? " (aggregator)" : "")
        }

        static func parse(_ node: Node, here: String, fail: (String, String) -> Void) -> Order? {
            guard let m = node.mapping else { fail(here, "a mapping {id, revision, from_block, energy_kwh, via}"); return nil }
            for key in m.keys.compactMap(\.string) where !["id", "revision", "from_block", "energy_kwh", "via"].contains(key) {
                fail("\(here).\(key)", "unknown key; known: id, revision, from_block, energy_kwh, via")
            }
            guard let id = m[Node("id")]?.string, let revision = m[Node("revision")]?.int,
                  let energies = m[Node("energy_kwh")]?.sequence?.compactMap(\.float), !energies.isEmpty else {
                fail(here, "needs id, revision and a list energy_kwh"); return nil
            }
            let via = m[Node("via")]?.string ?? "bessctl"
            guard via == "bessctl" || via == "aggregator" else { fail("\(here).via", "bessctl or aggregator"); return nil }
            return Order(id: id, revision: revision, fromBlock: m[Node("from_block")]?.int ?? 0, energies: energies,
                         viaAggregator: via == "aggregator")
        }

        /// The schedule document's JSON, blocks placed from `anchor` (Unix seconds) every `length` seconds.
        func document(anchor: Int64, length: Int64) -> String {
            let blocks = energies.enumerated().map { k, kwh in
                "{\"start\":\"\(ScenarioSchedule.rfc3339(anchor + Int64(fromBlock + k) * length))\",\"energy_kwh\":\(kwh)}"
            }
            return "{\"id\":\"\(id)\",\"revision\":\(revision),\"blocks\":[\(blocks.joined(separator: ","))]}"
        }
    }

    /// The `schedule_blocks` check: at least `minClosed` closed blocks from the anchor on, each (but
    /// `skip` first and those touching the `exclude` window of run time) within `deviationPctMax` % of
    /// the block's rated energy; named blocks with their targets; blocks that must name what bound them.
    struct Check {
        var minClosed = 1
        var deviationPctMax: Double?
        var skip = 0
        var exclude: (from: Double, to: Double)?
        var targets: [(block: Int, kwh: Double)] = []
        var boundBy: [(block: Int, name: String)] = []
        var fallbackActive: Bool?
        /// The blocks whose deviation is judged (nil: every closed one).
        var judged: [Int]?
        /// Whose schedule must be in force at the end: operator, aggregator or optimiser.
        var source: String?

        static func parse(_ node: Node, fail: (String, String) -> Void) -> Check? {
            guard let m = node.mapping else { fail("schedule_blocks", "a mapping"); return nil }
            let known = ["min_closed", "deviation_pct_max", "skip", "exclude_from_s", "exclude_to_s", "targets", "bound_by", "fallback_active", "judge_blocks", "source"]
            for key in m.keys.compactMap(\.string) where !known.contains(key) {
                fail("schedule_blocks.\(key)", "unknown key; known: \(known.joined(separator: ", "))")
            }
            var c = Check()
            c.minClosed = m[Node("min_closed")]?.int ?? 1
            c.deviationPctMax = m[Node("deviation_pct_max")]?.float
            c.skip = m[Node("skip")]?.int ?? 0
            if let from = m[Node("exclude_from_s")]?.float, let to = m[Node("exclude_to_s")]?.float { c.exclude = (from, to) }
            for (k, entry) in (m[Node("targets")]?.sequence ?? []).enumerated() {
                guard let block = entry["block"]?.int, let kwh = entry["target_kwh"]?.float else {
                    fail("schedule_blocks.targets[\(k)]", "needs block and target_kwh"); continue
                }
                c.targets.append((block, kwh))
            }
            for (k, entry) in (m[Node("bound_by")]?.sequence ?? []).enumerated() {
                guard let block = entry["block"]?.int, let name = entry["name"]?.string else {
                    fail("schedule_blocks.bound_by[\(k)]", "needs block and name"); continue
                }
                c.boundBy.append((block, name))
            }
            c.fallbackActive = m[Node("fallback_active")]?.bool
            c.judged = m[Node("judge_blocks")]?.sequence?.compactMap(\.int)
            c.source = m[Node("source")]?.string
            return c
        }

        /// What the check misses in `reply`, given the anchor (Unix seconds), the block length and the
        /// run's start on the wall clock (to place the `exclude` window); empty when it passes.
        func misses(_ reply: ScheduleReply?, anchor: Int64?, runStartUnix: Double) -> [String] {
            guard let reply else { return ["bessctl schedule did not answer at the end of the run"] }
            guard let anchor else { return ["no schedule step ran (no anchor)"] }
            let length = reply.blockS
            var misses: [String] = []
            func number(_ block: ScheduleBlockReply) -> Int? {
                ScenarioSchedule.unix(block.start).map { Int(($0 - anchor) / length) }
            }
            let closed = reply.blocks.filter { $0.state == "closed" && (number($0) ?? -1) >= 0 }
            if closed.count < minClosed { misses.append("\(closed.count) closed block(s) from the anchor on, want ≥ \(minClosed)") }
            if let limit = deviationPctMax {
                for block in closed.dropFirst(skip) {
                    guard let start = ScenarioSchedule.unix(block.start) else { continue }
                    if let judged, !judged.contains(Int((start - anchor) / length)) { continue }
                    if let exclude, Double(start + length) > runStartUnix + exclude.from, Double(start) < runStartUnix + exclude.to { continue }
                    let pct = block.deviationPct ?? .nan
                    if !(abs(pct) <= limit) {
                        misses.append("block \(number(block) ?? -1) (\(block.start)): deviation \(fmt(pct)) % of rated energy "
                                      + "(delivered \(fmt(block.deliveredKWh ?? .nan)), droop \(fmt(block.droopKWh ?? .nan)), "
                                      + "target \(fmt(block.targetKWh)) kWh; bound by \(block.boundBy ?? "?")), want |·| ≤ \(fmt(limit))")
                    }
                }
            }
            func block(_ n: Int) -> ScheduleBlockReply? {
                reply.blocks.first { ScenarioSchedule.unix($0.start) == anchor + Int64(n) * length }
            }
            for (n, kwh) in targets {
                guard let block = block(n) else { misses.append("block \(n) not reported"); continue }
                if abs(block.targetKWh - kwh) > 1e-6 { misses.append("block \(n): target \(fmt(block.targetKWh)) kWh, want \(fmt(kwh))") }
            }
            for (n, name) in boundBy {
                let got = block(n)?.boundBy ?? "none"
                if got != name { misses.append("block \(n): bound by \(got), want \(name)") }
            }
            if let source, reply.source != source { misses.append("source \(reply.source ?? "none"), want \(source)") }
            if let want = fallbackActive, reply.fallbackActive != want { misses.append("fallback_active \(reply.fallbackActive), want \(want)") }
            return misses
        }

        private func fmt(_ v: Double) -> String { v.isFinite ? String(format: "%.3f", v) : "n/a" }
    }

    /// `schedule.block_s` of the scenario's bessd configuration (900 when it says none).
    static func blockLength(_ config: Node) -> Int64 {
        Int64(config["schedule"]?["block_s"]?.int ?? 900)
    }

    /// True when the scenario runs on wall-clock blocks: it loads a schedule or writes a forecast.
    static func usesBlocks(_ scenario: Scenario) -> Bool {
        scenario.actions.contains { action in
            switch action.kind {
            case .schedule, .forecast: true
            default: false
            }
        }
    }

    /// With `forecast` steps, bessd's `optimiser.forecast_file` is the run's forecast.csv.
    static func pointOptimiser(_ config: inout Node, scenario: Scenario, runDirectory: String) {
        guard scenario.actions.contains(where: { if case .forecast = $0.kind { true } else { false } }) else { return }
        let over: Node = ["optimiser": ["forecast_file": Node(runDirectory + "/forecast.csv")]]
        config = Scenario.merge(config, over)
    }

    /// Writes the forecast file: `loadKW` and `pvKW` for every block from 5 before the anchor to 60
    /// after it (replaced atomically: bessd reads it again when its time stamp changes).
    static func writeForecast(_ runDirectory: String, anchor: Int64, length: Int64, loadKW: Double, pvKW: Double) -> String {
        let lines = (-5...60).map { "\(rfc3339(anchor + Int64($0) * length)),\(loadKW),\(pvKW)" }
        let path = runDirectory + "/forecast.csv"
        do {
            try (["start,load_kw,pv_kw"] + lines).joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            return "written: \(lines.count) blocks"
        } catch {
            return "failed: \(error)"
        }
    }

    /// How long before a block boundary a scenario with a schedule starts: its block 0 begins at
    /// t = `lead` s, block n at `lead` + n × block_s, whatever the wall clock said when it was run.
    static let lead = 10.0

    /// Waits (the plant stepping) until the wall clock is `lead` seconds before a block boundary.
    static func align(length: Int64, step: () -> Void) {
        let period = Double(length)
        while true {
            let now = Date().timeIntervalSince1970
            let toBoundary = period - now.truncatingRemainder(dividingBy: period)
            if abs(toBoundary - lead) < 0.03 || (lead >= period && toBoundary < 0.03) { return }
            step()
            let wait = toBoundary > lead ? toBoundary - lead : toBoundary + period - lead
            usleep(UInt32(min(0.05, max(0.001, wait - 0.002)) * 1_000_000))
        }
    }

    /// The first block boundary after now, Unix seconds: block 0 of the scenario's schedule.
    static func nextBoundary(_ length: Int64) -> Int64 {
        let now = Int64(Date().timeIntervalSince1970.rounded(.down))
        return (now / length + 1) * length
    }

    /// Loads `order` through bessctl's verb (`schedule-load`, as `bessctl schedule load FILE` sends it)
    /// or posts it to bess-aggregator as a `schedule` command (`post`); what came back, in words.
    static func send(_ order: Order, anchor: Int64, length: Int64, socket: String, post: (String) -> String?) -> String {
        let document = order.document(anchor: anchor, length: length)
        if order.viaAggregator {
            let expires = Date().timeIntervalSince1970 + 600
            let command = "{\"id\":\"scenario-\(order.id)-\(order.revision)\",\"kind\":\"schedule\",\"expires_unix\":\(expires),"
                + "\"schedule\":\(document)}"
            let answer = post(command) ?? "no answer"
            return answer.hasPrefix("HTTP/1.1 200") ? "queued at bess-aggregator" : "refused: \(answer.prefix(120))"
        }
        var request = ControlRequest(.scheduleLoad)
        request.schedule = document
        do {
            let answer = try ControlClient.answer(request, socket: socket, timeout: .seconds(3))
            if let refusal = answer.refusal { return "refused: \(refusal)" }
            let reply = try? answer.reply(as: ScheduleReply.self)
            return "ok" + (reply?.warning.map { " (\($0))" } ?? "")
        } catch {
            return "failed: \(error)"
        }
    }

    /// `bessctl schedule` at the end of the run, each block said; nil when bessd does not answer.
    static func read(socket: String, say: (String) -> Void) -> ScheduleReply? {
        let reply = try? ControlClient.answer(ControlRequest(.schedule), socket: socket, timeout: .seconds(3)).reply(as: ScheduleReply.self)
        guard let reply else {
            say("  schedule: bessctl schedule did not answer")
            return nil
        }
        say("  schedule \(reply.id ?? "none") r\(reply.revision ?? 0) (\(reply.source ?? "-")), fallback active: \(reply.fallbackActive)")
        for b in reply.blocks {
            say("    \(b.start) \(b.state) target \(b.targetKWh) delivered \(b.deliveredKWh.map { "\($0)" } ?? "-") droop "
                + "\(b.droopKWh.map { "\($0)" } ?? "-") deviation \(b.deviationPct.map { "\($0)" } ?? "-") % bound by \(b.boundBy ?? "-")")
        }
        return reply
    }

    static func rfc3339(_ unix: Int64) -> String { RFC3339.text(unix) }

    static func unix(_ text: String) -> Int64? { RFC3339.unixSeconds(text) }
}
