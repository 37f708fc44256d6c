public import ControlCore
import BessSystem
import Glibc

/// What the 2030.5 client last read from the utility's server, kept so that an outage, a restart or
/// a power cut keeps executing the cached schedule and then the cached default (never "no limit").
public struct StoredSchedule: Sendable, Equatable {
    /// Every resource the discovery session read: its path → the body of its last good answer
    /// (`DiscoverySession.documents`).
    public var documents: [String: [UInt8]]
    /// The server's time minus the local wall clock when it was last read (seconds); nil when no
    /// Time resource was ever read.
    public var serverTimeOffset: Int64?
    /// When it was saved (local wall clock, Unix seconds).
    public var savedAtUnix: Int64

    /// A schedule to store.
    public init(documents: [String: [UInt8]], serverTimeOffset: Int64?, savedAtUnix: Int64) {
        self.documents = documents
        self.serverTimeOffset = serverTimeOffset
        self.savedAtUnix = savedAtUnix
    }
}

/// The durable copy of the documents the 2030.5 client read, in `state_directory/ieee2030_5-schedule.bin`.
///
/// Written whole (temporary file, fsync, rename, fsync of the directory: `AtomicFile`) whenever the
/// documents change, and read once at start. The file is bounded (`maximumBytes`, `maximumDocuments`,
/// `maximumPathBytes`, `maximumBodyBytes`) and ends with a checksum over everything before it, so a
/// torn, truncated or flipped file is refused as `SEP2_STORE_CORRUPT` (and moved aside to
/// `….damaged`), never half read.
///
/// Format (version 1, integers big-endian): `BESS2030` · version u32 · saved-at i64 · has-offset u8 ·
/// offset i64 · count u32 · per document (path length u16 · path · body length u32 · body), paths in
/// order · FNV-1a 64 of all the preceding bytes.
public final class ScheduleStore: Sendable {
    /// The file.
    public let path: String
    let directory: String

    /// The most the file may hold: a few hundred controls over several programs fit many times.
    public static let maximumBytes = 4 << 20
    /// The most documents it keeps.
    public static let maximumDocuments = 1024
    /// The longest path it keeps.
    public static let maximumPathBytes = 1024
    /// The largest body it keeps (the HTTPS client's own bound).
    public static let maximumBodyBytes = 262_144

    static let magic = Array("BESS2030".utf8)
    static let version: UInt32 = 1

    /// The store of `stateDirectory`.
    public init(stateDirectory: String) {
        directory = stateDirectory
        path = stateDirectory + "/ieee2030_5-schedule.bin"
    }

    /// The stored schedule; nil when none was ever saved.
    /// - Throws: `SEP2_STORE_CORRUPT` when the file is not a whole version-1 store (it is then moved
    ///   aside to `path.damaged`, so the next save starts afresh); `SEP2_STORE_UNREADABLE` when it
    ///   cannot be read.
    public func load() throws(ScheduleStoreError) -> StoredSchedule? {
        guard let bytes = try Self.read(path, maximumBytes: Self.maximumBytes) else { return nil }
        do throws(ScheduleStoreError) {
            return try Self.decode(bytes)
        } catch {
            throw Self.movedAside(path, error)
        }
    }

