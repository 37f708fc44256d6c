public import ControlCore
public import TLSTransport
internal import Yams

/// One signal of the outstation's point list (docs/iec104.md): its configuration name, its default
/// information object address and its default deadband (engineering units; 0 for the binary points,
/// which report every change).
public enum IEC104Signal: String, Sendable, CaseIterable {
    case netMW = "net_mw", netMVAr = "net_mvar", voltageKV = "voltage_kv", frequencyHz = "frequency_hz"
    case socPercent = "soc_percent", availableDischargeMW = "available_discharge_mw", availableChargeMW = "available_charge_mw"
    case energyToDischargeMWh = "energy_to_discharge_mwh", energyToChargeMWh = "energy_to_charge_mwh"
    case agcSetpointMW = "agc_setpoint_mw", agcTargetMW = "agc_target_mw"
    case regulationUpperMW = "regulation_upper_mw", regulationLowerMW = "regulation_lower_mw", rampMWPerMin = "ramp_mw_per_min"
    case agcInService = "agc_in_service", remote = "remote", frequencyResponseEnabled = "frequency_response_enabled"
    case frequencyResponseActive = "frequency_response_active", unitTripped = "unit_tripped", communicationFailure = "communication_failure"
    /// Frequency events assessed since bessd started, and the last one's score and shortfall (issue 47 §3).
    case frequencyEventCount = "frequency_event_count", frequencyEventScore = "frequency_event_score"
    case frequencyEventShortfallMW = "frequency_event_shortfall_mw"
    /// The first unit's double point; unit n (configuration order) is this address + n.
    case unitConnection = "unit_connection"
    case exportKWh = "export_kwh", importKWh = "import_kwh"
    case agcSetpointCommand = "agc_setpoint_command", siteSetpointCommand = "site_setpoint_command"
    case agcInServiceCommand = "agc_in_service_command", frequencyResponseCommand = "frequency_response_command"

    /// The address issue 46 §2 gives the signal.
    public var defaultAddress: UInt32 {
        switch self {
        case .netMW: 1001
        case .netMVAr: 1002
        case .voltageKV: 1003
        case .frequencyHz: 1004
        case .socPercent: 1005
        case .availableDischargeMW: 1006
        case .availableChargeMW: 1007
        case .energyToDischargeMWh: 1008
        case .energyToChargeMWh: 1009
        case .agcSetpointMW: 1010
        case .agcTargetMW: 1011
        case .regulationUpperMW: 1012
        case .regulationLowerMW: 1013
        case .rampMWPerMin: 1014
        case .frequencyEventCount: 1015
        case .frequencyEventScore: 1016
        case .frequencyEventShortfallMW: 1017
        case .agcInService: 2001
        case .remote: 2002
        case .frequencyResponseEnabled: 2003
        case .frequencyResponseActive: 2004
        case .unitTripped: 2005
        case .communicationFailure: 2006
        case .unitConnection: 2101
        case .exportKWh: 4001
        case .importKWh: 4002
        case .agcSetpointCommand: 3001
        case .siteSetpointCommand: 3002
        case .agcInServiceCommand: 3101
        case .frequencyResponseCommand: 3102
        }
    }

    /// The change of a measured value that is reported spontaneously (0: every change).
    public var defaultDeadband: Double {
        switch self {
        case .netMW, .netMVAr, .agcSetpointMW, .agcTargetMW, .regulationUpperMW, .regulationLowerMW: 0.001
        // Headroom moves with SOC and temperature every cycle: report steps, not noise.
        case .availableDischargeMW, .availableChargeMW: 0.01
        case .voltageKV: 0.1
        case .frequencyHz: 0.01
        case .socPercent: 0.5
        case .energyToDischargeMWh, .energyToChargeMWh: 0.01
        case .rampMWPerMin: 0.01
        default: 0
        }
    }
}

/// What a redundancy group's started connection may command (`iec104.groups[].commands`).
public enum IEC104CommandRight: String, Sendable, CaseIterable {
    /// 3001 AGC setpoint and 3101 AGC in service.
    case agc
    /// 3002 the site MW setpoint.
    case setpoint
    /// 3102 frequency response enabled.
    case frequencyResponse = "frequency_response"
}

