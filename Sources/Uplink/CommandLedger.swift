import BessSystem
import Foundation

/// The command ids bessd has acted on, with their answers, kept until the command expires (and
/// across restarts and power cuts when a file is given), so a command the broker delivers twice is
/// acted on once.
///
/// Durable in this order: an id is on disk (`AtomicFile`: fsync, rename, fsync of the directory)
/// **before** the command is acted on, and its answer before the answer is published. After a power
/// cut, an id found without an answer may or may not have been acted on: a redelivery of it is
/// refused (`MQTT_COMMAND_UNCERTAIN`), never acted on again. A file that cannot be read proves no id
/// new: until the longest a command may live (24 h) has passed, every command not in the ledger is
/// refused (`MQTT_LEDGER_UNREADABLE`); the damaged file is kept beside it and the refusal window is
/// written to the new file, so a restart does not forget it.
///
/// Format (version 2): `{"format":"bessd-mqtt-commands","version":2,"unproven_until":0,
/// "entries":{"ID":{"until":1763800000,"ack":{…}}}}`; an entry without `ack` is in progress.
/// Version 1 (a bare map of id → entry, written before 0.x) is read as well.
struct CommandLedger {
    struct Entry: Codable, Equatable {
        /// The answer; nil while the command is being acted on (or was, when a power cut came).
        var ack: CommandAck?
        var until: Double
    }

    struct Stored: Codable {
        var format = "bessd-mqtt-commands"
        var version = 2
        var unprovenUntil: Double
        var entries: [String: Entry]
        enum CodingKeys: String, CodingKey {
            case format, version, entries
            case unprovenUntil = "unproven_until"
        }
    }

    /// What to do with a command id.
    enum Verdict: Equatable {
        /// Not seen before: act on it.
        case new
        /// Acted on before: send the same answer again.
        case answered(CommandAck)
        /// Cannot be proven new: refused with this answer, not acted on.
        case refused(CommandAck)
    }

    let file: String?
    private(set) var entries: [String: Entry] = [:]
    /// Until this Unix time, an id not in the ledger cannot be proven new.
    private(set) var unprovenUntil: Double = 0
    /// Why the file could not be read at start (`MQTT_LEDGER_UNREADABLE: …`), for the journal.
    private(set) var loadProblem: String?
    static let limit = 10_000

    /// The most bytes a ledger file may hold: 10,000 entries with their answers fit many times.
    static let maximumBytes = 64 << 20

    init(file: String?, now: Double = Date().timeIntervalSince1970) {
        self.file = file
        guard let file else { return }
        let stateFile = StateFile(path: file, maximumBytes: Self.maximumBytes)
        let bytes: [UInt8]?
        do throws(SystemCallError) {
            guard let read = try stateFile.read() else { return }
            bytes = read.count <= Self.maximumBytes ? read : nil
        } catch {
            bytes = nil
        }
        let data = bytes.map { Data($0) }
        if let data, let stored = try? JSONDecoder().decode(Stored.self, from: data), stored.format == "bessd-mqtt-commands",
           stored.version == 2
        {
            entries = stored.entries
            unprovenUntil = stored.unprovenUntil
        } else if let data, let old = try? JSONDecoder().decode([String: Entry].self, from: data), old.values.allSatisfy({ $0.ack != nil }) {
            entries = old
        } else {
            // Left in place as well as kept: should the save below fail, the next start refuses again.
            let kept: String
            do throws(SystemCallError) {
                kept = "kept as \(try stateFile.quarantine(.keptInPlace, unixSeconds: Int64(now)))"
            } catch {
                kept = "not kept aside: \(error)"
            }
            unprovenUntil = now + Double(DispatchValidator.maxDuration.components.seconds)
            loadProblem = "MQTT_LEDGER_UNREADABLE: \(file) cannot be read (\(kept)); a command delivered again after "
                + "the restart cannot be told from a new one, so every command is refused until "
                + "\(Int(unprovenUntil)) (24 h, the longest a command lives)"
            try? save()
        }
    }

