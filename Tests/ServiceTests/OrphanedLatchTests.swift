import Foundation
import Glibc
@testable import Service
import TestSupport
import Testing

/// A latch of a unit id the configuration no longer has (issue 57 §8): kept in latches.json through
/// saves and restarts, said at each start (`LATCH_STATE_ORPHANED`), cleared only by an operator's
/// `bessctl reset --orphaned`.
@Suite("Orphaned latches", .serialized)
struct OrphanedLatchTests {
    static let orphan = #""OLD_ID":{"THERMAL_RUNAWAY":1795316329.5}"#

    /// A state directory whose latch file names OLD_ID, which `daemonYAML` lacks.
    static func directory() throws -> String {
        let directory = NSTemporaryDirectory() + "bessd-orphan-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        try #"{"format":"bessd-latches","units":{"D1":{},"#.appending(orphan).appending(#"},"version":1}"#)
            .write(toFile: directory + "/state/latches.json", atomically: true, encoding: .utf8)
        return directory
    }

    static func file(_ directory: String) -> String {
        (try? String(contentsOfFile: directory + "/state/latches.json", encoding: .utf8)) ?? ""
    }

    @Test("an orphaned latch survives SIGKILL restart, acts on no unit; bessctl reset --orphaned clears it")
    func keptUntilReset() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // D1 latches BMS_CRITICAL: the file is saved with it, and OLD_ID's latch stays.
        var first: RunningDaemon? = try RunningDaemon(yaml: DaemonTests.latchingYAML, directory: directory)
        _ = try first!.waitForUnits { latched($0[0]).contains("BMS_CRITICAL") }
        #expect(waitFor { Self.file(directory).contains("\"BMS_CRITICAL\"") })
        #expect(Self.file(directory).contains(Self.orphan), "\(Self.file(directory))")
        first!.signal(SIGKILL)
        let (_, firstText) = first!.finish()
        first = nil
        #expect(firstText.contains("latch file names unit \"OLD_ID\", which this configuration lacks: THERMAL_RUNAWAY kept in the file"))
        #expect(firstText.contains("BESS_CODE=LATCH_STATE_ORPHANED"))

        // Restarted: said again, still kept through the save of D1's reset, and on no unit.
        let second = try RunningDaemon(yaml: daemonYAML, directory: directory)
        _ = second.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(try second.units().map(latched) == [["BMS_CRITICAL"], []])
        let reset = try second.request(["verb": "reset", "unit": "D1"])
        #expect(reset["cleared"] as? [String] == ["D1:BMS_CRITICAL"])
        #expect(waitFor { !Self.file(directory).contains("BMS_CRITICAL") })
        #expect(Self.file(directory).contains(Self.orphan), "\(Self.file(directory))")
        // Only --orphaned names them: not as a unit, not with one.
        #expect(try second.request(["verb": "reset", "unit": "OLD_ID"])["code"] as? String == "UNKNOWN_UNIT")
        #expect(try second.request(["verb": "reset", "unit": "D1", "orphaned": true])["code"] as? String == "BAD_REQUEST")

        let cleared = try Package.run("bessctl", ["reset", "--orphaned", "--socket", second.socket])
        #expect(cleared.status == 0, "\(cleared.err)")
        #expect(cleared.out.contains("cleared: OLD_ID:THERMAL_RUNAWAY"), "\(cleared.out)")
        #expect(waitFor { !Self.file(directory).contains("OLD_ID") }, "\(Self.file(directory))")
        let again = try Package.run("bessctl", ["reset", "--orphaned", "--socket", second.socket])
        #expect(again.out.contains("cleared: none"), "\(again.out)")
        second.signal(SIGTERM)
        let (_, secondText) = second.finish()
        #expect(secondText.contains("latch file names unit \"OLD_ID\""), "said at every start")
        #expect(secondText.contains("reset of orphaned latches (unit ids this configuration lacks): cleared \"OLD_ID:THERMAL_RUNAWAY\""),
                "audited")
        let usage = try Package.run("bessctl", ["reset", "D1", "--orphaned", "--socket", second.socket])
        #expect(usage.status != 0 && usage.err.contains("--orphaned takes no unit"), "\(usage.err)")

        // Gone for good: the next start names no orphan.
        let third = try RunningDaemon(yaml: daemonYAML, directory: directory)
        _ = third.notify.collect(seconds: 8) { $0.contains("READY=1") }
        third.signal(SIGTERM)
        let (_, thirdText) = third.finish()
        #expect(!thirdText.contains("LATCH_STATE_ORPHANED"))
    }

    @Test("a reader (group bess) may not reset orphaned latches; an operator (bess-operators) may",
          .enabled(if: getuid() == 0, "makes users and runs bessctl as them: needs root"))
    func readerCannot() throws {
        let users = ControlRolesTests.TestUsers()
        defer { users.remove() }
        try users.group(ControlCaller.readerGroup)
        try users.group(ControlCaller.operatorGroup)
        try users.user("bess-t-reader", groups: [ControlCaller.readerGroup])
        try users.user("bess-t-operator", groups: [ControlCaller.operatorGroup])
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try RunningDaemon(yaml: daemonYAML, directory: directory)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }

        let refused = try users.bessctl(as: "bess-t-reader", ["reset", "--orphaned", "--socket", daemon.socket])
        #expect(refused.status == 2, "\(refused.out)\(refused.err)")
        #expect(refused.err.contains("PERMISSION_DENIED"), "\(refused.err)")
        #expect(Self.file(directory).contains(Self.orphan), "\(Self.file(directory))")

        let accepted = try users.bessctl(as: "bess-t-operator", ["reset", "--orphaned", "--socket", daemon.socket])
        #expect(accepted.status == 0, "\(accepted.err)")
        #expect(accepted.out.contains("cleared: OLD_ID:THERMAL_RUNAWAY"), "\(accepted.out)")
        #expect(waitFor { !Self.file(directory).contains("OLD_ID") })
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("bessctl (uid \(users.uid("bess-t-reader")), pid"))
        #expect(text.contains("): reset refused: PERMISSION_DENIED"))
        #expect(text.contains("bessctl (uid \(users.uid("bess-t-operator"))): reset of orphaned latches"))
    }
}
