public import BessBase
import BessSystem
import ControlCore
import CMosquitto
import Foundation

/// One MQTT 5 client connection through libmosquitto, driven by whoever owns it (one thread calls
/// `connect`, `loop` and `publish`; libmosquitto starts no thread of its own). What the broker sends
/// arrives as `Event`s on that thread, inside `loop`.
public final class MQTTConnection: @unchecked Sendable {
    /// Where and how to connect.
    public struct Options: Sendable {
        public var url: MQTTURL
        public var clientID: String
        /// false: a persistent session (MQTT 5 clean start off) that outlives the connection by
        /// `sessionExpirySeconds`, so QoS 1 messages for the client wait at the broker.
        public var cleanStart: Bool
        public var sessionExpirySeconds: UInt32
        public var keepaliveSeconds: Int32 = 30
        public var caFile: String?
        public var clientCertFile: String?
        public var clientKeyFile: String?
        public var username: String?
        public var password: String?
        /// Unacknowledged QoS 1 messages the broker may send us at once (MQTT 5 receive maximum).
        public var receiveMaximum: Int32 = 20
        /// The Last Will: published by the broker when the connection drops without a DISCONNECT.
        public var will: (topic: String, payload: [UInt8], retain: Bool)?
        /// Queue PUBACKs for `flush()` instead of sending them as they are made (libmosquitto's
        /// threaded mode): an owner that stores a message before acknowledging it calls `read`,
        /// stores, then `flush` — a crash before the store leaves the message with the broker.
        public var acknowledgeAfterStore = false

        public init(url: MQTTURL, clientID: String, cleanStart: Bool, sessionExpirySeconds: UInt32) {
            self.url = url
            self.clientID = clientID
            self.cleanStart = cleanStart
            self.sessionExpirySeconds = sessionExpirySeconds
        }
    }

    public enum Event: Sendable {
        /// CONNACK: reason code (0 = accepted) and whether the broker kept our session.
        case connected(reason: Int32, sessionPresent: Bool)
        case disconnected(reason: Int32)
        /// PUBACK for a QoS 1 publish: reason < 128 is success.
        case published(mid: Int32, reason: Int32)
        /// `expiry`: the MQTT 5 message expiry interval left, seconds, when the publisher set one.
        case message(topic: String, payload: [UInt8], retained: Bool, duplicate: Bool, expiry: UInt32?)
        case subscribed(mid: Int32, grantedQoS: [Int32])
    }

    private static let library: Void = { mosquitto_lib_init() }()

    let options: Options
    let handle: OpaquePointer
    var onEvent: (Event) -> Void = { _ in }

