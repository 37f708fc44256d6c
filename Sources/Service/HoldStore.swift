public import BessBase
import BessSystem
public import ControlCore
import Foundation

/// The holds only their owner may lift, kept in `state_directory/holds.json` so that a restart of
/// any kind (SIGKILL, crash, watchdog kill, power cut) lifts none of them:
/// - the local operator's standby, for the whole site and per unit (`bessctl mode standby`);
/// - the grid operator's SCADA limit as it stands (model 704 `WMaxLimPct…`, a reverted enabled one
///   included), with the wall-clock time it reverts;
/// - the aggregator's standby and emergency stop per unit, with the wall-clock time they end.
///
/// The file is rewritten whole through `AtomicFile` (temporary file, fsync, rename, fsync of the
/// directory) by whoever changes a hold, before that party is answered (`HoldKeeper`), and read
/// once at start, before the first cycle:
/// - no file: a first start, nothing held;
/// - a file that cannot be read or parsed, in any part: `HOLD_STATE_UNREADABLE`, and the keeper
///   starts every unit in the operator's standby (never the least restrictive state); the damaged
///   file is kept beside it as `holds.json.damaged-UNIXTIME`.
///
/// Format (version 1), keys sorted, absent parts left out:
/// `{"aggregator":{"D2":{"emergency":true,"until_unix":1795316389.5}},"format":"bessd-holds",`
/// `"operator":{"site":true,"units":["D1"]},"scada_limit":{"enabled":true,"percent":0,"revert_enabled":true,`
/// `"revert_percent":0,"reverted":true,"timeout_s":10},"version":1}`
public final class HoldStore: Sendable {
    /// The outcome of reading the file at start.
    public enum Loaded: Equatable, Sendable {
        /// No file: nothing was ever held here.
        case firstStart
        /// The holds as they were last written.
        case holds(StandingHolds)
        /// The file could not be read or is not a holds file: `HOLD_STATE_UNREADABLE`, naming it.
        case unreadable(HoldStoreError)
    }

    public var path: String { file.path }
    let file: StateFile

    /// The most bytes a holds file may hold: far more than every hold of hundreds of units.
    static let maximumBytes = 4 << 20

    public init(stateDirectory: String) {
        file = StateFile(stateDirectory: stateDirectory, name: "holds.json", maximumBytes: Self.maximumBytes)
    }

    /// Reads the file (once, at start).
    public func load() -> Loaded {
        let bytes: [UInt8]
        do throws(SystemCallError) {
            guard let read = try file.read() else { return .firstStart }
            bytes = read
        } catch {
            return .unreadable(HoldStoreError(.stateUnreadable, message: "cannot read \(path): \(SystemError.text(error.errno))",
                                              systemError: error.errno))
        }
        do {
            guard bytes.count <= file.maximumBytes else { throw HoldFile.Refusal(reason: "more than \(file.maximumBytes) bytes") }
            let contents = try JSONDecoder().decode(HoldFile.self, from: Data(bytes))
            return .holds(try contents.holds())
        } catch {
            return .unreadable(HoldStoreError(.stateUnreadable,
                                              message: "\(path) is not a bessd holds file (version 1): \(Self.why(error))" + file.keepDamagedInPlace()))
        }
    }

    /// Writes every hold: a temporary file, fsync, rename over the old one, fsync of the directory
    /// (`StateFile.write`). Either the old file or the new one is on disk at every instant.
    public func save(_ holds: StandingHolds) throws(HoldStoreError) {
        guard let bytes = Self.encode(holds) else {
            throw HoldStoreError(.stateUnwritable, message: "cannot encode the holds (a time or percent that is not a number)")
        }
        do throws(SystemCallError) {
            try file.write(bytes)
        } catch {
            throw HoldStoreError(.stateUnwritable, message: StateFile.writeFailure(error, saving: "the holds to \(path)"),
                                 systemError: error.call == "mkdir" ? error.errno : nil)
        }
    }

    /// The file's bytes for `holds` (keys sorted, unit ids in order); nil when a number is not
    /// finite (JSON has no NaN).
    static func encode(_ holds: StandingHolds) -> [UInt8]? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(HoldFile(holds))).map { Array($0) }
    }

    /// What is wrong with a file, in a line.
    static func why(_ error: any Error) -> String {
        switch error {
        case let refusal as HoldFile.Refusal: refusal.reason
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case DecodingError.dataCorrupted: "not JSON"
        default: "\(error)"
        }
    }
}

