import BessSystem
import ControlCore
import Foundation
import Glibc
import Uplink
import UplinkIngest

/// The aggregator's side of the MQTT transport. Record batches arrive through the shared subscription
/// `$share/bess-aggregator/bess/v1/+/records`, so instances split the fleet; each read is stored in one
/// transaction and only then are its PUBACKs sent, so an instance killed before its commit leaves the
/// messages with the broker, which sends them again. Birth and Last Will (`status`) are followed by
/// every instance; acks are shared. Commands are pushed on the site's command topic.
final class MQTTConsumer: @unchecked Sendable {
    struct Statistics: Sendable {
        var connected = false
        var batches: UInt64 = 0
        var records: UInt64 = 0
        var redelivered: UInt64 = 0
        /// Messages refused: not decodable, not storable, or refused at ingest (`IngestRules`).
        var malformed: UInt64 = 0
        var storeFailures: UInt64 = 0
    }

    static let group = "bess-aggregator"
    let options: MQTTConnection.Options
    let store: any RecordStore
    let statistics = PILock(Statistics())
    /// Commands go out on a connection of their own, so they never wait behind a commit.
    let publisher: CommandPublisher
    /// Only one consumer of an instance follows birth and Last Will (the others share records and acks).
    let followsStatus: Bool
    var connection: MQTTConnection!
    var open = false
    var backoff = Backoff(first: .milliseconds(500), maximum: .seconds(30))
    var pendingBatches: [(site: String, received: ReceivedBatch)] = []
    var pendingAcks: [(site: String, ack: CommandAck)] = []
    var pendingStatus: [(site: String, message: SiteStatusMessage)] = []
    /// When the oldest message not yet stored was read; nil when nothing waits.
    var pendingSince: MonotonicInstant?
    /// Messages are stored together once the oldest has waited this long, or `storeAt` are waiting
    /// (the broker sends no more than that unacknowledged): one transaction per message burst cost
    /// several times the CPU per record.
    static let storeWindow = Duration.milliseconds(50)
    static let storeAt = 1000
    /// When a refusal was last logged (nil before the first), and how many were refused since without a line.
    var lastRefusalLogged: MonotonicInstant?
    var refusalsNotLogged = 0

    init(url: MQTTURL, clientID: String, store: any RecordStore, caFile: String?, certFile: String?, keyFile: String?,
         username: String?, password: String?, publisher: CommandPublisher, followsStatus: Bool) throws(UplinkError) {
        self.publisher = publisher
        self.followsStatus = followsStatus
        var o = MQTTConnection.Options(url: url, clientID: clientID, cleanStart: false, sessionExpirySeconds: 3600)
        o.acknowledgeAfterStore = true
        o.receiveMaximum = Int32(Self.storeAt)
        o.caFile = caFile
        o.clientCertFile = certFile
        o.clientKeyFile = keyFile
        o.username = username
        o.password = password
        options = o
        self.store = store
        connection = try MQTTConnection(o) { [unowned self] event in self.handle(event) }
    }

