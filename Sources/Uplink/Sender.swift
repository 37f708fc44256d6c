import BessSystem
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
public final class UplinkSender: Sendable {
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
    }

    let settings: Settings
    let queue: SpoolQueue
    let log: @Sendable (_ message: String, _ code: String?) -> Void
    let handleCommands: @Sendable ([DispatchCommand]) -> [CommandAck]
    let statistics = PILock(Statistics())
    let task = PILock<Task<Void, Never>?>(nil)

    public init(settings: Settings, queue: SpoolQueue, log: @escaping @Sendable (String, String?) -> Void,
                handleCommands: @escaping @Sendable ([DispatchCommand]) -> [CommandAck]) {
        self.settings = settings
        self.queue = queue
        self.log = log
        self.handleCommands = handleCommands
    }

    public var stats: Statistics { statistics.withLock { $0 } }

    public func start() throws(SpoolError) {
        let client: HTTPClient
        do {
            client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: try configuration())
        } catch {
            throw SpoolError(code: "UPLINK_TLS_CONFIG", message: "\(error)")
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
        var backoff = Backoff(firstNanoseconds: settings.minBackoff.nanosecondsClamped,
                              maximumNanoseconds: settings.maxBackoff.nanosecondsClamped)
        var acks: [CommandAck] = []
        var reported: String?
        while !Task.isCancelled {
            let records: [SpoolRecord]
            do {
                records = try queue.pending(limit: settings.batchSize)
            } catch {
                log("uplink cannot read the spool: \(error)", error.code)
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
                if reported != nil { log("uplink delivering again", nil) }
                reported = nil
                backoff.reset()
                if !commands.isEmpty { acks = handleCommands(commands) }
                if records.count < settings.batchSize && acks.isEmpty { try? await Task.sleep(for: settings.interval) }
            } catch {
                if Task.isCancelled || error is CancellationError { break }  // stopping, not failing
                let code = (error as? UplinkError)?.code ?? "UPLINK_UNREACHABLE"
                statistics.withLock {
                    $0.failures &+= 1
                    $0.lastError = code
                }
                if reported != code { log("uplink: \(error); retrying with back-off", code) }
                reported = code
                // The current back-off plus up to a quarter, chosen at random; it doubles to the maximum.
                try? await Task.sleep(for: .nanoseconds(backoff.next()))
            }
        }
        try? await client.shutdown()
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
            else { throw UplinkError(code: "UPLINK_TOKEN_UNREADABLE", message: "cannot read the token from \(tokenFile)") }
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(settings.timeout.components.seconds))
        var buffer = try await response.body.collect(upTo: 4 << 20)
        guard (200..<300).contains(Int(response.status.code)) else {
            throw UplinkError(code: "UPLINK_HTTP_\(response.status.code)", message: "aggregator answered \(response.status.code)")
        }
        let lastSent = records.last?.seq ?? 0
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        guard let answer = try? JSONDecoder().decode(BatchResponse.self, from: Data(bytes)) else {
            // A 2xx acknowledges the batch whatever its body says; the body is reported.
            log("uplink: the aggregator's answer is not a batch response; taking the 2xx as the acknowledgement",
                "UPLINK_BAD_RESPONSE")
            return (lastSent, [])
        }
        return (min(answer.ackedSeq, lastSent), answer.commands)
    }
}

/// A delivery failure with a stable code.
public struct UplinkError: Error, CustomStringConvertible {
    public var code: String
    public var message: String
    public var description: String { "\(code): \(message)" }
}