/// `iec104.groups[]`: a redundancy group of controlling stations (IEC 60870-5-104 edition 2).
public struct IEC104Group: Sendable, Equatable {
    public var name: String
    /// Client addresses of the group; empty: loopback only.
    public var allowFrom: [IPv4Network]
    public var commands: Set<IEC104CommandRight>
    /// `allow_certificates` (with `iec104.tls`): SHA-256 fingerprints (64 hex digits, lower case) of
    /// the client certificates that may join the group; nil: every certificate `iec104.tls` accepts.
    public var allowCertificates: Set<String>?

    public init(name: String, allowFrom: [IPv4Network] = [], commands: Set<IEC104CommandRight> = [],
                allowCertificates: Set<String>? = nil) {
        self.name = name
        self.allowFrom = allowFrom
        self.commands = commands
        self.allowCertificates = allowCertificates
    }

    /// Whether a client at `address` (IPv4, host order) may join: `allow_from` holds it (an empty
    /// list: loopback).
    public func admits(address: UInt32) -> Bool {
        allowFrom.isEmpty ? address >> 24 == 127 : allowFrom.contains { $0.contains(address) }
    }

    /// Whether a client whose certificate has `fingerprint` (lower-case hex SHA-256) may join:
    /// `allow_certificates` names it, or the group has no such list.
    public func admits(certificate fingerprint: String) -> Bool {
        allowCertificates?.contains(fingerprint) ?? true
    }
}

