public import BessBase
import ControlCore
import Foundation

/// Who may do what at bess-aggregator's HTTP listener (issue 57 §3). A gateway holds its own site's
/// token and it is taken on that site's paths only; the operator's token (distinct from every site's)
/// alone posts commands and reads every site, `/metrics` and, off loopback, the status page. With no
/// credential at all every route is open, which only a loopback listener allows (`load`).
public struct AggregatorAccess: Sendable {
    /// What a request asks for.
    public enum Route: Sendable {
        /// `POST /v1/sites/SITE/records`: a gateway's upload.
        case records(site: String)
        /// `GET /v1/sites/SITE/seqs`: what is stored of a site.
        case seqs(site: String)
        /// `POST /v1/sites/SITE/commands`: a command to a site.
        case commands(site: String)
        /// `GET /metrics`.
        case metrics
        /// `GET /`: the status page (its stylesheet holds no data and is never guarded).
        case page
    }

    /// The answer: go on, 401 (no credential, or one that is no one's), or 403 (a credential that is
    /// someone's, not for this route).
    public enum Decision: Equatable, Sendable {
        case allowed, unauthorized, forbidden
    }

    /// The shortest token taken: a short one is guessed (`openssl rand -hex 32` makes one of 64).
    public static let minimumTokenBytes = 16

    /// Site ids with their tokens, in the file's order.
    let sites: [(site: String, token: [UInt8])]
    let operatorToken: [UInt8]?
    /// The listener is on loopback: the status page needs no credential there.
    public let loopback: Bool

    /// True when no credential is configured: every route is open (loopback only).
    public var open: Bool { sites.isEmpty && operatorToken == nil }
    /// How many sites have a token.
    public var siteCount: Int { sites.count }
    public var hasOperator: Bool { operatorToken != nil }

    /// Credentials from the texts of a site-token file (a line per site: `SITE_ID TOKEN`, `#` comments
    /// and blank lines skipped) and an operator-token file; `name`s are for the errors, which name the
    /// file and line. Throws when a line is not two fields, a site id breaks the id rule or comes twice,
    /// a token is short or is also another site's, or the operator's token is also a site's.
    public init(siteTokens: (name: String, text: String)?, operatorToken: (name: String, text: String)?, loopback: Bool)
        throws(AggregatorAccessError)
    {
        var sites: [(site: String, token: [UInt8])] = []
        if let (name, text) = siteTokens {
            var lineOf: [String: Int] = [:]
            for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = index + 1
                let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let fields = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
                if fields.isEmpty { continue }
                func invalid(_ why: String) -> AggregatorAccessError {
                    AggregatorAccessError(.siteTokensInvalid, message: "\(name) line \(line): \(why)")
                }
                guard fields.count == 2 else {
                    throw invalid("\(fields.count) fields; a line is SITE_ID TOKEN (a # starts a comment)")
                }
                let site = String(fields[0]), token = Array(fields[1].utf8)
                if let refusal = IngestRules.check(site: site) { throw invalid(refusal.message) }
                if let first = lineOf[site] { throw invalid("site \(site) is also on line \(first)") }
                guard token.count >= Self.minimumTokenBytes else {
                    throw invalid("\(site)'s token is \(token.count) characters, fewer than \(Self.minimumTokenBytes)")
                }
                if let other = sites.first(where: { ConstantTime.equal(token, $0.token) }) {
                    throw invalid("\(site)'s token is also \(other.site)'s (line \(lineOf[other.site] ?? 0)): each site needs its own")
                }
                lineOf[site] = line
                sites.append((site, token))
            }
            guard !sites.isEmpty else { throw AggregatorAccessError(.siteTokensInvalid, message: "\(name) names no site") }
        }
        var operatorBytes: [UInt8]?
        if let (name, text) = operatorToken {
            let token = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
            guard token.count >= Self.minimumTokenBytes, !token.contains(where: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A }) else {
                throw AggregatorAccessError(.operatorTokenInvalid, message: "\(name): the operator token is \(token.count) characters "
                                            + "or holds a space; it needs at least \(Self.minimumTokenBytes) and none")
            }
            if let site = sites.first(where: { ConstantTime.equal(token, $0.token) }) {
                throw AggregatorAccessError(.operatorTokenInvalid, message: "\(name): the operator token is also site \(site.site)'s; "
                                            + "it must be distinct from every site's (a gateway holding it would command the fleet)")
            }
            operatorBytes = token
        }
        self.sites = sites
        self.operatorToken = operatorBytes
        self.loopback = loopback
    }

    /// Reads the files and refuses a listener off loopback without any credential.
    public static func load(siteTokensFile: String?, operatorTokenFile: String?, host: String) throws(AggregatorAccessError) -> Self {
        func read(_ path: String) throws(AggregatorAccessError) -> (name: String, text: String) {
            do {
                return (path, try String(contentsOfFile: path, encoding: .utf8))
            } catch {
                throw AggregatorAccessError(.credentialsUnreadable, message: "cannot read \(path): \(error.localizedDescription)")
            }
        }
        let access = try Self(siteTokens: try siteTokensFile.map(read), operatorToken: try operatorTokenFile.map(read),
                              loopback: isLoopback(host))
        if access.open && !access.loopback {
            throw AggregatorAccessError(.credentialsRequired, message: "listening on \(host), which is not loopback, without credentials "
                                        + "would let anyone upload as any site and command every site: give --site-tokens FILE and/or "
                                        + "--operator-token-file FILE, or listen on 127.0.0.1")
        }
        return access
    }

    /// 127.0.0.0/8, `::1` and `localhost`; anything else (0.0.0.0, a name, an address) is not.
    public static func isLoopback(_ host: String) -> Bool {
        let h = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if h == "localhost" || h == "::1" { return true }
        let octets = h.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// The decision for `route` given the request's `Authorization` header (`Bearer TOKEN`, or
    /// `Basic` with the token as the password).
    public func decide(_ route: Route, authorization: String?) -> Decision {
        if open { return .allowed }
        if case .page = route, loopback { return .allowed }
        guard let presented = Self.bearer(authorization) else { return .unauthorized }
        // Every candidate is compared, none skipped on an earlier match: the time taken does not say which matched.
        let isOperator = operatorToken.map { ConstantTime.equal(presented, $0) } ?? false
        var ownSite: String?
        for entry in sites where ConstantTime.equal(presented, entry.token) { ownSite = entry.site }
        if !isOperator && ownSite == nil { return .unauthorized }
        switch route {
        case .records(let site):
            return ownSite == site ? .allowed : .forbidden
        case .seqs(let site):
            return isOperator || ownSite == site ? .allowed : .forbidden
        case .commands, .metrics, .page:
            return isOperator ? .allowed : .forbidden
        }
    }

    /// The token of `Bearer TOKEN`, or the password of `Basic base64(USER:TOKEN)` (a browser's prompt
    /// for the status page; the user name is not looked at); the scheme in any case. Nil for any other
    /// header or none.
    static func bearer(_ header: String?) -> [UInt8]? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let value = parts[1].trimmingCharacters(in: .whitespaces)
        let token: [UInt8]
        switch parts[0].lowercased() {
        case "bearer":
            token = Array(value.utf8)
        case "basic":
            guard let decoded = Data(base64Encoded: value), let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            token = Array(decoded[decoded.index(after: colon)...])
        default:
            return nil
        }
        return token.isEmpty ? nil : token
    }
}

