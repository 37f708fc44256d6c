import BessBase
import ControlCore
import Foundation
import Testing
import UplinkIngest

/// bess-aggregator's credentials (issue 57 §3): a site's token on its own site's paths only, the
/// operator's alone for commands, /metrics and every site; the files refused at start with the line.
@Suite("bess-aggregator's access: per-site tokens, the operator token, constant-time compare")
struct AggregatorAccessTests {
    static let tokenA = "site-a-token-0123456789abcdef"
    static let tokenB = "site-b-token-0123456789abcdef"
    static let operatorToken = "operator-token-0123456789abcdef"
    static let file = """
        # site tokens
        SITE_A \(tokenA)

        SITE_B\t\(tokenB)   # the second gateway
        """

    static func access(loopback: Bool = true, withOperator: Bool = true) throws -> AggregatorAccess {
        try AggregatorAccess(siteTokens: ("sites", file), operatorToken: withOperator ? ("operator", operatorToken + "\n") : nil,
                             loopback: loopback)
    }

    static func bearer(_ token: String) -> String { "Bearer \(token)" }

    /// Commands are refused for its own site too.
    @Test("a site token reads its own records and seqs; 403 on others', on commands and on /metrics")
    func siteToken() throws {
        let access = try Self.access()
        let a = Self.bearer(Self.tokenA)
        #expect(access.decide(.records(site: "SITE_A"), authorization: a) == .allowed)
        #expect(access.decide(.seqs(site: "SITE_A"), authorization: a) == .allowed)
        #expect(access.decide(.records(site: "SITE_B"), authorization: a) == .forbidden)
        #expect(access.decide(.seqs(site: "SITE_B"), authorization: a) == .forbidden)
        #expect(access.decide(.records(site: "SITE_C"), authorization: a) == .forbidden)
        #expect(access.decide(.commands(site: "SITE_A"), authorization: a) == .forbidden)
        #expect(access.decide(.commands(site: "SITE_B"), authorization: a) == .forbidden)
        #expect(access.decide(.metrics, authorization: a) == .forbidden)
        #expect(access.decide(.records(site: "SITE_B"), authorization: Self.bearer(Self.tokenB)) == .allowed)
    }

    @Test("no credential, another scheme, a token no one holds or a prefix of one: 401")
    func unauthorized() throws {
        let access = try Self.access()
        for header in [nil, "", "Bearer", "Bearer ", "Token \(Self.tokenA)", Self.bearer("wrong-token-0123456789abcdef"),
                       Self.bearer(String(Self.tokenA.dropLast())), Self.bearer(Self.tokenA + "x")] as [String?] {
            #expect(access.decide(.records(site: "SITE_A"), authorization: header) == .unauthorized, "\(header ?? "none")")
            #expect(access.decide(.commands(site: "SITE_A"), authorization: header) == .unauthorized, "\(header ?? "none")")
            #expect(access.decide(.metrics, authorization: header) == .unauthorized, "\(header ?? "none")")
        }
    }

    @Test("the operator token: commands, every seq, /metrics, the page off loopback; no site records")
    func operatorToken() throws {
        let access = try Self.access(loopback: false)
        let op = Self.bearer(Self.operatorToken)
        for site in ["SITE_A", "SITE_B", "SITE_C"] {
            #expect(access.decide(.commands(site: site), authorization: op) == .allowed)
            #expect(access.decide(.seqs(site: site), authorization: op) == .allowed)
            #expect(access.decide(.records(site: site), authorization: op) == .forbidden)
        }
        #expect(access.decide(.metrics, authorization: op) == .allowed)
        #expect(access.decide(.page, authorization: op) == .allowed)
        #expect(access.decide(.page, authorization: "bearer \(Self.operatorToken)") == .allowed)
        // A browser's prompt: Basic with the token as the password.
        let basic = "Basic " + Data("operator:\(Self.operatorToken)".utf8).base64EncodedString()
        #expect(access.decide(.page, authorization: basic) == .allowed)
        #expect(access.decide(.page, authorization: nil) == .unauthorized)
        #expect(access.decide(.page, authorization: Self.bearer(Self.tokenA)) == .forbidden)
        // On loopback the page needs none.
        #expect(try Self.access(loopback: true).decide(.page, authorization: nil) == .allowed)
    }

    @Test("without an operator token commands are refused to every site's token")
    func noOperator() throws {
        let access = try Self.access(withOperator: false)
        #expect(access.decide(.commands(site: "SITE_A"), authorization: Self.bearer(Self.tokenA)) == .forbidden)
        #expect(access.decide(.records(site: "SITE_A"), authorization: Self.bearer(Self.tokenA)) == .allowed)
    }

