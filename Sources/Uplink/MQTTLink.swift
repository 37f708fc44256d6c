import BessBase
package import BessSystem
package import ControlCore
import Foundation
import Glibc
import Synchronization

/// Everything of one MQTT uplink sender that lives on its connection's thread (bessd's own, or a
/// `bess-hil fleet` group's): the connection, what is in flight, the pacer, the command ledger.
package final class MQTTUplinkLink: @unchecked Sendable {
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
        if let problem = ledger.loadProblem { sender.log(Notice(UplinkNoticeCode.ledgerUnreadable, "uplink (MQTT): \(problem)")) }
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
        if reported != error.code { sender.log(.uplink("uplink (MQTT): \(error); retrying with back-off", failed: error.code)) }
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
                sender.log(.uplink("uplink (MQTT) connected to \(sender.settings.url.host):\(sender.settings.url.port) as \(sender.settings.clientID)"
                                       + (present ? " (session kept)" : " (new session)")))
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
            sender.log(.uplink("uplink (MQTT) delivering again"))
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
            sender.log(Notice(UplinkNoticeCode.commandMalformed,
                              "uplink (MQTT): a \(payload.count)-byte message on the command topic is not a command "
                                  + "(id \(refusal.id.isEmpty ? "none" : PeerText.quoted(refusal.id))); refused"))
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