/// A comparison of secrets whose time depends on the presented length only, never on where the bytes
/// differ: every byte is looked at, the differences are or-ed together, and the loop never leaves early.
public enum ConstantTime {
    /// True when `presented` and `expected` are the same bytes. The loop runs over `presented` (the
    /// caller's, not the secret), reading `expected` cyclically, so its length is not what sets the time.
    public static func equal(_ presented: [UInt8], _ expected: [UInt8]) -> Bool {
        guard !expected.isEmpty else { return presented.isEmpty }
        var difference = UInt(bitPattern: presented.count ^ expected.count)
        let count = expected.count
        for i in 0..<presented.count {
            difference |= UInt(presented[i] ^ expected[i % count])
        }
        return difference == 0
    }
}

/// Why bess-aggregator's credentials cannot be used: a typed code and a sentence naming the file and line.
public typealias AggregatorAccessError = CodedError<AggregatorAccessErrorCode>

/// The stable code of an `AggregatorAccessError`.
public struct AggregatorAccessErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case siteTokensInvalid, operatorTokenInvalid, credentialsUnreadable, credentialsRequired, tokenFileRetired
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SITE_TOKENS_INVALID`: a line of `--site-tokens` that is not `SITE_ID TOKEN`, a site twice, a
    /// short token, or one token for two sites.
    public static let siteTokensInvalid = Self(.siteTokensInvalid)
    /// `OPERATOR_TOKEN_INVALID`: the operator token is short, holds a space, or is also a site's.
    public static let operatorTokenInvalid = Self(.operatorTokenInvalid)
    /// `CREDENTIALS_UNREADABLE`: a token file cannot be read.
    public static let credentialsUnreadable = Self(.credentialsUnreadable)
    /// `CREDENTIALS_REQUIRED`: a listener off loopback with no credential.
    public static let credentialsRequired = Self(.credentialsRequired)
    /// `TOKEN_FILE_RETIRED`: `--token-file` (one token for every site and for commands) is no longer taken.
    public static let tokenFileRetired = Self(.tokenFileRetired)

    public var description: String {
        switch value {
        case .siteTokensInvalid: "SITE_TOKENS_INVALID"
        case .operatorTokenInvalid: "OPERATOR_TOKEN_INVALID"
        case .credentialsUnreadable: "CREDENTIALS_UNREADABLE"
        case .credentialsRequired: "CREDENTIALS_REQUIRED"
        case .tokenFileRetired: "TOKEN_FILE_RETIRED"
        }
    }
}
