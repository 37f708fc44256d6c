import BessSystem
import Foundation
import Glibc
import Testing

@Suite("State files: bounded read, one quarantine rule, the frame")
struct StateFileTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "bessd-statefile-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func names(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Also nil under a path part that is no directory.
    @Test("a missing file reads as nil; a file reads whole, or at most one byte past the bound")
    func boundedRead() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = StateFile(stateDirectory: dir, name: "x.bin", maximumBytes: 100_000)
        #expect(try file.read() == nil)
        #expect(try StateFile(path: file.path + "/under", maximumBytes: 10).read() == nil)
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: file.path))
        #expect(try file.read() == bytes)
        try Data(bytes + [1, 2, 3]).write(to: URL(fileURLWithPath: file.path))
        #expect(try file.read() == bytes + [1], "one byte past the bound says too large")
        do {
            _ = try StateFile(path: dir, maximumBytes: 10).read()
            Issue.record("a directory was read as a file")
        } catch {
            #expect(error.call == "read" && error.errno == EISDIR, "\(error)")
        }
    }

    @Test("the write makes the state directory (0750), replaces the file whole, reports a failed mkdir")
    func write() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = StateFile(stateDirectory: dir + "/state", name: "x.json", maximumBytes: 64)
        try file.write(Array("one".utf8))
        try file.write(Array("two".utf8))
        #expect(try file.read() == Array("two".utf8))
        #expect(Self.names(in: dir + "/state") == ["x.json"])
        var status = stat()
        #expect(stat(dir + "/state", &status) == 0 && status.st_mode & 0o777 == 0o750)
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/plain"))
        do {
            try StateFile(stateDirectory: dir + "/plain/state", name: "x.json", maximumBytes: 64).write([1])
            Issue.record("written under a regular file")
        } catch {
            #expect(error.call == "mkdir")
            #expect(StateFile.writeFailure(error, saving: "x").hasPrefix("cannot create \(dir)/plain/state: "))
        }
    }

    /// Moved aside or kept in place; a failure is thrown.
    @Test("quarantine renames to NAME.damaged-UNIXTIME or keeps in place; a same-second clash is no failure")
    func quarantine() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = StateFile(stateDirectory: dir, name: "s.json", maximumBytes: 64)
        try file.write(Array("damaged".utf8))
        #expect(try file.quarantine(.keptInPlace, unixSeconds: 1_795_000_000) == file.path + ".damaged-1795000000")
        #expect(try file.quarantine(.keptInPlace, unixSeconds: 1_795_000_000) == file.path + ".damaged-1795000000")
        #expect(Self.names(in: dir) == ["s.json", "s.json.damaged-1795000000"])
        #expect(file.keepDamagedInPlace() == "")
        #expect(try file.quarantine(.movedAside, unixSeconds: 1_795_000_001) == file.path + ".damaged-1795000001")
        #expect(try file.read() == nil)
        #expect(FileManager.default.contents(atPath: file.path + ".damaged-1795000001") == Data("damaged".utf8))
        #expect(throws: SystemCallError.self) { try file.quarantine(.movedAside, unixSeconds: 2) }
        #expect(throws: SystemCallError.self) { try file.quarantine(.keptInPlace, unixSeconds: 2) }
        #expect(file.keepDamagedInPlace().hasPrefix("; not kept aside (link "))
    }

    @Test("a framed file reads back its payload; wrong magic, flipped bit, cut, version or size refused whole")
    func frame() {
        let magic = Array("BESSTEST".utf8)
        var out = StateFile.header(magic: magic, version: 3)
        out += [9, 8, 7]
        StateFile.seal(&out)
        #expect(out.count == 8 + 4 + 3 + 8)
        #expect(Array(out[8..<12]) == [0, 0, 0, 3])
        #expect(StateFile.unseal(out, magic: magic, version: 3, maximumBytes: 64) == .success(Array(out.prefix(15))))
        var flipped = out
        flipped[13] ^= 0x10
        #expect(StateFile.unseal(flipped, magic: magic, version: 3, maximumBytes: 64) == .failure(.checksum))
        #expect(StateFile.unseal(Array(out.dropLast()), magic: magic, version: 3, maximumBytes: 64) == .failure(.checksum))
        #expect(StateFile.unseal(out, magic: Array("BESSOTHR".utf8), version: 3, maximumBytes: 64) == .failure(.notThisFile))
        #expect(StateFile.unseal(out, magic: magic, version: 3, maximumBytes: 64, minimumPayload: 4) == .failure(.notThisFile))
        #expect(StateFile.unseal(out, magic: magic, version: 2, maximumBytes: 64) == .failure(.version(found: 3, expected: 2)))
        #expect(StateFile.unseal(out, magic: magic, version: 3, maximumBytes: 22) == .failure(.tooLarge(maximum: 22)))
        #expect(StateFile.FrameProblem.version(found: 3, expected: 2).text("x") == "version 3, this bessd reads 2")
        #expect(StateFile.FrameProblem.notThisFile.text("a test file") == "not a test file")
        // FNV-1a 64 of nothing and of "a" (the published test vectors).
        #expect(StateFile.fnv1a([][...]) == 0xCBF2_9CE4_8422_2325)
        #expect(StateFile.fnv1a(Array("a".utf8)[...]) == 0xAF63_DC4C_8601_EC8C)
    }
}
