import ControlCore
import GridSupport
import IEEE2030_5

/// The schedule the 2030.5 worker publishes, as a value: the last complete programs (the live
/// session's, or the store's), the server's clock counted on by the monotonic clock, and the controls
/// held where that clock went back. `resolve` turns it into the site's limits at the server's time
/// (`EventRules.resolve`) and the next event boundary; the worker (`Sep2Client.publish`) publishes them.
struct Sep2Schedule {
    /// The device's own draw: the same control starts at the same instant after a restart.
    let randomization: Randomization
    /// The last complete schedule: what is resolved.
    var programs: [ProgramSchedule] = []
    /// The `DERCurve`s the programs' controls link to, by href, as last read with them.
    var curves: [String: DERCurve] = [:]
    /// Whether there is a schedule to publish at all (read once, or restored).
    var known = false
    var source = Sep2State.Source.none
    /// The server's clock: `server` seconds at monotonic `mono`, counted on by the monotonic clock (a step
    /// of the wall clock moves nothing); a Time reply re-anchors it, back too.
    var anchor: (server: Double, mono: MonotonicInstant)?
    /// The server time last resolved on.
    var lastServerTime = -Double.infinity
    /// The controls known when the server's time was found behind the time they were resolved on, and
    /// that second: each stays as it was then until the server's time passes it (`EventRules.resolve`'s
    /// `held`), so nothing starts or ends twice, while controls learned since follow the server's time.
    var held: [ControlKey: Int64] = [:]
    /// The server's offset from the wall clock last read (or stored).
    var lastOffset: Int64?