/// Every hold standing, by owner. Unit ids are the configuration's.
public struct StandingHolds: Equatable, Sendable {
    /// `bessctl mode standby`: the whole site, until `bessctl mode auto`.
    public var operatorSite = false
    /// `bessctl mode standby --unit U`: these units, each until `bessctl mode auto --unit U`.
    public var operatorUnits: Set<String> = []
    /// The aggregator's standby or emergency stop per unit, until its end.
    public var aggregator: [String: AggregatorHold] = [:]
    /// SCADA's `WMaxLimPct…` as it stood when last written; nil when never written.
    public var scadaLimit: ScadaLimitHold?

    public init(operatorSite: Bool = false, operatorUnits: Set<String> = [], aggregator: [String: AggregatorHold] = [:],
                scadaLimit: ScadaLimitHold? = nil) {
        self.operatorSite = operatorSite
        self.operatorUnits = operatorUnits
        self.aggregator = aggregator
        self.scadaLimit = scadaLimit
    }
}

/// The aggregator's standby (a `mode` command) or emergency stop on one unit, and its end.
public struct AggregatorHold: Equatable, Sendable {
    /// Unix time the hold ends.
    public var untilUnix: Double
    public var emergency: Bool
    public init(untilUnix: Double, emergency: Bool) {
        self.untilUnix = untilUnix
        self.emergency = emergency
    }
}

/// SCADA's percent limit (model 704 `WMaxLimPct…`) as it stands, its reversion time on the wall
/// clock: what `ExpiringCommand` holds on the monotonic clock, which does not survive a restart.
public struct ScadaLimitHold: Equatable, Sendable {
    public var enabled: Bool
    public var percent: Double
    public var revertEnabled: Bool
    public var revertPercent: Double
    /// `WMaxLimPctRvrtTms` as written (0: `scada.max_hold_s`).
    public var timeoutSeconds: UInt32
    /// Unix time the limit reverts unless refreshed; nil when nothing is pending.
    public var revertsUnix: Double?
    /// The limit in force is its reversion value.
    public var reverted: Bool

    public init(enabled: Bool, percent: Double, revertEnabled: Bool, revertPercent: Double, timeoutSeconds: UInt32,
                revertsUnix: Double?, reverted: Bool) {
        self.enabled = enabled
        self.percent = percent
        self.revertEnabled = revertEnabled
        self.revertPercent = revertPercent
        self.timeoutSeconds = timeoutSeconds
        self.revertsUnix = revertsUnix
        self.reverted = reverted
    }

    /// The limit of `command` at `now` (monotonic) and `wall` (Unix time, the same instant).
    public init(_ command: ExpiringCommand, now: MonotonicInstant, wall: Double) {
        self.init(enabled: command.enabled, percent: command.value, revertEnabled: command.revertEnabled,
                  revertPercent: command.revertValue, timeoutSeconds: command.timeoutSeconds,
                  revertsUnix: command.expiresAt.map { wall + $0.seconds(since: now) }, reverted: command.reverted)
    }

    /// The command as it stands at `now` (monotonic) and `wall`: its reversion time carried over,
    /// but never further off than one hold (`hold`: `…RvrtTms`, or `max_hold_s` for 0), so a
    /// wall clock set back at the restart cannot postpone a reversion by more than that; one
    /// already due is applied (`ExpiringCommand.settled`).
    public func command(now: MonotonicInstant, wall: Double, maxHold: Duration) -> ExpiringCommand {
        var command = ExpiringCommand(value: percent, revertValue: revertPercent)
        command.enabled = enabled
        command.revertEnabled = revertEnabled
        command.timeoutSeconds = timeoutSeconds
        command.reverted = reverted
        if let revertsUnix {
            let hold = timeoutSeconds == 0 ? maxHold.secondsDouble : Double(timeoutSeconds)
            command.expiresAt = now + .seconds(fromDouble: min(max(0, revertsUnix - wall), hold))
        }
        return command.settled(at: now, holdAfterRevert: nil)
    }

    /// The same limit, its reversion time aside: a refresh changes only that.
    func sameSettings(as other: ScadaLimitHold) -> Bool {
        var a = self, b = other
        a.revertsUnix = nil
        b.revertsUnix = nil
        return a == b && (revertsUnix == nil) == (other.revertsUnix == nil)
    }
}

/// The holds file on disk, version 1. Decoding is strict: a missing or mistyped part, another
/// format or version, a percent outside 0–100 or a time that is not a finite number fails the
/// whole file (`HOLD_STATE_UNREADABLE`), so nothing damaged is ever half-believed.
struct HoldFile: Codable, Equatable {
    static let formatName = "bessd-holds"
    static let currentVersion = 1

    var format = formatName
    var version = currentVersion
    var operatorHolds: OperatorEntry
    var aggregator: [String: AggregatorEntry]
    var scadaLimit: LimitEntry?

