package import BessSystem
public import ControlCore
package import Foundation

/// The site's topic tree, protocol version 1 (docs/uplink-mqtt.md).
public struct UplinkTopics: Sendable, Equatable {
    public let site: String
    public init(site: String) { self.site = site }
    var root: String { "bess/v1/\(site)" }
    /// Record batches, QoS 1, from the spool.
    public var records: String { "\(root)/records" }
    /// Birth and Last Will, retained.
    public var status: String { "\(root)/status" }
    /// The latest availability record, retained.
    public var availability: String { "\(root)/availability" }
    /// Commands to the site, one per message (bessd subscribes).
    public var commands: String { "\(root)/commands" }
    /// bessd's answers to commands.
    public var acks: String { "\(root)/acks" }

    /// The site of a topic under `bess/v1/`, and the last level (`records`, `status`, …).
    public static func parse(_ topic: String) -> (site: String, leaf: String)? {
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "bess", parts[1] == "v1", !parts[2].isEmpty else { return nil }
        return (String(parts[2]), String(parts[3]))
    }
}

/// The birth message and Last Will on `status` (retained).
public struct SiteStatusMessage: Codable, Sendable, Equatable {
    /// `online` or `offline`.
    public var state: String
    public var session: String
    public var version: String?
    public var mode: String?
    public var units: [String]?
    public var time: Double?

    public init(state: String, session: String, version: String? = nil, mode: String? = nil, units: [String]? = nil, time: Double? = nil) {
        self.state = state
        self.session = session
        self.version = version
        self.mode = mode
        self.units = units
        self.time = time
    }
}

/// Delivers the spool over MQTT 5 and takes commands pushed by the aggregator. One thread of its own
/// owns the connection: it publishes record batches (QoS 1) and forgets a batch only after its
/// PUBACK, keeps a birth message and Last Will on `status`, the latest availability on
/// `availability`, and answers each command on `acks` once per id. The cycle never waits on it.
public final class MQTTUplinkSender: UplinkTransport {
    public struct Settings: Sendable {
        public var url: MQTTURL
        public var site: String
        public var caFile: String?
        public var clientCertFile: String?
        public var clientKeyFile: String?
        public var username: String?
        public var passwordFile: String?
        public var keepaliveSeconds: Int32 = 30
        /// How long the broker keeps our session (and the commands sent to it) after we drop.
        public var sessionExpirySeconds: UInt32 = 86_400
        /// The batch rate: on average at most one batch per interval (full batches of a backlog go
        /// back to back). A record is published as soon as it is written when the rate allows: the
        /// limit is a budget (at most two batches in one interval), not a timer, so a record written
        /// once an interval never waits for the sender's phase.
        public var interval: Duration
        public var batchSize = 500
        /// Batches published and not yet acknowledged.
        public var window = 4
        public var minBackoff: Duration = .seconds(1)
        public var maxBackoff: Duration = .seconds(300)
        /// What the birth message tells.
        public var version: String
        public var mode: String
        public var units: [String]
        /// Where the answered command ids are kept across restarts (nil: memory only).
        public var ledgerFile: String?
        /// The client id: one per gateway.
        public var clientID: String
        /// Wait this long before the first connection (a fleet spreads its first connections).
        public var firstAttemptDelay: Duration = .zero

        public init(url: MQTTURL, site: String, interval: Duration, version: String, mode: String, units: [String]) {
            self.url = url
            self.site = site
            self.interval = interval
            self.version = version
            self.mode = mode
            self.units = units
            clientID = "bessd-\(site)"
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var connected = false
        public var connects: UInt64 = 0
        public var batchesPublished: UInt64 = 0
        public var batchesAcknowledged: UInt64 = 0
        public var recordsAcknowledged: UInt64 = 0
        public var failures: UInt64 = 0
        public var lastError: String?
        /// Highest seq whose PUBACK came back.
        public var acknowledged: UInt64 = 0
        public var lastPubackUnix: Double?
        public var commands: UInt64 = 0
        public var commandsRefused: UInt64 = 0
        /// Commands delivered again with an id already answered (answered again, not acted on).
        public var redeliveries: UInt64 = 0
        public var malformedCommands: UInt64 = 0
        /// Receipt → ack published, last command, seconds.
        public var lastCommandLatency: Double?
    }

