import ControlCore
import Foundation
import Glibc
import Service
import Testing

/// The latch file's format (version 1) across versions of bessd: a file an earlier bessd wrote still
/// loads, a save writes the same bytes, and a damaged file gives what it always gave.
@Suite("Latch store: the file format, old files and damaged ones")
struct LatchStoreFileTests {
    /// The bytes `LatchStore.save` wrote through `JSONSerialization` (sorted keys) before the file
    /// became a `Codable` struct, for these latches.
    static let written = #"{"format":"bessd-latches","units":{"BESS_DC01_01":{"BMS_CRITICAL":1795316329.2,"THERMAL_RUNAWAY":1763800000.5},"U2":{},"U3":{"CELL_OVERVOLTAGE":1763800123}},"version":1}"#
    static let latches: [String: LatchStore.UnitLatches] = [
        "BESS_DC01_01": [.bmsCritical: 1_795_316_329.2, .thermalRunaway: 1_763_800_000.5],
        "U2": [:],
        "U3": [.cellOvervoltage: 1_763_800_123],
    ]

    /// A fresh state directory holding `text` as its latch file (none when nil).
    static func store(holding text: String?) throws -> LatchStore {
        let directory = NSTemporaryDirectory() + "bessd-latches-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = LatchStore(stateDirectory: directory)
        if let text { try Data(text.utf8).write(to: URL(fileURLWithPath: store.path)) }
        return store
    }

    /// The copies of a damaged file kept beside it.
    static func keptCopies(_ store: LatchStore) -> [String] {
        let directory = (store.path as NSString).deletingLastPathComponent
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("latches.json.damaged-") }
    }

    @Test("a file an earlier bessd wrote loads with every unit and time")
    func oldFileLoads() throws {
        let store = try Self.store(holding: Self.written)
        #expect(store.load() == .latches(Self.latches, damaged: []))
        #expect(Self.keptCopies(store).isEmpty)
    }

    @Test("a save writes the bytes an earlier bessd wrote, and loads back")
    func saveWritesTheSameBytes() throws {
        let store = try Self.store(holding: nil)
        #expect(store.load() == .firstStart)
        try store.save(Self.latches)
        let bytes = try #require(FileManager.default.contents(atPath: store.path))
        #expect(String(decoding: bytes, as: UTF8.self) == Self.written)
        #expect(store.load() == .latches(Self.latches, damaged: []))
    }

    /// Files that are no latch file at all: every unit starts latched (`LATCH_STATE_CORRUPT`).
    static let unreadable: [String] = [
        #"{"format": "bessd-latches", "version": 1, "units": {"D1": {"THERMAL_RUN"#,
        "",
        "[]",
        #"{"format":"bessd-other","units":{},"version":1}"#,
        #"{"format":"bessd-latches","units":{},"version":2}"#,
        #"{"format":"bessd-latches","units":{},"version":"1"}"#,
        #"{"format":"bessd-latches","units":[],"version":1}"#,
        #"{"format":"bessd-latches","version":1}"#,
    ]

    @Test("a file that is no latch file is corrupt as a whole, and kept", arguments: unreadable)
    func wholeFileCorrupt(text: String) throws {
        let store = try Self.store(holding: text)
        #expect(store.load() == .corrupt(reason: "\(store.path) is not a bessd latch file (version 1)"))
        #expect(Self.keptCopies(store).count == 1)
    }

    /// Files whose damage is one unit's: that unit is damaged (it starts latched), the others load
    /// (the latches expected by code name).
    static let unitDamage: [(text: String, latches: [String: [String: Double]], damaged: [String])] = [
        (#"{"format":"bessd-latches","units":{"U1":[1],"U2":{"BMS_CRITICAL":5}},"version":1}"#,
         ["U2": ["BMS_CRITICAL": 5]], ["U1"]),
        (#"{"format":"bessd-latches","units":{"U1":{"NO_SUCH_CODE":1,"BMS_CRITICAL":2}},"version":1}"#,
         ["U1": ["BMS_CRITICAL": 2]], ["U1"]),
        (#"{"format":"bessd-latches","units":{"U1":{"BMS_CRITICAL":"soon"},"U2":{}},"version":1}"#,
         ["U1": [:], "U2": [:]], ["U1"]),
        (#"{"format":"bessd-latches","units":{"U2":{"BMS_CRITICAL":null},"U1":"x"},"version":1,"extra":true}"#,
         ["U2": [:]], ["U1", "U2"]),
    ]

    @Test("a damaged unit entry damages that unit only, and the file is kept", arguments: unitDamage)
    func unitCorrupt(text: String, latches: [String: [String: Double]], damaged: [String]) throws {
        let store = try Self.store(holding: text)
        let expected = latches.mapValues { codes in
            Dictionary(uniqueKeysWithValues: codes.compactMap { name, since in TripCode(name: name).map { ($0, since) } })
        }
        #expect(store.load() == .latches(expected, damaged: damaged))
        #expect(Self.keptCopies(store).count == 1)
    }
}
