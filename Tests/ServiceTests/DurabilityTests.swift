import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Sep2Link
@testable import Service
@testable import Uplink
import TestSupport
import Testing

/// Where `DurabilityTests` has this test bundle write the durable files, under strace; unset in an
/// ordinary run, which skips `DurableWritersUnderTrace`.
let durabilityRoot = ProcessInfo.processInfo.environment["BESSD_DURABILITY_DIR"]

/// A durable file replaced whole (temporary, fsync, rename, fsync of the directory), written by the
/// writer bessd uses for it, each in a directory of its own under the trace's root.
enum DurableFile: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case atomicFile = "atomic-file"
    case latches
    case holds
    case commandLedger = "command-ledger"
    case schedule
    case sep2Controls = "sep2-controls"
    case sep2Responses = "sep2-responses"
    /// The spool's state file as it is written whole at every open (its saves in place: `spoolFaults`).
    case spoolState = "spool"

    var testDescription: String { rawValue }

    /// The file's name in its directory.
    var name: String {
        switch self {
        case .atomicFile: "state.json"
        case .latches: "latches.json"
        case .holds: "holds.json"
        case .commandLedger: "mqtt-commands.json"
        case .schedule: "ieee2030_5-schedule.bin"
        case .sep2Controls: "ieee2030_5-controls.bin"
        case .sep2Responses: "ieee2030_5-responses.bin"
        case .spoolState: "state"
        }
    }

    /// Saves traced per file: a new file, then one replaced (the spool's whole write is once per open).
    var saves: Int { self == .spoolState ? 1 : 2 }

    /// The marker the writer opens (a path that does not exist) right after its save `number` returned.
    static func marker(_ directory: String, _ number: Int) -> String { "\(directory)/.saved-\(number)" }

    /// Makes save `number` (1…`saves`) through the writer bessd uses for the file, in `directory`.
    func save(_ number: Int, in directory: String) throws {
        switch self {
        case .atomicFile:
            try AtomicFile.write(Array("save \(number)".utf8), to: directory + "/" + name)
        case .latches:
            try LatchStore(stateDirectory: directory).save(number == 1 ? ["U1": [.thermalRunaway: 1_763_800_000]] : [:])
        case .holds:
            try HoldStore(stateDirectory: directory).save(StandingHolds(operatorSite: number == 1, operatorUnits: number == 1 ? [] : ["U1"]))
        case .commandLedger:
            var ledger = CommandLedger(file: directory + "/" + name)
            let now = Date().timeIntervalSince1970
            if number == 1 {
                try ledger.begin("cmd-1", until: now + 60, now: now)
            } else {
                try ledger.finish(CommandAck(id: "cmd-1", accepted: true), until: now + 60, now: now)
            }
        case .schedule:
            let documents = ["/dcap": Array("<DeviceCapability/>".utf8)]
            try Sep2Link.ScheduleStore(stateDirectory: directory).save(StoredSchedule(documents: documents, serverTimeOffset: nil, savedAtUnix: Int64(number)))
        case .sep2Controls:
            try StoredInForce.file(stateDirectory: directory).save(try StoredInForce.encode([:]))
        case .sep2Responses:
            try StoredResponses.file(stateDirectory: directory).save(try StoredResponses(answered: number).encoded())
        case .spoolState:
            // Opening the spool writes its state whole; `DurableWritersUnderTrace.spool` goes on from there.
            break
        }
    }
}

/// The spool's steps under trace, each ended by a marker: opened (the state written whole), three
/// records appended over two segments, synced, acknowledged twice (the state saved in place, once
/// per slot).
enum SpoolSteps {
    static let opened = 1, appended = 2, synced = 3, firstAcknowledgement = 4, secondAcknowledgement = 5
    static func marker(_ directory: String, _ step: Int) -> String { "\(directory)/.step-\(step)" }
}

/// Opens `path`, which does not exist: a line in the trace that says where the process got to.
func mark(_ path: String) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd >= 0 { close(fd) }
}

/// Run only by `DurabilityTests`, in a child process of its own under strace: every durable writer
/// writes its file, with a marker after each save.
@Suite("Durable writers, traced (run by DurabilityTests)",
       .enabled(if: durabilityRoot != nil, "needs BESSD_DURABILITY_DIR: DurabilityTests runs it under strace"))
struct DurableWritersUnderTrace {
    @Test("each writer saves its file")
    func writers() throws {
        let root = try #require(durabilityRoot)
        for file in DurableFile.allCases where file != .spoolState {
            let directory = root + "/" + file.rawValue
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for number in 1...file.saves {
                try file.save(number, in: directory)
                mark(DurableFile.marker(directory, number))
            }
        }
    }