    /// The bytes of the file at `path` (a little past `maximumBytes` at most, for the decoder to refuse); nil when there is none.
    static func read(_ path: String, maximumBytes: Int) throws(ScheduleStoreError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ScheduleStoreError(.unreadable, message: "cannot open \(path): \(SystemError.text(errno))", systemError: errno)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let failure = errno
                close(fd)
                throw ScheduleStoreError(.unreadable, message: "cannot read \(path): \(SystemError.text(failure))", systemError: failure)
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > maximumBytes { break }
        }
        close(fd)
        return bytes
    }

    /// `error` (the file at `path` refused) after the file was moved aside to `path.damaged`.
    static func movedAside(_ path: String, _ error: ScheduleStoreError) -> ScheduleStoreError {
        _ = rename(path, path + ".damaged")
        return ScheduleStoreError(error.code, message: "\(path): \(error.message); moved aside to \(path).damaged")
    }

    /// Replaces the file with `schedule`: the old one or the new one is on disk at every instant.
    /// - Throws: `SEP2_STORE_TOO_LARGE` past the bounds (the old file is kept), `SEP2_STORE_UNWRITABLE`
    ///   when the state directory does not take it.
    public func save(_ schedule: StoredSchedule) throws(ScheduleStoreError) {
        try Self.write(try Self.encode(schedule), to: path, in: directory, what: "the 2030.5 schedule")
    }

    /// Replaces the file at `path` in `directory` (made when missing) with `bytes`, atomically.
    static func write(_ bytes: [UInt8], to path: String, in directory: String, what: String) throws(ScheduleStoreError) {
        if mkdir(directory, 0o750) != 0, errno != EEXIST {
            throw ScheduleStoreError(.unwritable, message: "cannot create \(directory): \(SystemError.text(errno))", systemError: errno)
        }
        do throws(SystemCallError) {
            try AtomicFile.write(bytes, to: path)
        } catch {
            throw ScheduleStoreError(.unwritable, message: "cannot save \(what): \(error)", systemError: error.errno)
        }
    }

    /// The file's bytes for `schedule`.
    static func encode(_ schedule: StoredSchedule) throws(ScheduleStoreError) -> [UInt8] {
        guard schedule.documents.count <= maximumDocuments else {
            throw ScheduleStoreError(.tooLarge, message: "\(schedule.documents.count) documents (at most \(maximumDocuments))")
        }
        var out = magic
        append(&out, UInt64(version), bytes: 4)
        append(&out, UInt64(bitPattern: schedule.savedAtUnix), bytes: 8)
        out.append(schedule.serverTimeOffset == nil ? 0 : 1)
        append(&out, UInt64(bitPattern: schedule.serverTimeOffset ?? 0), bytes: 8)
        append(&out, UInt64(schedule.documents.count), bytes: 4)
        for (path, body) in schedule.documents.sorted(by: { $0.key < $1.key }) {
            let name = Array(path.utf8)
            guard !name.isEmpty, name.count <= maximumPathBytes, body.count <= maximumBodyBytes else {
                throw ScheduleStoreError(.tooLarge, message: "a document of \(body.count) bytes at a path of \(name.count) bytes "
                                         + "(path 1…\(maximumPathBytes), body at most \(maximumBodyBytes))")
            }
            append(&out, UInt64(name.count), bytes: 2)
            out += name
            append(&out, UInt64(body.count), bytes: 4)
            out += body
            guard out.count + 8 <= maximumBytes else {
                throw ScheduleStoreError(.tooLarge, message: "more than \(maximumBytes) bytes of documents")
            }
        }
        append(&out, fnv1a(out[...]), bytes: 8)
        return out
    }

    /// The schedule in a file's bytes.
    static func decode(_ bytes: [UInt8]) throws(ScheduleStoreError) -> StoredSchedule {
        guard bytes.count <= maximumBytes else { throw corrupt("more than \(maximumBytes) bytes") }
        guard bytes.count >= magic.count + 4 + 8 + 1 + 8 + 4 + 8, Array(bytes.prefix(magic.count)) == magic else {
            throw corrupt("not a bessd 2030.5 schedule store")
        }
        let body = bytes[..<(bytes.count - 8)]
        var reader = Reader(bytes: bytes, at: bytes.count - 8)
        guard try reader.integer(8) == fnv1a(body) else { throw corrupt("its checksum does not match (torn or altered)") }
        reader = Reader(bytes: Array(body), at: magic.count)
        let version = try reader.integer(4)
        guard version == UInt64(Self.version) else { throw corrupt("version \(version), this bessd reads \(Self.version)") }
        let saved = Int64(bitPattern: try reader.integer(8))
        let hasOffset = try reader.integer(1)
        let offset = Int64(bitPattern: try reader.integer(8))
        guard hasOffset <= 1 else { throw corrupt("a flag of \(hasOffset)") }
        let count = try reader.integer(4)
        guard count <= UInt64(maximumDocuments) else { throw corrupt("\(count) documents (at most \(maximumDocuments))") }
        var documents: [String: [UInt8]] = [:]
        for _ in 0..<count {
            let pathLength = Int(try reader.integer(2))
            guard pathLength > 0, pathLength <= maximumPathBytes else { throw corrupt("a path of \(pathLength) bytes") }
            let name = try reader.take(pathLength)
            guard let path = String(validating: name, as: UTF8.self) else { throw corrupt("a path that is not UTF-8") }
            let bodyLength = Int(try reader.integer(4))
            guard bodyLength <= maximumBodyBytes else { throw corrupt("a body of \(bodyLength) bytes") }
            guard documents.updateValue(try reader.take(bodyLength), forKey: path) == nil else {
                throw corrupt("a path stored twice")
            }
        }
        guard reader.at == reader.bytes.count else { throw corrupt("\(reader.bytes.count - reader.at) bytes after the last document") }
        return StoredSchedule(documents: documents, serverTimeOffset: hasOffset == 1 ? offset : nil, savedAtUnix: saved)
    }

    static func corrupt(_ why: String) -> ScheduleStoreError { ScheduleStoreError(.corrupt, message: why) }

    static func append(_ out: inout [UInt8], _ value: UInt64, bytes: Int) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// FNV-1a, 64 bits: catches a torn write or a flipped bit (not an adversary: the state directory is bessd's own).
    static func fnv1a(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    /// A cursor over the file's bytes; running off the end is `SEP2_STORE_CORRUPT`.
    struct Reader {
        let bytes: [UInt8]
        var at: Int

        mutating func take(_ count: Int) throws(ScheduleStoreError) -> [UInt8] {
            guard count >= 0, bytes.count - at >= count else { throw ScheduleStore.corrupt("truncated at byte \(at)") }
            defer { at += count }
            return Array(bytes[at..<(at + count)])
        }

        mutating func integer(_ count: Int) throws(ScheduleStoreError) -> UInt64 {
            try take(count).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
    }
}

/// Why the schedule store was refused or not written: `SEP2_STORE_CORRUPT: …`.
public typealias ScheduleStoreError = CodedError<ScheduleStoreErrorCode>

/// The stable code of a `ScheduleStoreError`: a struct over a private enum, matched by value.
public struct ScheduleStoreErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable { case corrupt, unreadable, unwritable, tooLarge }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SEP2_STORE_CORRUPT`: the file is not a whole version-1 store (torn, truncated, altered).
    public static let corrupt = Self(.corrupt)
    /// `SEP2_STORE_UNREADABLE`: the file exists and cannot be read.
    public static let unreadable = Self(.unreadable)
    /// `SEP2_STORE_UNWRITABLE`: the state directory did not take the file.
    public static let unwritable = Self(.unwritable)
    /// `SEP2_STORE_TOO_LARGE`: more documents or bytes than the store keeps.
    public static let tooLarge = Self(.tooLarge)

    /// The stable name.
    public var description: String {
        switch value {
        case .corrupt: "SEP2_STORE_CORRUPT"
        case .unreadable: "SEP2_STORE_UNREADABLE"
        case .unwritable: "SEP2_STORE_UNWRITABLE"
        case .tooLarge: "SEP2_STORE_TOO_LARGE"
        }
    }
}
