import BessBase
import BessSystem
import ControlCore
import IEC104
internal import Yams

/// `iec104:`'s outstation keys, mapped into the outstation's own settings (`OutstationSettings`,
/// defined by Outstation).
extension OutstationSettings {
    /// The keys of `iec104` this struct reads.
    static let keyNames = ["listen", "common_address", "t0_s", "t1_s", "t2_s", "t3_s", "k", "w", "time_zone_offset_minutes",
                           "max_command_delay_s", "select_timeout_s", "max_connections", "event_queue", "groups", "points", "tls"]
    static let groupKeys = ConfigKeys("iec104.groups[]", ["name", "allow_from", "commands", "allow_certificates"])
    static let pointKeys = ConfigKeys("iec104.points[]", ["signal", "ioa", "deadband"])

    /// Reads the outstation's keys of `iec104:` (the caller finishes the section).
    static func decode(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> OutstationSettings {
        var c = OutstationSettings()
        c.tls = OutstationTLSSettings.decode(fields.fields("tls"), r)
        // IEC 62351-3's port unless listen names one.
        if c.tls != nil { c.port = OutstationTLSSettings.defaultPort }
        if let listen = fields.string("listen", pattern: { ListenAddress($0) != nil }, rule: "must be IPV4:PORT, e.g. 127.0.0.1:2404"),
           let address = ListenAddress(listen) {
            c.listen = address
        }
        c.commonAddress = UInt16(fields.int("common_address", default: 1, range: 1...65534)!)
        func seconds(_ key: String, _ value: Double, _ range: ClosedRange<Double>) -> Duration {
            .seconds(fromDouble: fields.double(key, default: value, range: range, unit: "seconds")!)
        }
        c.t0 = seconds("t0_s", 30, 1...255)
        c.t1 = seconds("t1_s", 15, 1...255)
        c.t2 = seconds("t2_s", 10, 0.1...255)
        c.t3 = seconds("t3_s", 20, 1...172_800)
        c.k = fields.int("k", default: 12, range: 1...32767)!
        c.w = fields.int("w", default: 8, range: 1...32767)!
        if c.t2 >= c.t1 { r.error(fields.mark("t2_s"), fields.child("t2_s"), "must be shorter than t1_s (\(c.t1))") }
        if c.w > c.k { r.error(fields.mark("w"), fields.child("w"), "must be at most k (\(c.k))", got: "\(c.w)") }
        c.timeZoneOffsetMinutes = fields.int("time_zone_offset_minutes", default: 0, range: -720...840)!
        c.maxCommandDelay = seconds("max_command_delay_s", 10, 0.1...3600)
        c.selectTimeout = seconds("select_timeout_s", 10, 0.1...600)
        c.maxConnections = fields.int("max_connections", default: 8, range: 1...64)!
        c.eventQueue = fields.int("event_queue", default: 1000, range: 10...100_000)!
        if let list = fields.sequence("groups") {
            c.groups = []
            for (index, node) in list.enumerated() {
                guard let g = r.fields(node, fields.child("groups[\(index)]")) else { continue }
                let name = g.string("name", pattern: { !$0.isEmpty && $0.count <= 32 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" } },
                                    rule: "must be 1–32 letters, digits, _ or -") ?? "group\(index)"
                var group = IEC104Group(name: name)
                for (i, item) in (g.sequence("allow_from") ?? []).enumerated() {
                    guard let text = item.string, let network = IPv4Network(text) else {
                        r.error(item, g.child("allow_from[\(i)]"), "must be an IPv4 address or network (10.1.2.0/24)", got: ConfigReader.shown(item))
                        continue
                    }
                    group.allowFrom.append(network)
                }
                for (i, item) in (g.sequence("commands") ?? []).enumerated() {
                    guard let text = item.string, let right = IEC104CommandRight(rawValue: text) else {
                        r.error(item, g.child("commands[\(i)]"), "must be one of \(IEC104CommandRight.allCases.map(\.rawValue).joined(separator: ", "))",
                                got: ConfigReader.shown(item))
                        continue
                    }
                    group.commands.insert(right)
                }
                if let list = g.fingerprints("allow_certificates") {
                    group.allowCertificates = Set(list)
                    if c.tls == nil {
                        r.error(g.mark("allow_certificates"), g.child("allow_certificates"),
                                "needs iec104.tls: without TLS no client shows a certificate")
                    }
                }
                if !group.commands.isEmpty, let open = group.allowFrom.first(where: { $0.prefix < 8 }) {
                    r.error(g.mark("commands"), g.child("commands"), "needs allow_from to name the control centres: \(open) lets anyone command the site")
                }
                if c.groups.contains(where: { $0.name == group.name }) {
                    r.error(g.mark("name"), g.child("name"), "names another group too", got: group.name)
                }
                g.finish(Self.groupKeys)
                c.groups.append(group)
            }
        }
        for (index, node) in (fields.sequence("points") ?? []).enumerated() {
            guard let p = r.fields(node, fields.child("points[\(index)]")) else { continue }
            let names = IEC104Signal.allCases.map(\.rawValue)
            guard let name = p.string("signal", pattern: { names.contains($0) }, rule: "must be one of \(names.joined(separator: ", "))"),
                  let signal = IEC104Signal(rawValue: name)
            else {
                if !p.has("signal") { r.error(node, p.child("signal"), "is required") }
                _ = p.int("ioa")
                _ = p.double("deadband")
                p.finish(Self.pointKeys)
                continue
            }
            if let ioa = p.int("ioa", range: 1...16_777_215) { c.addresses[signal] = UInt32(ioa) }
            if let band = p.double("deadband", range: 0...1_000_000) { c.deadbands[signal] = band }
            p.finish(Self.pointKeys)
        }
        // Two signals at one address would answer for each other.
        var seen: [UInt32: IEC104Signal] = [:]
        for signal in IEC104Signal.allCases where signal != .unitConnection {
            let address = c.address(signal)
            if let other = seen[address] {
                r.error(fields.mark("points"), fields.child("points"), "gives \(signal.rawValue) the address of \(other.rawValue)", got: "\(address)")
            }
            seen[address] = signal
        }
        return c
    }
}

/// `iec104.tls`, mapped into the outstation's TLS settings (paths; the TLS transport reads the files).
extension OutstationTLSSettings {
    /// The keys of `iec104.tls`.
    static let keys = ConfigKeys("iec104.tls", ["cert_file", "key_file", "ca_file", "allow_certificates", "crl_file", "handshake_timeout_s"])

    /// `iec104.tls:`; nil when absent or when a required file is missing (an error is reported).
    /// The files are not read here: one that cannot be read must not refuse the whole
    /// configuration, and with it the site's control, at `bessd run`.
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader) -> OutstationTLSSettings? {
        guard let fields else { return nil }
        func path(_ key: String, required: Bool) -> String? {
            let value = fields.string(key, pattern: { $0.hasPrefix("/") }, rule: "must be an absolute path")
            if value == nil, required, !fields.has(key) { r.error(fields.node, fields.child(key), "is required with iec104.tls") }
            return value
        }
        let certificate = path("cert_file", required: true)
        let key = path("key_file", required: true)
        let ca = path("ca_file", required: true)
        let crl = path("crl_file", required: false)
        let allowed = fields.fingerprints("allow_certificates")
        let timeout = fields.double("handshake_timeout_s", default: 10, range: 1...60, unit: "seconds")!
        fields.finish(Self.keys)
        guard let certificate, let key, let ca else { return nil }
        return OutstationTLSSettings(certificateFile: certificate, keyFile: key, caFile: ca, allowedCertificates: allowed,
                                      crlFile: crl, handshakeTimeout: .seconds(fromDouble: timeout))
    }
}

extension ConfigReader.Fields {
    /// `key` as a list of SHA-256 certificate fingerprints (`iec104.tls.allow_certificates`,
    /// `iec104.groups[].allow_certificates`, `ieee2030_5.server_certificate_sha256`): 64 hex digits
    /// each, colons and spaces allowed, any case, as `openssl x509 -fingerprint -sha256` prints
    /// them; returned in lower case without colons. Nil when the key is absent; an entry that is no
    /// fingerprint is an error at its own line and left out.
    func fingerprints(_ key: String) -> [String]? {
        guard let list = sequence(key) else { return nil }
        var fingerprints: [String] = []
        for (index, item) in list.enumerated() {
            guard let text = item.string, let fingerprint = CertificateFingerprint.normalized(text) else {
                reader.error(item, child("\(key)[\(index)]"),
                             "must be a SHA-256 fingerprint: 64 hex digits, colons allowed (openssl x509 -noout -fingerprint -sha256)",
                             got: ConfigReader.shown(item))
                continue
            }
            fingerprints.append(fingerprint)
        }
        return fingerprints
    }
}
