public import BessBase
import BessSystem
import ControlCore
import Foundation
import Glibc

/// Why the spool could not do something.
///
/// The code is typed (`SpoolError.Code.full`); the journal (`BESS_CODE=`), `/metrics` and the control
/// socket print its stable name (`SPOOL_FULL`), which operators' recipes read. What the caller does
/// about it follows from the code's `kind`.
public typealias SpoolError = CodedError<SpoolErrorCode>

/// The stable code of a `SpoolError` (`SpoolError.Code`): a struct over a private enum, so the set
/// is closed and matched by value, never by text.
public struct SpoolErrorCode: Hashable, Sendable, CustomStringConvertible, ErrorCodeWithKind, ErrorCodeWithErrno {
    /// What a failure says about the spool's storage (`SpoolError.Kind`).
    public enum Kind: Sendable, Equatable {
        /// The filesystem or a quota is full: records are lost until space comes back.
        case storageFull
        /// Any other failure of the spool's files.
        case io
        /// A record or a state the spool cannot store: too large, or a sequence at its end.
        case valueInvalid
    }

    private enum Value: Hashable, Sendable {
        case io, full, recordTooLarge, sequenceExhausted
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SPOOL_IO`: a call on the spool's files failed.
    public static let io = Self(.io)
    /// `SPOOL_FULL`: the filesystem or a quota is full (the disk, not the spool's bound).
    public static let full = Self(.full)
    /// `SPOOL_RECORD_TOO_LARGE`: a record larger than `Spool.maxPayload`.
    public static let recordTooLarge = Self(.recordTooLarge)
    /// `SPOOL_SEQ_EXHAUSTED`: a seq at `Spool.maxSeq` (only a damaged or hand-made state gets there).
    public static let sequenceExhausted = Self(.sequenceExhausted)

    /// What the failure says about the spool's storage.
    public var kind: Kind {
        switch value {
        case .io: .io
        case .full: .storageFull
        case .recordTooLarge, .sequenceExhausted: .valueInvalid
        }
    }

    /// The stable name the journal and the control socket print.
    public var description: String {
        switch value {
        case .io: "SPOOL_IO"
        case .full: "SPOOL_FULL"
        case .recordTooLarge: "SPOOL_RECORD_TOO_LARGE"
        case .sequenceExhausted: "SPOOL_SEQ_EXHAUSTED"
        }
    }
}

extension CodedError where StableCode == SpoolErrorCode {
    /// A failed call on the spool's files: `SPOOL_FULL` when the filesystem or a quota is full
    /// (ENOSPC, EDQUOT, EFBIG), `SPOOL_IO` otherwise; the message is `what` and the system's text for `e`.
    static func failed(_ what: String, errno e: Int32) -> SpoolError {
        SpoolError(e == ENOSPC || e == EDQUOT || e == EFBIG ? .full : .io, message: "\(what): \(SystemError.text(e))", errno: e)
    }
}

/// One stored record.
public struct SpoolRecord: Sendable, Equatable {
    /// Site-wide sequence number: rises by one per record, across restarts.
    public var seq: UInt64
    public var payload: [UInt8]
}

/// What recovery found when the spool was opened.
public struct SpoolRecovery: Sendable, Equatable {
    /// Bytes cut from the end of a segment (a torn write at power loss).
    public var tornBytes: Int = 0
    /// Segments with damage in the middle, cut at the damage.
    public var damagedSegments: Int = 0
    public init() {}
}

/// A durable store-and-forward queue under the state directory: append-only segment files, a
/// checksum per record, writes handed to the kernel at once (a SIGKILL loses nothing), fsync batched
/// (a power loss loses at most one sync interval, and the torn tail is detected and cut), bounded in
/// size (oldest segments dropped first, the drop counted), replayed in order after reconnection.
///
/// Record layout, little-endian: payload length (u32), CRC-32 of seq + payload (u32), seq (u64),
/// payload.
public final class Spool {
    public let directory: String
    /// Largest total size of the segments, bytes.
    public let maxBytes: Int
    /// Size at which a new segment starts, bytes.
    public let segmentBytes: Int
    /// Longest time between a write and its fsync.
    public let syncInterval: Duration
    public private(set) var recovery = SpoolRecovery()
    /// The next sequence number to hand out.
    public private(set) var nextSeq: UInt64 = 1
    /// Everything up to this seq has been acknowledged by the aggregator.
    public private(set) var acknowledged: UInt64 = 0
    /// Records dropped because the bound was reached, since the spool was created.
    public private(set) var dropped: UInt64 = 0
    /// Why the state could not be saved after the bound dropped segments (nil once a save succeeds).
    /// The record being appended was stored all the same; what the state file lacks (the drop's count,
    /// the new floor) is saved again at the next append or acknowledgement. Until then a restart
    /// forgets the drop's count and may send delivered records again (the aggregator keeps one per seq).
    public private(set) var stateFailure: SpoolError?
    /// fsync calls made (flash wear is proportional to this, not to records).
    public private(set) var syncs: UInt64 = 0
    /// Every record up to this seq is on the disk (fsynced), not only in the kernel's cache. A record
    /// leaves the gateway only once it is (`SpoolQueue.records`): one sent before its fsync and lost
    /// in a power cut would hand its seq to the next record written after the restart, and the
    /// aggregator, which keeps the first record it got for a seq, would drop that one as a duplicate.
    public private(set) var durableThrough: UInt64 = 0

    struct Segment {
        var firstSeq: UInt64
        var lastSeq: UInt64
        var bytes: Int
        var path: String
    }
    var segments: [Segment] = []
    var fd: Int32 = -1
    /// The next append starts a segment of its own: recovery found the newest segment ending below
    /// `nextSeq` (records or a whole segment lost after the state was saved), and a record appended
    /// after a gap would be read as damage and cut at the next start.
    var startsSegment = false
    var unsynced = false
    var lastSync = SystemClock.shared.now()
    /// Where the last read stopped: the segment, the last seq it returned, the byte offset after it.
    var cursor: (path: String, seq: UInt64, offset: Int)?
    /// Where the records after a seq began at the last read: a request repeated unacknowledged.
    var retryCursor: (path: String, seq: UInt64, offset: Int)?
    /// The segment being read and its descriptor (`reader`).
    var reading: (path: String, fd: Int32)?
    static let header = 16
    /// The largest record a segment holds when read (what an older bessd may have written).
    static let maxPayload = 1 << 20
    /// The largest record written: half a batch (`SpoolQueue.batchBytes`), so any record can be sent.
    static let maxRecord = 480_000

    public init(directory: String, maxBytes: Int = 64 << 20, segmentBytes: Int = 4 << 20,
                syncInterval: Duration = .seconds(1)) throws(SpoolError) {
        self.directory = directory
        self.maxBytes = max(maxBytes, 2 * Self.header + 64)
        self.segmentBytes = max(1024, min(segmentBytes, self.maxBytes / 2))
        self.syncInterval = syncInterval
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SpoolError(.io, message: "cannot create \(directory): \(error.localizedDescription)")
        }
        try loadState()
        try recover()
    }

    deinit {
        sync()
        if fd >= 0 { close(fd) }
        if stateFD >= 0 { close(stateFD) }
        closeReader()
    }

    /// Records waiting for acknowledgement.
    public var pending: UInt64 { nextSeq - 1 - min(acknowledged, nextSeq - 1) }
    /// Bytes on disk.
    public var bytesOnDisk: Int { segments.reduce(0) { $0 + $1.bytes } }

    // MARK: writing

    /// Appends one record and returns its seq. The bytes reach the kernel before this returns.
    @discardableResult
    public func append(_ payload: [UInt8]) throws(SpoolError) -> UInt64 {
        guard payload.count <= Self.maxRecord else {
            throw SpoolError(.recordTooLarge, message: "a record of \(payload.count) bytes")
        }
        let seq = nextSeq
        guard seq < Self.maxSeq else {
            throw SpoolError(.sequenceExhausted, message: "the sequence reached \(seq); the spool's state is damaged")
        }
        var frame = [UInt8]()
        frame.reserveCapacity(Self.header + payload.count)
        var seqBytes = [UInt8]()
        withUnsafeBytes(of: seq.littleEndian) { seqBytes.append(contentsOf: $0) }
        let crc = CRC32.checksum(payload, continuing: CRC32.checksum(seqBytes))
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        withUnsafeBytes(of: crc.littleEndian) { frame.append(contentsOf: $0) }
        frame += seqBytes
        frame += payload
        if segments.isEmpty || startsSegment || segments[segments.count - 1].bytes + frame.count > segmentBytes {
            try startSegment(seq)
            startsSegment = false
        }
        try writeAll(frame)
        segments[segments.count - 1].bytes += frame.count
        segments[segments.count - 1].lastSeq = seq
        nextSeq = seq + 1
        unsynced = true
        // The record is stored from here on: nothing below may report it lost.
        enforceBound()
        if SystemClock.shared.now() - lastSync >= syncInterval { sync() }
        return seq
    }

    /// fsyncs what was written since the last sync (at most once per `syncInterval` from `append`).
    /// A refusal is seen by the next `syncNow`.
    public func sync() { try? syncNow() }

    /// fsyncs what was written since the last sync, now; throws when the disk refuses (the records
    /// are then not counted durable, and the next call tries again).
    public func syncNow() throws(SpoolError) {
        guard unsynced, fd >= 0 else {
            durableThrough = nextSeq &- 1
            return
        }
        let through = nextSeq &- 1
        syncs &+= 1
        lastSync = SystemClock.shared.now()
        guard fsync(fd) == 0 else { throw SpoolError.failed("syncing the spool", errno: errno) }
        unsynced = false
        durableThrough = through
    }

    /// fsyncs the spool's directory, so that a file created or renamed in it survives a power cut
    /// (fsync of a file does not make its name durable).
    private func syncDirectory() throws(SpoolError) {
        do throws(SystemCallError) {
            try AtomicFile.syncDirectory(of: directory + "/.")
        } catch {
            throw SpoolError.failed("syncing \(directory)", errno: error.errno)
        }
    }

    private func writeAll(_ bytes: [UInt8]) throws(SpoolError) {
        // No segment open (its creation failed): what write(2) said of it, before `systemCall`.
        guard fd >= 0 else { throw SpoolError.failed("writing the spool", errno: EBADF) }
        let fd = fd
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemCallError) in try systemCall("write") { write(fd, raw.baseAddress! + offset, raw.count - offset) } }
            }
            // A short write that wrote nothing sets no errno: the disk is full.
            let failure: Int32
            switch written {
            case .success(let n) where n > 0:
                offset += n
                continue
            case .success: failure = ENOSPC
            case .failure(let error): failure = error.errno
            }
            // Leave no half record behind: cut back to where this record began.
            let end = lseek(fd, 0, SEEK_END)
            ftruncate(fd, end - off_t(offset))
            throw SpoolError.failed("writing the spool", errno: failure)
        }
    }

    private func startSegment(_ firstSeq: UInt64) throws(SpoolError) {
        // The segment that ends is on the disk before the next begins (only the newest one is
        // synced later), and the new one's name is too.
        try syncNow()
        if fd >= 0 { close(fd) }
        let path = "\(directory)/seg-\(String(format: "%020llu", firstSeq)).log"
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw SpoolError.failed("cannot create \(path)", errno: errno) }
        segments.append(Segment(firstSeq: firstSeq, lastSeq: firstSeq - 1, bytes: 0, path: path))
        try syncDirectory()
    }

    /// Drops the oldest segments (acknowledged or not) while the spool is over its bound, then saves
    /// the state once (and again at every append while an earlier save failed). A save that fails is
    /// kept in `stateFailure`, not thrown: the append that got here has stored its record.
    private func enforceBound() {
        var droppedAny = false
        while bytesOnDisk > maxBytes, segments.count > 1 {
            let oldest = segments.removeFirst()
            // Only records not yet acknowledged are lost (computed only then: a fully acknowledged
            // segment would underflow).
            if oldest.lastSeq > acknowledged, oldest.lastSeq >= oldest.firstSeq {
                dropped &+= oldest.lastSeq - max(oldest.firstSeq, acknowledged + 1) + 1
            }
            delete(oldest)
            acknowledged = max(acknowledged, oldest.lastSeq)
            droppedAny = true
        }
        guard droppedAny || stateFailure != nil else { return }
        do throws(SpoolError) { try saveState() } catch { stateFailure = error }
    }

    // MARK: reading and acknowledging

    /// Up to `limit` records after `seq`, in order, each seq once: segments that overlap (a damaged
    /// or hand-edited spool; make fuzz found one replaying 3 then 2) give only what is past the last
    /// record already taken.
    ///
    /// A read continues where the previous one stopped (`cursor`): the uploader asks for what follows
    /// the records it just had acknowledged, so only the new end of the segment is read, not the
    /// whole segment again (reading and parsing a whole segment at every upload holds megabytes and
    /// CPU; hil/results/README.md, "Figures behind the code").
    /// A retry of the same request (the uplink down, the batch not acknowledged) starts where the
    /// previous one did (`retryCursor`), not at the segment's start.
    ///
    /// At most `bytes` of payloads (each counted with one byte for the comma between), except that the
    /// first record always comes: a read that stops at the bound continues there next time.
    public func records(after seq: UInt64, limit: Int, bytes: Int = .max) throws(SpoolError) -> [SpoolRecord] {
        var result: [SpoolRecord] = []
        var floor = seq
        var budget = bytes
        for segment in segments where segment.lastSeq > floor && result.count < limit {
            let known = [cursor, retryCursor].lazy.compactMap { $0 }.first { $0.path == segment.path && $0.seq == floor }
            let start = known?.offset ?? 0
            let fd = try reader(segment.path)
            var part = try SpoolSegment.read(segment.path, open: fd, from: start, after: floor, limit: limit - result.count,
                                     budget: budget, first: result.isEmpty)
            if part.records.isEmpty && start > 0 && !part.full {
                part = try SpoolSegment.read(segment.path, open: fd, from: 0, after: floor, limit: limit - result.count,
                                     budget: budget, first: result.isEmpty)
            }
            if !part.records.isEmpty { retryCursor = (segment.path, floor, part.begin) }
            for record in part.records {
                result.append(record)
                floor = record.seq
                budget -= record.payload.count + 1
            }
            if let last = part.records.last { cursor = (segment.path, last.seq, part.end) }
            // The next record does not fit: nothing of a later segment may pass it.
            if part.full { break }
        }
        return result
    }

    /// A descriptor of the segment at `path` for reading, kept until another segment is read or this
    /// one is deleted (an open and a close per uploader request were a tenth of the fleet bench's
    /// load generator).
    private func reader(_ path: String) throws(SpoolError) -> Int32 {
        if let reading, reading.path == path { return reading.fd }
        closeReader()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError(.io, message: "cannot read \(path): \(SystemError.text(errno))", errno: errno) }
        reading = (path, fd)
        return fd
    }

    private func closeReader(ifReading path: String? = nil) {
        guard let reading, path == nil || reading.path == path else { return }
        close(reading.fd)
        self.reading = nil
    }

    /// Deletes a segment's file (and lets go of it if it is being read).
    private func delete(_ segment: Segment) {
        closeReader(ifReading: segment.path)
        unlink(segment.path)
    }

    /// Marks everything up to `seq` delivered and deletes fully delivered segments.
    public func acknowledge(upTo seq: UInt64) throws(SpoolError) {
        guard seq > acknowledged else { return }
        acknowledged = min(seq, nextSeq - 1)
        while segments.count > 1, segments[0].lastSeq <= acknowledged {
            delete(segments.removeFirst())
        }
        try saveState()
    }

    // MARK: state and recovery

    var statePath: String { directory + "/state" }

    /// The state file, open for writing in place (-1 until `recover` has written it whole).
    var stateFD: Int32 = -1
    /// The generation of the newest state slot written or read.
    var stateGeneration: UInt64 = 0
    /// The state file's layout: two slots, each `magic generation acknowledged dropped nextSeq crc`
    /// (u32, 4 × u64, u32, little-endian; the CRC-32 covers the 36 bytes before it), at offsets 0 and
    /// `stateSlotStride` so that they share no page of the medium. A save writes the older slot in
    /// place and fdatasyncs it: a power cut tears at most that slot, and the other one still holds the
    /// previous state. Before this layout each acknowledgement wrote a temporary file, fsynced and
    /// renamed it: at the fleet bench's 10,000 PUBACKs a second that was a fifth of the load
    /// generator's CPU (open, rename). A state file in the older text form (`acknowledged dropped
    /// nextSeq`) is still read.
    static let stateMagic: UInt32 = 0x3153_5342  // "BSS1"
    static let stateSlotBytes = 44
    static let stateSlotStride = 4096

