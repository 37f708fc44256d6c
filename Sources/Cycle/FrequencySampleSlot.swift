public import ControlCore
import Synchronization

/// One usable PMU measurement: the frequency (and ROCOF) a data frame carried, and when it came.
public struct PMUSample: Sendable, Equatable {
    /// FREQ, in hertz.
    public var frequency: Hertz
    /// DFREQ in Hz/s, when the PMU sends it (nil when it marks it missing).
    public var rocofHzPerSecond: Double?
    /// When the reader received the frame (monotonic): the cycle judges the sample's age by it.
    public var takenAt: MonotonicInstant
    /// The frame's SOC + FRACSEC / TIME_BASE: Unix seconds, the PMU's own time stamp.
    public var frameTime: Double

    /// A sample from its four fields.
    public init(frequency: Hertz, rocofHzPerSecond: Double?, takenAt: MonotonicInstant, frameTime: Double) {
        self.frequency = frequency
        self.rocofHzPerSecond = rocofHzPerSecond
        self.takenAt = takenAt
        self.frameTime = frameTime
    }
}

/// The newest usable PMU sample, written by one thread (the PMU reader), read by any (the cycle):
/// lock-free, never allocates, never blocks.
///
/// Two buffers of atomics and a sequence number: publication `k` writes buffer `k & 1` and then
/// stores `k`. A reader takes the sequence, reads the buffer it names, and keeps what it read when
/// the sequence has not moved meanwhile; else the writer finished another sample in between and it
/// reads again. A writer stopped half-way (preempted by the cycle on the same CPU) is writing the
/// other buffer, so a reader never waits for it; a reader retries only while whole samples are
/// being published faster than it reads four doubles, which a PMU at 50 frames/s never does.
///
/// One writer only: `publish` from two threads at once could tear a sample.
public final class FrequencySampleSlot: Sendable {
    /// The number of the last publication; 0 before the first.
    private let sequence = Atomic<UInt64>(0)
    private let buffers = (Buffer(), Buffer())

    public init() {}

    /// Makes `sample` the newest (the reader thread only).
    public func publish(_ sample: PMUSample) {
        let next = sequence.load(ordering: .relaxed) &+ 1
        // Orders the previous publication's sequence store before this buffer's first store: a
        // reader that sees any of the stores below then sees a sequence past the one it started on.
        atomicMemoryFence(ordering: .releasing)
        buffer(next).store(sample)
        sequence.store(next, ordering: .releasing)
    }

    /// The newest sample, or nil before the first usable one, or nil when 64 reads in a row were
    /// overtaken by publications: then no sample is known whole, and the cycle falls back to the
    /// inverters' frequency for that one cycle rather than act on a torn one.
    public func read() -> PMUSample? {
        for _ in 0..<Self.attempts {
            let before = sequence.load(ordering: .acquiring)
            if before == 0 { return nil }
            let sample = buffer(before).load()
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == before { return sample }
        }
        return nil
    }

    /// Reads tried before `read` gives up: 64 publications during one read cannot happen at any
    /// PMU's rate; the bound only keeps a broken writer from holding a reader forever.
    static let attempts = 64

    private func buffer(_ sequence: UInt64) -> Buffer { sequence & 1 == 0 ? buffers.0 : buffers.1 }

    /// One sample as four atomics (bit patterns of the doubles; ROCOF NaN for none).
    private final class Buffer: Sendable {
        let frequencyBits = Atomic<UInt64>(0)
        let rocofBits = Atomic<UInt64>(Double.nan.bitPattern)
        let takenAtNanoseconds = Atomic<Int64>(0)
        let frameTimeBits = Atomic<UInt64>(0)

        func store(_ sample: PMUSample) {
            frequencyBits.store(sample.frequency.value.bitPattern, ordering: .relaxed)
            rocofBits.store((sample.rocofHzPerSecond ?? .nan).bitPattern, ordering: .relaxed)
            takenAtNanoseconds.store(sample.takenAt.nanoseconds, ordering: .relaxed)
            frameTimeBits.store(sample.frameTime.bitPattern, ordering: .relaxed)
        }

        func load() -> PMUSample {
            let rocof = Double(bitPattern: rocofBits.load(ordering: .relaxed))
            return PMUSample(frequency: Hertz(Double(bitPattern: frequencyBits.load(ordering: .relaxed))),
                             rocofHzPerSecond: rocof.isNaN ? nil : rocof,
                             takenAt: MonotonicInstant(nanoseconds: takenAtNanoseconds.load(ordering: .relaxed)),
                             frameTime: Double(bitPattern: frameTimeBits.load(ordering: .relaxed)))
        }
    }
}
