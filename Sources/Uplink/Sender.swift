public import BessBase
public import BessSystem
import ControlCore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// Delivers the spool to the aggregator: batches in seq order, `Authorization: Bearer` from the token
/// file (read on every attempt, so a rotated token is picked up), TLS with a configurable CA and an
/// optional client certificate, and exponential back-off with full jitter after a failure so a fleet
/// does not stampede a recovering aggregator. Memory is bounded by the batch size. Runs on its own
/// task; the cycle never waits for it.
public final class UplinkSender: UplinkTransport {
    public struct Settings: Sendable {
        public var url: String
        public var site: String
        public var tokenFile: String?
        public var caFile: String?
        public var clientCertFile: String?
        public var clientKeyFile: String?
        /// Pause when everything is delivered.
        public var interval: Duration
        public var batchSize = 500
        public var timeout: Duration = .seconds(10)
        public var minBackoff: Duration = .seconds(1)
        public var maxBackoff: Duration = .seconds(300)
        /// The command ledger (`CommandLedger`, shared with the MQTT transport): an id in the
        /// aggregator's answers is acted on once, across restarts. Nil: in memory only.
        public var ledgerFile: String?

        public init(url: String, site: String, tokenFile: String?, caFile: String?, clientCertFile: String?,
                    clientKeyFile: String?, interval: Duration) {
            self.url = url
            self.site = site
            self.tokenFile = tokenFile
            self.caFile = caFile
            self.clientCertFile = clientCertFile
            self.clientKeyFile = clientKeyFile
            self.interval = interval
        }
    }

    /// What the sender has done, for status, metrics and tests.
    public struct Statistics: Sendable, Equatable {
        public var batchesDelivered: UInt64 = 0
        public var recordsDelivered: UInt64 = 0
        public var failures: UInt64 = 0
        public var lastError: String?
        public var acknowledged: UInt64 = 0
        /// Commands whose id the ledger had seen: answered again, or refused, not acted on.
        public var redeliveries: UInt64 = 0
    }

    let settings: Settings
    let queue: SpoolQueue
    let log: @Sendable (Notice) -> Void
    let handleCommands: @Sendable ([DispatchCommand]) -> [CommandAck]
    let statistics = PILock(Statistics())
    let task = PILock<Task<Void, Never>?>(nil)

    public init(settings: Settings, queue: SpoolQueue, log: @escaping @Sendable (Notice) -> Void,
                handleCommands: @escaping @Sendable ([DispatchCommand]) -> [CommandAck]) {
        self.settings = settings
        self.queue = queue
        self.log = log
        self.handleCommands = handleCommands
    }

    public var stats: Statistics { statistics.withLock { $0 } }

    /// Connected once a batch went through and nothing failed since.
    public var link: UplinkLink {
        let s = stats
        return UplinkLink(connected: s.lastError == nil && s.batchesDelivered > 0, lastError: s.lastError)
    }