    var stats: Statistics { statistics.withLock { $0 } }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "aggregator-mqtt"
        thread.start()
    }


    func run() {
        while true {
            if !open {
                do {
                    try connection.connect()
                    open = true
                } catch {
                    lost("\(error)")
                    continue
                }
            }
            do {
                var poller = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                var timeout: Int64 = 20
                if let since = pendingSince {
                    timeout = min(timeout, max(0, (since + Self.storeWindow - SystemClock.shared.now()).nanosecondsClamped / 1_000_000))
                }
                if poll(&poller, 1, Int32(timeout)) > 0 {
                    // Everything that has arrived, up to a bound.
                    var reads = 0
                    repeat {
                        try connection.read()
                        reads += 1
                        poller.revents = 0
                    } while reads < Self.storeAt && poll(&poller, 1, 0) > 0
                }
                let waiting = pendingBatches.count + pendingAcks.count + pendingStatus.count
                if waiting > 0, pendingSince == nil { pendingSince = SystemClock.shared.now() }
                // Then one transaction for the window's messages.
                if let since = pendingSince,
                   waiting >= Self.storeAt || SystemClock.shared.now() - since >= Self.storeWindow {
                    try storePending()
                }
                // A flush sends every PUBACK libmosquitto has queued: only once what was read is
                // stored, or a crash or a lost connection in the window loses what was acknowledged.
                if pendingSince == nil { try connection.flush() }
            } catch {
                lost("\(error)")
            }
        }
    }

    func lost(_ why: String) {
        if open || statistics.withLock({ $0.connected }) {
            FileHandle.standardError.write(Data("bess-aggregator: MQTT connection lost (\(why)); reconnecting\n".utf8))
        }
        open = false
        statistics.withLock { $0.connected = false }
        // What was read and not stored is not acknowledged: the broker sends it again.
        pendingBatches.removeAll()
        pendingAcks.removeAll()
        pendingStatus.removeAll()
        pendingSince = nil
        Thread.sleep(forTimeInterval: backoff.next().secondsDouble)
    }

    /// Stores what was read, retrying while the database is away; PUBACKs wait for it.
    func storePending() throws(UplinkError) {
        guard !pendingBatches.isEmpty || !pendingAcks.isEmpty || !pendingStatus.isEmpty else { return }
        let batches = pendingBatches, acks = pendingAcks, statuses = pendingStatus
        let store = self.store
        var attempt = Backoff(first: .milliseconds(200), maximum: .seconds(5))
        var onlineSites: [String] = []
        while true {
            // A database call that never returns (a pool wedged by a server restart) counts as a
            // failure after 30 s, and the store makes its connections anew.
            let outcome = blocking(timeout: 30) { () async throws -> [String] in
                let now = Date().timeIntervalSince1970
                if !batches.isEmpty { _ = try await store.store(batches, now: now, handOutCommands: false) }
                if !acks.isEmpty { try await store.record(acks: acks, now: now) }
                // One statement for the window's statuses (a broker restart brings thousands at once;
                // a query each held this consumer's records for seconds).
                try await store.setStatuses(statuses, now: now)
                var seen = Set<ExactText>()
                return statuses.compactMap { $0.message.state == "online" && seen.insert(ExactText($0.site)).inserted ? $0.site : nil }
            }
            switch outcome {
            case .success(let sites):
                onlineSites = sites
            case .failure(let error):
                statistics.withLock { $0.storeFailures &+= 1 }
                FileHandle.standardError.write(Data("bess-aggregator: storing failed (\(error)); retrying, acknowledgements held\n".utf8))
                store.renew()
                Thread.sleep(forTimeInterval: attempt.next().secondsDouble)
                // Keepalive cannot go out without the held PUBACKs; past the keepalive the broker drops us and resends.
                continue
            }
            break
        }
        statistics.withLock {
            $0.batches &+= UInt64(batches.count)
            $0.records &+= UInt64(batches.reduce(0) { $0 + $1.received.batch.records.count })
        }
        pendingBatches.removeAll()
        pendingAcks.removeAll()
        pendingStatus.removeAll()
        pendingSince = nil
        // A site that comes online gets its unanswered commands again (bessd acts on an id once):
        // looked up for all of the window's sites at once.
        let online = onlineSites
        guard !online.isEmpty else { return }
        // Bounded like the store: a wedged pool must not hold this consumer (and its PUBACKs).
        switch blocking(timeout: 30, { try await store.unanswered(sites: online, now: Date().timeIntervalSince1970) }) {
        case .success(let bySite):
            for site in online {
                for command in bySite[ExactText(site)] ?? [] { publisher.push(site: site, command: command, now: Date().timeIntervalSince1970) }
            }
        case .failure(let error):
            // The records are stored; these sites' unanswered commands wait for their next birth.
            FileHandle.standardError.write(Data(
                "bess-aggregator: looking up the unanswered commands of \(online.count) sites that came online failed (\(error)); they are pushed at their next connect\n".utf8))
        }
    }

    func handle(_ event: MQTTConnection.Event) {
        switch event {
        case .connected(let reason, _):
            guard reason == 0 else {
                FileHandle.standardError.write(Data("bess-aggregator: the broker refused us: \(MQTTConnection.reasonText(reason))\n".utf8))
                return
            }
            backoff.reset()
            statistics.withLock { $0.connected = true }
            _ = try? connection.subscribe("$share/\(Self.group)/bess/v1/+/records")
            _ = try? connection.subscribe("$share/\(Self.group)/bess/v1/+/acks")
            if followsStatus { _ = try? connection.subscribe("bess/v1/+/status") }
        case .message(let topic, let payload, _, _, _):
            guard let (site, leaf) = UplinkTopics.parse(topic) else {
                statistics.withLock { $0.malformed &+= 1 }
                return
            }
            if let refusal = IngestRules.check(site: site) {
                refuse(refusal, leaf: leaf)
                return
            }
            // Its size before anything of it is decoded (config/mosquitto's broker refuses a larger
            // packet; a broker without that limit still does not make this consumer decode one).
            if let refusal = IngestRules.check(payloadBytes: payload.count) {
                refuse(refusal, leaf: leaf, site: site)
                return
            }
            switch leaf {
            case "records":
                guard let received = try? ReceivedBatch(payload: payload), received.batch.site == site,
                      received.batch.protocolVersion == UplinkProtocol.version, unstorable(received.batch) == nil
                else {
                    statistics.withLock { $0.malformed &+= 1 }
                    return
                }
                if let refusal = IngestRules.check(received.batch) {
                    refuse(refusal, leaf: leaf, site: site)
                    return
                }
                pendingBatches.append((site, received))
            case "acks":
                guard let ack = try? JSONDecoder().decode(CommandAck.self, from: Data(payload)),
                      unstorable(RecordBatch(site: site, records: [], acks: [ack])) == nil
                else {
                    statistics.withLock { $0.malformed &+= 1 }
                    return
                }
                pendingAcks.append((site, ack))
            case "status":
                guard let message = try? JSONDecoder().decode(SiteStatusMessage.self, from: Data(payload)) else {
                    statistics.withLock { $0.malformed &+= 1 }
                    return
                }
                if let refusal = IngestRules.check(status: message) {
                    refuse(refusal, leaf: leaf, site: site)
                    return
                }
                pendingStatus.append((site, message))
            default:
                break
            }
        case .disconnected, .published, .subscribed:
            break
        }
    }
}

