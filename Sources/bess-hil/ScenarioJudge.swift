import ControlCore
import ControlProtocol
import Foundation

/// A run's verdict: each expectation of the file held against the samples, bessd's log lines, the
/// control centre's confirmations, the frequency events bessd assessed and what the plant's 2030.5
/// server was told.
struct ScenarioJudge {
    let scenario: Scenario
    let samples: [Sample]
    /// `iec104` actions whose confirmation was not the one the file expects.
    let confirmationMisses: [String]
    /// `bessctl events` as read before bessd stopped (nil: not read).
    let events: EventsReply?
    let sep2Server: Sep2Plant?
    /// Where the judged figures are said (the run's output).
    let say: (String) -> Void

    /// The expectations the run missed, each as its label and how (empty: passed).
    func misses() -> [String] {
        scenario.expectations.enumerated().compactMap { index, e in
            miss(e).map { "expect[\(index)]" + (e.why.isEmpty ? "" : " (\(e.why))") + $0 }
        } + confirmationMisses.map { "confirm: \($0)" } + eventMisses()
    }

    /// How the samples miss expectation `e` (nil: met), as the text after its label.
    func miss(_ e: Scenario.Expectation) -> String? {
        if !e.journal.isEmpty { return journalMiss(e) }
        if let check = e.sep2, case .always(let from, let to) = e.window { return sep2Miss(check, from: from, to: to) }
        if let check = e.opender, case .always(let from, let to) = e.window { return openDERMiss(check, from: from, to: to) }
        if let r = e.reversals, case .always(let from, let to) = e.window { return reversalsMiss(r, from: from, to: to) }
        if let r = e.rate, case .always(let from, let to) = e.window { return rateMiss(r, from: from, to: to) }
        switch e.window {
        case .at(let t):
            guard let s = samples.min(by: { abs($0.t - t) < abs($1.t - t) }), abs(s.t - t) <= 0.25 else {
                return ": no sample within 0.25 s of \(fmt(t)) s"
            }
            return s.check(e).map { " at \(fmt(s.t)) s: \($0)" }
        case .always(let from, let to):
            let window = samples.filter { $0.t >= from && $0.t <= to }
            if window.isEmpty { return ": no samples in \(fmt(from))–\(fmt(to)) s" }
            guard let bad = window.first(where: { $0.check(e) != nil }) else { return nil }
            return " from \(fmt(from)) to \(fmt(to)) s: at \(fmt(bad.t)) s \(bad.check(e)!)"
        case .eventually(let after, let by):
            let window = samples.filter { $0.t >= after && $0.t <= by }
            if window.contains(where: { $0.check(e) == nil }) { return nil }
            let last = window.last.flatMap { $0.check(e) } ?? "no samples"
            return ": never between \(fmt(after)) and \(fmt(by)) s (last: \(last))"
        }
    }

    /// A `journal` / `no_journal` expectation: bessd's log lines of the samples inside the window
    /// (±0.25 s around `at_s`) hold each text, or none of them does.
    func journalMiss(_ e: Scenario.Expectation) -> String? {
        let (from, to): (Double, Double)
        switch e.window {
        case .at(let t): (from, to) = (t - 0.25, t + 0.25)
        case .always(let a, let b), .eventually(let a, let b): (from, to) = (a, b)
        }
        let lines = samples.filter { $0.t >= from && $0.t <= to }.flatMap(\.logLines)
        var misses: [String] = []
        for (text, present) in e.journal {
            let count = lines.filter { $0.contains(text) }.count
            if let times = e.journalTimes, present {
                if count != times { misses.append("\(count) log line(s) with \"\(text)\" (want \(times))") }
                continue
            }
            if present, count == 0 { misses.append("no log line with \"\(text)\"") }
            if !present, count > 0 { misses.append("\(count) log line(s) with \"\(text)\"") }
        }
        return misses.isEmpty ? nil : " from \(fmt(from)) to \(fmt(to)) s: " + misses.joined(separator: "; ")
    }

    /// How the assessed events miss the file's `events:` (empty: met, or none expected).
    func eventMisses() -> [String] {
        guard !scenario.events.isEmpty else { return [] }
        guard let reply = events else { return ["events: bessctl events did not answer"] }
        var misses: [String] = []
        if reply.events.count != scenario.events.count {
            misses.append("events: \(reply.events.count) assessed, want \(scenario.events.count)")
        }
        for (index, (want, event)) in zip(scenario.events, reply.events).enumerated() {
            var problems: [String] = []
            for (key, value) in want.fields where (Self.text(key, of: event) ?? "none") != value {
                problems.append("\(key) \(Self.text(key, of: event) ?? "none") (want \(value))")
            }
            for (key, low, high) in want.bounds {
                let v = Self.number(key, of: event) ?? .nan
                if let low, !(v >= low) { problems.append("\(key) \(fmt(v)) (want ≥ \(fmt(low)))") }
                if let high, !(v <= high) { problems.append("\(key) \(fmt(v)) (want ≤ \(fmt(high)))") }
            }
            if !problems.isEmpty { misses.append("events[\(index)]: " + problems.joined(separator: "; ")) }
        }
        return misses
    }

