import BessBase
import ControlCore
import Foundation
import Glibc
import Service
import Testing

@Suite("Latch store error code: typed, with the stable name operators read")
struct LatchStoreErrorTests {
    static let rows: [(LatchStoreError.Code, String, LatchStoreError.Kind)] = [
        (.stateUnwritable, "LATCH_STATE_UNWRITABLE", .io),
    ]

    @Test("each code prints its stable name and has its kind", arguments: rows)
    func names(code: LatchStoreError.Code, name: String, kind: LatchStoreError.Kind) {
        #expect(code.description == name)
        #expect(code.kind == kind)
        #expect(LatchStoreError(code, message: "m").description == "\(name): m")
    }

    @Test("a state directory that cannot be made refuses the save with LATCH_STATE_UNWRITABLE")
    func unwritable() throws {
        // A regular file where the state directory's parent should be: mkdir fails (ENOTDIR).
        let file = NSTemporaryDirectory() + "bessd-latch-file-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        defer { unlink(file) }
        let store = LatchStore(stateDirectory: file + "/state")
        do {
            try store.save(["U1": [.thermalRunaway: 1_763_800_000]])
            Issue.record("the latch state was saved under a regular file")
        } catch {
            #expect(error.code == .stateUnwritable)
            #expect(error.description.hasPrefix("LATCH_STATE_UNWRITABLE: cannot create \(file)/state"))
        }
    }
}