    @Test("the spool appends over two segments, syncs and acknowledges twice")
    func spool() throws {
        let directory = try #require(durabilityRoot) + "/" + DurableFile.spoolState.rawValue
        // No fsync on the clock: only the segment change and syncNow flush the records.
        let spool = try Spool(directory: directory, segmentBytes: 1024, syncInterval: .seconds(3600))
        mark(DurableFile.marker(directory, 1))
        mark(SpoolSteps.marker(directory, SpoolSteps.opened))
        for _ in 0..<3 { try spool.append([UInt8](repeating: 0x5A, count: 400)) }
        mark(SpoolSteps.marker(directory, SpoolSteps.appended))
        try spool.syncNow()
        mark(SpoolSteps.marker(directory, SpoolSteps.synced))
        try spool.acknowledge(upTo: 2)
        mark(SpoolSteps.marker(directory, SpoolSteps.firstAcknowledgement))
        try spool.acknowledge(upTo: 3)
        mark(SpoolSteps.marker(directory, SpoolSteps.secondAcknowledgement))
    }
}

/// No test could tell whether a durable writer still fsyncs: each read back what the page cache
/// holds. These run every writer's saves in a child process (this test bundle, filtered to
/// `DurableWritersUnderTrace`) under `strace -f -y`, and read the order of its calls from the trace:
/// a writer that drops the fsync of its temporary, of its directory, of a spool segment or of the
/// spool's state slot fails here.
@Suite("Durability: each durable writer's fsyncs, seen by strace")
struct DurabilityTests {
    /// The child's trace and the root it wrote under (run once, for every test of the suite).
    struct Traced: Sendable {
        var root: String
        var trace: SyscallTrace
    }

    struct TraceFailure: Error, CustomStringConvertible {
        var description: String
    }

    static let traced: Result<Traced, TraceFailure> = runTraced()

    static let tracedCalls = "openat,open,write,pwrite64,writev,fsync,fdatasync,rename,renameat,renameat2"