extension MQTTConsumer {
    /// A message refused at ingest: counted as malformed and logged with its code (the gateway's
    /// texts in the line are escaped and cut short by `IngestRules`); nothing of it is stored, and
    /// its PUBACK goes out with the window's, so the broker does not send it again.
    /// At most one line a second: a gateway that keeps sending what is refused does not flood the log.
    func refuse(_ refusal: IngestRefusal, leaf: String, site: String? = nil) {
        statistics.withLock { $0.malformed &+= 1 }
        let now = SystemClock.shared.now()
        if let last = lastRefusalLogged, now - last < .seconds(1) {
            refusalsNotLogged += 1
            return
        }
        let from = site.map { "site \($0)" } ?? "a gateway"
        let more = refusalsNotLogged > 0 ? " (\(refusalsNotLogged) more refused since the last line)" : ""
        lastRefusalLogged = now
        refusalsNotLogged = 0
        FileHandle.standardError.write(Data("bess-aggregator: refused \(IngestRules.quoted(leaf, limit: 16)) from \(from): \(refusal)\(more)\n".utf8))
    }
}

/// The aggregator's command connection: a thread of its own publishes queued commands at once
/// (QoS 1, expiring with the command) on the site's command topic.
final class CommandPublisher: @unchecked Sendable {
    let outbox = PILock<[(topic: String, payload: [UInt8], expiry: UInt32)]>([])
    let published = PILock<UInt64>(0)
    var connection: MQTTConnection!
    var open = false
    var backoff = Backoff(first: .milliseconds(500), maximum: .seconds(30))

    init(_ options: MQTTConnection.Options) throws(UplinkError) {
        var o = options
        o.cleanStart = true
        o.sessionExpirySeconds = 0
        o.acknowledgeAfterStore = false
        connection = try MQTTConnection(o) { _ in }
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "aggregator-commands"
        thread.start()
    }

    /// A command to a site, published as soon as the thread sees it (within 10 ms).
    func push(site: String, command: DispatchCommand, now: Double) {
        let payload = Array((try? JSONEncoder().encode(command)) ?? Data())
        let expiry = UInt32(max(1, min(86_400, (command.expiresUnix - now).rounded(.up))))
        outbox.withLock { $0.append((UplinkTopics(site: site).commands, payload, expiry)) }
    }

    func run() {
        while true {
            if !open {
                do {
                    try connection.connect()
                    open = true
                    backoff.reset()
                } catch {
                    Thread.sleep(forTimeInterval: backoff.next().secondsDouble)
                    continue
                }
            }
            do {
                let items = outbox.withLock { list in
                    defer { list.removeAll() }
                    return list
                }
                for (i, item) in items.enumerated() {
                    do {
                        try connection.publish(item.topic, item.payload, expirySeconds: item.expiry)
                        published.withLock { $0 &+= 1 }
                    } catch {
                        // Not sent: back in the outbox, in order, for the next connection.
                        let rest = Array(items[i...])
                        outbox.withLock { $0.insert(contentsOf: rest, at: 0) }
                        throw error
                    }
                }
                try connection.loop(timeoutMilliseconds: 10)
            } catch {
                open = false
                Thread.sleep(forTimeInterval: backoff.next().secondsDouble)
            }
        }
    }
}

struct StoreTimeout: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "STORE_TIMEOUT: the database did not answer within \(Int(seconds)) s" }
}

/// Runs async work on the calling thread (the consumer's own thread, never a cycle) until it ends or
/// `timeout` seconds pass.
func blocking<T: Sendable>(timeout: Double = .infinity, _ work: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
    let done = DispatchSemaphore(value: 0)
    let box = PILock<Result<T, any Error>?>(nil)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await work()) } catch { result = .failure(error) }
        box.withLock { $0 = result }
        done.signal()
    }
    if timeout.isFinite {
        if done.wait(timeout: .now() + timeout) == .timedOut { return .failure(StoreTimeout(seconds: timeout)) }
    } else {
        done.wait()
    }
    return box.withLock { $0! }
}