    public init(_ options: Options, onEvent: @escaping (Event) -> Void) throws(UplinkError) {
        _ = Self.library
        self.options = options
        guard let handle = mosquitto_new(options.clientID, options.cleanStart, nil) else {
            throw UplinkError(.mqttClient, message: "libmosquitto could not make a client (\(SystemError.text(errno)))")
        }
        self.handle = handle
        self.onEvent = onEvent
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V5))
        mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
        mosquitto_int_option(handle, MOSQ_OPT_RECEIVE_MAXIMUM, options.receiveMaximum)
        if options.acknowledgeAfterStore { mosquitto_threaded_set(handle, true) }
        try configure()
        mosquitto_connect_v5_callback_set(handle) { _, object, reason, flags, _ in
            MQTTConnection.owner(object).onEvent(.connected(reason: reason, sessionPresent: flags & 1 != 0))
        }
        mosquitto_disconnect_v5_callback_set(handle) { _, object, reason, _ in
            MQTTConnection.owner(object).onEvent(.disconnected(reason: reason))
        }
        mosquitto_publish_v5_callback_set(handle) { _, object, mid, reason, _ in
            MQTTConnection.owner(object).onEvent(.published(mid: mid, reason: reason))
        }
        mosquitto_subscribe_v5_callback_set(handle) { _, object, mid, count, granted, _ in
            let list = (0..<Int(count)).map { granted?[$0] ?? 128 }
            MQTTConnection.owner(object).onEvent(.subscribed(mid: mid, grantedQoS: list))
        }
        mosquitto_message_v5_callback_set(handle) { _, object, message, properties in
            guard let m = message?.pointee else { return }
            let topic = m.topic.map { String(cString: $0) } ?? ""
            let payload = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(m.payloadlen))) } ?? []
            var expiry: UInt32 = 0
            let hasExpiry = mosquitto_property_read_int32(properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue),
                                                          &expiry, false) != nil
            MQTTConnection.owner(object).onEvent(.message(topic: topic, payload: payload, retained: m.retain,
                                                          duplicate: false, expiry: hasExpiry ? expiry : nil))
        }
    }

    deinit {
        mosquitto_destroy(handle)
    }

    private static func owner(_ object: UnsafeMutableRawPointer?) -> MQTTConnection {
        Unmanaged<MQTTConnection>.fromOpaque(object!).takeUnretainedValue()
    }

    private func configure() throws(UplinkError) {
        if let will = options.will {
            let rc = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set_v5(handle, will.topic, Int32(bytes.count), bytes.baseAddress, 1, will.retain, nil)
            }
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttWill, rc) }
        }
        if let username = options.username {
            let rc = mosquitto_username_pw_set(handle, username, options.password)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttCredentials, rc) }
        }
        if options.url.tls {
            var rc: Int32
            if options.caFile == nil {
                rc = mosquitto_int_option(handle, MOSQ_OPT_TLS_USE_OS_CERTS, 1)
                if rc == MOSQ_ERR_SUCCESS.rawValue, let cert = options.clientCertFile, let key = options.clientKeyFile {
                    rc = mosquitto_tls_set(handle, nil, "/etc/ssl/certs", cert, key, nil)
                }
            } else {
                rc = mosquitto_tls_set(handle, options.caFile, nil, options.clientCertFile, options.clientKeyFile, nil)
            }
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.tlsConfig, rc) }
        }
    }

    static func error(_ code: UplinkError.Code, _ rc: Int32) -> UplinkError {
        UplinkError(code, message: String(cString: mosquitto_strerror(rc)))
    }

    /// Opens the TCP (and TLS) connection and sends CONNECT; the answer arrives as `.connected` in `loop`.
    public func connect() throws(UplinkError) {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if !options.cleanStart || options.sessionExpirySeconds > 0 {
            mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), options.sessionExpirySeconds)
        }
        let rc = mosquitto_connect_bind_v5(handle, options.url.host, options.url.port, options.keepaliveSeconds, nil, properties)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            let detail = rc == MOSQ_ERR_ERRNO.rawValue ? SystemError.text(errno) : String(cString: mosquitto_strerror(rc))
            throw UplinkError(.mqttUnreachable, message: "\(options.url.host):\(options.url.port): \(detail)")
        }
    }

    /// Reads, writes and keeps the connection alive for up to `timeoutMilliseconds`; events arrive
    /// from inside. Throws when the connection is gone.
    public func loop(timeoutMilliseconds: Int32) throws(UplinkError) {
        let rc = mosquitto_loop(handle, timeoutMilliseconds, 1)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttConnectionLost, rc) }
    }

    /// The socket, for an owner that waits on it itself (`acknowledgeAfterStore`): -1 when closed.
    public var socket: Int32 { mosquitto_socket(handle) }

    /// True when libmosquitto holds bytes it could not write yet (an owner that polls the socket
    /// itself then waits for it to become writable).
    public var wantsWrite: Bool { mosquitto_want_write(handle) }

    /// Reads what has arrived (messages arrive as events; their PUBACKs are queued, not sent).
    public func read() throws(UplinkError) {
        let rc = mosquitto_loop_read(handle, 1)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttConnectionLost, rc) }
    }

    /// Sends what is queued (PUBACKs included) and keeps the connection alive.
    public func flush() throws(UplinkError) {
        var rc = MOSQ_ERR_SUCCESS.rawValue
        if mosquitto_want_write(handle) { rc = mosquitto_loop_write(handle, 1) }
        if rc == MOSQ_ERR_SUCCESS.rawValue { rc = mosquitto_loop_misc(handle) }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttConnectionLost, rc) }
    }

    /// Publishes; returns the message id (its PUBACK arrives as `.published` for QoS 1).
    @discardableResult
    public func publish(_ topic: String, _ payload: [UInt8], qos: Int32 = 1, retain: Bool = false,
                        expirySeconds: UInt32? = nil) throws(UplinkError) -> Int32 {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if let expirySeconds {
            mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expirySeconds)
        }
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(handle, &mid, topic, Int32(bytes.count), bytes.baseAddress, qos, retain, properties)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttPublish, rc) }
        return mid
    }

    @discardableResult
    public func subscribe(_ pattern: String, qos: Int32 = 1) throws(UplinkError) -> Int32 {
        var mid: Int32 = 0
        let rc = mosquitto_subscribe_v5(handle, &mid, pattern, qos, 0, nil)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(.mqttSubscribe, rc) }
        return mid
    }

    /// A clean DISCONNECT (the broker does not publish the Will), then the last bytes out.
    public func disconnect() {
        mosquitto_disconnect_v5(handle, 0, nil)
        _ = mosquitto_loop(handle, 100, 1)
    }

    /// The text of a reason code (CONNACK, PUBACK, DISCONNECT).
    public static func reasonText(_ reason: Int32) -> String { String(cString: mosquitto_reason_string(reason)) }
}

/// `mqtt://host[:port]` (1883) or `mqtts://host[:port]` (8883).
public struct MQTTURL: Sendable, Equatable {
    public var host: String
    public var port: Int32
    public var tls: Bool

    public init?(_ text: String) {
        let rest: Substring
        if text.hasPrefix("mqtts://") {
            tls = true
            rest = text.dropFirst(8)
        } else if text.hasPrefix("mqtt://") {
            tls = false
            rest = text.dropFirst(7)
        } else {
            return nil
        }
        let hostPort = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]") {
            guard let port = Int32(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(port) else { return nil }
            host = String(hostPort[..<colon])
            self.port = port
        } else {
            host = String(hostPort)
            port = tls ? 8883 : 1883
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
    }
}
