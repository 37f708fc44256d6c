import ControlCore
import ControlProtocol
import Foundation
import Synchronization
import Yams

/// A scenario's grid frequency from a PMU (`pmu` steps: the plant serves C37.118.2 over TCP and bessd
/// follows it) and the frequency events bessd assessed (`events:`, read before bessd stops).
extension ScenarioRun {
    /// The IDCODE of the plant PMU's data stream.
    static let pmuIDCode: UInt16 = 1410

    /// The scenario's `grid_integration.pmu.transport` when it is `udp`, else `tcp`.
    var pmuTransport: String {
        scenario.config["grid_integration"]?["pmu"]?["transport"]?.string == "udp" ? "udp" : "tcp"
    }

    /// Starts the plant's PMU on a free loopback port (TCP, and UDP on the same number when the
    /// scenario's transport is `udp`), measuring the start frequency, valid and synchronised, 50 frames/s.
    func startPMU() throws(ScenarioError) {
        do {
            let server = try PMUSender(stream: PMUStream(idcode: Self.pmuIDCode, pmus: 1, float: false, dataRate: 50),
                                       udp: pmuTransport == "udp")
            server.set(hz: scenario.startHz, status: .valid)
            server.start()
            pmu = server
        } catch {
            throw ScenarioError(.plantFailed, "the plant's PMU: \(error)")
        }
    }

    /// `grid_integration.frequency_source`: the plant's PMU when the timeline has `pmu` steps (its
    /// address and stream filled in over the scenario's own `pmu:` keys, such as `max_age_ms`,
    /// `reconnect_s` or `transport: udp`), else the inverters.
    func configureFrequencySource(_ grid: inout Node.Mapping) {
        guard let pmu else {
            grid["frequency_source"] = Node("inverter")
            return
        }
        grid["frequency_source"] = Node("pmu")
        var settings = grid["pmu"]?.mapping ?? [:]
        settings["host"] = Node("127.0.0.1")
        settings["port"] = Node(String(pmu.port))
        settings["transport"] = Node(pmuTransport)
        settings["idcode"] = Node(String(Self.pmuIDCode))
        grid["pmu"] = .mapping(settings)
    }

    /// A `pmu` step: what the PMU measures (pinned from now on), its STAT, and bad frames between good ones.
    func setPMU(hz: Double?, status: PMUSender.Status?, badFrames: PMUSender.BadFrames??) -> String {
        guard let pmu else { return "failed: no PMU" }
        if let hz { pmuPinnedHz = hz }
        pmu.set(hz: hz, status: status, badFrames: badFrames)
        return "(plant PMU, \(pmu.frames) frames sent)"
    }

    /// The PMU's side of a sample: what it sends and its STAT.
    func samplePMU(_ s: inout Sample) {
        guard let pmu else { return }
        let (hz, status, stopped, bad) = pmu.state.withLock { ($0.hz, $0.status, $0.stopped, $0.badFrames) }
        s.pmuHz = stopped ? .nan : hz
        s.pmuBadHz = stopped || bad == nil ? .nan : PMUSender.badFrameHz
        s.pmuStatus = stopped ? "stopped" : PMUSender.Status.allCases.first { $0 != .stopped && $0.word == status }?.rawValue ?? "-"
    }

    /// Reads `bessctl events` while bessd still runs.
    func readEvents() {
        assessedEvents = try? ControlClient.answer(ControlRequest(.events), socket: controlSocket, timeout: .seconds(3))
            .reply(as: EventsReply.self)
        say("  events: " + (assessedEvents.map { "\($0.total) assessed" } ?? "bessctl events did not answer"))
        for event in assessedEvents?.events ?? [] { say("    " + Self.describe(event).head + "; " + Self.describe(event).powers) }
    }

    /// How the assessed events miss the file's `events:` (empty: met, or none expected).
    func eventMisses() -> [String] {
        guard !scenario.events.isEmpty else { return [] }
        guard let reply = assessedEvents else { return ["events: bessctl events did not answer"] }
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

    /// An assessed event in two parts, as the run's log (one line) and the plot (two) show it: which
    /// event and its cause, then its powers.
    static func describe(_ e: FrequencyEventReply) -> (head: String, powers: String) {
        func kw(_ w: Double?) -> String { w.map { String(format: "%.1f kW", $0 / 1000) } ?? "n/a" }
        let cause = [e.cause, e.causeCode, e.causeUnit].compactMap { $0 }.joined(separator: " ")
        return ("event \(e.sequence) (\(e.direction), \(e.extremeHz.map { String(format: "%.3f Hz", $0) } ?? "n/a")): "
                + "cause \(cause.isEmpty ? "none" : cause)",
                "at the response time required \(kw(e.requiredW)), delivered \(kw(e.deliveredW)), shortfall \(kw(e.shortfallW)); "
                + "mean \(kw(e.requiredMeanW)) / \(kw(e.deliveredMeanW)); worst shortfall \(kw(e.maxShortfallW))")
    }

    /// The PMU's frequency and the frequency bessd used, by source, on the frequency panel.
    func pmuLines(_ csv: String) -> String {
        guard pmu != nil else { return "" }
        return ", \\\n     '\(csv)' using 1:21 with lines lw 1.5 dt 2 lc rgb '#ff7f0e' title 'PMU (sent)'"
            + ", \\\n     '' using 1:(strcol(24) eq 'pmu' ? $23 : NaN) with points pt 7 ps 0.4 lc rgb '#2ca02c' title 'bessd used: PMU'"
            + ", \\\n     '' using 1:(strcol(24) eq 'inverter' ? $23 : NaN) with points pt 7 ps 0.4 lc rgb '#d62728' title 'bessd used: inverters'"
            + (samples.contains { $0.pmuBadHz.isFinite }
                ? ", \\\n     '' using 1:25 with lines lw 1.5 dt 3 lc rgb '#9467bd' title 'PMU bad frames (refused)'" : "")
    }

    /// With a PMU: room above and below the frequency traces and the key beside them, then back.
    func pmuPanel(opening: Bool) -> String {
        guard pmu != nil else { return "" }
        return opening ? "set offsets 0, 0, graph 0.15, graph 0.15\nset key right center" : "set offsets 0, 0, 0, 0\nset key top right"
    }

    /// The last two assessed events, as labels on the power panel.
    func eventLabels() -> String {
        (assessedEvents?.events ?? []).suffix(2).enumerated().flatMap { i, e in
            let (head, powers) = Self.describe(e)
            return [(head, 0.16), (powers, 0.08)].enumerated().map { j, line in
                "set label \(100 + 2 * i + j) '\(line.0.replacingOccurrences(of: "'", with: ""))' at graph 0.01, graph "
                    + "\(line.1 + Double(i) * 0.18) left font ',8' tc rgb '#000000' noenhanced"
            }
        }.joined(separator: "\n")
    }
}

/// A frequency for the CSV: four decimals, `n/a` when there is none.
func hertz(_ v: Double) -> String { v.isFinite ? String(format: "%.4f", v) : "n/a" }