    struct OperatorEntry: Codable, Equatable {
        var site: Bool
        var units: [String]
    }

    struct AggregatorEntry: Codable, Equatable {
        var emergency: Bool
        var untilUnix: Double
        enum CodingKeys: String, CodingKey { case emergency, untilUnix = "until_unix" }
    }

    struct LimitEntry: Codable, Equatable {
        var enabled: Bool
        var percent: Double
        var revertEnabled: Bool
        var revertPercent: Double
        var reverted: Bool
        var revertsUnix: Double?
        var timeoutS: UInt32
        enum CodingKeys: String, CodingKey {
            case enabled, percent, reverted
            case revertEnabled = "revert_enabled", revertPercent = "revert_percent", revertsUnix = "reverts_unix", timeoutS = "timeout_s"
        }
    }

    enum CodingKeys: String, CodingKey {
        case format, version, aggregator
        case operatorHolds = "operator", scadaLimit = "scada_limit"
    }

    /// A file that parses but does not hold sensible values.
    struct Refusal: Error { var reason: String }

    init(_ holds: StandingHolds) {
        operatorHolds = OperatorEntry(site: holds.operatorSite, units: holds.operatorUnits.sorted())
        aggregator = holds.aggregator.mapValues { AggregatorEntry(emergency: $0.emergency, untilUnix: $0.untilUnix) }
        scadaLimit = holds.scadaLimit.map {
            LimitEntry(enabled: $0.enabled, percent: $0.percent, revertEnabled: $0.revertEnabled, revertPercent: $0.revertPercent,
                       reverted: $0.reverted, revertsUnix: $0.revertsUnix, timeoutS: $0.timeoutSeconds)
        }
    }

    /// The holds the file states, or why it cannot be believed.
    func holds() throws(Refusal) -> StandingHolds {
        guard format == Self.formatName, version == Self.currentVersion else {
            throw Refusal(reason: "format \(format) version \(version)")
        }
        var holds = StandingHolds(operatorSite: operatorHolds.site, operatorUnits: Set(operatorHolds.units))
        for (unit, entry) in aggregator {
            guard entry.untilUnix.isFinite else { throw Refusal(reason: "aggregator.\(unit).until_unix is not a time") }
            holds.aggregator[unit] = AggregatorHold(untilUnix: entry.untilUnix, emergency: entry.emergency)
        }
        if let l = scadaLimit {
            guard (0...100).contains(l.percent), (0...100).contains(l.revertPercent) else {
                throw Refusal(reason: "scada_limit percent outside 0–100")
            }
            guard l.revertsUnix?.isFinite ?? true else { throw Refusal(reason: "scada_limit.reverts_unix is not a time") }
            holds.scadaLimit = ScadaLimitHold(enabled: l.enabled, percent: l.percent, revertEnabled: l.revertEnabled,
                                              revertPercent: l.revertPercent, timeoutSeconds: l.timeoutS,
                                              revertsUnix: l.revertsUnix, reverted: l.reverted)
        }
        return holds
    }
}

/// Why the hold state could not be read or written: `HOLD_STATE_UNREADABLE: message`,
/// `HOLD_STATE_UNWRITABLE: message`. The code is typed (`HoldStoreError.Code.stateUnreadable`); the
/// journal (`BESS_CODE=`) and `bessctl status` print its stable name.
public typealias HoldStoreError = CodedError<HoldStoreErrorCode>

/// The stable code of a `HoldStoreError`: a struct over a private enum, so the set is closed and
/// matched by value, never by text.
public struct HoldStoreErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// What a failure says about the holds file.
    public enum Kind: Sendable, Equatable {
        /// What the file held is unknown: every unit starts in the operator's standby.
        case unknownState
        /// The state directory did not take the file: holds stand while bessd runs but would not
        /// survive a restart.
        case io
    }

    private enum Value: Hashable, Sendable {
        case stateUnreadable, stateUnwritable
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `HOLD_STATE_UNREADABLE`: the file could not be read or is damaged.
    public static let stateUnreadable = Self(.stateUnreadable)
    /// `HOLD_STATE_UNWRITABLE`: the holds could not be written.
    public static let stateUnwritable = Self(.stateUnwritable)

    public var kind: Kind {
        switch value {
        case .stateUnreadable: .unknownState
        case .stateUnwritable: .io
        }
    }

    /// The stable name the journal prints.
    public var description: String {
        switch value {
        case .stateUnreadable: "HOLD_STATE_UNREADABLE"
        case .stateUnwritable: "HOLD_STATE_UNWRITABLE"
        }
    }
}

/// `HoldStoreError.Kind` and `kind`: what a failure says about the holds file.
extension HoldStoreErrorCode: ErrorCodeWithKind {}
