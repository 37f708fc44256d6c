import BessBase
import ControlCore
import Foundation
import Glibc
import Testing
import Uplink

func temporarySpoolDirectory() -> String {
    NSTemporaryDirectory() + "bessd-spool-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
}

func payload(_ n: UInt64) -> [UInt8] { Array("record \(n) ".utf8) + [UInt8](repeating: UInt8(n % 251), count: Int(n % 97)) }

@Suite("Durable spool")
struct SpoolTests {
    @Test("records come back in order; the sequence continues across reopening")
    func appendReplay() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir, segmentBytes: 4096)
            for n in 1...1000 as ClosedRange<UInt64> { #expect(try spool.append(payload(n)) == n) }
        }
        let spool = try Spool(directory: dir, segmentBytes: 4096)
        #expect(spool.nextSeq == 1001)
        #expect(spool.recovery == SpoolRecovery())
        let all = try spool.records(after: 0, limit: 5000)
        #expect(all.map(\.seq) == Array(1...1000))
        #expect(all.allSatisfy { $0.payload == payload($0.seq) })
        #expect(try spool.records(after: 990, limit: 5).map(\.seq) == [991, 992, 993, 994, 995])
    }

    @Test("read past, acknowledge, reconnect: the spool returns exactly the records asked for across segments")
    func readsContinue() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spool = try Spool(directory: dir, segmentBytes: 8192)
        var generator = SystemRandomNumberGenerator()
        var acknowledged: UInt64 = 0
        var lastRead: UInt64 = 0
        for round in 0..<600 {
            for _ in 0..<Int.random(in: 0...12, using: &generator) { try spool.append(payload(spool.nextSeq)) }
            let limit = Int.random(in: 1...20, using: &generator)
            // Mostly on from the last read (HTTP after its acknowledgement, MQTT ahead of its
            // acknowledgements); now and then back to the acknowledgement (a reconnect re-sends).
            let after = Int.random(in: 0..<5, using: &generator) == 0 ? acknowledged : lastRead
            let got = try spool.records(after: after, limit: limit)
            let newest = spool.nextSeq - 1
            let expected = after < newest ? Array((after + 1)...min(newest, after + UInt64(limit))) : []
            #expect(got.map(\.seq) == expected, "round \(round): after \(after), limit \(limit)")
            #expect(got.allSatisfy { $0.payload == payload($0.seq) })
            lastRead = got.last?.seq ?? after
            if Bool.random(using: &generator), lastRead > acknowledged {
                acknowledged = UInt64.random(in: (acknowledged + 1)...lastRead, using: &generator)
                try spool.acknowledge(upTo: acknowledged)
            }
        }
        #expect(acknowledged > 1000, "the test went through several segments")
    }

    @Test("records larger than a read or across reads come back whole; a torn big one at the end is cut",
          arguments: [0, 1, 70_000])
    func largeRecords(cut: Int) throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Sizes around the reader's 64 KiB chunk: below, at, across and several times over.
        let sizes = [10, 65_520, 65_536 - 16, 65_536, 70_000, 3, 200_003, 131_072, 1, 65_535, 300_000]
        func body(_ n: UInt64) -> [UInt8] { (0..<sizes[Int(n) - 1]).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(n)) } }
        do {
            let spool = try Spool(directory: dir, maxBytes: 64 << 20, segmentBytes: 8 << 20)
            for n in 1...UInt64(sizes.count) { #expect(try spool.append(body(n)) == n) }
        }
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasPrefix("seg-") })
        let path = "\(dir)/\(segment)"
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        if cut > 0 { truncate(path, off_t(size - cut)) }
        let spool = try Spool(directory: dir, maxBytes: 64 << 20, segmentBytes: 8 << 20)
        let kept = UInt64(cut > 0 ? sizes.count - 1 : sizes.count)
        #expect(spool.nextSeq == kept + 1)
        #expect((spool.recovery.tornBytes > 0) == (cut > 0))
        let all = try spool.records(after: 0, limit: 100)
        #expect(all.map(\.seq) == Array(1...kept))
        #expect(all.allSatisfy { $0.payload == body($0.seq) })
        // In small steps, as the uploader reads, and again from the same point (a retry).
        var after: UInt64 = 0
        while after < kept {
            let step = try spool.records(after: after, limit: 2)
            #expect(try spool.records(after: after, limit: 2).map(\.seq) == step.map(\.seq))
            #expect(step.first?.seq == after + 1 && step.allSatisfy { $0.payload == body($0.seq) })
            after = step.last?.seq ?? kept
        }
    }

    @Test("a torn tail is detected and cut; nothing invented", arguments: [1, 5, 16, 17, 40])
    func tornTail(cut: Int) throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir)
            for n in 1...50 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        }
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasPrefix("seg-") })
        let path = "\(dir)/\(segment)"
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        truncate(path, off_t(size - cut))
        let spool = try Spool(directory: dir)
        #expect(spool.recovery.tornBytes > 0)
        let records = try spool.records(after: 0, limit: 100)
        #expect(records.map(\.seq) == Array(1...49))
        #expect(records.allSatisfy { $0.payload == payload($0.seq) })
        #expect(try spool.append(payload(50)) == 50)
    }

    @Test("a damaged byte cuts the segment there")
    func damage() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir)
            for n in 1...20 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        }
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasPrefix("seg-") })
        let handle = try #require(FileHandle(forUpdatingAtPath: "\(dir)/\(segment)"))
        try handle.seek(toOffset: 300)
        handle.write(Data([0xFF, 0x00, 0xFF]))
        try handle.close()
        let spool = try Spool(directory: dir)
        let seqs = try spool.records(after: 0, limit: 100).map(\.seq)
        #expect(!seqs.isEmpty && seqs.count < 20)
        #expect(seqs == Array(1...UInt64(seqs.count)))
    }

    @Test("bounded: the oldest records go first and the drop is counted")
    func bounded() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spool = try Spool(directory: dir, maxBytes: 20_000, segmentBytes: 4_000)
        for n in 1...2000 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        #expect(spool.bytesOnDisk <= 20_000)
        #expect(spool.dropped > 0)
        let kept = try spool.records(after: spool.acknowledged, limit: 5000).map(\.seq)
        #expect(kept.last == 2000)
        #expect(kept == Array(kept.first!...2000))
        #expect(UInt64(kept.count) + spool.dropped == 2000)
        let reopened = try Spool(directory: dir, maxBytes: 20_000, segmentBytes: 4_000)
        #expect(reopened.dropped == spool.dropped)
    }

    /// The record is not reported lost.
    @Test("a failed state save while dropping segments leaves the record stored; the next append saves it")
    func boundStateFailure() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spool = try Spool(directory: dir, maxBytes: 6144, segmentBytes: 2048)
        // The state file's descriptor, swapped for a read-only one: the next save fails (EBADF).
        let statePath = dir + "/state"
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let stateFD = fds.compactMap(Int32.init).first {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == statePath
        }
        let fd = try #require(stateFD, "the spool keeps its state file open")
        let saved = dup(fd)
        let readOnly = open("/dev/null", O_RDONLY)
        #expect(dup2(readOnly, fd) == fd)
        close(readOnly)
        var n: UInt64 = 0
        while spool.dropped == 0 && n < 1000 {
            n += 1
            #expect(try spool.append(payload(n)) == n)
        }
        #expect(spool.dropped > 0)
        #expect(spool.stateFailure?.code.description == "SPOOL_IO")
        let kept = try spool.records(after: spool.acknowledged, limit: 1000).map(\.seq)
        #expect(kept.last == n, "the record whose append dropped a segment is stored")
        // The disk takes writes again: the next append saves the state.
        #expect(dup2(saved, fd) == fd)
        close(saved)
        n += 1
        #expect(try spool.append(payload(n)) == n)
        #expect(spool.stateFailure == nil)
        let reopened = try Spool(directory: dir, maxBytes: 6144, segmentBytes: 2048)
        #expect(reopened.dropped == spool.dropped)
        #expect(reopened.nextSeq == n + 1)
    }

    @Test("acknowledged segments are deleted; the acknowledgement survives reopening")
    func acknowledge() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir, segmentBytes: 2048)
            for n in 1...300 as ClosedRange<UInt64> { try spool.append(payload(n)) }
            let before = spool.bytesOnDisk
            try spool.acknowledge(upTo: 250)
            #expect(spool.bytesOnDisk < before)
            #expect(spool.pending == 50)
        }
        let spool = try Spool(directory: dir, segmentBytes: 2048)
        #expect(spool.acknowledged == 250)
        #expect(try spool.records(after: spool.acknowledged, limit: 100).map(\.seq) == Array(251...300))
    }

    @Test("an acknowledgement is saved in place: the state file keeps its inode, and a reopen finds the newest")
    func stateInPlace() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func inode() -> UInt64 {
            var info = stat()
            return stat(dir + "/state", &info) == 0 ? UInt64(info.st_ino) : 0
        }
        do {
            let spool = try Spool(directory: dir, segmentBytes: 2048)
            for n in 1...100 as ClosedRange<UInt64> { try spool.append(payload(n)) }
            let opened = inode()
            #expect(opened != 0)
            for ack in stride(from: 5, through: 95, by: 5) { try spool.acknowledge(upTo: UInt64(ack)) }
            // A temporary file renamed over it per acknowledgement (the older way) changes the inode.
            #expect(inode() == opened)
        }
        let spool = try Spool(directory: dir, segmentBytes: 2048)
        #expect(spool.acknowledged == 95)
        #expect(try spool.records(after: spool.acknowledged, limit: 10).map(\.seq) == Array(96...100))
    }

    @Test("the segment being read is let go when it is deleted: no descriptor holds a deleted segment")
    func readerLetsGo() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func held() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap {
                try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
            }.filter { $0.hasPrefix(dir) }
        }
        // Acknowledged: the segment just read is deleted by the acknowledgement of its last record.
        let spool = try Spool(directory: dir, maxBytes: 6144, segmentBytes: 2048)
        for n in 1...60 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        var after: UInt64 = 0
        var deletions = 0
        while after < 60 {
            let batch = try spool.records(after: after, limit: 3)
            #expect(batch.first?.seq == after + 1)
            after = try #require(batch.last?.seq)
            let before = spool.bytesOnDisk
            try spool.acknowledge(upTo: after)
            if spool.bytesOnDisk < before { deletions += 1 }
            #expect(held().allSatisfy { !$0.hasSuffix("(deleted)") }, "after acknowledging \(after): \(held())")
        }
        #expect(deletions >= 1)
        // Dropped by the bound: the segment being read is the oldest and goes first.
        #expect(try spool.records(after: after, limit: 1).isEmpty)
        for n in 61...70 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        #expect(try spool.records(after: after, limit: 1).first?.seq == 61)
        for n in 71...400 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        #expect(spool.dropped > 0)
        #expect(held().allSatisfy { !$0.hasSuffix("(deleted)") }, "after the bound dropped segments: \(held())")
    }

    @Test("a torn newest state slot leaves the one before it; both torn, the segments decide")
    func tornStateSlot() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir, segmentBytes: 1 << 20)
            for n in 1...60 as ClosedRange<UInt64> { try spool.append(payload(n)) }
            try spool.acknowledge(upTo: 30)
            try spool.acknowledge(upTo: 40)
        }
        var bytes = try #require(FileManager.default.contents(atPath: dir + "/state").map { [UInt8]($0) })
        #expect(bytes.count == 4096 + 44)
        // Which slot is newer: the one whose generation (bytes 4..<12) is larger.
        func generation(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + 4 + $1]) << (8 * UInt64($1)) } }
        let newest = generation(0) > generation(4096) ? 0 : 4096
        bytes[newest + 20] ^= 0xFF  // inside `acknowledged`: its CRC no longer matches
        #expect(FileManager.default.createFile(atPath: dir + "/state", contents: Data(bytes)))
        do {
            let spool = try Spool(directory: dir, segmentBytes: 1 << 20)
            #expect(spool.acknowledged == 30, "the slot written before the torn one")
            #expect(spool.nextSeq == 61)
        }
        // Both slots unreadable: the state is ignored and the segments say where the sequence stands.
        let garbage = [UInt8](repeating: 0xA5, count: 4096 + 44)
        #expect(FileManager.default.createFile(atPath: dir + "/state", contents: Data(garbage)))
        let spool = try Spool(directory: dir, segmentBytes: 1 << 20)
        #expect(spool.acknowledged == 0)
        #expect(spool.nextSeq == 61)
        #expect(try spool.records(after: 0, limit: 100).map(\.seq) == Array(1...60))
    }

    @Test("a state file in the older text form is read, then replaced by the slotted form")
    func textState() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir, segmentBytes: 1 << 20)
            for n in 1...50 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        }
        // What a spool written before the slots left: `acknowledged dropped nextSeq`.
        #expect(FileManager.default.createFile(atPath: dir + "/state", contents: Data("42 7 51\n".utf8)))
        do {
            let spool = try Spool(directory: dir, segmentBytes: 1 << 20)
            #expect(spool.acknowledged == 42)
            #expect(spool.dropped == 7)
            #expect(spool.nextSeq == 51)
            #expect(try spool.records(after: spool.acknowledged, limit: 100).map(\.seq) == Array(43...50))
        }
        let size = (try FileManager.default.attributesOfItem(atPath: dir + "/state")[.size] as? NSNumber)?.intValue
        #expect(size == 4096 + 44)
        let spool = try Spool(directory: dir, segmentBytes: 1 << 20)
        #expect(spool.acknowledged == 42)
        #expect(spool.dropped == 7)
    }

    @Test("a record reaches the uplink only once on disk: a power cut never reuses a sent seq")
    func durableBeforeSent() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let segment: String
        let sentBytes: Int
        do {
            // No fsync of its own for an hour: only the send makes one.
            let spool = try Spool(directory: dir, syncInterval: .seconds(3600))
            let queue = SpoolQueue(spool)
            for n in 1...3 as ClosedRange<UInt64> { try queue.append { _ in payload(n) } }
            let syncs = spool.syncs
            let sent = try queue.records(after: 0, limit: 10)
            #expect(sent.map(\.seq) == [1, 2, 3])
            #expect(spool.syncs == syncs + 1, "the records went out before their fsync")
            #expect(spool.durableThrough == 3)
            // Nothing new: no second fsync.
            _ = try queue.records(after: 0, limit: 10)
            #expect(spool.syncs == syncs + 1)
            segment = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasPrefix("seg-") })
            sentBytes = (try FileManager.default.attributesOfItem(atPath: dir + "/" + segment)[.size] as? NSNumber)?.intValue ?? 0
            // Two more records, written but neither synced nor sent.
            try queue.append { _ in payload(4) }
            try queue.append { _ in payload(5) }
        }
        // The power cut: what was not fsynced is gone (the page cache's tail of the segment).
        #expect(truncate(dir + "/" + segment, off_t(sentBytes)) == 0)
        let spool = try Spool(directory: dir, syncInterval: .seconds(3600))
        #expect(try spool.records(after: 0, limit: 10).map(\.seq) == [1, 2, 3], "what was sent survived")
        #expect(try spool.append(payload(4)) == 4, "the unsent seqs are the only ones written again")
    }

    @Test("the sequence survives a lost state file once all was acknowledged: the newest segment is kept")
    func sequenceWithoutState() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let spool = try Spool(directory: dir, segmentBytes: 2048)
            for n in 1...100 as ClosedRange<UInt64> { try spool.append(payload(n)) }
            try spool.acknowledge(upTo: 100)
        }
        // A restart with everything acknowledged, then the state file is lost.
        do { _ = try Spool(directory: dir, segmentBytes: 2048) }
        #expect(unlink(dir + "/state") == 0)
        do {
            let spool = try Spool(directory: dir, segmentBytes: 2048)
            #expect(spool.nextSeq == 101, "the sequence started again below what the aggregator holds")
            #expect(try spool.records(after: 100, limit: 10).isEmpty)
            #expect(try spool.append(payload(101)) == 101)
        }
        // Unreadable rather than missing: the same.
        #expect(FileManager.default.createFile(atPath: dir + "/state", contents: Data([UInt8](repeating: 0x5A, count: 100))))
        let spool = try Spool(directory: dir, segmentBytes: 2048)
        #expect(spool.nextSeq == 102)
    }

    @Test("a state at the end of the sequence is not believed, and the last seq is refused, coded")
    func sequenceEnd() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // At the end itself: ignored (nothing after it could be read back), the segments decide.
        #expect(FileManager.default.createFile(atPath: dir + "/state", contents: Data("0 0 \(Spool.maxSeq)\n".utf8)))
        do {
            let spool = try Spool(directory: dir)
            #expect(spool.nextSeq == 1)
        }
        try FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dir + "/state", contents: Data("0 0 \(Spool.maxSeq - 1)\n".utf8)))
        let spool = try Spool(directory: dir)
        #expect(try spool.append(payload(1)) == Spool.maxSeq - 1)
        #expect(try spool.records(after: 0, limit: 10).map(\.seq) == [Spool.maxSeq - 1])
        #expect(throws: SpoolError(.sequenceExhausted, message: "the sequence reached \(Spool.maxSeq); the spool's state is damaged")) {
            try spool.append(payload(2))
        }
    }

    @Test("fsync is batched: many records, few syncs")
    func batchedSync() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spool = try Spool(directory: dir, syncInterval: .seconds(3600))
        for n in 1...5000 as ClosedRange<UInt64> { try spool.append(payload(n)) }
        #expect(spool.syncs <= 2)  // segment starts only
        spool.sync()
        #expect(spool.syncs <= 3)
    }

    @Test("an oversized record is refused, coded")
    func oversized() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spool = try Spool(directory: dir)
        #expect(throws: SpoolError(.recordTooLarge, message: "a record of 2000000 bytes")) {
            try spool.append([UInt8](repeating: 0, count: 2_000_000))
        }
    }
}