/// The outstation's own keys of `iec104:` (listen address, timers, groups, points).
public struct IEC104ServerConfiguration: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 2404
    /// `common_address`: the station's ASDU address (1…65534).
    public var commonAddress: UInt16 = 1
    /// `t0_s`: a connection must send its first frame within this.
    public var t0: Duration = .seconds(30)
    public var t1: Duration = .seconds(15)
    public var t2: Duration = .seconds(10)
    public var t3: Duration = .seconds(20)
    public var k = 12
    public var w = 8
    /// `time_zone_offset_minutes`: the time base of CP56Time2a tags (0 = UTC).
    public var timeZoneOffsetMinutes = 0
    /// `max_command_delay_s`: a time-tagged command older than this is refused.
    public var maxCommandDelay: Duration = .seconds(10)
    /// `select_timeout_s`: a select not executed within this lapses.
    public var selectTimeout: Duration = .seconds(10)
    public var maxConnections = 8
    /// `event_queue`: events each group keeps for its next started connection (oldest dropped).
    public var eventQueue = 1000
    /// Without `groups`: one group of loopback clients that may command nothing.
    public var groups = [IEC104Group(name: "local")]
    /// Address and deadband per signal (`points`), defaults from `IEC104Signal`.
    public var addresses: [IEC104Signal: UInt32] = [:]
    public var deadbands: [IEC104Signal: Double] = [:]
    /// `tls`: IEC 62351-3 on the listen port (docs/iec104.md, docs/tls.md); nil serves plain TCP.
    public var tls: IEC104TLSConfiguration?

    public init() {}

    /// The address of `signal`.
    public func address(_ signal: IEC104Signal) -> UInt32 { addresses[signal] ?? signal.defaultAddress }
    /// The deadband of `signal`.
    public func deadband(_ signal: IEC104Signal) -> Double { deadbands[signal] ?? signal.defaultDeadband }

    /// The keys of `iec104` this struct reads.
    static let keyNames = ["listen", "common_address", "t0_s", "t1_s", "t2_s", "t3_s", "k", "w", "time_zone_offset_minutes",
                           "max_command_delay_s", "select_timeout_s", "max_connections", "event_queue", "groups", "points", "tls"]
    static let groupKeys = ConfigKeys("iec104.groups[]", ["name", "allow_from", "commands", "allow_certificates"])
    static let pointKeys = ConfigKeys("iec104.points[]", ["signal", "ioa", "deadband"])

    /// Reads the outstation's keys of `iec104:` (the caller finishes the section).
    static func decode(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> IEC104ServerConfiguration {
        var c = IEC104ServerConfiguration()
        c.tls = IEC104TLSConfiguration.decode(fields.fields("tls"), r)
        // IEC 62351-3's port unless listen names one.
        if c.tls != nil { c.port = IEC104TLSConfiguration.defaultPort }
        if let listen = fields.string("listen", pattern: { text in
            let parts = text.split(separator: ":")
            return parts.count == 2 && UInt16(parts[1]).map { $0 > 0 } == true && IPv4Network.parse(String(parts[0])) != nil
        }, rule: "must be IPV4:PORT, e.g. 127.0.0.1:2404") {
            let parts = listen.split(separator: ":")
            c.host = String(parts[0])
            c.port = Int(parts[1]) ?? c.port
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

/// `iec104.tls`: the outstation's TLS (IEC 62351-3) — bessd's certificate and key, the CA every
/// control centre's client certificate must chain to, optionally an allow-list of client
/// certificates and a CRL. Loading checks the keys' shape only; the files are read by
/// `serverContext()` alone: at check-config (`BessdConfiguration.fileDiagnostics(file:)`), when the
/// outstation starts, and at each reload (new connections get the context read again).
public struct IEC104TLSConfiguration: Sendable, Equatable {
    /// The listen port with TLS when `listen` names none (IEC 62351-3, lib60870's default).
    public static let defaultPort = 19998

    /// `cert_file`: PEM, bessd's certificate then any intermediates.
    public var certificateFile: String
    /// `key_file`: PEM, its unencrypted key.
    public var keyFile: String
    /// `ca_file`: PEM, the CA(s) client certificates must chain to.
    public var caFile: String
    /// `allow_certificates`: SHA-256 fingerprints (64 hex digits, lower case) of the only client
    /// certificates accepted; nil accepts every certificate the CA vouches for.
    public var allowedCertificates: [String]?
    /// `crl_file`: PEM, the CA's revocation list; a revoked client is refused.
    public var crlFile: String?
    /// `handshake_timeout_s`: a connection not authenticated within this is closed, so a silent
    /// or slow peer cannot hold a connection slot.
    public var handshakeTimeout: Duration

    public init(certificateFile: String, keyFile: String, caFile: String, allowedCertificates: [String]? = nil,
                crlFile: String? = nil, handshakeTimeout: Duration = .seconds(10)) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.caFile = caFile
        self.allowedCertificates = allowedCertificates
        self.crlFile = crlFile
        self.handshakeTimeout = handshakeTimeout
    }

    /// The TLS server context these files make: TLS 1.2 or newer, mutual authentication against
    /// the CA, the allow-list and CRL, no NULL, export or anonymous suites.
    /// - Throws: `TLS_CONTEXT_FAILED` naming the file OpenSSL could not use, with its reason.
    public func serverContext() throws(TLSError) -> TLSServerContext {
        try TLSServerContext(certificateFile: certificateFile, privateKeyFile: keyFile, caFile: caFile,
                             allowedPeers: allowedCertificates, crlFile: crlFile)
    }

    /// The keys of `iec104.tls`.
    static let keys = ConfigKeys("iec104.tls", ["cert_file", "key_file", "ca_file", "allow_certificates", "crl_file", "handshake_timeout_s"])

    /// `iec104.tls:`; nil when absent or when a required file is missing (an error is reported).
    /// The files are not read here: one that cannot be read must not refuse the whole
    /// configuration, and with it the site's control, at `bessd run`.
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader) -> IEC104TLSConfiguration? {
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
        return IEC104TLSConfiguration(certificateFile: certificate, keyFile: key, caFile: ca, allowedCertificates: allowed,
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
            guard let text = item.string, let fingerprint = TLSPeer.normalizedFingerprint(text) else {
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

extension BessdConfiguration {
    /// What the files this configuration names say when they are read: the outstation's TLS files
    /// (`iec104.tls`) and the 2030.5 client's (`ieee2030_5`), each made into a context and dropped. `bessd check-config` reports each as an
    /// error (`CONFIG_INVALID` at `iec104.tls`, the message carrying `TLS_CONTEXT_FAILED`, the file
    /// and OpenSSL's reason) and fails; `bessd run` does not ask: a file that does not load costs the
    /// outstation alone (`IEC104_LISTEN_FAILED`), never the site's control.
    /// - Parameter file: the configuration file, named in each diagnostic.
    public func fileDiagnostics(file: String) -> [ConfigDiagnostic] {
        var problems = ieee2030_5FileDiagnostics(file: file)
        guard let tls = iec104?.server.tls else { return problems }
        do {
            _ = try tls.serverContext()
        } catch {
            problems.insert(ConfigDiagnostic(file: file, line: nil, keyPath: "iec104.tls", message: "\(error)"), at: 0)
        }
        return problems
    }
}