    static func stateSlot(generation: UInt64, acknowledged: UInt64, dropped: UInt64, nextSeq: UInt64) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(stateSlotBytes)
        withUnsafeBytes(of: stateMagic.littleEndian) { bytes.append(contentsOf: $0) }
        for value in [generation, acknowledged, dropped, nextSeq] {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        withUnsafeBytes(of: CRC32.checksum(bytes).littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The little-endian integer `at` bytes into `bytes`.
    static func littleEndian<T: FixedWidthInteger>(_ bytes: ArraySlice<UInt8>, at: Int) -> T {
        (0..<(T.bitWidth / 8)).reduce(T.zero) { $0 | T(bytes[bytes.startIndex + at + $1]) << (8 * $1) }
    }

    /// A slot's `(generation, acknowledged, dropped, nextSeq)`, or nil when its magic or CRC is wrong.
    static func parseStateSlot(_ bytes: ArraySlice<UInt8>) -> (UInt64, UInt64, UInt64, UInt64)? {
        guard bytes.count >= stateSlotBytes else { return nil }
        let base = bytes.startIndex
        func u32(_ at: Int) -> UInt32 { littleEndian(bytes, at: at) }
        func u64(_ at: Int) -> UInt64 { littleEndian(bytes, at: at) }
        guard u32(0) == stateMagic, u32(36) == CRC32.checksum(bytes[base..<(base + 36)]) else { return nil }
        return (u64(4), u64(12), u64(20), u64(28))
    }

    /// Saves `acknowledged dropped nextSeq` in the older slot, in place, and fdatasyncs it.
    private func saveState() throws(SpoolError) {
        guard stateFD >= 0 else { return try writeStateFile() }
        let generation = stateGeneration &+ 1
        let slot = Self.stateSlot(generation: generation, acknowledged: acknowledged, dropped: dropped, nextSeq: nextSeq)
        let offset = off_t(Int(generation & 1) * Self.stateSlotStride)
        let written = slot.withUnsafeBytes { pwrite(stateFD, $0.baseAddress, $0.count, offset) }
        guard written == slot.count else { throw SpoolError.failed("cannot save the spool state", errno: written < 0 ? errno : ENOSPC) }
        guard fdatasync(stateFD) == 0 else { throw SpoolError.failed("cannot save the spool state", errno: errno) }
        stateGeneration = generation
        stateFailure = nil
    }

    /// Writes the whole state file (the current state in one slot, the other empty) to a temporary
    /// file, fsyncs and renames it, then keeps it open for the saves in place. Done once per open, so
    /// a file in the older form, damaged, or missing is replaced whole, never patched.
    private func writeStateFile() throws(SpoolError) {
        if stateFD >= 0 { close(stateFD); stateFD = -1 }
        let generation = stateGeneration &+ 1
        var file = [UInt8](repeating: 0, count: Self.stateSlotStride + Self.stateSlotBytes)
        let slot = Self.stateSlot(generation: generation, acknowledged: acknowledged, dropped: dropped, nextSeq: nextSeq)
        let at = Int(generation & 1) * Self.stateSlotStride
        file.replaceSubrange(at..<(at + slot.count), with: slot)
        do throws(SystemCallError) {
            try AtomicFile.write(file, to: statePath)
        } catch {
            throw SpoolError.failed("cannot save the spool state (\(error.call))", errno: error.errno)
        }
        stateGeneration = generation
        stateFD = open(statePath, O_WRONLY | O_CLOEXEC)
        guard stateFD >= 0 else {
            let e = errno
            throw SpoolError(.io, message: "cannot open \(statePath): \(SystemError.text(e))", errno: e)
        }
        stateFailure = nil
    }

    /// The largest seq the spool accepts (far beyond any site's lifetime at any rate), so that no
    /// arithmetic on a seq read from disk can overflow.
    public static let maxSeq: UInt64 = 1 << 62

    private func loadState() throws(SpoolError) {
        // No state file, or one that cannot be read: nothing is loaded from it (a bounded read
        // through `systemCall`: both slots at most).
        let file = StateFile(path: statePath, maximumBytes: Self.stateSlotStride + Self.stateSlotBytes)
        guard let bytes = try? file.read(), let state = Self.parseState(bytes.prefix(file.maximumBytes)) else { return }
        stateGeneration = state.generation
        acknowledged = state.acknowledged
        dropped = state.dropped
        nextSeq = state.nextSeq
    }

    /// The state a state file holds: the newest valid slot, or the older text form. A state that
    /// cannot be true is ignored (nil): the segments then say where the sequence stands (records
    /// already acknowledged may be sent again; the aggregator stores each seq once).
    static func parseState(_ bytes: ArraySlice<UInt8>) -> (generation: UInt64, acknowledged: UInt64, dropped: UInt64, nextSeq: UInt64)? {
        func plausible(_ acknowledged: UInt64, _ nextSeq: UInt64) -> Bool { nextSeq < maxSeq && acknowledged < max(1, nextSeq) }
        if let first = bytes.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) {
            guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
            let fields = text.split(separator: " ").compactMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard fields.count == 3, plausible(fields[0], fields[2]) else { return nil }
            return (0, fields[0], fields[1], max(1, fields[2]))
        }
        let base = bytes.startIndex
        let slots = [0, stateSlotStride].compactMap { at -> (UInt64, UInt64, UInt64, UInt64)? in
            guard bytes.count >= at + stateSlotBytes else { return nil }
            return parseStateSlot(bytes[(base + at)..<(base + at + stateSlotBytes)])
        }
        guard let newest = slots.filter({ plausible($0.1, $0.3) }).max(by: { $0.0 < $1.0 }) else { return nil }
        return (newest.0, newest.1, newest.2, max(1, newest.3))
    }

    /// Reads every segment, cuts a torn or damaged tail, and continues the sequence after the last record.
    private func recover() throws(SpoolError) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("seg-") && $0.hasSuffix(".log") }.sorted()
        for (index, name) in names.enumerated() {
            let path = "\(directory)/\(name)"
            var first: UInt64?
            var last: UInt64?
            let validBytes = try SpoolSegment.scan(path, from: 0) { seq, _, _ in
                if first == nil { first = seq }
                last = seq
                return true
            }
            let size = Int((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0)
            if validBytes < size {
                truncate(path, off_t(validBytes))
                if index == names.count - 1 { recovery.tornBytes += size - validBytes } else { recovery.damagedSegments += 1 }
            }
            let newest = index == names.count - 1
            // A segment with nothing left is not kept, but its name still says where the sequence
            // stood; nor is one whose records were all acknowledged, except the newest: with the
            // state file lost or damaged, it is what keeps the sequence from starting again at 1
            // (the aggregator keeps the first record it got for a seq and would drop the new ones).
            guard let first, let last else {
                if let named = Self.firstSeq(name), named < Self.maxSeq { nextSeq = max(nextSeq, named) }
                unlink(path)
                continue
            }
            guard last > acknowledged || newest else {
                unlink(path)
                continue
            }
            segments.append(Segment(firstSeq: first, lastSeq: last, bytes: validBytes, path: path))
            nextSeq = max(nextSeq, last + 1)
            // What a SIGKILL left in the kernel's cache goes to the disk before any of it is sent.
            let kept = open(path, O_RDONLY | O_CLOEXEC)
            if kept >= 0 {
                defer { close(kept) }
                guard fsync(kept) == 0 else { throw SpoolError.failed("syncing \(path)", errno: errno) }
            }
        }
        if let last = segments.last, last.lastSeq &+ 1 != nextSeq { startsSegment = true }
        if let last = segments.last, !startsSegment {
            fd = open(last.path, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else { throw SpoolError(.io, message: "cannot open \(last.path)", errno: errno) }
        }
        durableThrough = nextSeq &- 1
        try writeStateFile()
    }

    /// The first seq a segment's file name gives (`seg-<20 digits>.log`), or nil.
    static func firstSeq(_ name: String) -> UInt64? {
        guard name.hasPrefix("seg-"), name.hasSuffix(".log") else { return nil }
        return UInt64(name.dropFirst(4).dropLast(4))
    }
}
