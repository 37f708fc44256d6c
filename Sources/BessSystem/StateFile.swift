import Glibc

/// One of bessd's small durable files in its state directory (latches, holds, the MQTT command
/// ledger, the 2030.5 schedule and records): what every such store shares, so each keeps only its
/// own payload format.
/// - a bounded read through `systemCall` (at most `maximumBytes` + 1 bytes: one past says too large);
/// - the write: the state directory made when missing (`mkdir`, 0750), then `AtomicFile`;
/// - one quarantine rule: a damaged file is kept as `<name>.damaged-<unix seconds>`, the call's
///   result checked (`quarantine`);
/// - for binary payloads, one frame: magic · version (u32) · payload · FNV-1a 64 of all the preceding
///   bytes, integers big-endian (`header`, `seal`, `unseal`), so a torn, truncated or altered file is
///   refused whole, never half read.
public struct StateFile: Sendable {
    /// The file.
    public let path: String
    /// The directory holding it, made at the first write when missing.
    public let directory: String
    /// The most bytes the file may hold.
    public let maximumBytes: Int

    /// The file `name` of `stateDirectory`.
    public init(stateDirectory: String, name: String, maximumBytes: Int) {
        path = stateDirectory + "/" + name
        directory = stateDirectory
        self.maximumBytes = maximumBytes
    }

    /// The file at `path` (its directory is the part before the last `/`).
    public init(path: String, maximumBytes: Int) {
        self.path = path
        directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        self.maximumBytes = maximumBytes
    }

    // MARK: reading, writing, quarantine

