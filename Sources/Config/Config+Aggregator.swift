import ControlCore
import Fieldbus
import Foundation
internal import Yams

extension AggregatorConfiguration {
    /// The keys of `aggregator`.
    static let keys = ConfigKeys("aggregator", [
        "transport", "url", "token_file", "interval_s", "site_id", "ca_file", "client_cert_file", "client_key_file",
        "spool_max_mb", "username", "password_file", "keepalive_s", "session_expiry_s", "insecure_transport",
    ])

    /// `aggregator:` — where the uplink sends the site's records: HTTP or an MQTT broker.
    static func decode(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> AggregatorConfiguration {
        let transportName = fields.string("transport", pattern: { $0 == "http" || $0 == "mqtt" }, rule: "must be http or mqtt")
        let transport = AggregatorConfiguration.Transport(rawValue: transportName ?? "http") ?? .http
        let url = transport == .http
            ? fields.string("url", pattern: { ($0.hasPrefix("https://") || $0.hasPrefix("http://")) && HostAddress.urlHasValidHost($0) },
                            rule: "must be an http:// or https:// URL with a valid host (transport: http)")
            : fields.string("url", pattern: { ($0.hasPrefix("mqtt://") || $0.hasPrefix("mqtts://")) && MQTTAddress.valid($0) },
                            rule: "must be an mqtt://host[:port] or mqtts://host[:port] URL (transport: mqtt)")
        if url == nil, !fields.has("url") { r.error(fields.node, fields.child("url"), "is required") }
        let token = fields.string("token_file", pattern: { $0.hasPrefix("/") }, rule: "must be an absolute path")
        let interval = Duration.seconds(fromDouble: fields.double("interval_s", default: 1, range: 0.1...3600, unit: "seconds")!)
        let site = fields.string("site_id", pattern: ConfigLoader.idPattern, rule: "must be 1–64 letters, digits, '_', '-' or '.'")
        let absolute: (String) -> Bool = { $0.hasPrefix("/") }
        let ca = fields.string("ca_file", pattern: absolute, rule: "must be an absolute path")
        let cert = fields.string("client_cert_file", pattern: absolute, rule: "must be an absolute path")
        let key = fields.string("client_key_file", pattern: absolute, rule: "must be an absolute path")
        if (cert == nil) != (key == nil), fields.has("client_cert_file") || fields.has("client_key_file") {
            r.error(fields.node, fields.child("client_key_file"), "client_cert_file and client_key_file go together")
        }
        let spoolMB = fields.int("spool_max_mb", default: 64, range: 1...65536, unit: "MB")!
        let username = fields.string("username", pattern: { !$0.isEmpty && $0.count <= 128 }, rule: "must be 1–128 characters")
        let password = fields.string("password_file", pattern: absolute, rule: "must be an absolute path")
        let keepalive = fields.int("keepalive_s", default: 30, range: 5...3600, unit: "seconds")!
        let sessionExpiry = fields.int("session_expiry_s", default: 86_400, range: 0...604_800, unit: "seconds")!
        if transport == .http {
            for name in ["username", "password_file", "keepalive_s", "session_expiry_s"] where fields.has(name) {
                r.error(fields.node, fields.child(name), "applies to transport: mqtt only")
            }
        } else if fields.has("token_file") {
            r.error(fields.node, fields.child("token_file"), "applies to transport: http only (MQTT uses username + password_file or a client certificate)")
        }
        let insecure = fields.bool("insecure_transport", default: false)
        if let url { cleartext(url, insecure: insecure, fields, r) }
        fields.finish(Self.keys)
        return AggregatorConfiguration(transport: transport, url: url ?? "", tokenFile: token, interval: interval,
                                       siteID: site ?? "", caFile: ca, clientCertFile: cert, clientKeyFile: key,
                                       spoolMaxMB: spoolMB, username: username, passwordFile: password,
                                       keepalive: .seconds(keepalive), sessionExpiry: .seconds(sessionExpiry),
                                       insecureTransport: insecure)
    }
}

extension AggregatorConfiguration {
    /// `http://` and `mqtt://` carry the token or password, the site's records and the commands that
    /// move its batteries in clear: to anything but loopback that is an error (`UPLINK_CLEARTEXT`),
    /// unless `insecure_transport: true` says it is meant; then a notice, at check-config and at start.
    static func cleartext(_ url: String, insecure: Bool, _ fields: ConfigReader.Fields, _ r: ConfigReader) {
        guard url.hasPrefix("http://") || url.hasPrefix("mqtt://"), let host = HostAddress.host(ofURL: url),
              !HostAddress.isLoopback(host) else { return }
        let scheme = url.hasPrefix("http://") ? "http://" : "mqtt://"
        let secure = scheme == "http://" ? "https://" : "mqtts://"
        if insecure {
            r.notice(fields.mark("insecure_transport"), fields.child("insecure_transport"),
                     "UPLINK_CLEARTEXT: the uplink to \(host) is \(scheme), in clear: its credentials, records and commands "
                        + "can be read and changed on the way", code: .uplinkCleartext)
        } else {
            r.error(fields.mark("url"), fields.child("url"),
                    "UPLINK_CLEARTEXT: \(scheme) to \(host), which is not loopback, carries the credentials, records and "
                        + "commands in clear; use \(secure), or set aggregator.insecure_transport: true if it is meant",
                    code: .uplinkCleartext)
        }
    }
}

/// The shape of an MQTT broker URL: `mqtt[s]://host[:port]`, a host by `HostAddress`'s rule and a
/// port in 1–65535.
enum MQTTAddress {
    static func valid(_ url: String) -> Bool {
        guard HostAddress.urlHasValidHost(url), let scheme = url.range(of: "://") else { return false }
        let rest = url[scheme.upperBound...].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard !rest.isEmpty else { return false }
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else { return false }
            return colon > rest.startIndex
        }
        return true
    }
}
