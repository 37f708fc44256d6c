import IEEE2030_5
internal import Yams

/// `ieee2030_5:` — the utility's IEEE 2030.5 (CSIP, CSIP-AUS) server bessd follows as a client
/// (docs/ieee2030-5.md): where its DeviceCapability is, bessd's device certificate and the CA the
/// server's chain must verify against, the default poll and post rates, the registration and its PIN.
/// Loading checks the keys' shape only: the files are paths here, read by the TLS transport alone
/// (`clientContext()`, Sep2Link: at check-config through `fileDiagnostics(file:)`, and by the client
/// when it starts), so a file that does not load costs the 2030.5 client alone, never the site's control.
public struct IEEE2030_5Settings: Sendable, Equatable {
    /// How the EndDevice came to be on the server.
    public enum Registration: String, Sendable {
        /// bessd POSTs its EndDevice, then checks the Registration's PIN.
        case inBand = "in_band"
        /// The utility created the EndDevice for bessd's LFDI beforehand.
        case outOfBand = "out_of_band"
    }

    /// The server's host, from `ieee2030_5.server` (an https:// URL); an IPv6 literal without brackets.
    public var serverHost: String
    /// The server's port, from the URL; 443 when it names none.
    public var serverPort: UInt16
    /// The DeviceCapability's path (and query) from the URL, e.g. `/dcap`; `/.well-known/csipaus`
    /// with `discovery: well_known`.
    public var deviceCapabilityPath: String
    /// `cert_file`: PEM, bessd's device certificate (ECDSA P-256) then its chain.
    public var certificateFile: String
    /// `key_file`: PEM, its unencrypted key.
    public var keyFile: String
    /// `ca_file`: PEM, the CA chain (the SERCA) the server's certificate must verify against.
    public var caFile: String
    /// `allow_gcm`: also offer ECDHE-ECDSA-AES128-GCM-SHA256, for a server that allows it (default false).
    public var allowGCM: Bool
    /// `poll_s`: seconds between reads of a resource until the server's pollRate says otherwise.
    public var pollSeconds: UInt32
    /// `post_s`: seconds between posts of readings until the server's postRate says otherwise.
    public var postSeconds: UInt32
    /// `registration`: in-band or out-of-band (default).
    public var registration: Registration
    /// `pin`: the registration PIN (5 digits and a check digit) the server's Registration must carry;
    /// nil checks none (out-of-band only).
    public var pin: UInt32?
    /// `connection_point_id`: the site's connection point at the utility (an NMI in Australia).
    public var connectionPointId: String?
    /// `timeout_s`: the bound on connecting, the handshake and each exchange, in seconds.
    public var timeoutSeconds: Double
    /// `pen`: the IANA private enterprise number of the organisation running the site, written as
    /// 8 decimal digits at the end of the mirror's mRIDs (as CSIP-AUS writes it: sep2tools'
    /// `generate_mrid`); nil: none configured, 00000000 is written (bessd's LFDI is its certificate's
    /// hash, whose last digits are no PEN, docs/ieee2030-5.md §3).
    public var pen: UInt32?
    /// `server_certificate_sha256`: SHA-256 fingerprints (64 hex digits, lower case) of the server
    /// certificates accepted as the utility's; nil: none pinned this way.
    public var serverCertificates: [String]?
    /// `server_lfdi`: the LFDI (40 hex digits, upper case) of the server certificate accepted as the
    /// utility's; nil: none pinned this way.
    public var serverLFDI: String?

    /// The path a server names its DeviceCapability under for CSIP-AUS discovery.
    public static let wellKnownPath = "/.well-known/csipaus"
    /// The suite IEEE 2030.5 requires (TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8, 0xC0AE).
    public static let ccm8Cipher = "ECDHE-ECDSA-AES128-CCM8"
    /// The suite a site adds with `allow_gcm`.
    public static let gcmCipher = "ECDHE-ECDSA-AES128-GCM-SHA256"

