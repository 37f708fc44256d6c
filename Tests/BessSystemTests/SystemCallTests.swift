import BessSystem
import Foundation
import Glibc
import Testing

@Suite("System calls, descriptors and atomic files")
struct SystemCallTests {
    static func directory() -> String {
        let path = NSTemporaryDirectory() + "bessd-syscall-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a failing call is thrown with its name, subject and errno; a success returns the result")
    func errors() throws {
        #expect(throws: SystemCallError(call: "open", subject: "/nonexistent/x", errno: ENOENT)) {
            try Descriptor.open("/nonexistent/x", O_RDONLY)
        }
        let error = SystemCallError(call: "fsync", subject: "/x", errno: ENOSPC)
        #expect(error.isStorageFull)
        #expect(error.description == "fsync /x: No space left on device")
        #expect(try systemCall("getpid") { getpid() } == getpid())
    }

    @Test("EINTR is retried, not thrown")
    func interrupted() throws {
        var calls = 0
        let result = try systemCall("probe") { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7 && calls == 3)
    }

    @Test("AtomicFile replaces contents whole; an unopenable temporary is named and the old file stays")
    func atomicFile() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.json"
        try AtomicFile.write(Array("first".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "first")
        try AtomicFile.write(Array("second, longer".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second, longer")
        // A temporary that cannot be opened (a directory is in its way): the first failing call is named.
        try FileManager.default.createDirectory(atPath: path + ".tmp", withIntermediateDirectories: false)
        #expect(throws: SystemCallError(call: "open", subject: path + ".tmp", errno: EISDIR)) {
            try AtomicFile.write(Array("third".utf8), to: path)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second, longer")
        try FileManager.default.removeItem(atPath: path + ".tmp")
    }

    @Test("AtomicFile on a full disk throws ENOSPC, keeps the old file and removes the temporary")
    func atomicFileFullDisk() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.json"
        try AtomicFile.write(Array("before".utf8), to: path)
        // The temporary's name leads to /dev/full: the open succeeds (O_CREAT and O_TRUNC follow the
        // link) and the first write fails with ENOSPC, as on a full filesystem.
        #expect(symlink("/dev/full", path + ".tmp") == 0)
        var thrown: SystemCallError?
        do throws(SystemCallError) { try AtomicFile.write(Array("after, longer".utf8), to: path) } catch { thrown = error }
        #expect(thrown == SystemCallError(call: "write", subject: path + ".tmp", errno: ENOSPC))
        #expect(thrown?.isStorageFull == true)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "before")
        // The writer's own cleanup removed its temporary (the link), not the device behind it.
        var status = stat()
        #expect(lstat(path + ".tmp", &status) == -1 && errno == ENOENT)
        #expect(stat("/dev/full", &status) == 0)
    }

    @Test("a full device: the write is thrown as storage full, naming write")
    func fullDevice() throws {
        let full = try Descriptor.open("/dev/full", O_WRONLY)
        let bytes: [UInt8] = [1, 2, 3]
        let caught = bytes.withUnsafeBytes { raw -> SystemCallError? in
            do throws(SystemCallError) { try full.writeAll(raw, "/dev/full") } catch { return error }
            return nil
        }
        #expect(caught?.call == "write" && caught?.isStorageFull == true)
        try full.close()
    }

    @Test("peer text is quoted: controls, escapes and markup characters never raw; cut at the limit")
    func peerText() {
        #expect(PeerText.quoted("cmd-1") == "\"cmd-1\"")
        #expect(PeerText.quoted("a\"b\\c") == "\"a\\\"b\\\\c\"")
        #expect(PeerText.quoted("x\ny\u{1B}[31m") == "\"x\\u{a}y\\u{1b}[31m\"")
        #expect(PeerText.quoted("é") == "\"\\u{e9}\"")
        #expect(PeerText.quoted(String(repeating: "a", count: 60), limit: 4) == "\"aaaa…\"")
    }
}
