import BessBase
import BessSystem
import ControlCore

/// One of the 2030.5 client's small durable files beside the schedule store in `state_directory`
/// (`ieee2030_5-responses.bin`, `ieee2030_5-controls.bin`), written and refused as that store is:
/// whole (temporary file, fsync, rename: `AtomicFile`), bounded (`maximumBytes`, past it
/// `SEP2_STORE_TOO_LARGE` and the old file kept), versioned, and ending with a checksum over
/// everything before it, so that a torn, truncated, altered or oversized file is `SEP2_STORE_CORRUPT`
/// (moved aside to `….damaged-UNIXTIME`, `StateFile`'s quarantine), never half read.
///
/// Format (integers big-endian, `StateFile`'s frame): magic (8 bytes) · version u32 · the payload · FNV-1a 64 of all the
/// preceding bytes. Each payload is read with `ScheduleStore.Reader` and must be read to its end.
struct Sep2StateFile: Sendable {
    /// The file, its bound and its directory.
    let file: StateFile
    let magic: [UInt8]
    let version: UInt32
    /// What it holds, for messages: "the 2030.5 response outbox".
    let what: String

    /// The file.
    var path: String { file.path }
    /// The most bytes the file may hold.
    var maximumBytes: Int { file.maximumBytes }

    /// The file `name` of `stateDirectory`.
    init(stateDirectory: String, name: String, magic: String, version: UInt32, maximumBytes: Int, what: String) {
        file = StateFile(stateDirectory: stateDirectory, name: name, maximumBytes: maximumBytes)
        self.magic = Array(magic.utf8)
        self.version = version
        self.what = what
    }

    /// The file's payload as `decode` reads it; nil when there is no file.
    /// - Throws: `SEP2_STORE_CORRUPT` when the file is not whole, of this version and read to its end by
    ///   `decode` (it is then moved aside to `path.damaged-UNIXTIME`); `SEP2_STORE_UNREADABLE` when it
    ///   cannot be read.
    func load<T>(_ decode: (inout ScheduleStore.Reader) throws(ScheduleStoreError) -> T) throws(ScheduleStoreError) -> T? {
        guard let bytes = try ScheduleStore.read(file) else { return nil }
        do throws(ScheduleStoreError) {
            let body: [UInt8]
            switch StateFile.unseal(bytes, magic: magic, version: version, maximumBytes: maximumBytes) {
            case .success(let whole): body = whole
            case .failure(let problem): throw ScheduleStore.corrupt(problem.text(what))
            }
            var reader = ScheduleStore.Reader(bytes: body, at: magic.count + 4)
            let value = try decode(&reader)
            guard reader.at == reader.bytes.count else { throw ScheduleStore.corrupt("\(reader.bytes.count - reader.at) bytes after the last entry") }
            return value
        } catch {
            throw ScheduleStore.movedAside(file, error)
        }
    }

    /// Replaces the file with `payload`: the old one or the new one is on disk at every instant.
    /// - Throws: `SEP2_STORE_TOO_LARGE` past `maximumBytes` (the old file is kept), `SEP2_STORE_UNWRITABLE`
    ///   when the state directory does not take it.
    func save(_ payload: [UInt8]) throws(ScheduleStoreError) {
        var out = StateFile.header(magic: magic, version: version)
        out += payload
        guard out.count + 8 <= maximumBytes else {
            throw ScheduleStoreError(.tooLarge, message: "\(what): \(out.count + 8) bytes (at most \(maximumBytes))")
        }
        StateFile.seal(&out)
        try ScheduleStore.write(out, to: file, what: what)
    }
}

/// Writing and reading the payloads' fields.
extension ScheduleStore {
    /// `text` as a length (u16) and its UTF-8 bytes.
    static func append(_ out: inout [UInt8], text: String) {
        let bytes = Array(text.utf8)
        append(&out, UInt64(bytes.count), bytes: 2)
        out += bytes
    }

    /// An optional value as a flag (u8) and the value's bits (u64, 0 when absent).
    static func append(_ out: inout [UInt8], optional value: UInt64?) {
        out.append(value == nil ? 0 : 1)
        append(&out, value ?? 0, bytes: 8)
    }
}

extension ScheduleStore.Reader {
    /// A text written by `append(_:text:)`: 1…`maximum` UTF-8 bytes (0 allowed when `empty`).
    mutating func text(maximum: Int, empty: Bool = false) throws(ScheduleStoreError) -> String {
        let count = Int(try integer(2))
        guard count <= maximum, empty || count > 0 else { throw ScheduleStore.corrupt("a text of \(count) bytes (at most \(maximum))") }
        guard let text = String(validating: try take(count), as: UTF8.self) else { throw ScheduleStore.corrupt("a text that is not UTF-8") }
        return text
    }

    /// An optional value written by `append(_:optional:)`.
    mutating func optional() throws(ScheduleStoreError) -> UInt64? {
        let flag = try integer(1)
        let value = try integer(8)
        guard flag <= 1 else { throw ScheduleStore.corrupt("a flag of \(flag)") }
        return flag == 1 ? value : nil
    }
}