    static func text(_ key: String, of e: FrequencyEventReply) -> String? {
        switch key {
        case "direction": e.direction
        case "cause": e.cause
        case "cause_code": e.causeCode
        case "cause_unit": e.causeUnit
        default: nil
        }
    }

    static func number(_ key: String, of e: FrequencyEventReply) -> Double? {
        switch key {
        case "extreme_hz": e.extremeHz
        case "pre_event_w": e.preEventW
        case "required_w": e.requiredW
        case "delivered_w": e.deliveredW
        case "required_mean_w": e.requiredMeanW
        case "delivered_mean_w": e.deliveredMeanW
        case "shortfall_w": e.shortfallW
        case "max_shortfall_w": e.maxShortfallW
        case "score": e.score
        default: nil
        }
    }

    /// How the run misses a `sep2_schedule` or `sep2_responses` expectation over `from`–`to` (nil:
    /// met); each says its figures on the run's output.
    func sep2Miss(_ check: Scenario.Sep2Check, from: Double, to: Double) -> String? {
        guard let server = sep2Server else { return ": no 2030.5 server" }
        switch check {
        case .schedule(let settle, let gridSettle, let gridRise, let tolerance, let surplus):
            return scheduleMiss(server.schedule, from: from, to: to, settle: settle,
                                grid: gridSettle.map { ($0, gridRise ?? $0, tolerance, surplus) })
        case .responses(let statuses, let within):
            return responsesMiss(server.schedule, received: server.receivedResponses(), statuses: statuses, within: within, from: from, to: to)
        }
    }

    func scheduleMiss(_ schedule: Sep2Schedule, from: Double, to: Double, settle: Double,
                      grid: (settle: Double, rise: Double, tolerance: Double, surplusKW: Double?)?) -> String? {
        let window = samples.filter { $0.t >= from && $0.t <= to && $0.statusOK }
        if window.isEmpty { return ": no samples with bessd answering in \(fmt(from))–\(fmt(to)) s" }
        var misses: [String] = [], count = 0, judged = 0, gridJudged = 0, worstGrid = 0.0
        for s in window {
            for key in schedule.keys {
                let signal = Scenario.sep2Signals[Scenario.sep2Limits.firstIndex(of: key)!]
                let have = s.sep2[signal]
                let around = [s.t - settle, s.t, s.t + settle].map { schedule.limit(key, at: $0) }
                func matches(_ want: (watts: Double, source: String)?) -> Bool {
                    guard let want else { return have == nil }
                    return have.map { abs($0 - want.watts / 1000) <= 0.001 } ?? false
                }
                let settled = around.allSatisfy { $0?.watts == around[1]?.watts }
                judged += 1
                guard settled ? matches(around[1]) : around.contains(where: matches) else {
                    count += 1
                    let wants = (settled ? [around[1]] : around).map { $0.map { "\(fmt($0.watts / 1000)) (\($0.source))" } ?? "none" }
                    if misses.count < 4 { misses.append("at \(fmt(s.t)) s \(signal) \(fmt(have ?? .nan)) (want \(Set(wants).sorted().joined(separator: " or ")))") }
                    continue
                }
            }
            // The connection point under the export limit once the limit has stood `grid.settle` since
            // it fell (or came); while it rises (`grid.rise` after), never more export than it allows.
            guard let grid, let limit = schedule.limit("opModExpLimW", at: s.t),
                  schedule.limit("opModExpLimW", at: s.t + settle)?.watts == limit.watts,
                  let stood = Self.stood(schedule, limit: limit.watts, at: s.t, fall: grid.settle, rise: grid.rise) else { continue }
            let target = -min(limit.watts / 1000, grid.surplusKW ?? .infinity)
            gridJudged += 1
            let off = stood ? abs(s.gridKW - target) : max(0, target - s.gridKW)
            worstGrid = max(worstGrid, off.isFinite ? off : .infinity)
            if !(off <= grid.tolerance) {
                count += 1
                if misses.count < 4 { misses.append("at \(fmt(s.t)) s grid_kw \(fmt(s.gridKW)) (want \(fmt(target)) ± \(fmt(grid.tolerance)), \(limit.source))") }
            }
        }
        say("  sep2_schedule \(fmt(from))–\(fmt(to)) s: \(window.count) samples, \(judged) limit readings, "
            + (grid == nil ? "" : "grid judged at \(gridJudged) samples (worst \(fmt(worstGrid)) kW off), ") + "\(count) missed")
        return count == 0 ? nil : " from \(fmt(from)) to \(fmt(to)) s: \(count) of \(judged + gridJudged) missed: " + misses.joined(separator: "; ")
    }