    @Test("no credential at all: every route open on loopback, and refused at start anywhere else")
    func openOnlyOnLoopback() throws {
        let open = try AggregatorAccess.load(siteTokensFile: nil, operatorTokenFile: nil, host: "127.0.0.1")
        #expect(open.open)
        #expect(open.decide(.commands(site: "SITE_A"), authorization: nil) == .allowed)
        for host in ["0.0.0.0", "192.168.1.10", "gateway.example.net", "128.0.0.1", "127.0.0"] {
            #expect(throws: AggregatorAccessError.self) { try AggregatorAccess.load(siteTokensFile: nil, operatorTokenFile: nil, host: host) }
            do {
                _ = try AggregatorAccess.load(siteTokensFile: nil, operatorTokenFile: nil, host: host)
            } catch {
                #expect(error.code == .credentialsRequired && error.message.contains(host), "\(error)")
            }
        }
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"] { #expect(AggregatorAccess.isLoopback(host), "\(host)") }
    }

    @Test("a bad line of the site-token file is refused naming its line", arguments: [
        ("SITE_A \(tokenA)\nSITE_B\n", 2, "1 fields"),
        ("SITE_A \(tokenA) extra\n", 1, "3 fields"),
        ("# ok\n\nsite a \(tokenA)\n", 3, "3 fields"),
        ("SITE/A \(tokenA)\n", 1, "is not"),
        ("SITE_A \(tokenA)\nSITE_A \(tokenB)\n", 2, "also on line 1"),
        ("SITE_A short\n", 1, "fewer than 16"),
        ("SITE_A \(tokenA)\n#\nSITE_B \(tokenA)\n", 3, "also SITE_A's (line 1)"),
    ])
    func badLine(text: String, line: Int, says: String) {
        do {
            _ = try AggregatorAccess(siteTokens: ("sites.txt", text), operatorToken: nil, loopback: true)
            Issue.record("\(text) taken")
        } catch {
            #expect(error.code == .siteTokensInvalid)
            #expect(error.message.hasPrefix("sites.txt line \(line): "), "\(error)")
            #expect(error.message.contains(says), "\(error)")
        }
    }

    @Test("a comments-only token file names no site; an operator token equal to a site's, short or spaced fails")
    func refusedFiles() {
        #expect(throws: AggregatorAccessError(.siteTokensInvalid, message: "s names no site")) {
            try AggregatorAccess(siteTokens: ("s", "# nothing\n\n"), operatorToken: nil, loopback: true)
        }
        for text in [Self.tokenB + "\n", "short", "two words-0123456789abcdef"] {
            do {
                _ = try AggregatorAccess(siteTokens: ("s", Self.file), operatorToken: ("op", text), loopback: true)
                Issue.record("operator token \(text) taken")
            } catch {
                #expect(error.code == .operatorTokenInvalid, "\(error)")
            }
        }
    }

    @Test("constant-time compare: equal only for the same bytes, whatever the lengths")
    func constantTimeCompare() {
        let secret = Array("0123456789abcdef".utf8)
        #expect(ConstantTime.equal(secret, secret))
        #expect(ConstantTime.equal([], []))
        #expect(!ConstantTime.equal([], secret))
        #expect(!ConstantTime.equal(secret, []))
        #expect(!ConstantTime.equal(Array(secret.dropLast()), secret))
        #expect(!ConstantTime.equal(secret + [0x30], secret))
        // The secret twice over is not the secret (the loop reads the expected bytes cyclically).
        #expect(!ConstantTime.equal(secret + secret, secret))
        for i in secret.indices {
            var other = secret
            other[i] ^= 0x01
            #expect(!ConstantTime.equal(other, secret), "differs at \(i)")
            other[i] ^= 0x81
            #expect(!ConstantTime.equal(other, secret), "differs at \(i) in the high bit")
        }
        // Every pair of short byte strings agrees with ==.
        let samples: [[UInt8]] = [[], [0], [1], [0, 0], [0, 1], [1, 0], [255], [255, 255], [0, 0, 0]]
        for a in samples {
            for b in samples { #expect(ConstantTime.equal(a, b) == (a == b), "\(a) \(b)") }
        }
    }

    @Test("a payload over 1 MiB is PAYLOAD_TOO_LARGE before it is read; 1 MiB is taken")
    func payloadSize() {
        #expect(IngestRules.check(payloadBytes: 1 << 20) == nil)
        #expect(IngestRules.check(payloadBytes: 0) == nil)
        #expect(IngestRules.check(payloadBytes: (1 << 20) + 1)?.code == .payloadTooLarge)
        #expect(IngestRefusal.Code.payloadTooLarge.description == "PAYLOAD_TOO_LARGE")
    }
}