    public func start() throws(UplinkError) {
        let client: HTTPClient
        do {
            client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: try configuration())
        } catch {
            throw UplinkError(.tlsConfig, message: "\(error)")
        }
        task.withLock { $0 = Task.detached { [self] in await self.run(client) } }
    }

    public func stop() {
        let running = task.withLock { t -> Task<Void, Never>? in
            let current = t
            t = nil
            return current
        }
        running?.cancel()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await running?.value
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
    }

    func configuration() throws -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let ca = settings.caFile { tls.trustRoots = .file(ca) }
        if let cert = settings.clientCertFile, let key = settings.clientKeyFile {
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(Int64(settings.timeout.components.seconds)))
        return configuration
    }

    func run(_ client: HTTPClient) async {
        var backoff = Backoff(first: settings.minBackoff, maximum: settings.maxBackoff)
        var acks: [CommandAck] = []
        var reported: UplinkError.Code?
        var ledger = CommandLedger(file: settings.ledgerFile)
        if let problem = ledger.loadProblem { log(Notice(UplinkNoticeCode.ledgerUnreadable, "uplink: \(problem)")) }
        while !Task.isCancelled {
            let records: [SpoolRecord]
            do {
                records = try queue.pending(limit: settings.batchSize)
            } catch {
                log(.uplink("uplink cannot read the spool: \(error)", failed: error.code))
                try? await Task.sleep(for: settings.interval)
                continue
            }
            if records.isEmpty && acks.isEmpty {
                try? await Task.sleep(for: settings.interval)
                continue
            }
            do {
                let (acked, commands) = try await deliver(records, acks: acks, client: client)
                acks = []
                if acked > 0 { try queue.acknowledge(upTo: acked) }
                statistics.withLock {
                    $0.batchesDelivered &+= 1
                    $0.recordsDelivered &+= UInt64(records.count)
                    $0.acknowledged = max($0.acknowledged, acked)
                    $0.lastError = nil
                }
                if reported != nil { log(.uplink("uplink delivering again")) }
                reported = nil
                backoff.reset()
                if !commands.isEmpty { acks = admit(commands, ledger: &ledger) }
                if records.count < settings.batchSize && (records.last?.seq ?? 0) >= queue.newest && acks.isEmpty { try? await Task.sleep(for: settings.interval) }
            } catch {
                if Task.isCancelled || error is CancellationError { break }  // stopping, not failing
                let code = (error as? UplinkError)?.code ?? .unreachable
                statistics.withLock {
                    $0.failures &+= 1
                    $0.lastError = code.description
                }
                if reported != code { log(.uplink("uplink: \(error); retrying with back-off", failed: code)) }
                reported = code
                // The current back-off plus up to a quarter, chosen at random; it doubles to the maximum.
                try? await Task.sleep(for: backoff.next())
            }
        }
        try? await client.shutdown()
    }

    /// The commands of one answer through the ledger: each id acted on once, across restarts (an
    /// aggregator may hand a command out again: a lost answer, a re-queued id); the answers to
    /// send with the next batch.
    func admit(_ commands: [DispatchCommand], ledger: inout CommandLedger) -> [CommandAck] {
        commands.map { command in
            let admission = ledger.admit(command, now: Date().timeIntervalSince1970, who: "uplink", log: log) { command in
                handleCommands([command]).first ?? CommandAck(id: command.id, accepted: false, reason: "not handled")
            }
            switch admission {
            case .handled(let ack): return ack
            case .repeated(let ack), .refused(let ack):
                statistics.withLock { $0.redeliveries &+= 1 }
                return ack
            }
        }
    }

    /// Posts one batch; returns the acknowledged seq and the commands in the answer.
    func deliver(_ records: [SpoolRecord], acks: [CommandAck], client: HTTPClient) async throws
        -> (UInt64, [DispatchCommand])
    {
        var body = Data("{\"protocol_version\":\(UplinkProtocol.version),\"site\":".utf8)
        body += try JSONEncoder().encode(settings.site)
        body += Data(",\"acks\":".utf8)
        body += try JSONEncoder().encode(acks)
        body += Data(",\"records\":[".utf8)
        for (i, record) in records.enumerated() {
            if i > 0 { body.append(0x2C) }
            body += record.payload  // each payload is one record's JSON, seq included
        }
        body += Data("]}".utf8)
        var request = HTTPClientRequest(url: settings.url.hasSuffix("/") ? "\(settings.url)v1/sites/\(settings.site)/records"
                                                                          : "\(settings.url)/v1/sites/\(settings.site)/records")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "bessd")
        if let tokenFile = settings.tokenFile {
            guard let token = try? String(contentsOfFile: tokenFile, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty
            else { throw UplinkError(.tokenUnreadable, message: "cannot read the token from \(tokenFile)") }
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(settings.timeout.components.seconds))
        var buffer = try await response.body.collect(upTo: 4 << 20)
        guard (200..<300).contains(Int(response.status.code)) else {
            throw UplinkError(.http(Int(response.status.code)), message: "aggregator answered \(response.status.code)")
        }
        let lastSent = records.last?.seq ?? 0
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        guard let answer = try? JSONDecoder().decode(BatchResponse.self, from: Data(bytes)) else {
            // A 2xx acknowledges the batch whatever its body says; the body is reported.
            log(Notice(UplinkNoticeCode.badResponse,
                       "uplink: the aggregator's answer is not a batch response; taking the 2xx as the acknowledgement"))
            return (lastSent, [])
        }
        return (min(answer.ackedSeq, lastSent), answer.commands)
    }
}