    /// How the export limit `limit` (W, in force at `t`) is judged: true (at it) once it has stood
    /// `fall` seconds since it fell or came, `rise` since it rose; false (not beyond it) while it
    /// rises; nil (not yet) within `fall` of a fall. Looked for back in 0.05 s steps.
    static func stood(_ schedule: Sep2Schedule, limit: Double, at t: Double, fall: Double, rise: Double) -> Bool? {
        var back = 0.05
        while back <= max(fall, rise) {
            let before = schedule.limit("opModExpLimW", at: t - back)?.watts ?? .infinity
            if before != limit { return before < limit ? back >= rise : (back >= fall ? true : nil) }
            back += 0.05
        }
        return true
    }

    func responsesMiss(_ schedule: Sep2Schedule, received got: [(subject: String, status: Int, at: Double)], statuses: [Int],
                       within: Double, from: Double, to: Double) -> String? {
        let judged = schedule.controls.filter { $0.responses && $0.start >= from && $0.end <= to }
        if judged.isEmpty { return ": no control asking for responses lies in \(fmt(from))–\(fmt(to)) s" }
        let poll = Double(scenario.sep2?.pollSeconds ?? 2)
        var misses: [String] = [], after: [Int: [Double]] = [:]
        for c in judged {
            let mine = got.filter { $0.subject == Sep2Plant.hexBinary(c.mrid) }
            for status in statuses {
                let arrivals = mine.filter { $0.status == status }
                let due = status == 1 ? (c.published, c.published + poll + within) : status == 2 ? (c.start, c.start + within) : (c.end, c.end + within)
                guard arrivals.count == 1 else {
                    misses.append("\(c.mrid) status \(status): \(arrivals.count) responses (want 1)")
                    continue
                }
                let at = arrivals[0].at
                after[status, default: []].append(at - due.0)
                if at < due.0 - 0.05 || at > due.1 { misses.append("\(c.mrid) status \(status) at \(fmt(at)) s (want \(fmt(due.0))–\(fmt(due.1)) s)") }
            }
            for other in Set(mine.map(\.status)).subtracting(statuses).sorted() { misses.append("\(c.mrid): status \(other), not asked") }
        }
        let figures = statuses.map { status -> String in
            let d = (after[status] ?? []).sorted()
            guard !d.isEmpty else { return "\(status): none" }
            return "\(status): median \(fmt(d[d.count / 2])) max \(fmt(d.last!)) s"
        }
        say("  sep2_responses \(fmt(from))–\(fmt(to)) s: \(judged.count) controls, \(got.count) responses in all; after the due instant "
            + "(publication, start, end) " + figures.joined(separator: ", "))
        return misses.isEmpty ? nil : " from \(fmt(from)) to \(fmt(to)) s: \(misses.count) missed: " + misses.prefix(6).joined(separator: "; ")
    }

    /// The rate expectation `r` over `from`–`to`: the signal's move over each span of at least 1 s
    /// between samples of the window, per second, at most `maxPerSecond` (nil when met). A step shows
    /// its whole size in one span; a ramp its slope, however the host delayed a sample.
    func rateMiss(_ r: (signal: String, maxPerSecond: Double), from: Double, to: Double) -> String? {
        let window = samples.filter { $0.t >= from && $0.t <= to }.map { ($0.t, $0.value(r.signal)) }.filter { $0.1.isFinite }
        var worst: (rate: Double, at: Double)?
        var j = 0
        for i in window.indices {
            j = max(j, i)
            while j < window.count, window[j].0 - window[i].0 < 1 { j += 1 }
            guard j < window.count else { break }
            let rate = abs(window[j].1 - window[i].1) / (window[j].0 - window[i].0)
            if rate > worst?.rate ?? -1 { worst = (rate, window[i].0) }
        }
        guard let worst else { return ": no two samples 1 s apart in \(fmt(from))–\(fmt(to)) s" }
        return worst.rate <= r.maxPerSecond ? nil
            : " from \(fmt(from)) to \(fmt(to)) s: \(r.signal) moved \(fmt(worst.rate)) per s from \(fmt(worst.at)) s (want ≤ \(fmt(r.maxPerSecond)))"
    }

    /// What the reversals expectation `r` saw over `from`–`to`: nil when met.
    func reversalsMiss(_ r: Scenario.Reversals, from: Double, to: Double) -> String? {
        let window = samples.filter { $0.t >= from && $0.t <= to }
        if window.isEmpty { return ": no samples in \(fmt(from))–\(fmt(to)) s" }
        let count = r.count(window.map { $0.value(r.signal) })
        return count <= r.max ? nil : " from \(fmt(from)) to \(fmt(to)) s: \(r.signal) turned back \(count) times beyond ± \(fmt(r.deadband)) (want ≤ \(r.max))"
    }
}
