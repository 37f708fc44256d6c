public import Config
public import Cycle
import BessSystem
import CSystemd
import ControlProtocol
import Foundation
import Glibc
public import Logging

/// A swift-log handler that writes structured entries to the systemd journal (`sd_journal_sendv`):
/// MESSAGE, PRIORITY from the level, SYSLOG_IDENTIFIER, CODE_FILE/LINE/FUNC, and every metadata key as
/// a field (upper-cased; only A–Z, 0–9 and _; never starting with _), e.g. `BESS_CODE=THERMAL_RUNAWAY`.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let identifier: String

    public init(identifier: String) { self.identifier = identifier }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// syslog priority of a level.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// A journal field name from a metadata key, or nil when nothing valid is left.
    public static func fieldName(_ key: String) -> String? {
        let upper = key.uppercased().map { ch -> Character in
            (ch.isASCII && (ch.isLetter || ch.isNumber)) ? ch : "_"
        }
        var name = String(upper)
        while name.hasPrefix("_") { name.removeFirst() }
        return name.isEmpty ? nil : String(name.prefix(64))
    }

    public func log(event: LogEvent) {
        var fields = [
            "MESSAGE=\(event.message)", "PRIORITY=\(Self.priority(event.level))", "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(event.file)", "CODE_LINE=\(event.line)", "CODE_FUNC=\(event.function)",
        ]
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        for (key, value) in merged {
            guard let name = Self.fieldName(key), !["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"].contains(name) else { continue }
            // A list becomes the field repeated (`BESS_UNIT=D1`, `BESS_UNIT=D2`): journalctl matches either.
            if case .array(let values) = value {
                for item in values { fields.append("\(name)=\(item)") }
            } else {
                fields.append("\(name)=\(value)")
            }
        }
        Self.send(fields)
    }

    /// Sends `KEY=value` fields as one journal entry.
    /// The corresponding C function is `sd_journal_sendv`.
    @discardableResult
    static func send(_ fields: [String]) -> Bool {
        var buffer: [UInt8] = []
        var ranges: [(Int, Int)] = []
        for field in fields {
            let start = buffer.count
            buffer += Array(field.utf8)
            ranges.append((start, buffer.count - start))
        }
        return buffer.withUnsafeMutableBytes { raw -> Bool in
            var vectors = ranges.map { iovec(iov_base: raw.baseAddress! + $0.0, iov_len: $0.1) }
            return sd_journal_sendv(&vectors, Int32(vectors.count)) == 0
        }
    }

    /// True when a journal is listening on this machine (a socket file left by a stopped journald
    /// does not count: the connection is tried).
    public static var isAvailable: Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return UnixSocketAddress(path: "/run/systemd/journal/socket")?.connect(fd) == 0
    }
}

/// Where `bessd run --log` sends log entries.
public enum LogTarget: String, CaseIterable, Sendable {
    /// The journal when one listens, else stderr; stderr too when it is a terminal.
    case auto
    /// The journal only.
    case journal
    /// Standard error only, one line per entry.
    case stderr
    /// Standard output only, one line per entry.
    case stdout

    /// A stream an entry is written to.
    public enum Sink: Sendable, Equatable {
        case journal, stderr, stdout
    }

    /// The streams entries go to. `auto` writes to the journal when one listens and, when standard
    /// error is a terminal, to it as well: a person who runs bessd by hand sees every trip, clear and
    /// state change as it happens while the journal keeps them too. Under systemd standard error is
    /// the journal's own stream, never a terminal, so nothing is written twice.
    public func sinks(journalListening: Bool, stderrIsTerminal: Bool) -> [Sink] {
        switch self {
        case .auto:
            guard journalListening else { return [.stderr] }
            return stderrIsTerminal ? [.journal, .stderr] : [.journal]
        case .journal: return [.journal]
        case .stderr: return [.stderr]
        case .stdout: return [.stdout]
        }
    }

    /// One handler writing to every sink: the journal under `identifier`, line streams through
    /// `stdout` and `stderr`.
    public static func handler(for sinks: [Sink], identifier: String, stdout: @escaping @Sendable (String) -> Void,
                               stderr: @escaping @Sendable (String) -> Void) -> any LogHandler {
        let handlers: [any LogHandler] = sinks.map { sink in
            switch sink {
            case .journal: JournalLogHandler(identifier: identifier)
            case .stderr: LineLogHandler(write: stderr)
            case .stdout: LineLogHandler(write: stdout)
            }
        }
        return handlers.count == 1 ? handlers[0] : MultiplexLogHandler(handlers)
    }
}

/// One line per entry to a stream: the message, then the fields the journal would carry, by the
/// journal's names (`MESSAGE_ID`, `PRIORITY` and every metadata key), sorted:
/// `D1 BMS_COMM_LOST …  [BESS_CODE=BMS_COMM_LOST BESS_UNIT=D1 MESSAGE_ID=… PRIORITY=3]`.
public struct LineLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let write: @Sendable (String) -> Void

    public init(write: @escaping @Sendable (String) -> Void) { self.write = write }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var fields = ["PRIORITY": "\(JournalLogHandler.priority(event.level))"]
        for (key, value) in merged {
            guard let name = JournalLogHandler.fieldName(key), !["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"].contains(name) else { continue }
            if case .array(let values) = value { fields[name] = values.map { "\($0)" }.joined(separator: ",") } else { fields[name] = "\(value)" }
        }
        let text = fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }.joined(separator: " ")
        write("\(event.message)  [\(text)]")
    }
}

/// Stable MESSAGE_IDs, so `journalctl MESSAGE_ID=…` finds every event of a kind.
public enum MessageID {
    public static let trip = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a01"
    public static let latch = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a02"
    public static let clear = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a03"
    public static let reset = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a04"
    public static let override = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a05"
    public static let mode = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a06"
    public static let reload = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a07"
    public static let state = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a08"
    public static let lifecycle = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a09"
    public static let scada = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a0a"
    /// A SCADA write accepted (grid operator limit, site setpoint) or reverted for want of a refresh.
    public static let scadaWrite = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a0b"
    /// A control-socket request refused for the caller's groups (`PERMISSION_DENIED`).
    public static let permission = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a0c"
    /// The system clock: not synchronised (`CLOCK_UNSYNCED`), synchronised again, or stepped (`CLOCK_STEPPED`).
    public static let clock = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a0d"
    /// A bus device or link: failed (`MODBUS_CONNECT_FAILED`, `MODBUS_TIMEOUT`…, warning), discovered or answering again.
    public static let device = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a0e"
    /// A condition of the site as a whole, raised or cleared: `SITE_SHORTFALL`, `METER_STALE`, `GRID_LIMIT_BINDING`.
    public static let site = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a0f"
    /// A dispatch or override the cycle ignored: its power was not a finite number.
    public static let commandRejected = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a10"
    /// The grid operator's AGC: its signal lost (`AGC_SIGNAL_LOST`, the schedule decides again) or back.
    public static let agc = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a11"
    /// The IEC 104 outstation: connections, protocol errors, negative answers, clock synchronisation.
    public static let iec104 = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a12"
    /// An IEC 104 command and its outcome (`IEC104_COMMAND`, `IEC104_COMMAND_REFUSED`).
    public static let iec104Command = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a13"
    /// A frequency event assessed: what the response settings required, what the site delivered, the
    /// shortfall and its cause (`FREQUENCY_EVENT`; docs/frequency-events.md).
    public static let frequencyEvent = "b3f0c1a27e5d4c8e9a1f6d2b4c7e8a14"
}