    func verdict(_ id: String, now: Double) -> Verdict {
        if let entry = entries[id] {
            return entry.ack.map { .answered($0) } ?? .refused(CommandAck(
                id: id, accepted: false,
                reason: "MQTT_COMMAND_UNCERTAIN: received before a restart and perhaps acted on then; not acted on again"))
        }
        if now < unprovenUntil {
            return .refused(CommandAck(id: id, accepted: false,
                                       reason: "MQTT_LEDGER_UNREADABLE: the command ledger was lost; this id cannot be proven new"))
        }
        return .new
    }

    /// Records `id` as being acted on, durably, before it is.
    mutating func begin(_ id: String, until: Double, now: Double) throws(SystemCallError) {
        try record(id, Entry(ack: nil, until: until), now: now)
    }

    /// Records the answer, durably, before it is published.
    mutating func finish(_ ack: CommandAck, until: Double, now: Double) throws(SystemCallError) {
        try record(ack.id, Entry(ack: ack, until: until), now: now)
    }

    private mutating func record(_ id: String, _ entry: Entry, now: Double) throws(SystemCallError) {
        guard !id.isEmpty else { return }
        entries = entries.filter { $0.value.until > now }
        if entries[id] == nil, entries.count >= Self.limit, let oldest = entries.min(by: { $0.value.until < $1.value.until }) {
            entries[oldest.key] = nil
        }
        entries[id] = entry
        try save()
    }

    private func save() throws(SystemCallError) {
        guard let file else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(Stored(unprovenUntil: unprovenUntil, entries: entries)) else { return }
        try AtomicFile.write(Array(data), to: file)
    }
}

extension CommandLedger {
    /// What became of one command a transport delivered (`admit`).
    enum Admission: Equatable {
        /// New: acted on (or refused by the site's checks) and recorded; answer with this.
        case handled(CommandAck)
        /// Acted on before (a redelivery, perhaps across a restart): the same answer again, not acted on.
        case repeated(CommandAck)
        /// Cannot be proven new: refused with this answer, not acted on.
        case refused(CommandAck)
    }

    /// One delivered command, acted on at most once per id whatever the transport (HTTP answers,
    /// the MQTT command topic): the id is on disk before `act` runs, and the answer before it is
    /// sent. `unacted` answers a new id without acting on it (MQTT: expired at the broker), and is
    /// recorded all the same. What goes wrong is journalled through `log`, its text prefixed `who`
    /// and every id quoted (`PeerText`).
    mutating func admit(_ command: DispatchCommand, now: Double, who: String, log: (Notice) -> Void,
                        unacted: CommandAck? = nil, act: (DispatchCommand) -> CommandAck) -> Admission {
        let until = command.expiresUnix.isFinite ? min(command.expiresUnix, now + 86_400) : now + 86_400
        switch verdict(command.id, now: now) {
        case .answered(let previous):
            return .repeated(previous)
        case .refused(let refusal):
            let code: UplinkNoticeCode = entries[command.id] != nil ? .commandUncertain : .ledgerUnreadable
            log(Notice(code, "\(who): command \(PeerText.quoted(command.id)) refused, not acted on: \(refusal.reason ?? "")"))
            return .refused(refusal)
        case .new:
            break
        }
        let ack: CommandAck
        if let unacted {
            ack = unacted
        } else {
            // On disk before it acts: a power cut from here on leaves the id in the ledger.
            do throws(SystemCallError) {
                try begin(command.id, until: until, now: now)
                ack = act(command)
            } catch {
                log(Notice(UplinkNoticeCode.ledgerUnwritable,
                           "\(who): the command ledger cannot be written (\(error)); command \(PeerText.quoted(command.id)) refused"))
                ack = CommandAck(id: command.id, accepted: false,
                                 reason: "MQTT_LEDGER_UNWRITABLE: bessd cannot record the command, so it does not act on it")
            }
        }
        do throws(SystemCallError) {
            try finish(ack, until: until, now: now)
        } catch {
            // Acted on, answer not recorded: a redelivery finds the id in progress and is refused.
            log(Notice(UplinkNoticeCode.ledgerUnwritable,
                       "\(who): the command ledger cannot be written (\(error)); the answer to \(PeerText.quoted(command.id)) is sent but not kept"))
        }
        return .handled(ack)
    }
}
