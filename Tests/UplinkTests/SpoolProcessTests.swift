import Foundation
import Glibc
import Testing
import Uplink

/// The spool writer (bess-hil spool) as a separate process, so it can be killed or starved of disk.
enum SpoolWriterProcess {
    /// bess-hil, built beside the test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("bess-hil")
    }
}

@Suite("Spool under SIGKILL and a full disk", .serialized)
struct SpoolProcessTests {
    @Test("SIGKILL in the middle of writing loses nothing the writer reported")
    func kill() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let process = Process()
        process.executableURL = SpoolWriterProcess.executable
        process.arguments = ["spool", "--dir", dir, "--records", "10000000", "--size", "100"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var reported: UInt64 = 0
        var buffer = ""
        while reported < 20_000 {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            buffer += String(decoding: data, as: UTF8.self)
            for line in buffer.split(separator: "\n") where line.hasPrefix("SEQ ") { reported = max(reported, UInt64(line.dropFirst(4)) ?? 0) }
        }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let spool = try Spool(directory: dir)
        let count = spool.nextSeq - 1
        #expect(count >= reported)
        // Read back in pages: contiguous from 1, every payload intact.
        var after: UInt64 = 0
        while after < count {
            let page = try spool.records(after: after, limit: 50_000)
            if page.isEmpty { break }
            #expect(page.first?.seq == after + 1)
            #expect(page.last!.seq == after + UInt64(page.count))
            after = page.last!.seq
        }
        #expect(after == count)
    }

    @Test("a full disk is a coded error and leaves no half record")
    func diskFull() throws {
        let dir = temporarySpoolDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let process = Process()
        process.executableURL = SpoolWriterProcess.executable
        process.arguments = ["spool", "--dir", dir, "--records", "100000", "--size", "100", "--file-size-limit", "50000"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 4)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("ERROR ") })
        #expect(line.hasPrefix("ERROR SPOOL_FULL after seq "))
        let last = UInt64(line.split(separator: " ").last ?? "") ?? 0
        let spool = try Spool(directory: dir)
        #expect(spool.recovery.tornBytes == 0)
        #expect(spool.nextSeq == last + 1)
    }
}
