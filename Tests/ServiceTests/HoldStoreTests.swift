import BessBase
import BessSystem
import ControlCore
import Foundation
import Glibc
import Logging
@testable import Service
import Testing

/// The holds file alone (`HoldStore`) and its keeper (`HoldKeeper`): the exact bytes, the round
/// trip, every kind of damage refused whole, the SCADA limit's reversion across the wall clock.
@Suite("Hold store")
struct HoldStoreTests {
    static func directory() -> String {
        let path = NSTemporaryDirectory() + "bessd-holdstore-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let sample = StandingHolds(
        operatorSite: true, operatorUnits: ["U2", "U1"],
        aggregator: ["U3": AggregatorHold(untilUnix: 1_795_316_389.5, emergency: true)],
        scadaLimit: ScadaLimitHold(enabled: true, percent: 0, revertEnabled: true, revertPercent: 0, timeoutSeconds: 10,
                                   revertsUnix: nil, reverted: true))

    @Test("the file's exact bytes: keys sorted, unit ids in order, absent parts left out")
    func exactBytes() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = HoldStore(stateDirectory: directory)
        try store.save(Self.sample)
        let text = try String(contentsOfFile: directory + "/holds.json", encoding: .utf8)
        #expect(text == #"{"aggregator":{"U3":{"emergency":true,"until_unix":1795316389.5}},"format":"bessd-holds","#
                + #""operator":{"site":true,"units":["U1","U2"]},"scada_limit":{"enabled":true,"percent":0,"revert_enabled":true,"#
                + #""revert_percent":0,"reverted":true,"timeout_s":10},"version":1}"#)
        try store.save(StandingHolds())
        #expect(try String(contentsOfFile: directory + "/holds.json", encoding: .utf8)
                == #"{"aggregator":{},"format":"bessd-holds","operator":{"site":false,"units":[]},"version":1}"#)
        // No temporary left behind (AtomicFile renames it over the file).
        #expect(!FileManager.default.fileExists(atPath: directory + "/holds.json.tmp"))
    }

    @Test("what is saved is what loads; no file is a first start")
    func roundTrip() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = HoldStore(stateDirectory: directory)
        #expect(store.load() == .firstStart)
        var holds = Self.sample
        holds.scadaLimit?.revertsUnix = 1_795_316_400.25
        holds.scadaLimit?.reverted = false
        try store.save(holds)
        #expect(store.load() == .holds(holds))
    }

    @Test("damage of every kind fails the whole file with HOLD_STATE_UNREADABLE naming it, and keeps a copy",
          arguments: [
              #"{"aggregator":{},"format":"bessd-holds","operator":{"site":fal"#,  // cut short
              "",  // empty
              "\u{0}\u{1}binary",
              #"{"aggregator":{},"format":"bessd-latches","operator":{"site":false,"units":[]},"version":1}"#,  // another format
              #"{"aggregator":{},"format":"bessd-holds","operator":{"site":false,"units":[]},"version":2}"#,  // another version
              #"{"aggregator":{},"format":"bessd-holds","version":1}"#,  // no operator part
              #"{"format":"bessd-holds","operator":{"site":false,"units":[]},"version":1}"#,  // no aggregator part
              #"{"aggregator":{},"format":"bessd-holds","operator":{"site":"yes","units":[]},"version":1}"#,  // mistyped
              #"{"aggregator":{"U1":{"emergency":true}},"format":"bessd-holds","operator":{"site":false,"units":[]},"version":1}"#,
              #"{"aggregator":{},"format":"bessd-holds","operator":{"site":false,"units":[]},"scada_limit":{"enabled":true,"percent":150,"revert_enabled":false,"revert_percent":0,"reverted":false,"timeout_s":0},"version":1}"#,
              #"{"aggregator":{},"format":"bessd-holds","operator":{"site":false,"units":[]},"scada_limit":{"enabled":true,"percent":-1,"revert_enabled":false,"revert_percent":0,"reverted":false,"timeout_s":0},"version":1}"#,
          ])
    func damage(_ text: String) throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/holds.json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let store = HoldStore(stateDirectory: directory)
        guard case .unreadable(let error) = store.load() else {
            Issue.record("\(text) was believed")
            return
        }
        #expect(error.code == .stateUnreadable)
        #expect(error.code.kind == .unknownState)
        #expect("\(error)".hasPrefix("HOLD_STATE_UNREADABLE: \(path) "), "\(error)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("holds.json.damaged-") }
        #expect(kept.count == 1)
    }

    @Test("a state directory that cannot take the file: HOLD_STATE_UNWRITABLE naming it, nothing half-written")
    func unwritable() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A regular file where the state directory should be: refused even for root.
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/plain"))
        let store = HoldStore(stateDirectory: directory + "/plain/state")
        do {
            try store.save(StandingHolds(operatorSite: true))
            Issue.record("saved into a file")
        } catch {
            #expect(error.code == .stateUnwritable && error.code.kind == .io)
            #expect("\(error)".hasPrefix("HOLD_STATE_UNWRITABLE: cannot create \(directory)/plain/state"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["plain"])
    }

    /// At most one hold.
    @Test("SCADA's limit across a wall-clock step: reverted stands, pending keeps its time, due reverts")
    func limitAcrossTheClock() {
        let now = MonotonicInstant(nanoseconds: 1_000_000_000_000)
        let wall = 1_795_316_000.0
        var written = ExpiringCommand(value: 50, revertValue: 0)
        written.enabled = true
        written.revertEnabled = true
        written.timeoutSeconds = 20
        written.expiresAt = now + .seconds(15)
        let hold = ScadaLimitHold(written, now: now, wall: wall)
        #expect(hold.revertsUnix == wall + 15)
        // 5 s later (wall clock): 50 % for 10 s more.
        let later = MonotonicInstant(nanoseconds: 7_000_000_000)
        let pending = hold.command(now: later, wall: wall + 5, maxHold: .seconds(60))
        #expect(pending.active(at: later) == 50)
        #expect(pending.remaining(at: later) == .seconds(10))
        // A clock set back an hour: never further off than the hold (20 s).
        let setBack = hold.command(now: later, wall: wall - 3600, maxHold: .seconds(60))
        #expect(setBack.remaining(at: later) == .seconds(20))
        // Past its time: the enabled reversion, 0 %, standing until written.
        let due = hold.command(now: later, wall: wall + 16, maxHold: .seconds(60))
        #expect(due.active(at: later) == 0 && due.reverted && due.expiresAt == nil)
        #expect(due.active(at: later + .seconds(86_400)) == 0)
        // A reversion without its enable ends the limit.
        var soft = hold
        soft.revertEnabled = false
        #expect(soft.command(now: later, wall: wall + 16, maxHold: .seconds(60)).active(at: later) == nil)
    }

    @Test("the hold keeper writes before returning; a damaged file puts the site in standby until lifted")
    func keeper() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/holds.json"
        let keeper = HoldKeeper(stateDirectory: directory, logger: Logger(label: "test"))
        #expect(keeper.operatorMode(.standby, unit: "U1") == nil)
        #expect(HoldStore(stateDirectory: directory).load() == .holds(StandingHolds(operatorUnits: ["U1"])))
        #expect(keeper.aggregator([("U2", AggregatorHold(untilUnix: Date().timeIntervalSince1970 + 60, emergency: true))]) == nil)
        guard case .holds(let both) = HoldStore(stateDirectory: directory).load() else {
            Issue.record("no holds written")
            return
        }
        #expect(both.operatorUnits == ["U1"] && both.aggregator["U2"]?.emergency == true)

        // A new keeper on the same file brings both back by unit index.
        let restored = HoldKeeper(stateDirectory: directory, logger: Logger(label: "test"))
            .restore(unitIDs: ["U1", "U2"], maxHold: .seconds(60))
        #expect(restored.operatorUnits == [0] && !restored.operatorSite)
        #expect(restored.aggregator.count == 1 && restored.aggregator.first?.unit == 1 && restored.aggregator.first?.emergency == true)
        #expect(restored.aggregator.first.map { $0.lasting > .seconds(55) && $0.lasting <= .seconds(60) } == true)

        try Data("{".utf8).write(to: URL(fileURLWithPath: path))
        let damaged = HoldKeeper(stateDirectory: directory, logger: Logger(label: "test"))
        let unknown = damaged.restore(unitIDs: ["U1", "U2"], maxHold: .seconds(60))
        #expect(unknown.operatorSite)
        #expect(damaged.unreadable?.code == .stateUnreadable)
        // Any write from here on carries the site's standby; only the operator's auto lifts it.
        #expect(damaged.aggregator([("U2", nil)]) == nil)
        #expect(HoldStore(stateDirectory: directory).load() == .holds(StandingHolds(operatorSite: true)))
        #expect(damaged.unreadable != nil)
        #expect(damaged.operatorMode(.auto, unit: nil) == nil)
        #expect(damaged.unreadable == nil)
        #expect(HoldStore(stateDirectory: directory).load() == .holds(StandingHolds()))
    }

    @Test("a SCADA refresh that only moves the reversion time is written once it has moved by half the timer")
    func scadaRefresh() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keeper = HoldKeeper(stateDirectory: directory, logger: Logger(label: "test"))
        var commands = SiteCommands(maxHold: .seconds(60))
        commands.limit.enabled = true
        commands.limit.value = 30
        commands.limit.timeoutSeconds = 10
        commands.limit.expiresAt = SystemClock.shared.now() + .seconds(10)
        #expect(keeper.scadaLimit { commands } == nil)
        func written() -> ScadaLimitHold? {
            guard case .holds(let holds) = HoldStore(stateDirectory: directory).load() else { return nil }
            return holds.scadaLimit
        }
        let first = try #require(written()?.revertsUnix)
        // A refresh 1 s on: the file keeps the first time.
        commands.limit.expiresAt = SystemClock.shared.now() + .seconds(11)
        #expect(keeper.scadaLimit { commands } == nil)
        #expect(written()?.revertsUnix == first)
        // 6 s on (more than half of 10 s): written.
        commands.limit.expiresAt = SystemClock.shared.now() + .seconds(16)
        #expect(keeper.scadaLimit { commands } == nil)
        #expect(try #require(written()?.revertsUnix) > first + 5)
        // A changed value is always written.
        commands.limit.value = 20
        #expect(keeper.scadaLimit { commands } == nil)
        #expect(written()?.percent == 20)
    }
}
