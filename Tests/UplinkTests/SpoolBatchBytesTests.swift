import Foundation
import Testing
import Uplink
import UplinkIngest

/// A batch stays under what an aggregator and the broker take (1 MiB): the spool hands out at most
/// `SpoolQueue.batchBytes` of records, in order, with nothing skipped across segments.
@Suite("Spool: batches bounded in bytes")
struct SpoolBatchBytesTests {
    @Test("reads bounded in bytes come back in order, the first record always, none skipped across segments")
    func boundedReads() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Records of 1,000 to 9,000 bytes over segments of 16 KiB.
        func body(_ n: UInt64) -> [UInt8] { [UInt8](repeating: UInt8(n % 251), count: 1_000 + Int(n % 9) * 1_000) }
        let spool = try Spool(directory: dir, segmentBytes: 16 << 10)
        for n in 1...300 as ClosedRange<UInt64> { try spool.append(body(n)) }
        for budget in [1, 5_000, 12_345, 40_000] {
            var after: UInt64 = 0
            var seen: [UInt64] = []
            while after < 300 {
                let read = try spool.records(after: after, limit: 500, bytes: budget)
                #expect(!read.isEmpty)
                let bytes = read.reduce(0) { $0 + $1.payload.count + 1 }
                #expect(read.count == 1 || bytes <= budget, "\(read.count) records of \(bytes) bytes over \(budget)")
                // Not cut short while the next record would have fitted.
                if let last = read.last, last.seq < 300 {
                    #expect(bytes + body(last.seq + 1).count + 1 > budget || read.count == 500)
                }
                #expect(read.allSatisfy { $0.payload == body($0.seq) })
                seen += read.map(\.seq)
                after = read.last?.seq ?? after
            }
            #expect(seen == Array(1...300), "budget \(budget)")
        }
    }

    @Test("the queue's batches are under batchBytes and every record fits one: below the aggregator's 1 MiB")
    func queueBound() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(SpoolQueue.batchBytes + 64 << 10 <= IngestRules.maxPayloadBytes)
        let queue = SpoolQueue(try Spool(directory: dir))
        // 500 records of 3 KB (a telemetry record of eight units is about that): 1.5 MB, in two batches.
        for _ in 0..<500 { try queue.append { seq in Array("{\"seq\":\(seq)}".utf8) + [UInt8](repeating: 0x20, count: 3_000) } }
        let first = try queue.records(after: 0, limit: 500)
        #expect(first.count < 500 && first.reduce(0) { $0 + $1.payload.count + 1 } <= SpoolQueue.batchBytes)
        let rest = try queue.records(after: first.last!.seq, limit: 500)
        #expect((first + rest).map(\.seq) == Array(1...500))
        // A record over half a batch is refused when it is written, not at the aggregator.
        #expect(throws: SpoolError.self) { try queue.append { _ in [UInt8](repeating: 0x20, count: SpoolQueue.batchBytes / 2 + 1) } }
    }
}
