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
        /// hil/peers, beside the scenario's directory (or its parent's): where sep2_server.py is.
        var peersDirectory = ""
        /// `responses: true`: every control published asks for responses (responseRequired 03:
        /// received, then started, completed…) with replyTo /rsp, where the server records them.
        var responses = false
    }

    /// What an expectation checks against the plant's 2030.5 server's record (it stands alone).
    enum Sep2Check: Equatable {
        /// `sep2_schedule`: at every sample bessd answered, each limit it says is in force is the one
        /// the published schedule puts there (the latest control in its window, else the default),
        /// or, within `settle` of a change, the value on either side of it (never a third: a dip to
        /// the default between back-to-back controls fails). With `gridSettle`: grid_kw within
        /// `gridTolerance` of −min(export limit, `surplusKW`) once the limit has stood `gridSettle`
        /// after it fell (or came), `gridRise` after it rose (limits rise at the ramp), and while it
        /// rises never more than `gridTolerance` beyond it.
        case schedule(settle: Double, gridSettle: Double?, gridRise: Double?, gridTolerance: Double, surplusKW: Double?)
        /// `sep2_responses`: every control published (with `responses: true`) whose window lies in
        /// the expectation's got each of `statuses` once, and no other: received (1) within `within`
        /// of the first poll after its publication (poll_s + within), started (2) and completed (3)
        /// within `within` after its start and end.
        case responses(statuses: [Int], within: Double)
    }

    /// How the plant's 2030.5 server meets a request: `start` answers it; `stop` (an outage) closes
    /// the connection unanswered; `silent` (a hung server) takes the request after the TLS handshake
    /// and answers nothing until the state changes, then closes.
    enum Sep2ServerState: String, Equatable {
        case start, stop, silent
    }

    /// One command to the plant's 2030.5 server (its admin channel).
    enum Sep2Order: Equatable {
        /// Publish (or replace, same mRID) a DERControl from `start` (scenario seconds; nil: now)
        /// for `duration` seconds with these limits (element → W) and reactive controls.
        case control(mrid: String, start: Double?, duration: Double, limits: [String: Double], reactive: Sep2Reactive = Sep2Reactive())
        /// Mark the DERControl cancelled.
        case cancel(String)
        /// Replace the DefaultDERControl's limits.
        case defaultControl([String: Double])
        /// The server answers, closes every connection unanswered, or holds each unanswered.
        case answering(Sep2ServerState)
        /// Several orders in one step (a `series` of back-to-back controls), sent in turn.
        case batch([Sep2Order])
    }

    /// The reactive controls a `sep2` control may carry beside its limits (2030.5 `DERControlBase`).
    struct Sep2Reactive: Equatable {
        /// `opModFixedVar`: `refType` (`DERUnitRefType`: 1 `setMaxW`, 2 `setMaxVar`, 3 `statVarAvail`, …)
        /// and `value`, hundredths of a percent of that quantity (+ = injecting).
        struct FixedVar: Equatable {
            var refType: Int
            var hundredthsPercent: Int
        }
        var fixedVar: FixedVar?
        /// `opModTargetVar`, var (+ = injecting).
        var targetVar: Double?
        /// The curve controls by element (`Sep2Curve.kinds`: `opModVoltVar`, `opModWattVar`, `opModVoltWatt`).
        var curves: [String: Sep2Curve] = [:]

        var isEmpty: Bool { fixedVar == nil && targetVar == nil && curves.isEmpty }
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

/// A `sep2` control's curve (`opModVoltVar`, `opModWattVar` or `opModVoltWatt`): the points of the
/// `DERCurve` it links to, as sep2_server.py serves them (x % of setVRef, or for watt-var of setMaxW; y %
/// of setMaxVar, or for volt-watt of setMaxW), and its `openLoopTms` (hundredths of a second).
struct Sep2Curve: Equatable, Encodable {
    var points: [[Int]]
    var openLoopTms: Int

    /// Each curve element, its name in a label and its axes as a file writes them.
    static let kinds: [(element: String, name: String, axes: String)] = [
        ("opModVoltVar", "volt-var", "[[V %, Q %], …]"), ("opModWattVar", "watt-var", "[[P %, Q %], …]"),
        ("opModVoltWatt", "volt-watt", "[[V %, P %], …]"),
    ]
}