    /// Runs `DurableWritersUnderTrace` in this test bundle, in a child under strace, and reads its trace.
    static func runTraced() -> Result<Traced, TraceFailure> {
        let base = NSTemporaryDirectory() + "bessd-durability-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        } catch {
            return .failure(TraceFailure(description: "cannot create \(base): \(error)"))
        }
        defer { try? FileManager.default.removeItem(atPath: base) }
        // strace's -y prints a descriptor's real path: the root as the kernel names it.
        guard let real = realpath(base, nil), let bundle = realpath("/proc/self/exe", nil) else {
            return .failure(TraceFailure(description: "cannot resolve \(base) or this test bundle's path"))
        }
        let root = String(cString: real) + "/files"
        let executable = String(cString: bundle)
        free(real)
        free(bundle)
        let traceFile = root + ".strace"
        var environment = ProcessInfo.processInfo.environment
        environment["BESSD_DURABILITY_DIR"] = root
        let arguments = ["strace", "-f", "-y", "-s", "0", "--seccomp-bpf", "-e", "trace=" + tracedCalls, "-o", traceFile,
                         executable, "--testing-library", "swift-testing", "--filter", "DurableWritersUnderTrace"]
        let run: (status: Int32, out: String, err: String)
        do {
            run = try Package.capture(URL(fileURLWithPath: "/usr/bin/env"), arguments, environment: environment, merged: true)
        } catch {
            return .failure(TraceFailure(description: "cannot run strace: \(error)"))
        }
        guard run.status == 0 else {
            let hint = run.status == 127 ? " (strace is not installed: make check installs it, TEST_PACKAGES)" : ""
            return .failure(TraceFailure(description: "the traced writers exited \(run.status)\(hint):\n\(run.out.suffix(4000))"))
        }
        guard let text = try? String(contentsOfFile: traceFile, encoding: .utf8) else {
            return .failure(TraceFailure(description: "strace wrote no trace at \(traceFile)"))
        }
        return .success(Traced(root: root, trace: SyscallTrace(parsing: text)))
    }

    @Test("a file is replaced whole: fsync temporary, rename, fsync directory, before the save returns",
          arguments: DurableFile.allCases)
    func replacedDurably(_ file: DurableFile) throws {
        let traced = try Self.traced.get()
        let directory = traced.root + "/" + file.rawValue
        let markers = (1...file.saves).map { DurableFile.marker(directory, $0) }
        let faults = traced.trace.replacementFaults(directory + "/" + file.name, markers: markers)
        #expect(faults.isEmpty, "\(file.rawValue): \(faults.joined(separator: "; "))")
    }

    /// Every record before the next segment or syncNow returns; each state slot before the other is written.
    @Test("spool durability: segment name before its records, records before the next segment, slots in turn")
    func spoolOrder() throws {
        let traced = try Self.traced.get()
        let faults = Self.spoolFaults(traced.trace, directory: traced.root + "/" + DurableFile.spoolState.rawValue)
        #expect(faults.isEmpty, "spool: \(faults.joined(separator: "; "))")
    }

    /// What breaks the spool's order in the trace of `DurableWritersUnderTrace.spool`:
    /// - a new segment's directory entry is flushed (fsync of the spool's directory) after the segment
    ///   is created and before its first record is written: a record in a segment whose name a power
    ///   cut can lose is lost with it;
    /// - every segment written to is flushed after its last write before the next segment is created
    ///   (only the newest one is synced later) and before `syncNow` returns (a record counts durable,
    ///   and may be sent, only then);
    /// - the state's saves in place each write one slot of the state file itself (not a temporary),
    ///   flushed before the save returns, so before the next save writes the other slot; successive
    ///   saves alternate slots (offsets 0 and 4096), so a torn write leaves the previous state whole.
    static func spoolFaults(_ trace: SyscallTrace, directory: String) -> [String] {
        let calls = trace.calls
        let marker = { (step: Int) in trace.marker(SpoolSteps.marker(directory, step)) }
        guard let opened = marker(SpoolSteps.opened), let synced = marker(SpoolSteps.synced),
              let first = marker(SpoolSteps.firstAcknowledgement), let second = marker(SpoolSteps.secondAcknowledgement)
        else { return ["the traced spool did not reach its last step"] }
        var faults: [String] = []
        let isSegment = { (path: String?) in path.map { $0.hasPrefix(directory + "/seg-") && $0.hasSuffix(".log") } ?? false }
        let created = calls[opened..<synced].indices.filter {
            (calls[$0].name == "openat" || calls[$0].name == "open") && isSegment(calls[$0].strings.first) && calls[$0].arguments.contains("O_CREAT")
        }
        if created.count < 2 { faults.append("\(created.count) segments created, the test needs two") }
        /// Segments written to in `range` whose last write there is not followed by a flush of it before `range`'s end.
        func unflushed(_ range: Range<Int>) -> [String] {
            let written = Set(calls[range].filter { isSegment($0.descriptor) && ($0.name == "write" || $0.name == "writev") }.compactMap(\.descriptor))
            return written.sorted().filter { segment in
                let last = calls[range].lastIndex { $0.writes(to: segment) }!
                return !calls[(last + 1)..<range.upperBound].contains { $0.flushes(segment) }
            }
        }
        for at in created {
            let segment = calls[at].strings[0]
            for earlier in unflushed(opened..<at) {
                faults.append("\(earlier) not flushed after its last record before \(segment) was created")
            }
            guard let firstWrite = calls[(at + 1)..<synced].firstIndex(where: { $0.writes(to: segment) }) else {
                faults.append("nothing written to \(segment)")
                continue
            }
            if !calls[(at + 1)..<firstWrite].contains(where: { $0.flushes(directory) }) {
                faults.append("\(directory) not flushed between creating \(segment) and its first record")
            }
        }
        for segment in unflushed(opened..<synced) {
            faults.append("\(segment) not flushed after its last record before syncNow returned")
        }
        let state = directory + "/" + DurableFile.spoolState.name
        var offsets: [Int] = []
        for (name, range) in [("first", synced..<first), ("second", first..<second)] {
            let slots = calls[range].indices.filter { calls[$0].name == "pwrite64" && calls[$0].descriptor == state }
            guard slots.count == 1, let slot = slots.first, let offset = calls[slot].lastNumber else {
                faults.append("the \(name) acknowledgement wrote \(slots.count) slots of \(state) in place, not one")
                continue
            }
            offsets.append(offset)
            if !calls[(slot + 1)..<range.upperBound].contains(where: { $0.flushes(state) }) {
                faults.append("the \(name) acknowledgement's slot (offset \(offset)) not flushed before the save returned")
            }
        }
        if offsets.count == 2, Set(offsets) != [0, Spool.stateSlotStride] {
            faults.append("the two saves wrote the slots at \(offsets), not one at 0 and one at \(Spool.stateSlotStride)")
        }
        return faults
    }
}
