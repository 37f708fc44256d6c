import Synchronization

/// The cells of one buffer of a `SeqLockSlot`: a value spread over atomics (bit patterns), stored and
/// loaded with relaxed orderings only; the slot's sequence orders them.
public protocol SeqLockCells: AnyObject, Sendable {
    /// What one buffer holds.
    associatedtype Value
    /// Cells holding no value yet (never read: the slot answers nil before its first publication).
    init()
    /// Writes `value` into the cells (relaxed stores).
    func store(_ value: Value)
    /// Reads the cells back (relaxed loads); may mix two values, which the slot detects.
    func load() -> Value
}

/// The newest value of something one thread writes and any thread reads (the cycle): lock-free, never
/// allocates, never blocks. The one seqlock of the house: the PMU sample and the utility's limits are
/// both this slot over their own cells.
///
/// Two buffers and a sequence number: publication `k` writes buffer `k & 1` and then stores `k`. A
/// reader takes the sequence, reads the buffer it names, and keeps what it read when the sequence has
/// not moved meanwhile; else the writer finished another value in between and it reads again. A writer
/// stopped half-way (preempted by the cycle on the same CPU) is writing the other buffer, so a reader
/// never waits for it; a reader retries only while whole values are being published faster than it
/// reads one, which neither a PMU at 50 frames/s nor a worker at one value a second does.
///
/// One writer only: `publish` from two threads at once could tear a value.
public final class SeqLockSlot<Cells: SeqLockCells>: Sendable {
    /// The number of the last publication; 0 before the first.
    private let sequence = Atomic<UInt64>(0)
    private let buffers = (Cells(), Cells())

    /// An empty slot: `read()` is nil until the first `publish`.
    public init() {}

    /// Makes `value` the newest (the writer thread only).
    public func publish(_ value: Cells.Value) {
        let next = sequence.load(ordering: .relaxed) &+ 1
        // Orders the previous publication's sequence store before this buffer's first store: a
        // reader that sees any of the stores below then sees a sequence past the one it started on.
        atomicMemoryFence(ordering: .releasing)
        buffer(next).store(value)
        sequence.store(next, ordering: .releasing)
    }

    /// The newest value, or nil before the first, or nil when `attempts` reads in a row were overtaken
    /// by publications: then no value is known whole, and the caller keeps to its fallback for that
    /// one cycle rather than act on a torn one.
    public func read() -> Cells.Value? {
        for _ in 0..<Self.attempts {
            let before = sequence.load(ordering: .acquiring)
            if before == 0 { return nil }
            let value = buffer(before).load()
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == before { return value }
        }
        return nil
    }

    /// True once a value has been published.
    public var published: Bool { sequence.load(ordering: .relaxed) != 0 }

    /// Reads tried before `read` gives up: 64 publications during one read cannot happen at the rates
    /// above; the bound only keeps a broken writer from holding a reader forever.
    public static var attempts: Int { 64 }

    private func buffer(_ sequence: UInt64) -> Cells { sequence & 1 == 0 ? buffers.0 : buffers.1 }
}
