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
/// the house's `SeqLockSlot` over four atomics, lock-free, never allocating, never blocking. A read
/// overtaken 64 times is nil, and the cycle falls back to the inverters' frequency for that cycle.
public typealias FrequencySampleSlot = SeqLockSlot<PMUSampleCells>

/// One PMU sample as four atomics (bit patterns of the doubles; ROCOF NaN for none): a buffer of
/// `FrequencySampleSlot`.
public final class PMUSampleCells: SeqLockCells {
    let frequencyBits = Atomic<UInt64>(0)
    let rocofBits = Atomic<UInt64>(Double.nan.bitPattern)
    let takenAtNanoseconds = Atomic<Int64>(0)
    let frameTimeBits = Atomic<UInt64>(0)

    /// Cells of no sample yet.
    public init() {}

    /// Writes `sample` (relaxed; the slot's sequence orders it).
    public func store(_ sample: PMUSample) {
        frequencyBits.store(sample.frequency.value.bitPattern, ordering: .relaxed)
        rocofBits.store((sample.rocofHzPerSecond ?? .nan).bitPattern, ordering: .relaxed)
        takenAtNanoseconds.store(sample.takenAt.nanoseconds, ordering: .relaxed)
        frameTimeBits.store(sample.frameTime.bitPattern, ordering: .relaxed)
    }

    /// Reads the sample back (relaxed).
    public func load() -> PMUSample {
        let rocof = Double(bitPattern: rocofBits.load(ordering: .relaxed))
        return PMUSample(frequency: Hertz(Double(bitPattern: frequencyBits.load(ordering: .relaxed))),
                         rocofHzPerSecond: rocof.isNaN ? nil : rocof,
                         takenAt: MonotonicInstant(nanoseconds: takenAtNanoseconds.load(ordering: .relaxed)),
                         frameTime: Double(bitPattern: frameTimeBits.load(ordering: .relaxed)))
    }
}