    /// The file's bytes, at most `maximumBytes + 1` (more than `maximumBytes` means too large); nil
    /// when there is no file (ENOENT, or ENOTDIR: a part of the path is no directory).
    /// - Throws: the `open` or `read` that failed otherwise.
    public func read() throws(SystemCallError) -> [UInt8]? {
        let file: Descriptor
        do throws(SystemCallError) {
            file = try Descriptor.open(path, O_RDONLY)
        } catch {
            if error.errno == ENOENT || error.errno == ENOTDIR { return nil }
            throw error
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= maximumBytes {
            let wanted = min(chunk.count, maximumBytes + 1 - bytes.count)
            let fd = file.rawValue
            let count = try chunk.withUnsafeMutableBytes { buffer -> Result<Int, SystemCallError> in
                do throws(SystemCallError) {
                    return .success(try systemCall("read", path) { Glibc.read(fd, buffer.baseAddress, wanted) })
                } catch { return .failure(error) }
            }.get()
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }

    /// Replaces the file with `bytes`, the state directory made first when missing (mode 0750):
    /// either the old file or the new one is on disk at every instant (`AtomicFile`).
    /// - Throws: the `mkdir` that failed (subject: the directory), or the first call of the write.
    public func write(_ bytes: [UInt8], mode: UInt32 = 0o640) throws(SystemCallError) {
        if mkdir(directory, 0o750) != 0, errno != EEXIST {
            throw SystemCallError(call: "mkdir", subject: directory, errno: errno)
        }
        try AtomicFile.write(bytes, to: path, mode: mode)
    }

    /// A failed `write` as the stores say it: `cannot create DIRECTORY: …` when the state directory
    /// could not be made, else `cannot save WHAT: …`.
    public static func writeFailure(_ error: SystemCallError, saving what: String) -> String {
        error.call == "mkdir" ? "cannot create \(error.subject): \(SystemError.text(error.errno))" : "cannot save \(what): \(error)"
    }

    /// What becomes of the damaged file's own name when it is quarantined.
    public enum Original: Sendable {
        /// Moved aside (`rename`): the store starts afresh, and so does the next start.
        case movedAside
        /// Left where it is, with a second name (`link`): a store that fails safe on a damaged file
        /// (every unit latched, or in standby, every command refused) finds it again at the next
        /// start, until a good file is written over it.
        case keptInPlace
    }

    /// Keeps the damaged file as `<path>.damaged-<unixSeconds>` (the one quarantine rule), moving it
    /// aside or leaving it in place too; returns that name. A name already taken that second by the
    /// same file left in place counts as kept.
    /// - Throws: the `rename` or `link` that failed.
    @discardableResult
    public func quarantine(_ original: Original, unixSeconds: Int64 = Int64(SystemClock.wallClockSeconds())) throws(SystemCallError) -> String {
        let kept = path + ".damaged-\(unixSeconds)"
        switch original {
        case .movedAside:
            _ = try systemCall("rename", "\(path) → \(kept)") { rename(path, kept) }
        case .keptInPlace:
            do throws(SystemCallError) {
                _ = try systemCall("link", "\(path) → \(kept)") { link(path, kept) }
            } catch where error.errno == EEXIST {
                // Kept already this second (a restart within it read the same file).
            }
        }
        return kept
    }

    /// `quarantine(.keptInPlace)` for a store that fails safe and words only a failure: empty when
    /// the file was kept, else `; not kept aside (…)` to append to the store's own message.
    public func keepDamagedInPlace() -> String {
        do throws(SystemCallError) {
            try quarantine(.keptInPlace)
            return ""
        } catch {
            return "; not kept aside (\(error))"
        }
    }

    // MARK: the frame of a binary file

    /// The start of a framed file: `magic` and `version` (u32, big-endian); the payload follows.
    public static func header(magic: [UInt8], version: UInt32) -> [UInt8] {
        var out = magic
        append(&out, UInt64(version), bytes: 4)
        return out
    }

    /// Ends a framed file: appends the FNV-1a 64 of everything in `out` (big-endian).
    public static func seal(_ out: inout [UInt8]) {
        append(&out, fnv1a(out[...]), bytes: 8)
    }

    /// Why a framed file was refused.
    public enum FrameProblem: Error, Equatable, Sendable {
        /// More than `maximumBytes`.
        case tooLarge(maximum: Int)
        /// Shorter than the frame (and `minimumPayload`) or with another magic.
        case notThisFile
        /// The checksum does not match: torn or altered.
        case checksum
        /// Whole, but of another version.
        case version(found: UInt64, expected: UInt32)

        /// The problem in words, `what` naming the file ("a bessd 2030.5 schedule store").
        public func text(_ what: String) -> String {
            switch self {
            case .tooLarge(let maximum): "more than \(maximum) bytes"
            case .notThisFile: "not \(what)"
            case .checksum: "its checksum does not match (torn or altered)"
            case .version(let found, let expected): "version \(found), this bessd reads \(expected)"
            }
        }
    }

    /// A file's bytes without their checksum, when they are one whole frame of `magic` and `version`
    /// within `maximumBytes` and with at least `minimumPayload` bytes: the payload starts at
    /// `magic.count + 4`.
    public static func unseal(_ bytes: [UInt8], magic: [UInt8], version: UInt32, maximumBytes: Int,
                              minimumPayload: Int = 0) -> Result<[UInt8], FrameProblem> {
        guard bytes.count <= maximumBytes else { return .failure(.tooLarge(maximum: maximumBytes)) }
        guard bytes.count >= magic.count + 4 + minimumPayload + 8, bytes.starts(with: magic) else { return .failure(.notThisFile) }
        let body = bytes[..<(bytes.count - 8)]
        let checksum = bytes[(bytes.count - 8)...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard checksum == fnv1a(body) else { return .failure(.checksum) }
        let found = body[magic.count..<(magic.count + 4)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard found == UInt64(version) else { return .failure(.version(found: found, expected: version)) }
        return .success(Array(body))
    }

    /// Appends the low `bytes` bytes of `value`, big-endian.
    public static func append(_ out: inout [UInt8], _ value: UInt64, bytes: Int) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// FNV-1a, 64 bits: catches a torn write or a flipped bit (not an adversary: the state directory
    /// is bessd's own).
    public static func fnv1a(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }
}
