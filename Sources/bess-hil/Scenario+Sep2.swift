import Foundation
import Yams

// A scenario's utility (IEEE 2030.5): the `sep2:` section (the plant runs hil/peers/sep2_server.py and
// bessd gets an `ieee2030_5:` block), its `sep2` timeline steps, and the `reversals` expectation that
// tells holding a limit from hunting around it.
extension Scenario {
    /// The `sep2:` section: how the plant's 2030.5 server starts.
    struct Sep2Settings: Equatable {
        /// The server's pollRate and bessd's `poll_s`, seconds.
        var pollSeconds = 2
        /// The DefaultDERControl at the start (element → W); empty: the server's own default.
        var defaultLimits: [String: Double] = [:]
        /// hil/peers, beside the scenario's directory: where sep2_server.py is.
        var peersDirectory = ""
    }

    /// One command to the plant's 2030.5 server (its admin channel).
    enum Sep2Order: Equatable {
        /// Publish (or replace, same mRID) a DERControl from `start` (scenario seconds; nil: now)
        /// for `duration` seconds with these limits (element → W).
        case control(mrid: String, start: Double?, duration: Double, limits: [String: Double])
        /// Mark the DERControl cancelled.
        case cancel(String)
        /// Replace the DefaultDERControl's limits.
        case defaultControl([String: Double])
        /// The server answers (true) or closes every connection unanswered (false: an outage).
        case answering(Bool)
    }

    /// A bound on how often a signal turns back in a window: its moves larger than `deadband`
    /// (successive samples' differences, small ones summed until they pass it), counted where one
    /// goes the other way from the one before. Holding a limit gives few; hunting gives many.
    struct Reversals: Equatable {
        var signal: String
        var max: Int
        var deadband: Double
    }

    /// The limits a DERControl or the default may carry (CSIP-AUS), W.
    static let sep2Limits = ["opModExpLimW", "opModImpLimW", "opModGenLimW", "opModLoadLimW"]
    /// What bessd says is in force for each limit (`bessctl status` → `ieee2030_5.controls`), kW.
    static let sep2Signals = ["sep2_export_limit_kw", "sep2_import_limit_kw", "sep2_generation_limit_kw", "sep2_load_limit_kw"]

    /// The `sep2:` section, or nil when the file has none.
    static func sep2Settings(_ node: Node?, base: URL, fail: (String, String) -> Void) -> Sep2Settings? {
        guard let node else { return nil }
        guard let mapping = node.mapping else {
            fail("sep2", "a mapping (poll_s, default)")
            return nil
        }
        var settings = Sep2Settings(peersDirectory: base.appendingPathComponent("../peers").standardized.path)
        if let poll = mapping[Node("poll_s")] {
            if let seconds = poll.int, (1...300).contains(seconds) { settings.pollSeconds = seconds } else { fail("sep2.poll_s", "whole seconds, 1–300") }
        }
        if let given = mapping[Node("default")] { settings.defaultLimits = sep2Limits(given, here: "sep2.default", fail: fail) ?? [:] }
        for key in mapping.keys.compactMap(\.string) where !["poll_s", "default"].contains(key) {
            fail("sep2.\(key)", "unknown key; known: poll_s, default")
        }
        return settings
    }

