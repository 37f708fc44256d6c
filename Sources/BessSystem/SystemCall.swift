import Glibc

/// A system call that failed: which call, on what, and the errno it set. The one error the
/// system-call layer throws; callers turn it into their own coded error (`SPOOL_IO`, `LATCH_WRITE`…)
/// with `description` as the reason a person reads.
public struct SystemCallError: Error, Equatable, CustomStringConvertible {
    /// The C function, e.g. `fsync`.
    public var call: String
    /// What it acted on (a path), or empty.
    public var subject: String
    /// The errno it set (ENOSPC for a short write, which sets none).
    public var errno: Int32

    public init(call: String, subject: String = "", errno: Int32) {
        self.call = call
        self.subject = subject
        self.errno = errno
    }

    /// True when the disk is full or the quota is spent.
    public var isStorageFull: Bool { errno == ENOSPC || errno == EDQUOT }

    public var description: String {
        "\(call)\(subject.isEmpty ? "" : " \(subject)"): \(SystemError.text(errno))"
    }
}

/// Runs one system call: retried while it fails with EINTR, any other failure thrown as a
/// `SystemCallError` naming the call. An errno that can only mean a programming error here (EBADF
/// on a descriptor this process owns, EFAULT) stops the process, as swift-nio's `syscall` does:
/// carrying on would act on someone else's descriptor. `@inlinable`, so that a caller in another
/// module gets it specialized for its result type (a Modbus `recv` per request and unit), not the
/// generic call through `BinaryInteger`'s witnesses; the failure is judged in `systemCallFailed`.
@inlinable @inline(__always)
public func systemCall<Result: BinaryInteger>(_ call: String, _ subject: String = "",
                                              _ body: () -> Result) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        guard result < 0 else { return result }
        try systemCallFailed(call, subject)
    }
}

/// The failure of a call `systemCall` made, judged by the errno it set (read first): returns on
/// EINTR (the call is made again), stops the process on EBADF and EFAULT, throws otherwise.
@usableFromInline
func systemCallFailed(_ call: String, _ subject: String) throws(SystemCallError) {
    let code = Glibc.errno
    switch code {
    case EINTR: return
    case EBADF, EFAULT: preconditionFailure("\(call) \(subject): \(SystemError.text(code)) (a descriptor or buffer bessd does not own)")
    default: throw SystemCallError(call: call, subject: subject, errno: code)
    }
}

/// A file descriptor with one owner, closed exactly once: when it is consumed by `close()` or when
/// its owner lets it go.
public struct Descriptor: ~Copyable {
    /// The raw descriptor, for a call this layer does not wrap; valid while `self` lives.
    public let rawValue: Int32

    /// Takes ownership of `rawValue` (≥ 0).
    public init(owning rawValue: Int32) {
        precondition(rawValue >= 0, "a Descriptor owns an open descriptor")
        self.rawValue = rawValue
    }

    /// Opens `path`. The corresponding C function is `open`.
    public static func open(_ path: String, _ flags: Int32, mode: UInt32 = 0o640) throws(SystemCallError) -> Descriptor {
        let fd = try systemCall("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode_t(mode)) }
        return Descriptor(owning: fd)
    }

    /// Writes all of `bytes` (short writes continued). A write that makes no progress (a full disk
    /// sets no errno then) is ENOSPC. The corresponding C function is `write`.
    public func writeAll(_ bytes: UnsafeRawBufferPointer, _ subject: String = "") throws(SystemCallError) {
        var written = 0
        while written < bytes.count {
            let n = try systemCall("write", subject) { Glibc.write(rawValue, bytes.baseAddress! + written, bytes.count - written) }
            guard n > 0 else { throw SystemCallError(call: "write", subject: subject, errno: ENOSPC) }
            written += n
        }
    }

    /// Flushes the file's data and metadata to the disk. The corresponding C function is `fsync`.
    public func sync(_ subject: String = "") throws(SystemCallError) {
        _ = try systemCall("fsync", subject) { fsync(rawValue) }
    }

    /// Closes it now, reporting a failure (an NFS or full-disk error can surface only here).
    public consuming func close(_ subject: String = "") throws(SystemCallError) {
        let fd = rawValue
        discard self
        // close(2) is not retried on EINTR: on Linux the descriptor is released either way.
        guard Glibc.close(fd) == 0 else { throw SystemCallError(call: "close", subject: subject, errno: Glibc.errno) }
    }

    /// Hands the descriptor to another owner (a socket a TLS connection closes): no longer closed here.
    public consuming func release() -> Int32 {
        let fd = rawValue
        discard self
        return fd
    }

    deinit { _ = Glibc.close(rawValue) }
}

/// A file replaced whole or not at all, and durable once `write` returns: the new contents go to a
/// temporary beside it, which is flushed, renamed over the file, and the directory flushed, so after
/// a power cut the path holds either the old contents or the new ones, never a mix or nothing.
public enum AtomicFile {
    /// Replaces `path` with `bytes` (mode `mode` for a new file).
    /// - Throws: the first call that failed (open, write, fsync, close, rename or the directory's fsync);
    ///   the temporary is removed and the old file left as it was.
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o640) throws(SystemCallError) {
        let temporary = path + ".tmp"
        do throws(SystemCallError) {
            let file = try Descriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode: mode)
            let written = bytes.withUnsafeBytes { raw -> SystemCallError? in
                do throws(SystemCallError) { try file.writeAll(raw, temporary) } catch { return error }
                return nil
            }
            if let written { throw written }
            try file.sync(temporary)
            try file.close(temporary)
            _ = try systemCall("rename", "\(temporary) → \(path)") { rename(temporary, path) }
        } catch {
            unlink(temporary)
            throw error
        }
        try syncDirectory(of: path)
    }

    /// Flushes the directory holding `path`, so a rename or a new file in it survives a power cut.
    public static func syncDirectory(of path: String) throws(SystemCallError) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let handle = try Descriptor.open(directory, O_RDONLY | O_DIRECTORY)
        try handle.sync(directory)
    }
}
