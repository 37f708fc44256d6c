import Foundation
import Synchronization

/// The spool, shared by the recorder (service thread) and the sender.
public final class SpoolQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let spool: Spool

    public init(_ spool: Spool) { self.spool = spool }

    /// Appends the record `make` builds for the seq it will get.
    @discardableResult
    public func append(_ make: (UInt64) throws -> [UInt8]) throws -> UInt64 {
        try lock.withLock {
            let payload = try make(spool.nextSeq)
            return try spool.append(payload)
        }
    }

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

