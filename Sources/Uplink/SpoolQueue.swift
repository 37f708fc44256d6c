public import ControlCore
import Foundation
import Synchronization

/// The spool, shared by the recorder (service thread) and the sender.
public final class SpoolQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let spool: Spool
    /// The highest seq a sender may see: the last record appended, except inside a round, whose
    /// records become visible together at its end. Read without the lock, as often as a sender likes.
    private let newestSeq: Atomic<UInt64>
    /// Rounds open (under `lock`).
    private var roundsOpen = 0
    /// Told after records became visible (outside the lock): the MQTT sender's own thread is woken
    /// by it, so a record goes out as soon as it is written instead of at the sender's next poll.
    private let appended = Mutex<(@Sendable () -> Void)?>(nil)

    public init(_ spool: Spool) {
        self.spool = spool
        newestSeq = Atomic(spool.nextSeq &- 1)
    }

    /// Appends the record `make` builds for the seq it will get.
    @discardableResult
    public func append(_ make: (UInt64) throws -> [UInt8]) throws -> UInt64 {
        let (seq, visible) = try lock.withLock {
            let payload = try make(spool.nextSeq)
            let seq = try spool.append(payload)
            guard roundsOpen == 0 else { return (seq, false) }
            newestSeq.store(seq, ordering: .releasing)
            return (seq, true)
        }
        if visible { appended.withLock { $0 }?() }
        return seq
    }

    /// Opens a round: what is appended until `endRound` becomes visible to the sender at once, so
    /// that one service round's records (events, telemetry, availability) go in one batch and a
    /// sender that looks between two appends does not send half of them.
    public func beginRound() { lock.withLock { roundsOpen += 1 } }

    /// Closes a round; the last one open makes its records visible and wakes the sender.
    public func endRound() {
        let visible = lock.withLock { () -> Bool in
            roundsOpen = max(0, roundsOpen - 1)
            let newest = spool.nextSeq &- 1
            guard roundsOpen == 0, newest != newestSeq.load(ordering: .relaxed) else { return false }
            newestSeq.store(newest, ordering: .releasing)
            return true
        }
        if visible { appended.withLock { $0 }?() }
    }

    /// The highest seq a sender may see (0 when nothing ever was).
    public var newest: UInt64 { newestSeq.load(ordering: .acquiring) }

    /// Sets what to call when appended records become visible to the sender (after an append outside
    /// a round, or at the end of the last round open).
    public func onAppend(_ call: (@Sendable () -> Void)?) { appended.withLock { $0 = call } }

    /// The most bytes of records one batch carries (payloads and the commas between): under the 1 MiB
    /// an aggregator takes (`IngestRules.maxPayloadBytes`, 413 past it) and config/mosquitto's
    /// `max_packet_size`, with room for the batch's site, acks and the MQTT topic. Half of it is the
    /// largest record (`Spool.maxPayload`), so a batch always has room for the next record.
    public static let batchBytes = 960_000

    public func pending(limit: Int) throws(SpoolError) -> [SpoolRecord] { try records(after: 0, limit: limit) }

    /// Records after `seq` (the MQTT uplink publishes ahead of its acknowledgements), each on the
    /// disk before it is returned: what this gives leaves the gateway, and a record sent before its
    /// fsync and lost in a power cut would hand its seq to a new record after the restart, which the
    /// aggregator (keeping the first record of a seq) would drop. At most one fsync per call.
    /// At most `batchBytes` of records: fewer than `limit` then, and more follow at once.
    public func records(after seq: UInt64, limit: Int) throws(SpoolError) -> [SpoolRecord] {
        lock.lock()
        defer { lock.unlock() }
        let visible = newestSeq.load(ordering: .relaxed)
        let floor = max(seq, spool.acknowledged)
        guard visible > floor, limit > 0 else { return [] }
        // No further than the visible end: a round still open keeps its records until its end,
        // and a read that stops there continues there next time.
        var records = try spool.records(after: floor, limit: min(limit, Int(clamping: visible - floor)), bytes: Self.batchBytes)
        if let last = records.last, last.seq > visible { records = records.filter { $0.seq <= visible } }
        if let last = records.last, last.seq > spool.durableThrough { try spool.syncNow() }
        return records
    }

    public func acknowledge(upTo seq: UInt64) throws(SpoolError) {
        lock.lock()
        defer { lock.unlock() }
        try spool.acknowledge(upTo: seq)
    }
    public func sync() { lock.withLock { spool.sync() } }
    /// Why the spool's state could not be saved after the bound dropped segments (`Spool.stateFailure`).
    public var stateFailure: SpoolError? { lock.withLock { spool.stateFailure } }

    public var state: (next: UInt64, acknowledged: UInt64, dropped: UInt64, bytes: Int) {
        lock.withLock { (spool.nextSeq, spool.acknowledged, spool.dropped, spool.bytesOnDisk) }
    }
}

