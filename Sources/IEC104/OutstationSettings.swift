public import BessBase

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
    /// The site's var set-point, Mvar (+ = injecting), and its power factor signed by excitation
    /// (+ over-excited, − under-excited; 1.0 unity): docs/design/0010-reactive-power.md.
    case siteReactiveSetpointCommand = "site_reactive_setpoint_command", sitePowerFactorCommand = "site_power_factor_command"
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
        case .siteReactiveSetpointCommand: 3003
        case .sitePowerFactorCommand: 3004
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
    /// 3002 the site MW setpoint, 3003 the site Mvar setpoint, 3004 the site power factor.
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

/// What the outstation runs on (`iec104:` but its `agc`, which the cycle reads): listen address,
/// timers, redundancy groups, points, TLS. Plain values of the standard's station, defined beside
/// the codec so that Config maps the YAML into it (Config/Config+IEC104Server.swift) without
/// linking the outstation or its TLS; the Outstation module runs on it.
public struct OutstationSettings: Sendable, Equatable {
    /// `listen`: where the outstation listens (2404, or 19998 with `tls`, on loopback by default).
    public var listen = ListenAddress(host: "127.0.0.1", port: 2404)!
    /// The listen address's host (a dotted quad).
    public var host: String { listen.host }
    /// The listen port; 0 asks the kernel for one (tests).
    public var port: Int {
        get { Int(listen.port) }
        set { listen = ListenAddress(host: listen.host, port: UInt16(truncatingIfNeeded: newValue)) ?? listen }
    }
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
    public var tls: OutstationTLSSettings?

    public init() {}

    /// The address of `signal`.
    public func address(_ signal: IEC104Signal) -> UInt32 { addresses[signal] ?? signal.defaultAddress }
    /// The deadband of `signal`.
    public func deadband(_ signal: IEC104Signal) -> Double { deadbands[signal] ?? signal.defaultDeadband }
}

/// `iec104.tls`: the outstation's TLS (IEC 62351-3) — bessd's certificate and key, the CA every
/// control centre's client certificate must chain to, optionally an allow-list of client
/// certificates and a CRL. Loading checks the keys' shape only: the files are paths here, read
/// by the TLS transport alone (`serverContext()`) at check-config
/// (`BessdConfiguration.fileDiagnostics(file:)`, Service), when the outstation starts, and at each
/// reload (new connections get the context read again).
public struct OutstationTLSSettings: Sendable, Equatable {
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
}
