import BessBase
import ControlCore
import Foundation
import Glibc
@testable import Sep2Link
import Testing

/// The 2030.5 client's durable copy of what the server said: written whole, read back the same, a
/// damaged file refused with a code and moved aside, never half read.
@Suite("2030.5 schedule store")
struct ScheduleStoreTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "sep2-store-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let sample = StoredSchedule(
        documents: ["/dcap": Array("<DeviceCapability/>".utf8), "/derp/1/derc?s=0&l=10": Array("<DERControlList all=\"0\"/>".utf8),
                    "/empty": []],
        serverTimeOffset: -42, savedAtUnix: 1_795_000_000)

    @Test("a saved schedule reads back the same; no file reads as none; the offset may be absent")
    func roundTrip() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ScheduleStore(stateDirectory: dir + "/state")
        #expect(try store.load() == nil)
        try store.save(Self.sample)
        #expect(try store.load() == Self.sample)
        var none = Self.sample
        none.serverTimeOffset = nil
        try store.save(none)
        #expect(try store.load() == none)
        #expect(!FileManager.default.fileExists(atPath: store.path + ".tmp"))
    }

    @Test("flipped byte, truncation, another file or trailing bytes: SEP2_STORE_CORRUPT, moved aside")
    func corruptRefused() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ScheduleStore(stateDirectory: dir)
        let good = try ScheduleStore.encode(Self.sample)
        var flipped = good
        flipped[40] ^= 0x01
        let damaged: [[UInt8]] = [flipped, Array(good.prefix(good.count - 3)), Array("{\"format\":\"bessd-latches\"}".utf8), good + [0],
                                  []]
        for bytes in damaged {
            try Data(bytes).write(to: URL(fileURLWithPath: store.path))
            #expect(throws: ScheduleStoreError.self) { try store.load() }
            #expect(try store.load() == nil, "the damaged file was not moved aside")
            #expect(damagedCopies(of: store.path).count == 1)
            for kept in damagedCopies(of: store.path) { try? FileManager.default.removeItem(atPath: kept) }
        }
        try Data(flipped).write(to: URL(fileURLWithPath: store.path))
        do {
            _ = try store.load()
            Issue.record("a flipped byte was read")
        } catch {
            #expect(error.code == .corrupt && "\(error)".hasPrefix("SEP2_STORE_CORRUPT: "), "\(error)")
            #expect(error.message.contains("checksum"), "\(error)")
        }
        // After a refusal the store starts afresh.
        try store.save(Self.sample)
        #expect(try store.load() == Self.sample)
    }

    @Test("past its bounds a schedule is SEP2_STORE_TOO_LARGE and the file on disk is kept")
    func bounded() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ScheduleStore(stateDirectory: dir)
        try store.save(Self.sample)
        var many: [String: [UInt8]] = [:]
        for i in 0...ScheduleStore.maximumDocuments { many["/d/\(i)"] = [1] }
        var big: [String: [UInt8]] = [:]
        for i in 0..<20 { big["/b/\(i)"] = [UInt8](repeating: 0x41, count: ScheduleStore.maximumBodyBytes) }
        let cases = [many, ["/x": [UInt8](repeating: 0, count: ScheduleStore.maximumBodyBytes + 1)], big,
                     [String(repeating: "p", count: ScheduleStore.maximumPathBytes + 1): []]]
        for documents in cases {
            do {
                try store.save(StoredSchedule(documents: documents, serverTimeOffset: nil, savedAtUnix: 0))
                Issue.record("\(documents.count) documents saved past the bounds")
            } catch {
                #expect(error.code == .tooLarge, "\(error)")
            }
        }
        #expect(try store.load() == Self.sample)
    }
}

/// The copies of the file at `path` moved aside as damaged (`NAME.damaged-UNIXTIME`, `StateFile`'s quarantine).
private func damagedCopies(of path: String) -> [String] {
    let directory = (path as NSString).deletingLastPathComponent, name = (path as NSString).lastPathComponent
    return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(name + ".damaged-") }
        .map { directory + "/" + $0 }
}