    /// A `sep2` step: `{control: MRID, start_s, duration_s, opModExpLimW: W, …}`, `{cancel: MRID}`,
    /// `{default: {opModExpLimW: W}}` or `{server: stop | start}`.
    static func sep2Order(_ node: Node, here: String, fail: (String, String) -> Void) -> (Sep2Order, String)? {
        guard let mapping = node.mapping else {
            fail(here, "a mapping: control, cancel, default or server")
            return nil
        }
        let keys = Set(mapping.keys.compactMap(\.string))
        let commands = keys.intersection(["control", "cancel", "default", "server"])
        guard commands.count == 1, let command = commands.first else {
            fail(here, "names one of control, cancel, default, server")
            return nil
        }
        let allowed: Set = command == "control" ? Set(["control", "start_s", "duration_s"] + sep2Limits) : [command]
        for key in keys.subtracting(allowed).sorted() { fail("\(here).\(key)", "unknown key with \(command)") }
        switch command {
        case "control", "cancel":
            guard let mrid = mapping[Node(command)]?.string, isMRID(mrid) else {
                fail("\(here).\(command)", "an mRID: 1–32 hex digits")
                return nil
            }
            if command == "cancel" { return (.cancel(mrid), "2030.5 cancel \(mrid)") }
            let start = mapping[Node("start_s")]?.float
            if mapping[Node("start_s")] != nil, !(start.map { $0 >= 0 } ?? false) { fail("\(here).start_s", "seconds ≥ 0") }
            guard let duration = mapping[Node("duration_s")]?.float, duration >= 1 else {
                fail("\(here).duration_s", "is required, ≥ 1 s")
                return nil
            }
            var given = Node.Mapping()
            for key in sep2Limits { if let v = mapping[Node(key)] { given[Node(key)] = v } }
            guard let limits = sep2Limits(.mapping(given), here: here, fail: fail) else { return nil }
            let text = describe(limits)
            return (.control(mrid: mrid, start: start, duration: duration, limits: limits),
                    "2030.5 \(mrid): \(text)" + (start.map { " from \($0.formatted(.number.grouping(.never))) s" } ?? ""))
        case "default":
            guard let limits = sep2Limits(mapping[Node("default")]!, here: "\(here).default", fail: fail) else { return nil }
            return (.defaultControl(limits), "2030.5 default: \(describe(limits))")
        default:
            guard let state = mapping[Node("server")]?.string, state == "stop" || state == "start" else {
                fail("\(here).server", "stop or start")
                return nil
            }
            return (.answering(state == "start"), state == "start" ? "2030.5 server answers" : "2030.5 server outage")
        }
    }

    /// `{opModExpLimW: 1500, …}`: at least one limit, each a whole number of watts ≥ 0.
    static func sep2Limits(_ node: Node, here: String, fail: (String, String) -> Void) -> [String: Double]? {
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(here, "names no limit (\(sep2Limits.joined(separator: ", ")), W)")
            return nil
        }
        var limits: [String: Double] = [:]
        for (key, value) in mapping {
            guard let name = key.string, sep2Limits.contains(name) else {
                fail("\(here).\(key.string ?? "?")", "unknown limit; known: \(sep2Limits.joined(separator: ", "))")
                continue
            }
            guard let watts = value.float, watts >= 0, watts <= 1e9, watts == watts.rounded() else {
                fail("\(here).\(name)", "whole watts, 0–1e9")
                continue
            }
            limits[name] = watts
        }
        return limits.isEmpty ? nil : limits
    }

    /// 2030.5 mRIDs are hexBinary128: 1–32 hex digits here.
    static func isMRID(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.allSatisfy(\.isHexDigit)
    }

    /// `export 1.5 kW, load 3 kW`.
    static func describe(_ limits: [String: Double]) -> String {
        zip(sep2Limits, ["export", "import", "generation", "load"]).compactMap { key, word in
            limits[key].map { "\(word) \(($0 / 1000).formatted(.number.grouping(.never))) kW" }
        }.joined(separator: ", ")
    }

    /// An expectation's `reversals: {signal, max, deadband}` (nil when absent).
    static func reversals(_ node: Node?, here: String, fail: (String, String) -> Void) -> Reversals? {
        guard let node else { return nil }
        guard let signal = node["signal"]?.string, numericSignals.contains(signal) || sep2Signals.contains(signal),
              let max = node["max"]?.int, max >= 0, let deadband = node["deadband"]?.float, deadband > 0,
              Set(node.mapping?.keys.compactMap(\.string) ?? []).isSubset(of: ["signal", "max", "deadband"])
        else {
            fail("\(here).reversals", "{signal: a numeric signal, max: a count ≥ 0, deadband: > 0 in the signal's unit}")
            return nil
        }
        return Reversals(signal: signal, max: max, deadband: deadband)
    }
}

extension Scenario.Reversals {
    /// How often `values` turn back (moves smaller than the deadband are summed until they pass it).
    func count(_ values: [Double]) -> Int {
        var reversals = 0
        var direction = 0.0
        var pending = 0.0
        var previous: Double?
        for v in values where v.isFinite {
            defer { previous = v }
            guard let p = previous else { continue }
            pending += v - p
            guard abs(pending) > deadband else { continue }
            let now = pending > 0 ? 1.0 : -1.0
            if direction != 0, now != direction { reversals += 1 }
            direction = now
            pending = 0
        }
        return reversals
    }
}