    package let settings: Settings
    package let queue: SpoolQueue
    let log: @Sendable (_ message: String, _ code: String?) -> Void
    let handleCommands: @Sendable ([DispatchCommand]) -> [CommandAck]
    let statistics = PILock(Statistics())
    let stopping = PILock(false)
    package let finished = DispatchSemaphore(value: 0)
    package let started = PILock(false)
    /// Ends the connection thread's wait at stop (a sender on its own thread; a group has none).
    let wakeup = PILock<Wakeup?>(nil)
    public let session: String

    public init(settings: Settings, queue: SpoolQueue, log: @escaping @Sendable (String, String?) -> Void,
                handleCommands: @escaping @Sendable ([DispatchCommand]) -> [CommandAck]) {
        self.settings = settings
        self.queue = queue
        self.log = log
        self.handleCommands = handleCommands
        session = UUID().uuidString.lowercased()
    }

    public var stats: Statistics { statistics.withLock { $0 } }

    public var topics: UplinkTopics { UplinkTopics(site: settings.site) }

    /// Checks the TLS files and the password, then starts the connection's thread.
    public func start() throws(UplinkError) {
        let link = try Link(sender: self)
        started.withLock { $0 = true }
        let wake = Wakeup()
        wakeup.withLock { $0 = wake }
        queue.onAppend { wake.signal() }
        let thread = Thread { link.run(wakeup: wake) }
        thread.name = "bessd-mqtt"
        thread.start()
    }

    /// Says `offline` on `status`, waits up to a second for outstanding PUBACKs, and disconnects.
    public func stop() {
        guard started.withLock({ $0 }) else { return }
        stopping.withLock { $0 = true }
        wakeup.withLock { $0 }?.signal()
        _ = finished.wait(timeout: .now() + 5)
        queue.onAppend(nil)
    }

    func options() throws(UplinkError) -> MQTTConnection.Options {
        var o = MQTTConnection.Options(url: settings.url, clientID: settings.clientID, cleanStart: false,
                                       sessionExpirySeconds: settings.sessionExpirySeconds)
        o.keepaliveSeconds = settings.keepaliveSeconds
        o.caFile = settings.caFile
        o.clientCertFile = settings.clientCertFile
        o.clientKeyFile = settings.clientKeyFile
        o.username = settings.username
        if let file = settings.passwordFile {
            guard let password = try? String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            else { throw UplinkError(.tokenUnreadable, message: "cannot read the password from \(file)") }
            o.password = password
        }
        o.will = (topics.status, Self.json(SiteStatusMessage(state: "offline", session: session)), true)
        // A command is acknowledged to the broker only after it was acted on and its id kept.
        o.acknowledgeAfterStore = true
        for path in [settings.caFile, settings.clientCertFile, settings.clientKeyFile].compactMap({ $0 })
        where !FileManager.default.isReadableFile(atPath: path) {
            throw UplinkError(.tlsConfig, message: "cannot read \(path)")
        }
        return o
    }

