public import ControlCore
import Synchronization

/// The utility's controls in force (`UtilityLimits`), written by one thread (the 2030.5 worker), read
/// by the cycle: lock-free, never allocates, never blocks. The house's `SeqLockSlot`, as
/// `FrequencySampleSlot`; a read overtaken 64 times (which a writer at one value a second never
/// causes) is nil and the cycle keeps the value it read before.
///
/// What the slot holds is all the cycle knows of the utility: never published means no utility
/// control; a value read after its `validUntil` holds the site at zero (`SiteController` judges
/// that). The worker therefore publishes the cached schedule, then the DefaultDERControl, through any outage of
/// the server, at least every second (docs/design/0009-utility-limits.md).
///
/// One writer only: `publish` from two threads at once could tear a value.
public typealias UtilityLimitSlot = SeqLockSlot<UtilityLimitCells>

/// One `UtilityLimits` as atomics: each optional double as its bit pattern plus a bit in `present`.
/// A buffer of `UtilityLimitSlot`.
public final class UtilityLimitCells: SeqLockCells {
    /// Bits 0…9: the optional fields, export to gradient; 10: connect; 11: energize;
    /// 12: validUntil present; 13: droop present; 14…17: the reactive controls (power factors, fixed
    /// and target var).
    let present = Atomic<UInt32>(0)
    let exportBits = Atomic<UInt64>(0), importBits = Atomic<UInt64>(0), generationBits = Atomic<UInt64>(0)
    let loadBits = Atomic<UInt64>(0), fixedBits = Atomic<UInt64>(0), targetBits = Atomic<UInt64>(0)
    let maxLimBits = Atomic<UInt64>(0), storageTargetBits = Atomic<UInt64>(0), rampBits = Atomic<UInt64>(0)
    let gradientBits = Atomic<UInt64>(0)
    let pfInjectBits = Atomic<UInt64>(0), pfAbsorbBits = Atomic<UInt64>(0), fixedVarBits = Atomic<UInt64>(0)
    let targetVarBits = Atomic<UInt64>(0)
    let validUntil = Atomic<Int64>(0)
    /// `droop`: dead-bands over and under, droops over and under (bit patterns), response time (ns).
    let droopOver = Atomic<UInt64>(0), droopUnder = Atomic<UInt64>(0), kOver = Atomic<UInt64>(0), kUnder = Atomic<UInt64>(0)
    let droopResponse = Atomic<Int64>(0)
    /// The utility's curves (`voltVar`, `wattVar`, `voltWatt`): fixed-size values copied under a lock
    /// held only for the copy (no allocation; the worker writes at most once a second). The reader
    /// never waits for it (`load`).
    let curves = Mutex<UtilityCurves>(UtilityCurves())

    /// Cells of no value yet.
    public init() {}

    /// Writes `limits` (relaxed; the slot's sequence orders it).
    public func store(_ limits: UtilityLimits) {
        var mask: UInt32 = 0
        func put(_ value: Double?, _ bit: UInt32, _ atomic: borrowing Atomic<UInt64>) {
            if let value {
                mask |= 1 << bit
                atomic.store(value.bitPattern, ordering: .relaxed)
            }
        }
        put(limits.exportLimitW, 0, exportBits)
        put(limits.importLimitW, 1, importBits)
        put(limits.generationLimitW, 2, generationBits)
        put(limits.loadLimitW, 3, loadBits)
        put(limits.fixedW, 4, fixedBits)
        put(limits.targetW, 5, targetBits)
        put(limits.maxLimW, 6, maxLimBits)
        put(limits.storageTargetW, 7, storageTargetBits)
        put(limits.rampSeconds, 8, rampBits)
        put(limits.gradientWPerSecond, 9, gradientBits)
        put(limits.powerFactorInjecting, 14, pfInjectBits)
        put(limits.powerFactorAbsorbing, 15, pfAbsorbBits)
        put(limits.fixedVar, 16, fixedVarBits)
        put(limits.targetVar, 17, targetVarBits)
        if let droop = limits.droop {
            mask |= 1 << 13
            droopOver.store(droop.deadbandOverHz.bitPattern, ordering: .relaxed)
            droopUnder.store(droop.deadbandUnderHz.bitPattern, ordering: .relaxed)
            kOver.store(droop.droopOverPercent.bitPattern, ordering: .relaxed)
            kUnder.store(droop.droopUnderPercent.bitPattern, ordering: .relaxed)
            droopResponse.store(droop.responseTime.nanosecondsClamped, ordering: .relaxed)
        }
        curves.withLock { $0 = UtilityCurves(limits) }
        if limits.connect { mask |= 1 << 10 }
        if limits.energize { mask |= 1 << 11 }
        if let until = limits.validUntil {
            mask |= 1 << 12
            validUntil.store(until.nanoseconds, ordering: .relaxed)
        }
        present.store(mask, ordering: .relaxed)
    }

    /// Reads the value back (relaxed), never waiting: the curves' lock is taken only if it is free.
    /// The writer holds it only while it writes these cells, and it writes the buffer a reader
    /// reads only after it has published the other one since the reader took the sequence: such a
    /// read is discarded by the slot whatever it holds, so it may go without the curves.
    public func load() -> UtilityLimits {
        let mask = present.load(ordering: .relaxed)
        func get(_ bit: UInt32, _ atomic: borrowing Atomic<UInt64>) -> Double? {
            mask & (1 << bit) == 0 ? nil : Double(bitPattern: atomic.load(ordering: .relaxed))
        }
        var limits = UtilityLimits()
        limits.exportLimitW = get(0, exportBits)
        limits.importLimitW = get(1, importBits)
        limits.generationLimitW = get(2, generationBits)
        limits.loadLimitW = get(3, loadBits)
        limits.fixedW = get(4, fixedBits)
        limits.targetW = get(5, targetBits)
        limits.maxLimW = get(6, maxLimBits)
        limits.storageTargetW = get(7, storageTargetBits)
        limits.rampSeconds = get(8, rampBits)
        limits.gradientWPerSecond = get(9, gradientBits)
        limits.powerFactorInjecting = get(14, pfInjectBits)
        limits.powerFactorAbsorbing = get(15, pfAbsorbBits)
        limits.fixedVar = get(16, fixedVarBits)
        limits.targetVar = get(17, targetVarBits)
        if mask & (1 << 13) != 0 {
            limits.droop = UtilityDroop(deadbandOverHz: Double(bitPattern: droopOver.load(ordering: .relaxed)),
                                        deadbandUnderHz: Double(bitPattern: droopUnder.load(ordering: .relaxed)),
                                        droopOverPercent: Double(bitPattern: kOver.load(ordering: .relaxed)),
                                        droopUnderPercent: Double(bitPattern: kUnder.load(ordering: .relaxed)),
                                        responseTime: .nanoseconds(droopResponse.load(ordering: .relaxed)))
        }
        _ = curves.withLockIfAvailable { $0.apply(to: &limits) }
        limits.connect = mask & (1 << 10) != 0
        limits.energize = mask & (1 << 11) != 0
        limits.validUntil = mask & (1 << 12) == 0 ? nil : MonotonicInstant(nanoseconds: validUntil.load(ordering: .relaxed))
        return limits
    }
}
