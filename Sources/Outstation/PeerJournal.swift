import BessBase
import BessSystem
import ControlCore

/// The journal lines the outstation's peers cause, within a budget per source address
/// (`PeerBudget`): in each kind (a connection's life, a peer's input) at most `lines` per
/// `window`, whichever of the address's connections caused them; the rest are counted and summed
/// up in one `IEC104_LOG_SUPPRESSED` line at the window's end (/metrics counts every one). Lines
/// that are no peer's go straight to `log`. Used on the server thread only.
final class PeerJournal {
    /// What a journal line is about, for the budget: a connection's life or a peer's input.
    enum Kind: Int { case connection, input }

    /// The journal lines one source address may cause per `window` in each kind: a peer that
    /// sends a stream of bad ASDUs, or reconnects in a loop, costs the journal this many lines and
    /// a summary, while /metrics counts every one.
    static let lines = 20
    static let window: Duration = .seconds(10)
    /// The source addresses whose budgets are kept; past it the least recently used one is summed
    /// up and forgotten.
    static let addresses = 64

    /// The budgets by source address (IPv4, host order); refused commands are the marked lines.
    private var budget = PeerBudget<UInt32>(window: window, lines: lines, keys: addresses, kinds: 2, report: .atWindowEnd)
    /// Every line's way to the journal.
    private let sink: @Sendable (Notice) -> Void
    /// The refused commands a window held back, for /metrics and the uplink.
    private let audit: (@Sendable (OutstationAuditEntry) -> Void)?
    /// The windows' clock (the server's monotonic clock).
    private let clock: any MonotonicClock

    init(clock: any MonotonicClock, sink: @escaping @Sendable (Notice) -> Void, audit: (@Sendable (OutstationAuditEntry) -> Void)?) {
        self.clock = clock
        self.sink = sink
        self.audit = audit
    }

    /// A line no peer's budget holds back (an accepted command, a revocation at reload, our own error).
    func log(_ code: OutstationLogCode, _ message: String, _ fields: [NoticeField: String] = [:]) {
        sink(Notice(code, message, fields))
    }

    /// When the next window with lines held back ends (its summary is due), or nil.
    var nextSummary: MonotonicInstant? { budget.nextWindowEnd }

    /// A journal line a peer at `address` caused, written while the address's budget of `kind`
    /// lasts, else counted for the window's summary. True when written.
    @discardableResult
    func write(address: UInt32, _ kind: Kind, _ code: OutstationLogCode, _ message: String, _ fields: [NoticeField: String]) -> Bool {
        let admission = budget.admit(address, kind: kind.rawValue, at: clock.now(), marked: code == .commandRefused) { summarise($0) }
        guard admission.written else { return false }
        log(code, message, fields)
        return true
    }

    /// Ends the windows that are over: for each address with lines held back, one
    /// `IEC104_LOG_SUPPRESSED` line with the count and, when refused commands were among them, one
    /// audit entry with theirs. An address then starts afresh with its next line.
    func endWindows(now: MonotonicInstant) {
        budget.endWindows(at: now) { summarise($0) }
    }

    /// The summary of a window that held lines back (over, or its address forgotten).
    private func summarise(_ ended: PeerBudget<UInt32>.Ended) {
        let peer = ListenAddress.dotted(ended.key)
        log(.suppressed, "IEC 104 peers at \(peer): \(ended.heldBack) journal lines suppressed over \(Self.lines) of each kind in \(Self.window); /metrics counts every one",
            [.peer: peer, .suppressed: "\(ended.heldBack)", .refusedCommands: "\(ended.marked)"])
        guard ended.marked > 0 else { return }
        audit?(.refusalsSuppressed(count: ended.marked, peer: peer,
                                   message: "IEC 104: \(ended.marked) more commands from \(peer) refused within \(Self.window), past the journal's budget; /metrics counts each by code"))
    }
}
