import Foundation
import Synchronization

/// The spool, shared by the recorder (service thread) and the sender.
public final class SpoolQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let spool: Spool
    /// The highest seq appended so far: a sender reads it without the lock to learn whether anything
    /// new waits, as often as it likes.
    private let newestSeq: Atomic<UInt64>
    /// Told after each append (outside the lock): the MQTT sender's own thread is woken by it, so a
    /// record goes out as soon as it is written instead of at the sender's next poll.
    private let appended = Mutex<(@Sendable () -> Void)?>(nil)

    public init(_ spool: Spool) {
        self.spool = spool
        newestSeq = Atomic(spool.nextSeq &- 1)
    }

    /// Appends the record `make` builds for the seq it will get.
    @discardableResult
    public func append(_ make: (UInt64) throws -> [UInt8]) throws -> UInt64 {
        let seq = try lock.withLock {
            let payload = try make(spool.nextSeq)
            let seq = try spool.append(payload)
            newestSeq.store(seq, ordering: .releasing)
            return seq
        }
        appended.withLock { $0 }?()
        return seq
    }

    /// The highest seq appended (0 when nothing ever was).
    public var newest: UInt64 { newestSeq.load(ordering: .acquiring) }

    /// Sets what to call after each append.
    public func onAppend(_ call: (@Sendable () -> Void)?) { appended.withLock { $0 = call } }

    public func pending(limit: Int) throws -> [SpoolRecord] { try records(after: 0, limit: limit) }

    /// Records after `seq` (the MQTT uplink publishes ahead of its acknowledgements).
    public func records(after seq: UInt64, limit: Int) throws -> [SpoolRecord] {
        try lock.withLock { try spool.records(after: max(seq, spool.acknowledged), limit: limit) }
    }

    public func acknowledge(upTo seq: UInt64) throws { try lock.withLock { try spool.acknowledge(upTo: seq) } }
    public func sync() { lock.withLock { spool.sync() } }
    public var state: (next: UInt64, acknowledged: UInt64, dropped: UInt64, bytes: Int) {
        lock.withLock { (spool.nextSeq, spool.acknowledged, spool.dropped, spool.bytesOnDisk) }
    }
}

