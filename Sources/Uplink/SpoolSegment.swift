import BessBase
import BessSystem
import ControlCore
import Glibc

/// Reading a spool segment's file: its records walked in bounded chunks, and the records a read
/// hands the uploader.
enum SpoolSegment {
    /// Walks the valid records of a segment from byte `start` (a record boundary), reading it at most 64 KiB
    /// at a time with pread(2): memory stays one chunk plus one record, whatever the segment's size
    /// (reading a whole segment per request held up to twice its size, and at every uplink outage the
    /// sender's retries did it again: the soak saw RSS step up at each one). `visit` gets each record's
    /// seq, payload and the offset just past it, and returns false to stop after it. The walk ends at
    /// the first torn, damaged or out-of-sequence record. Returns the offset just past the last record
    /// visited (`start` when none was).
    /// (Plain reads, no Foundation `Data`: under the fuzzer's sanitizer build each
    /// `FileManager.contents` read stayed live, 2.8 GB after 335,000 recoveries.)
    ///
    /// `open` is a descriptor of `path` already open for reading (the spool keeps one for the segment
    /// it reads); without one the file is opened and closed here. The first read is 4 KiB, the next
    /// ones 64 KiB: an uploader asking for what follows its last read usually finds a record or two.
    static func scan(_ path: String, open given: Int32? = nil, from start: Int,
                     _ visit: (UInt64, ArraySlice<UInt8>, Int) -> Bool) throws(SpoolError) -> Int {
        let fd = given ?? open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError(.io, message: "cannot read \(path): \(SystemError.text(errno))", errno: errno) }
        defer { if given == nil { close(fd) } }
        var buffer: [UInt8] = []  // bytes read and not yet walked; buffer[0] is at file offset `end`
        var chunk = [UInt8](repeating: 0, count: 4096)
        var readAt = start  // the file offset of the next read
        var end = start
        var previous: UInt64?
        while true {
            var p = 0
            while p + Spool.header <= buffer.count {
                func u32(_ at: Int) -> UInt32 { Spool.littleEndian(buffer[...], at: at) }
                func u64(_ at: Int) -> UInt64 { Spool.littleEndian(buffer[...], at: at) }
                let length = Int(u32(p))
                guard length <= Spool.maxPayload else { return end }
                guard p + Spool.header + length <= buffer.count else { break }  // the rest of it is still to read
                let seq = u64(p + 8)
                guard seq >= 1, seq < Spool.maxSeq else { return end }
                let payload = buffer[(p + Spool.header)..<(p + Spool.header + length)]
                let crc = CRC32.checksum(payload, continuing: CRC32.checksum(buffer[(p + 8)..<(p + 16)]))
                guard crc == u32(p + 4), previous.map({ seq == $0 + 1 }) ?? true else { return end }
                previous = seq
                p += Spool.header + length
                end += Spool.header + length
                guard visit(seq, payload, end) else { return end }
            }
            buffer.removeFirst(p)
            let n: Int
            do {
                n = try systemCall("pread", path) { chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(readAt)) } }
            } catch {
                throw SpoolError(.io, message: "cannot read \(path): \(SystemError.text(error.errno))", errno: error.errno)
            }
            if n == 0 { return end }  // a torn record at the end stays unwalked
            readAt += n
            buffer += chunk[0..<n]
            if chunk.count < 65_536 { chunk = [UInt8](repeating: 0, count: 65_536) }
        }
    }

    /// The valid records of a segment from byte `start` on (a record boundary) with a seq above
    /// `floor`, at most `limit`; `end` is the byte offset just past the last record returned (past
    /// the last valid one when none is). Records at or below `floor` are checked, not copied.
    /// `begin` is the offset of the first record returned (`end` when none is).
    /// `full`: the read stopped at a record that would take the records past `budget` bytes (the first
    /// record of a batch, `first`, always comes).
    static func read(_ path: String, open fd: Int32? = nil, from start: Int, after floor: UInt64, limit: Int,
                     budget: Int = .max, first: Bool = true) throws(SpoolError)
        -> (records: [SpoolRecord], begin: Int, end: Int, full: Bool)
    {
        var records: [SpoolRecord] = []
        guard limit > 0 else { return (records, start, start, false) }
        var begin = start
        var end = start
        var used = 0
        var full = false
        _ = try scan(path, open: fd, from: start) { seq, payload, next in
            if seq > floor {
                used += payload.count + 1
                if used > budget && !(first && records.isEmpty) {
                    full = true
                    return false
                }
                if records.isEmpty { begin = next - Spool.header - payload.count }
                records.append(SpoolRecord(seq: seq, payload: Array(payload)))
            }
            if seq > floor || records.isEmpty { end = next }
            return records.count < limit
        }
        return (records, records.isEmpty ? end : begin, end, full)
    }
}