    /// A schedule with nothing known, for the device whose LFDI starts with `lfdiBytes`.
    init(lfdiBytes: [UInt8]) {
        randomization = Randomization(seed: lfdiBytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The schedule at one instant: the server's time, the controls in force (`shown`: with the server's
    /// own source where it bounds a type tighter than a held control), the site's limits (their
    /// `validUntil` left to the publisher) and the next event boundary (server second).
    struct Resolution {
        var server: Double
        var second: Int64
        var active: ActiveControls
        var shown: ActiveControls
        var limits: UtilityLimits
        var next: Int64?
    }

    /// A complete schedule taken from `source`.
    mutating func take(_ programs: [ProgramSchedule], curves: [String: DERCurve] = [:], from source: Sep2State.Source) {
        self.programs = programs
        self.curves = curves
        known = true
        self.source = source
    }

    /// Resolves the programs at the server's time for a site of `siteRatingW` and var capability
    /// `varCapability` (`opModFixedVar`'s references) and apparent rating `apparentVA` (the curves' y; nil:
    /// `siteRatingW`), configured with `profile` (a curve's response time where it gives none).
    mutating func resolve(now: MonotonicInstant, wall: Double, siteRatingW: Double, varCapability: (injecting: Double, absorbing: Double) = (0, 0),
                          apparentVA: Double? = nil, profile: GridSupportProfile = .ieee1547_2018_cat_b) -> Resolution {
        let server = serverTime(now: now, wall: wall)
        let second = Int64(server.rounded(.down))
        pruneHeld(at: second)
        let active = EventRules.resolve(programs, now: second, randomization: randomization, held: held)
        var limits = active.utilityLimits(siteRatingW: siteRatingW, varInjecting: varCapability.injecting, varAbsorbing: varCapability.absorbing,
                                          curves: curves, apparentVA: apparentVA, profile: profile)
        var shown = active
        if !held.isEmpty {
            // Held controls answer as they were resolved, but the site's limits are never looser than
            // what the server has in force at its own time (its default before a held raise's start).
            let plain = EventRules.resolve(programs, now: second, randomization: randomization)
            let heldLimits = limits
            // Two volt-watt curves that cross: the one whose control outranks (2030.5's event rules).
            let outranks = plain.sources[.voltWatt].map { server in active.sources[.voltWatt].map { EventRules.outranks(server, $0, in: programs) } ?? true } ?? false
            limits = limits.tightened(by: plain.utilityLimits(siteRatingW: siteRatingW, varInjecting: varCapability.injecting,
                                                              varAbsorbing: varCapability.absorbing, curves: curves, apparentVA: apparentVA, profile: profile),
                                      otherOutranks: outranks)
            // `bessctl ieee2030-5` lists what bounds each type: the server's own source where it is the tighter.
            for type in ControlType.allCases where Sep2State.value(type, limits) != Sep2State.value(type, heldLimits) {
                if let source = plain.sources[type] { shown.sources[type] = source }
            }
        }
        // Every edge on the server's time, held or not: the plain view's limits change there.
        let next = Self.nextBoundary(programs, after: second, randomization: randomization)
        return Resolution(server: server, second: second, active: active, shown: shown, limits: limits, next: next)
    }

    /// The state `EventRules` gives control `control` of `program` at server second `second`, held
    /// controls judged as `resolve` judges them.
    func state(of control: String, program: String, at second: Int64) -> ControlState? {
        EventRules.state(of: control, program: program, in: programs, now: second, randomization: randomization, held: held)
    }

    /// The server's time now (s since the Unix epoch, fractional): the last Time reply counted on by
    /// the monotonic clock. It moves back when a Time reply finds the server behind what was counted
    /// (no stored offset and a server clock behind the local one); `held` keeps that from starting or
    /// ending anything twice.
    mutating func serverTime(now: MonotonicInstant, wall: Double) -> Double {
        if anchor == nil { anchor = (wall + Double(Self.effective(lastOffset ?? 0)), now) }
        let (server, mono) = anchor!
        let time = server + now.seconds(since: mono)
        lastServerTime = time
        return time
    }

    /// A Time reply read at `now` and `wall` with the server's `offset` from the wall clock: the clock
    /// re-anchored; when it went back, every control known keeps its state until it passes again.
    mutating func timeRead(offset: Int64, now: MonotonicInstant, wall: Double) {
        lastOffset = offset
        let before = max(lastServerTime, anchor.map { $0.server + now.seconds(since: $0.mono) } ?? -.infinity)
        anchor = (wall + Double(Self.effective(offset)), now)
        if before.isFinite, wall + Double(Self.effective(offset)) < before { hold(at: Int64(before.rounded(.down))) }
    }

    /// Within the Time resource's one-second resolution the local clock (finer) is kept.
    static func effective(_ offset: Int64) -> Int64 { abs(offset) <= 1 ? 0 : offset }

    /// The server's time went back from `second`: every control known now keeps its state of `second`
    /// until the server's time passes it (one held earlier keeps its own, later, second).
    mutating func hold(at second: Int64) {
        for program in programs {
            for control in program.controls {
                let key = ControlKey(program: program.mRID, control: control.mRID)
                held[key] = max(held[key] ?? second, second)
            }
        }
    }

    /// `held` without the controls the server's time has passed or that are gone.
    mutating func pruneHeld(at second: Int64) {
        guard !held.isEmpty else { return }
        var present: Set<ControlKey> = []
        for program in programs { for control in program.controls { present.insert(ControlKey(program: program.mRID, control: control.mRID)) } }
        held = held.filter { $0.value > second && present.contains($0.key) }
    }

    /// The first start or end of a control's window after `second` (server time), nil when none; a
    /// held control's edges up to its held second have passed already.
    static func nextBoundary(_ programs: [ProgramSchedule], after second: Int64, randomization: Randomization,
                             held: [ControlKey: Int64] = [:]) -> Int64? {
        var next: Int64?
        for program in programs {
            for control in program.controls {
                let window = EventRules.window(control, randomization: randomization)
                guard window.start < window.end else { continue }
                let passed = held.isEmpty ? second : max(second, held[ControlKey(program: program.mRID, control: control.mRID)] ?? second)
                for edge in [window.start, window.end] where edge > passed && edge < (next ?? .max) { next = edge }
            }
        }
        return next
    }
}
