public import ControlCore

/// The journal lines one key (a peer's address, a peer and point, a unit and event) may cause per
/// window: a peer that floods costs the journal `lines` lines of each kind per `window`, the rest are
/// held back and counted (/metrics still counts every one). A window starts with a key's first line
/// and ends at the first line or `endWindows(at:)` past it. At most `keys` keys are kept: a new
/// key past that ends the least recently used one's window.
///
/// What becomes of the lines held back is the owner's choice (`Report`): summed up in one line when
/// the window ends (the IEC 104 outstation's `IEC104_LOG_SUPPRESSED`), or said by the key's next
/// line written ("(3 unchanged refreshes before this not logged)"). Not thread-safe: one owner.
public struct PeerBudget<Key: Hashable & Sendable>: Sendable {
    /// What the owner does with the count of lines held back.
    public enum Report: Sendable {
        /// At a window's end, `ended` gets the count (the owner writes one summary line).
        case atWindowEnd
        /// The key's next written line gets the count (`Admission.write(heldBack:)`); a window's end
        /// carries it over.
        case withNextLine
    }

    /// The verdict on one line.
    public enum Admission: Equatable, Sendable {
        /// Write it; `heldBack` lines of the key were held back before it and not yet reported
        /// (always 0 with `.atWindowEnd`).
        case write(heldBack: Int)
        /// Hold it back: counted, not written.
        case held

        public var written: Bool { self != .held }
        /// The lines held back before a written line, 0 for a line held.
        public var heldBack: Int { if case .write(let count) = self { count } else { 0 } }
    }

    /// A window that ended with lines held back (`.atWindowEnd`), or a key forgotten past `keys`.
    public struct Ended: Sendable {
        public var key: Key
        /// Lines held back in the window.
        public var heldBack: Int
        /// Of `heldBack`, those admitted as `marked` (refused commands, say).
        public var marked: Int
    }

    struct Entry: Sendable {
        var start: MonotonicInstant
        var used: MonotonicInstant
        var written: [Int]
        var heldBack = 0
        var marked = 0
    }

    public let window: Duration
    /// Lines per window of each kind.
    public let lines: Int
    public let keys: Int
    public let report: Report
    private let kinds: Int
    private var entries: [Key: Entry] = [:]

    /// `lines` per `window` of each of `kinds` kinds (0 ..< kinds), for at most `keys` keys.
    public init(window: Duration, lines: Int, keys: Int = 64, kinds: Int = 1, report: Report = .atWindowEnd) {
        self.window = window
        self.lines = max(1, lines)
        self.keys = max(1, keys)
        self.kinds = max(1, kinds)
        self.report = report
    }

    /// The keys whose budgets are kept.
    public var count: Int { entries.count }

    /// When the earliest window with lines held back ends (its summary is then due), or nil: the
    /// owner's poll wakes for it.
    public var nextWindowEnd: MonotonicInstant? { entries.values.filter { $0.heldBack > 0 }.map { $0.start + window }.min() }

    /// Whether `key`'s line of `kind` is written at `now`. `force` writes it whatever the budget and
    /// starts a new window with it (a value that changed, a latch). `marked` counts a line held back
    /// apart in `Ended.marked`. Windows this ends (the key's own, or the least recently used key's
    /// when the table is full) go to `ended` when lines were held back in them.
    public mutating func admit(_ key: Key, kind: Int = 0, at now: MonotonicInstant, force: Bool = false, marked: Bool = false,
                               ended: (Ended) -> Void = { _ in }) -> Admission {
        var carried = (heldBack: 0, marked: 0)
        if let entry = entries[key], force || now >= entry.start + window {
            if report == .withNextLine {
                carried = (entry.heldBack, entry.marked)
                entries[key] = nil
            } else {
                forget(key, ended)
            }
        }
        if entries[key] == nil {
            if entries.count >= keys, let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key {
                forget(oldest, ended)
            }
            entries[key] = Entry(start: now, used: now, written: [Int](repeating: 0, count: kinds),
                                 heldBack: carried.heldBack, marked: carried.marked)
        }
        let lane = min(max(kind, 0), kinds - 1)
        entries[key]!.used = now
        guard force || entries[key]!.written[lane] < lines else {
            entries[key]!.heldBack += 1
            if marked { entries[key]!.marked += 1 }
            return .held
        }
        entries[key]!.written[lane] += 1
        // At the window's end the summary counts every line held back in it, of any kind.
        guard report == .withNextLine else { return .write(heldBack: 0) }
        let heldBack = entries[key]!.heldBack
        entries[key]!.heldBack = 0
        entries[key]!.marked = 0
        return .write(heldBack: heldBack)
    }

    /// Ends the windows over at `now`: with `.atWindowEnd` those with lines held back go to `ended`;
    /// with `.withNextLine` their counts wait for the key's next line.
    public mutating func endWindows(at now: MonotonicInstant, ended: (Ended) -> Void = { _ in }) {
        for (key, entry) in entries where now >= entry.start + window {
            if report == .withNextLine, entry.heldBack > 0 { continue }
            forget(key, ended)
        }
    }

    /// Forgets `key`; its count goes to `ended` when lines were held back.
    private mutating func forget(_ key: Key, _ ended: (Ended) -> Void) {
        guard let entry = entries.removeValue(forKey: key), entry.heldBack > 0 else { return }
        ended(Ended(key: key, heldBack: entry.heldBack, marked: entry.marked))
    }
}