    /// Settings with the defaults of the configuration file for what is not given.
    public init(serverHost: String, serverPort: UInt16 = 443, deviceCapabilityPath: String, certificateFile: String,
                keyFile: String, caFile: String, allowGCM: Bool = false, pollSeconds: UInt32 = 300, postSeconds: UInt32 = 300,
                registration: Registration = .outOfBand, pin: UInt32? = nil, connectionPointId: String? = nil,
                timeoutSeconds: Double = 10, pen: UInt32? = nil, serverCertificates: [String]? = nil, serverLFDI: String? = nil) {
        self.serverHost = serverHost
        self.serverPort = serverPort
        self.deviceCapabilityPath = deviceCapabilityPath
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.caFile = caFile
        self.allowGCM = allowGCM
        self.pollSeconds = pollSeconds
        self.postSeconds = postSeconds
        self.registration = registration
        self.pin = pin
        self.connectionPointId = connectionPointId
        self.timeoutSeconds = timeoutSeconds
        self.pen = pen
        self.serverCertificates = serverCertificates
        self.serverLFDI = serverLFDI
    }

    /// The TLS 1.2 suites offered: CCM8 as 2030.5 requires, and GCM after it with `allowGCM`.
    public var cipherList: String { allowGCM ? "\(Self.ccm8Cipher):\(Self.gcmCipher)" : Self.ccm8Cipher }

    /// Whether a server is the utility's, by its certificate's SHA-256 fingerprint (lower-case
    /// hex): one `server_certificate_sha256` names, or whose LFDI is `server_lfdi`. Nil without
    /// either: every server whose chain verifies against `ca_file` (the SERCA), which every device
    /// certificate under it does too.
    public var acceptsServer: (@Sendable (_ fingerprint: String) -> Bool)? {
        guard serverCertificates != nil || serverLFDI != nil else { return nil }
        let fingerprints = Set(serverCertificates ?? []), lfdi = serverLFDI
        return { fingerprint in fingerprints.contains(fingerprint) || (lfdi != nil && DeviceIdentity(fingerprint: fingerprint)?.lfdi == lfdi) }
    }

    /// Whether nothing authenticates the server beyond its chain: no server pin and no
    /// registration PIN (`SEP2_SERVER_UNPINNED`).
    public var serverUnpinned: Bool { serverCertificates == nil && serverLFDI == nil && pin == nil }

    /// Whether `pin` is a registration PIN: six digits whose last is the check digit of the five
    /// before it (the digits' sum is a multiple of 10, as for the SFDI: 11111 → 111115).
    public static func validPIN(_ pin: UInt32) -> Bool { pin <= 999_999 && digitSum(pin) % 10 == 0 }

    /// The check digit that completes the five digits `value`: 11111 → 5.
    static func checkDigit(_ value: UInt32) -> UInt32 { (10 - digitSum(value) % 10) % 10 }

    private static func digitSum(_ value: UInt32) -> UInt32 {
        var sum: UInt32 = 0
        var rest = value
        while rest > 0 {
            sum += rest % 10
            rest /= 10
        }
        return sum
    }

    /// The keys of `ieee2030_5`.
    static let keys = ConfigKeys("ieee2030_5", [
        "server", "discovery", "cert_file", "key_file", "ca_file", "allow_gcm", "poll_s", "post_s", "registration", "pin",
        "connection_point_id", "timeout_s", "pen", "server_certificate_sha256", "server_lfdi",
    ])