    static func json<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(value)) ?? Data())
    }

    /// Everything that lives on the connection's thread.
    package final class Link: @unchecked Sendable {
        package unowned let sender: MQTTUplinkSender
        package var connection: MQTTConnection!
        package var open = false
        package var connected = false
        var backoff: Backoff
        package var inflight: [(mid: Int32, last: UInt64, count: Int, done: Bool)] = []
        package var publishedThrough: UInt64 = 0
        package var nextPublish = SystemClock.shared.now()
        var pacer: BatchPacer
        var unsentAcks: [[UInt8]] = []
        var reported: UplinkError.Code?
        var ledger: CommandLedger
        var lastAvailability: [UInt8]?
        package var nextAttempt = SystemClock.shared.now()

        package init(sender: MQTTUplinkSender) throws(UplinkError) {
            self.sender = sender
            backoff = Backoff(first: sender.settings.minBackoff, maximum: sender.settings.maxBackoff)
            ledger = CommandLedger(file: sender.settings.ledgerFile)
            if let problem = ledger.loadProblem { sender.log("uplink (MQTT): \(problem)", "MQTT_LEDGER_UNREADABLE") }
            pacer = BatchPacer(interval: sender.settings.interval, now: SystemClock.shared.now())
            nextAttempt = SystemClock.shared.now() + sender.settings.firstAttemptDelay
            let options = try sender.options()
            connection = try MQTTConnection(options) { [unowned self] event in self.handle(event) }
        }

        var topics: UplinkTopics { sender.topics }

        /// The connection's own thread (bessd): one link. It sleeps on its socket and `wakeup` until
        /// something arrives, the socket can take what is queued, the next batch is due, or a second
        /// has passed (the keepalive check): about one wake-up a second on a quiet link.
        func run(wakeup: Wakeup) {
            defer { sender.finished.signal() }
            while !sender.stopping.withLock({ $0 }) {
                if !open {
                    let wait = nextAttempt - SystemClock.shared.now()
                    if wait > .zero {
                        wakeup.wait(until: SystemClock.shared.now() + wait)
                        continue
                    }
                    attempt()
                    continue
                }
                var fds = [pollfd(fd: connection.socket, events: Int16(POLLIN) | (connection.wantsWrite ? Int16(POLLOUT) : 0), revents: 0),
                           pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 2, sleepMilliseconds(now: SystemClock.shared.now()))
                if fds[1].revents != 0 { wakeup.drain() }
                service(readable: fds[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0)
            }
            if open && connected { goOffline() }
        }

        /// How long the link may sleep with nothing arriving: until its next batch is due, at most a
        /// second (the keepalive check), rounded up to the millisecond.
        func sleepMilliseconds(now: MonotonicInstant) -> Int32 {
            var wait = Duration.seconds(1)
            if connected, inflight.count < sender.settings.window, sender.queue.newest > publishedThrough {
                wait = min(wait, max(.zero, nextPublish - now))
            }
            return Int32((wait.nanosecondsClamped + 999_999) / 1_000_000)
        }

        /// Opens the connection when its back-off has passed; never sleeps.
        package func attempt() {
            guard !open, SystemClock.shared.now() >= nextAttempt else { return }
            do {
                try connection.connect()
                open = true
            } catch {
                fail(error)
                nextAttempt = SystemClock.shared.now() + backoff.next()
            }
        }

        /// After what arrived on the socket was read (`readable`): publishes and sends what is due.
        /// Used by the link's own thread (bessd) and by a thread that drives many links at once
        /// (bess-hil fleet); never sleeps.
        package func service(readable: Bool) {
            guard open else { return }
            do {
                if readable { try connection.read() }
                if connected { try publishPending() }
                try connection.flush()
            } catch {
                dropped(error)
            }
        }

        /// A failure: counted, logged once per code (the caller backs off).
        package func fail(_ error: UplinkError, connectionDown: Bool = true) {
            sender.statistics.withLock {
                $0.failures &+= 1
                $0.lastError = error.code.description
                if connectionDown { $0.connected = false }
            }
            if reported != error.code { sender.log("uplink (MQTT): \(error); retrying with back-off", error.code.description) }
            reported = error.code
        }

        func dropped(_ error: UplinkError) {
            open = false
            connected = false
            // Whatever was not acknowledged goes again from the spool (the aggregator keeps a seq once).
            inflight.removeAll()
            publishedThrough = 0
            fail(error)
            nextAttempt = SystemClock.shared.now() + backoff.next()
        }

        func handle(_ event: MQTTConnection.Event) {
            switch event {
            case .connected(let reason, let present):
                guard reason == 0 else {
                    fail(UplinkError(.mqttRefused, message: "the broker refused the connection: \(MQTTConnection.reasonText(reason)) (\(reason))"))
                    return
                }
                connected = true
                backoff.reset()
                sender.statistics.withLock {
                    $0.connected = true
                    $0.connects &+= 1
                    $0.lastError = nil
                }
                if reported != nil || sender.stats.connects == 1 {
                    sender.log("uplink (MQTT) connected to \(sender.settings.url.host):\(sender.settings.url.port) as \(sender.settings.clientID)"
                               + (present ? " (session kept)" : " (new session)"), nil)
                }
                reported = nil
                let birth = SiteStatusMessage(state: "online", session: sender.session, version: sender.settings.version,
                                              mode: sender.settings.mode, units: sender.settings.units, time: Date().timeIntervalSince1970)
                do {
                    try connection.publish(topics.status, MQTTUplinkSender.json(birth), retain: true)
                    try connection.subscribe(topics.commands)
                    if let lastAvailability { try connection.publish(topics.availability, lastAvailability, retain: true) }
                    while let ack = unsentAcks.first {
                        try connection.publish(topics.acks, ack)
                        unsentAcks.removeFirst()
                    }
                } catch {
                    fail(error)
                }
            case .disconnected(let reason):
                connected = false
                sender.statistics.withLock { $0.connected = false }
                if reason != 0 { fail(UplinkError(.mqttConnectionLost, message: MQTTConnection.reasonText(reason))) }
            case .published(let mid, let reason):
                acknowledged(mid: mid, reason: reason)
            case .message(let topic, let payload, _, _, let expiry):
                guard topic == topics.commands else { return }
                command(payload, expiry: expiry)
            case .subscribed(_, let granted):
                if granted.contains(where: { $0 >= 128 }) {
                    fail(UplinkError(.mqttSubscribeRefused, message: "the broker refused the subscription to \(topics.commands)"),
                         connectionDown: false)
                }
            }
        }

        func publishPending() throws(UplinkError) {
            // Nothing new since the last batch: nothing to read (an atomic load, no lock); the append
            // wakes this link's thread (bessd) or its group's next sweep (10 ms) finds it.
            let newest = sender.queue.newest
            guard inflight.count < sender.settings.window, newest > publishedThrough, SystemClock.shared.now() >= nextPublish else { return }
            let records: [SpoolRecord]
            do {
                records = try sender.queue.records(after: publishedThrough, limit: sender.settings.batchSize)
            } catch {
                // The spool's own code (SPOOL_FULL, SPOOL_IO…); the broker's link is still up.
                fail(UplinkError(spool: error), connectionDown: false)
                nextPublish = SystemClock.shared.now() + sender.settings.interval
                return
            }
            guard let last = records.last else {
                // Everything up to `newest` is acknowledged already.
                publishedThrough = max(publishedThrough, newest)
                return
            }
            var body = Array("{\"protocol_version\":\(UplinkProtocol.version),\"site\":".utf8)
            body += MQTTUplinkSender.json(sender.settings.site)
            body += Array(",\"acks\":[],\"records\":[".utf8)
            var availability: [UInt8]?
            for (i, record) in records.enumerated() {
                if i > 0 { body.append(0x2C) }
                body += record.payload
                if Self.isAvailability(record.payload) { availability = record.payload }
            }
            body += Array("]}".utf8)
            let mid = try connection.publish(topics.records, body)
            inflight.append((mid, last.seq, records.count, false))
            publishedThrough = last.seq
            sender.statistics.withLock { $0.batchesPublished &+= 1 }
            if let availability {
                lastAvailability = availability
                try connection.publish(topics.availability, availability, retain: true)
            }
            if records.count < sender.settings.batchSize && last.seq >= sender.queue.newest { nextPublish = max(nextPublish, pacer.sent(at: SystemClock.shared.now())) }
        }

        static func isAvailability(_ payload: [UInt8]) -> Bool {
            // Records are written by our own encoder: `"type":"availability"` appears verbatim.
            let needle = Array("\"type\":\"availability\"".utf8)
            guard payload.count >= needle.count else { return false }
            for start in 0...(payload.count - needle.count) where payload[start] == needle[0] {
                if payload[start..<(start + needle.count)].elementsEqual(needle) { return true }
            }
            return false
        }

        func acknowledged(mid: Int32, reason: Int32) {
            guard let i = inflight.firstIndex(where: { $0.mid == mid }) else { return }  // a birth, ack or earlier connection
            // 16, no matching subscribers: no aggregator (nor its persistent session) took the batch, and
            // the broker dropped it. It stays in the spool and goes again after a back-off.
            guard reason < 128 && reason != 16 else {
                if reason == 16 {
                    fail(UplinkError(.mqttNoSubscriber, message: "no aggregator subscribes to \(topics.records); the records stay in the spool"),
                         connectionDown: false)
                } else {
                    // The broker refused the batch (not authorized, quota…): send it again later.
                    fail(UplinkError(.mqttPublishRefused, message: "the broker refused a record batch: \(MQTTConnection.reasonText(reason)) (\(reason))"),
                         connectionDown: false)
                }
                inflight.removeAll()
                publishedThrough = 0
                nextPublish = SystemClock.shared.now() + backoff.next()
                return
            }
            inflight[i].done = true
            if reported != nil {
                sender.log("uplink (MQTT) delivering again", nil)
                reported = nil
                sender.statistics.withLock { $0.lastError = nil }
            }
            backoff.reset()
            var through: UInt64 = 0
            var records = 0
            var batches = 0
            while let first = inflight.first, first.done {
                through = first.last
                records += first.count
                batches += 1
                inflight.removeFirst()
            }
            guard through > 0 else { return }
            do {
                try sender.queue.acknowledge(upTo: through)
            } catch {
                fail(UplinkError(spool: error), connectionDown: false)
            }
            sender.statistics.withLock {
                $0.batchesAcknowledged &+= UInt64(batches)
                $0.recordsAcknowledged &+= UInt64(records)
                $0.acknowledged = max($0.acknowledged, through)
                $0.lastPubackUnix = Date().timeIntervalSince1970
            }
        }

        /// One command from the command topic: validated and acted on once per id, answered on `acks`.
        func command(_ payload: [UInt8], expiry: UInt32?) {
            let received = SystemClock.shared.now()
            let now = Date().timeIntervalSince1970
            let ack: CommandAck
            switch MQTTUplinkSender.decodeCommand(payload) {
            case .malformed(let refusal):
                sender.statistics.withLock { $0.malformedCommands &+= 1 }
                sender.log("uplink (MQTT): a \(payload.count)-byte message on the command topic is not a command "
                           + "(id \(refusal.id.isEmpty ? "none" : PeerText.quoted(refusal.id))); refused", "MQTT_COMMAND_MALFORMED")
                ack = refusal
            case .command(let command):
                let expired = expiry == 0
                    ? CommandAck(id: command.id, accepted: false, reason: "MQTT_COMMAND_EXPIRED: the message expired at the broker") : nil
                let admission = ledger.admit(command, now: now, who: "uplink (MQTT)", log: sender.log, unacted: expired) { command in
                    sender.handleCommands([command]).first ?? CommandAck(id: command.id, accepted: false, reason: "not handled")
                }
                switch admission {
                case .repeated(let previous):
                    sender.statistics.withLock { $0.redeliveries &+= 1 }
                    publishAck(previous)
                    return
                case .refused(let refusal):
                    sender.statistics.withLock {
                        $0.redeliveries &+= 1
                        $0.commandsRefused &+= 1
                    }
                    publishAck(refusal)
                    return
                case .handled(let handled):
                    ack = handled
                }
                sender.statistics.withLock {
                    $0.commands &+= 1
                    if !ack.accepted { $0.commandsRefused &+= 1 }
                }
            }
            publishAck(ack)
            let latency = (SystemClock.shared.now() - received)
            sender.statistics.withLock {
                $0.lastCommandLatency = Double(latency.components.seconds) + Double(latency.components.attoseconds) * 1e-18
            }
        }

        func publishAck(_ ack: CommandAck) {
            let bytes = MQTTUplinkSender.json(ack)
            do {
                try connection.publish(topics.acks, bytes)
            } catch {
                unsentAcks.append(bytes)
            }
        }

        /// A clean stop: the last PUBACKs (up to a second), `offline` on status, DISCONNECT.
        package func goOffline() {
            let end = SystemClock.shared.now() + .seconds(1)
            while !inflight.isEmpty, SystemClock.shared.now() < end {
                do { try connection.loop(timeoutMilliseconds: 50) } catch { break }
            }
            let offline = SiteStatusMessage(state: "offline", session: sender.session, time: Date().timeIntervalSince1970)
            _ = try? connection.publish(topics.status, MQTTUplinkSender.json(offline), retain: true)
            for _ in 0..<4 { _ = try? connection.loop(timeoutMilliseconds: 20) }
            connection.disconnect()
            sender.statistics.withLock { $0.connected = false }
        }
    }
}