/// A failure to deliver to the aggregator (HTTP or MQTT), or to set the delivery up:
/// `CODE: message`.
///
/// The code is typed (`UplinkError.Code.mqttUnreachable`); the journal (`BESS_CODE=`), `bessctl status`
/// (`last_error`) and the control socket print its stable name (`MQTT_UNREACHABLE`), which operators'
/// recipes read. What the caller does about it follows from the code's `kind`.
public typealias UplinkError = CodedError<UplinkErrorCode>

/// The stable code of an `UplinkError` (`UplinkError.Code`): a struct over a private enum, so the
/// set is closed and matched by value, never by text.
public struct UplinkErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// What a failure says about the delivery, and so what the sender does next.
    public enum Kind: Sendable, Equatable {
        /// The connection is gone or could not be made: reconnect with back-off.
        case linkLost
        /// The aggregator or the broker answered, and refused (a status, a reason code, no subscriber).
        case refused
        /// Settings or files bessd was given cannot be used (a URL, TLS files, a token or password).
        case config
        /// The spool could not give or take records (`SpoolError.Kind` says how); the link is up.
        case spool(SpoolError.Kind)
        /// The host could not provide what the link needs (a client, an epoll set).
        case system
    }

    private enum Value: Hashable, Sendable {
        case configInvalid, tlsConfig, tokenUnreadable, unreachable, http(Int)
        case mqttClient, mqttWill, mqttCredentials, mqttUnreachable, mqttConnectionLost, mqttPublish, mqttSubscribe
        case mqttRefused, mqttSubscribeRefused, mqttPublishRefused, mqttNoSubscriber, mqttEpoll
        case spool(SpoolError.Code)
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `CONFIG_INVALID`: the `aggregator:` settings cannot be used (a URL of the wrong scheme).
    public static let configInvalid = Self(.configInvalid)
    /// `UPLINK_TLS_CONFIG`: a CA, certificate or key file cannot be read or used.
    public static let tlsConfig = Self(.tlsConfig)
    /// `UPLINK_TOKEN_UNREADABLE`: the token (HTTP) or password (MQTT) file cannot be read.
    public static let tokenUnreadable = Self(.tokenUnreadable)
    /// `UPLINK_UNREACHABLE`: the aggregator's HTTP endpoint could not be reached.
    public static let unreachable = Self(.unreachable)
    /// `MQTT_CLIENT`: libmosquitto could not make a client.
    public static let mqttClient = Self(.mqttClient)
    /// `MQTT_WILL`: the last will could not be set.
    public static let mqttWill = Self(.mqttWill)
    /// `MQTT_CREDENTIALS`: the username and password could not be set.
    public static let mqttCredentials = Self(.mqttCredentials)
    /// `MQTT_UNREACHABLE`: the broker could not be reached.
    public static let mqttUnreachable = Self(.mqttUnreachable)
    /// `MQTT_CONNECTION_LOST`: the connection to the broker ended.
    public static let mqttConnectionLost = Self(.mqttConnectionLost)
    /// `MQTT_PUBLISH`: a message could not be handed to the connection.
    public static let mqttPublish = Self(.mqttPublish)
    /// `MQTT_SUBSCRIBE`: a subscription could not be handed to the connection.
    public static let mqttSubscribe = Self(.mqttSubscribe)
    /// `MQTT_REFUSED`: the broker refused the connection (CONNACK reason code).
    public static let mqttRefused = Self(.mqttRefused)
    /// `MQTT_SUBSCRIBE_REFUSED`: the broker refused the subscription to the command topic.
    public static let mqttSubscribeRefused = Self(.mqttSubscribeRefused)
    /// `MQTT_PUBLISH_REFUSED`: the broker refused a record batch (PUBACK reason code).
    public static let mqttPublishRefused = Self(.mqttPublishRefused)
    /// `MQTT_NO_SUBSCRIBER`: no aggregator subscribes to the records topic; the batch stays in the spool.
    public static let mqttNoSubscriber = Self(.mqttNoSubscriber)
    /// `MQTT_EPOLL`: a fleet thread could not make its epoll set.
    public static let mqttEpoll = Self(.mqttEpoll)
    /// `UPLINK_HTTP_<status>`: the aggregator answered with a status other than 2xx.
    public static func http(_ status: Int) -> Self { Self(.http(status)) }
    /// The spool's own code (`SPOOL_FULL`, `SPOOL_IO`…), printed as the spool prints it.
    public static func spool(_ code: SpoolError.Code) -> Self { Self(.spool(code)) }

    /// The aggregator's HTTP status, for `UPLINK_HTTP_<status>`.
    public var httpStatus: Int? {
        if case .http(let status) = value { return status }
        return nil
    }

    /// The spool's code, when the spool failed.
    public var spoolCode: SpoolError.Code? {
        if case .spool(let code) = value { return code }
        return nil
    }

    /// What the failure says about the delivery.
    public var kind: Kind {
        switch value {
        case .unreachable, .mqttUnreachable, .mqttConnectionLost, .mqttPublish, .mqttSubscribe: .linkLost
        case .http, .mqttRefused, .mqttSubscribeRefused, .mqttPublishRefused, .mqttNoSubscriber: .refused
        case .configInvalid, .tlsConfig, .tokenUnreadable, .mqttWill, .mqttCredentials: .config
        case .mqttClient, .mqttEpoll: .system
        case .spool(let code): .spool(code.kind)
        }
    }

    /// The stable name the journal and the control socket print.
    public var description: String {
        switch value {
        case .configInvalid: "CONFIG_INVALID"
        case .tlsConfig: "UPLINK_TLS_CONFIG"
        case .tokenUnreadable: "UPLINK_TOKEN_UNREADABLE"
        case .unreachable: "UPLINK_UNREACHABLE"
        case .http(let status): "UPLINK_HTTP_\(status)"
        case .mqttClient: "MQTT_CLIENT"
        case .mqttWill: "MQTT_WILL"
        case .mqttCredentials: "MQTT_CREDENTIALS"
        case .mqttUnreachable: "MQTT_UNREACHABLE"
        case .mqttConnectionLost: "MQTT_CONNECTION_LOST"
        case .mqttPublish: "MQTT_PUBLISH"
        case .mqttSubscribe: "MQTT_SUBSCRIBE"
        case .mqttRefused: "MQTT_REFUSED"
        case .mqttSubscribeRefused: "MQTT_SUBSCRIBE_REFUSED"
        case .mqttPublishRefused: "MQTT_PUBLISH_REFUSED"
        case .mqttNoSubscriber: "MQTT_NO_SUBSCRIBER"
        case .mqttEpoll: "MQTT_EPOLL"
        case .spool(let code): code.description
        }
    }
}

/// `UplinkError.Kind` and `kind`: what a failure says about the delivery.
extension UplinkErrorCode: ErrorCodeWithKind {}

extension CodedError where StableCode == UplinkErrorCode {
    /// The spool's failure as the sender reports it: its code and message unchanged.
    public init(spool error: SpoolError) {
        self.init(.spool(error.code), message: error.message)
    }
}