    /// `ieee2030_5:`; nil when absent or when a required key is missing or wrong (each reported).
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader) -> IEEE2030_5Settings? {
        guard let fields else { return nil }
        let wellKnown = fields.choice("discovery", [("device_capability", false), ("well_known", true)], default: false)
        let server = decodeServer(fields, r, wellKnown: wellKnown)
        func path(_ key: String) -> String? {
            let value = fields.string(key, pattern: { $0.hasPrefix("/") }, rule: "must be an absolute path")
            if value == nil, !fields.has(key) { r.error(fields.node, fields.child(key), "is required with ieee2030_5") }
            return value
        }
        let certificate = path("cert_file")
        let key = path("key_file")
        let ca = path("ca_file")
        let allowGCM = fields.bool("allow_gcm", default: false)
        let poll = fields.int("poll_s", default: 300, range: 1...86_400, unit: "seconds")!
        let post = fields.int("post_s", default: 300, range: 1...86_400, unit: "seconds")!
        let registration = fields.choice("registration", [("out_of_band", Registration.outOfBand), ("in_band", .inBand)],
                                         default: .outOfBand)
        let pin = decodePIN(fields, r)
        if registration == .inBand, !fields.has("pin") {
            r.error(fields.node, fields.child("pin"),
                    "is required with registration: in_band (the PIN the utility gave for this site, 6 digits with the check digit)")
        }
        let connectionPoint = fields.string("connection_point_id", pattern: { text in
            (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { $0 < 0x80 && ($0 >= 0x30 && $0 <= 0x39 || ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A) }
        }, rule: "must be 1 to 32 letters and digits (the NMI, or the utility's connection point id)")
        let timeout = fields.double("timeout_s", default: 10, range: 1...60, unit: "seconds")!
        let pen = decodePEN(fields, r)
        let serverCertificates = fields.fingerprints("server_certificate_sha256")
        if serverCertificates?.isEmpty == true, fields.sequence("server_certificate_sha256")?.isEmpty == true,
           let node = fields.node("server_certificate_sha256") {
            r.error(node, fields.child("server_certificate_sha256"), "names no certificate: list the server's fingerprints, or leave the key out")
        }
        let serverLFDI = fields.string("server_lfdi", pattern: { DeviceIdentity(lfdi: $0, sfdi: 0) != nil },
                                       rule: "must be the LFDI of the server's certificate: 40 hex digits (bessctl ieee2030-5 --cert FILE)")
            .flatMap { DeviceIdentity(lfdi: $0, sfdi: 0)?.lfdi }
        fields.finish(Self.keys)
        guard let server, let certificate, let key, let ca else { return nil }
        let settings = IEEE2030_5Settings(serverHost: server.host, serverPort: server.port, deviceCapabilityPath: server.path,
                                          certificateFile: certificate, keyFile: key, caFile: ca, allowGCM: allowGCM,
                                          pollSeconds: UInt32(poll), postSeconds: UInt32(post), registration: registration, pin: pin,
                                          connectionPointId: connectionPoint, timeoutSeconds: timeout, pen: pen,
                                          serverCertificates: serverCertificates, serverLFDI: serverLFDI)
        if settings.serverUnpinned, !fields.has("pin") {
            r.notice(fields.node, fields.path,
                     "SEP2_SERVER_UNPINNED: neither server_certificate_sha256, server_lfdi nor a registration pin names the utility's server: "
                     + "any certificate under ca_file (another device's too) is taken as the server")
        }
        return settings
    }

    /// The largest `pen`: it is written as 8 decimal digits.
    public static let maximumPEN: UInt32 = 99_999_999

    /// `pen`, read as its text: 1 to 8 decimal digits (IANA's numbers are below 100,000 today).
    private static func decodePEN(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> UInt32? {
        guard let node = fields.node("pen") else { return nil }
        let text = node.scalar?.string ?? ""
        guard (1...8).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = UInt32(text),
              value <= maximumPEN else {
            r.error(node, fields.child("pen"),
                    "must be the organisation's IANA private enterprise number: 1 to 8 decimal digits (it ends the mirror's mRIDs)",
                    got: ConfigReader.shown(node))
            return nil
        }
        return value
    }

    /// `pin`, read as its text (a leading zero is a digit, never an octal sign): six digits with a
    /// valid check digit.
    private static func decodePIN(_ fields: ConfigReader.Fields, _ r: ConfigReader) -> UInt32? {
        guard let node = fields.node("pin") else { return nil }
        let text = node.scalar?.string ?? ""
        guard (5...6).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = UInt32(text) else {
            r.error(node, fields.child("pin"), "must be the registration PIN: 6 digits, the last the check digit", got: ConfigReader.shown(node))
            return nil
        }
        if text.utf8.count == 5 {
            r.error(node, fields.child("pin"), "lacks its check digit: the PIN is 6 digits, the sixth here \(checkDigit(value))",
                    got: ConfigReader.shown(node))
            return nil
        }
        guard validPIN(value) else {
            r.error(node, fields.child("pin"),
                    "has a wrong check digit: the 6 digits' sum must be a multiple of 10 (the sixth here \(checkDigit(value / 10)))",
                    got: ConfigReader.shown(node))
            return nil
        }
        return value
    }

    /// `server`: `https://host[:port]/path`; the path is the DeviceCapability's, or empty with
    /// `discovery: well_known`.
    private static func decodeServer(_ fields: ConfigReader.Fields, _ r: ConfigReader,
                                     wellKnown: Bool) -> (host: String, port: UInt16, path: String)? {
        guard let text = fields.string("server") else {
            if !fields.has("server") {
                r.error(fields.node, fields.child("server"), "is required with ieee2030_5 (the DeviceCapability's URL, https://host/dcap)")
            }
            return nil
        }
        let parsed = ServerURL.parse(text)
        let node = fields.mark("server")
        switch parsed {
        case .failure(let problem):
            r.error(node, fields.child("server"), problem.rawValue, got: node.map(ConfigReader.shown))
            return nil
        case .success(let url):
            if wellKnown, !(url.path.isEmpty || url.path == "/") {
                r.error(node, fields.child("server"),
                        "names a path, and discovery: well_known reads \(wellKnownPath): give the server's URL alone, or discovery: device_capability",
                        got: node.map(ConfigReader.shown))
                return nil
            }
            if !wellKnown, url.path.isEmpty {
                r.error(node, fields.child("server"),
                        "needs the DeviceCapability's path (https://host/dcap), or discovery: well_known", got: node.map(ConfigReader.shown))
                return nil
            }
            return (url.host, url.port, wellKnown ? wellKnownPath : url.path)
        }
    }
}

/// The parts of an `https://` URL bessd connects to: host, port and path with its query.
struct ServerURL: Equatable {
    /// What is wrong with a URL, as an error message says it.
    enum Problem: String, Error {
        case notHTTPS = "must be an https:// URL (IEEE 2030.5 is HTTP over TLS)"
        case credentials = "must not carry a user or password (the device certificate is the credential)"
        case host = "has no valid host: an IPv4 address, an [IPv6] address or a host name"
        case port = "has a port that is not from 1 to 65535"
        case path = "has a path with a space, a control character, '#' or a character outside ASCII"
    }

    var host: String
    var port: UInt16
    /// The path and query as written; empty when the URL has none.
    var path: String

    static func parse(_ text: String) -> Result<ServerURL, Problem> {
        guard text.lowercased().hasPrefix("https://") else { return .failure(.notHTTPS) }
        let rest = text.dropFirst("https://".count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if path.hasPrefix("?") { path = "/" + path }
        guard !authority.contains("@") else { return .failure(.credentials) }
        guard path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) else { return .failure(.path) }
        var host = Substring(authority)
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(.host) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return .failure(.host) }
                portText = after.dropFirst()
            }
            guard host.contains(":") else { return .failure(.host) }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
            if host.contains(":") { return .failure(.host) }
        }
        guard HostAddress.problem(String(host)) == nil else { return .failure(.host) }
        var port: UInt16 = 443
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int(portText), (1...65535).contains(value) else { return .failure(.port) }
            port = UInt16(value)
        }
        return .success(ServerURL(host: String(host), port: port, path: path))
    }
}