/// A message from the command topic, read: a command, or the refusal to answer it with.
public enum DecodedCommand: Sendable {
    case command(DispatchCommand)
    case malformed(CommandAck)
}

extension MQTTUplinkSender {
    /// The largest message the command topic takes.
    public static let maxCommandBytes = 65_536

    /// One message from the command topic: one command object as the OpenAPI document defines it,
    /// or the refusal to publish on `acks` (`MQTT_COMMAND_MALFORMED`, with the message's `id` when
    /// it has a readable one). Validation against the site is the intake's, after this.
    public static func decodeCommand(_ payload: [UInt8]) -> DecodedCommand {
        guard payload.count <= maxCommandBytes else {
            return .malformed(CommandAck(id: "", accepted: false, reason: "MQTT_COMMAND_MALFORMED: larger than 64 KiB"))
        }
        if let command = try? JSONDecoder().decode(DispatchCommand.self, from: Data(payload)) { return .command(command) }
        let id = (try? JSONDecoder().decode(IdentifiedMessage.self, from: Data(payload)))?.id ?? ""
        return .malformed(CommandAck(id: String(id.prefix(128)), accepted: false,
                                   reason: "MQTT_COMMAND_MALFORMED: not a command object as the uplink OpenAPI document defines it"))
    }
}

/// What a refused command message may still say: its `id`, when that is a string (any other message,
/// or an `id` of another type, has none).
private struct IdentifiedMessage: Decodable {
    var id: String?
}

/// The batch rate budget of the MQTT uplink (the generic cell rate algorithm): on average one batch
/// per interval, at most two within one interval. A budget rather than a timer: a record written once
/// an interval goes out when it is written, whatever the phase between the writer and the sender,
/// and the phase does not drift.
struct BatchPacer {
    let interval: Duration
    /// The theoretical time of the next batch: a batch may go from `paced - interval` on.
    private var paced: MonotonicInstant

    init(interval: Duration, now: MonotonicInstant) {
        self.interval = interval
        paced = now
    }

    /// A batch went at `now`; returns the earliest instant the next may go.
    mutating func sent(at now: MonotonicInstant) -> MonotonicInstant {
        paced = max(paced, now) + interval
        return paced - interval
    }
}
