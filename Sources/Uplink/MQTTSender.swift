public import BessBase
public import BessSystem
import ControlCore
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
    let log: @Sendable (Notice) -> Void
    let handleCommands: @Sendable ([DispatchCommand]) -> [CommandAck]
    let statistics = PILock(Statistics())
    let stopping = PILock(false)
    package let finished = DispatchSemaphore(value: 0)
    package let started = PILock(false)
    /// Ends the connection thread's wait at stop (a sender on its own thread; a group has none).
    let wakeup = PILock<Wakeup?>(nil)
    public let session: String

    public init(settings: Settings, queue: SpoolQueue, log: @escaping @Sendable (Notice) -> Void,
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

    /// Everything that lives on the connection's thread (`MQTTUplinkLink`).
    package typealias Link = MQTTUplinkLink

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
