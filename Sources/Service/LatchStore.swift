public import BessBase
import BessSystem
public import Config
public import Cycle
public import ControlCore
import Foundation

/// Latched trips kept in `state_directory/latches.json`, so a restart of any kind (SIGKILL, crash,
/// watchdog kill, `systemctl restart`) is never an operator reset.
///
/// The file is rewritten whole (temporary file, fsync, rename, fsync of the directory) whenever the
/// set of latched codes of any unit changes, and read once at start, before the first cycle:
/// - no file: a first start, nothing latched;
/// - a file that cannot be read or parsed, or that names a code this bessd does not know: the
///   affected units (every unit, when the file as a whole is unreadable) start latched with
///   `LATCH_STATE_CORRUPT`, never silently clear; the damaged file is kept beside it for inspection.
///
/// Format (version 1): `{"format":"bessd-latches","version":1,"units":{"U1":{"THERMAL_RUNAWAY":1763800000.5}}}`,
/// each code with the Unix time it latched.
public final class LatchStore {
    /// What one unit had latched: code → Unix time it latched.
    public typealias UnitLatches = [TripCode: Double]

    /// The outcome of reading the file at start.
    public enum Loaded: Equatable {
        /// No file: nothing was ever latched here.
        case firstStart
        /// Latches by unit id; `damaged` lists unit ids whose entry could not be read.
        case latches([String: UnitLatches], damaged: [String])
        /// The file as a whole could not be read; `reason` says why.
        case corrupt(reason: String)
    }

    public var path: String { file.path }
    let file: StateFile

    /// The most bytes a latch file may hold: far more than every code of hundreds of units.
    static let maximumBytes = 4 << 20

    public init(stateDirectory: String) {
        file = StateFile(stateDirectory: stateDirectory, name: "latches.json", maximumBytes: Self.maximumBytes)
    }

    /// Reads the file (once, at start).
    public func load() -> Loaded {
        let bytes: [UInt8]
        do throws(SystemCallError) {
            guard let read = try file.read() else { return .firstStart }
            bytes = read
        } catch {
            return .corrupt(reason: "cannot read \(path): \(SystemError.text(error.errno))")
        }
        guard bytes.count <= file.maximumBytes, let contents = try? JSONDecoder().decode(LatchFile.self, from: Data(bytes)),
              contents.format == LatchFile.formatName, contents.version == LatchFile.currentVersion
        else {
            return .corrupt(reason: "\(path) is not a bessd latch file (version 1)" + file.keepDamagedInPlace())
        }
        var latches: [String: UnitLatches] = [:]
        var damaged: [String] = []
        for (unit, entry) in contents.units {
            guard let entry else {
                damaged.append(unit)
                continue
            }
            var set: UnitLatches = [:]
            var readable = entry.complete
            for (name, since) in entry.codes {
                guard let code = TripCode(name: name) else {
                    readable = false
                    continue
                }
                set[code] = since
            }
            if !readable { damaged.append(unit) }
            latches[unit] = set
        }
        if !damaged.isEmpty { _ = file.keepDamagedInPlace() }
        return .latches(latches, damaged: damaged.sorted())
    }

    /// Writes every unit's latches: a temporary file, fsync, rename over the old one, fsync of the
    /// directory. Either the old file or the new one is on disk at every instant.
    public func save(_ latches: [String: UnitLatches]) throws(LatchStoreError) {
        var contents = LatchFile(units: [:])
        for (unit, codes) in latches {
            let named = codes.map { code, since in ("\(code.name)", since) }
            contents.units[unit] = LatchFile.UnitEntry(codes: Dictionary(uniqueKeysWithValues: named))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(contents) else {
            throw LatchStoreError(.stateUnwritable, message: "cannot encode the latch state")
        }
        do throws(SystemCallError) {
            try file.write(Array(data))
        } catch {
            throw LatchStoreError(.stateUnwritable, message: StateFile.writeFailure(error, saving: "the latches"))
        }
    }
}

/// The latch file on disk, version 1: `{"format":"bessd-latches","units":{…},"version":1}`, keys
/// sorted. Reading is lenient per unit, as it has always been: a unit whose entry is not an object
/// decodes as nil, a code whose time is not a finite number is left out and marks the entry
/// incomplete; the store then starts that unit latched (`LATCH_STATE_CORRUPT`). Anything else wrong
/// (no JSON object, another format or version, `units` not an object) fails the whole file.
struct LatchFile: Codable, Equatable {
    static let formatName = "bessd-latches"
    static let currentVersion = 1

    var format = formatName
    var version = currentVersion
    /// Unit id → its entry; nil for an entry that is not an object.
    var units: [String: UnitEntry?]

    init(units: [String: UnitEntry?]) { self.units = units }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(String.self, forKey: .format)
        version = try c.decode(Int.self, forKey: .version)
        let entries = try c.decode([String: Lenient].self, forKey: .units)
        units = entries.mapValues(\.entry)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(format, forKey: .format)
        try c.encode(version, forKey: .version)
        try c.encode(units.compactMapValues { $0 }, forKey: .units)
    }

    enum CodingKeys: String, CodingKey { case format, version, units }

    /// One unit's latched codes by name, each with the Unix time it latched.
    struct UnitEntry: Codable, Equatable {
        var codes: [String: Double]
        /// False when a code's time was not a finite number (that code is not in `codes`).
        var complete = true

        init(codes: [String: Double]) { self.codes = codes }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodeName.self)
            codes = [:]
            for key in c.allKeys {
                if let since = try? c.decode(Double.self, forKey: key), since.isFinite {
                    codes[key.stringValue] = since
                } else {
                    complete = false
                }
            }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodeName.self)
            for (name, since) in codes { try c.encode(since, forKey: CodeName(name)) }
        }
    }

    /// A unit's entry, or nil when it is not an object: never fails, so one damaged unit does not
    /// fail the file.
    private struct Lenient: Decodable {
        var entry: UnitEntry?
        init(from decoder: any Decoder) throws { entry = try? UnitEntry(from: decoder) }
    }

    /// A trip code's name as a key.
    struct CodeName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// Why the latch state could not be written: `LATCH_STATE_UNWRITABLE: message`.
///
/// The code is typed (`LatchStoreError.Code.stateUnwritable`); the journal (`BESS_CODE=`) prints its
/// stable name (`LATCH_STATE_UNWRITABLE`), which operators' recipes read.
public typealias LatchStoreError = CodedError<LatchStoreErrorCode>

/// The stable code of a `LatchStoreError` (`LatchStoreError.Code`): a struct over a private enum,
/// so the set is closed and matched by value, never by text.
public struct LatchStoreErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// What a failure says about the latch file.
    public enum Kind: Sendable, Equatable {
        /// The state directory did not take the file (full, read-only, not permitted): latches hold
        /// while bessd runs but would not survive a restart.
        case io
    }

    private enum Value: Hashable, Sendable {
        case stateUnwritable
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `LATCH_STATE_UNWRITABLE`: the latch state could not be encoded or written.
    public static let stateUnwritable = Self(.stateUnwritable)

    /// What the failure says about the latch file.
    public var kind: Kind {
        switch value {
        case .stateUnwritable: .io
        }
    }

    /// The stable name the journal prints.
    public var description: String {
        switch value {
        case .stateUnwritable: "LATCH_STATE_UNWRITABLE"
        }
    }
}

/// `LatchStoreError.Kind` and `kind`: what a failure says about the latch file.
extension LatchStoreErrorCode: ErrorCodeWithKind {}
