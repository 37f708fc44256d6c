public import BessBase
import ControlCore
import BessSystem

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
/// `….damaged-UNIXTIME`, `StateFile`'s quarantine), never half read.
///
/// Format (version 1, integers big-endian, `StateFile`'s frame): `BESS2030` · version u32 · saved-at i64 · has-offset u8 ·
/// offset i64 · count u32 · per document (path length u16 · path · body length u32 · body), paths in
/// order · FNV-1a 64 of all the preceding bytes.
public final class ScheduleStore: Sendable {
    /// The file.
    public var path: String { file.path }
    /// The state directory.
    var directory: String { file.directory }
    let file: StateFile

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
        file = StateFile(stateDirectory: stateDirectory, name: "ieee2030_5-schedule.bin", maximumBytes: Self.maximumBytes)
    }

    /// The stored schedule; nil when none was ever saved.
    /// - Throws: `SEP2_STORE_CORRUPT` when the file is not a whole version-1 store (it is then moved
    ///   aside to `path.damaged-UNIXTIME`, so the next save starts afresh); `SEP2_STORE_UNREADABLE`
    ///   when it cannot be read.
    public func load() throws(ScheduleStoreError) -> StoredSchedule? {
        guard let bytes = try Self.read(file) else { return nil }
        do throws(ScheduleStoreError) {
            return try Self.decode(bytes)
        } catch {
            throw Self.movedAside(file, error)
        }
    }

    /// The bytes of `file` (one past its `maximumBytes` at most, for the decoder to refuse); nil when there is none.
    static func read(_ file: StateFile) throws(ScheduleStoreError) -> [UInt8]? {
        do throws(SystemCallError) {
            return try file.read()
        } catch {
            throw ScheduleStoreError(.unreadable, message: "cannot \(error.call) \(file.path): \(SystemError.text(error.errno))",
                                     systemError: error.errno)
        }
    }

    /// `error` (`file` refused) after the file was moved aside to `path.damaged-UNIXTIME`.
    static func movedAside(_ file: StateFile, _ error: ScheduleStoreError) -> ScheduleStoreError {
        do throws(SystemCallError) {
            let kept = try file.quarantine(.movedAside)
            return ScheduleStoreError(error.code, message: "\(file.path): \(error.message); moved aside to \(kept)")
        } catch let failure {
            return ScheduleStoreError(error.code, message: "\(file.path): \(error.message); not moved aside (\(failure))")
        }
    }

    /// Replaces the file with `schedule`: the old one or the new one is on disk at every instant.
    /// - Throws: `SEP2_STORE_TOO_LARGE` past the bounds (the old file is kept), `SEP2_STORE_UNWRITABLE`
    ///   when the state directory does not take it.
    public func save(_ schedule: StoredSchedule) throws(ScheduleStoreError) {
        try Self.write(try Self.encode(schedule), to: file, what: "the 2030.5 schedule")
    }

    /// Replaces `file` (its directory made when missing) with `bytes`, atomically.
    static func write(_ bytes: [UInt8], to file: StateFile, what: String) throws(ScheduleStoreError) {
        do throws(SystemCallError) {
            try file.write(bytes)
        } catch {
            throw ScheduleStoreError(.unwritable, message: StateFile.writeFailure(error, saving: what), systemError: error.errno)
        }
    }

    /// The file's bytes for `schedule`.
    static func encode(_ schedule: StoredSchedule) throws(ScheduleStoreError) -> [UInt8] {
        guard schedule.documents.count <= maximumDocuments else {
            throw ScheduleStoreError(.tooLarge, message: "\(schedule.documents.count) documents (at most \(maximumDocuments))")
        }
        var out = StateFile.header(magic: magic, version: version)
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
        StateFile.seal(&out)
        return out
    }

    /// The schedule in a file's bytes.
    static func decode(_ bytes: [UInt8]) throws(ScheduleStoreError) -> StoredSchedule {
        let body: [UInt8]
        switch StateFile.unseal(bytes, magic: magic, version: version, maximumBytes: maximumBytes, minimumPayload: 8 + 1 + 8 + 4) {
        case .success(let whole): body = whole
        case .failure(let problem): throw corrupt(problem.text("a bessd 2030.5 schedule store"))
        }
        var reader = Reader(bytes: body, at: magic.count + 4)
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

    /// Appends the low `bytes` bytes of `value`, big-endian (`StateFile.append`).
    static func append(_ out: inout [UInt8], _ value: UInt64, bytes: Int) { StateFile.append(&out, value, bytes: bytes) }

    /// FNV-1a, 64 bits (`StateFile.fnv1a`).
    static func fnv1a(_ bytes: ArraySlice<UInt8>) -> UInt64 { StateFile.fnv1a(bytes) }

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
