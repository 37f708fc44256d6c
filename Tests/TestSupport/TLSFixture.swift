public import Foundation

/// A throwaway PKI made with the `openssl` command in a temporary directory at test time (no key is
/// ever committed): a CA, a second CA no one trusts, a server certificate, a client certificate, a
/// client the CA revoked (and its CRL), a client of the other CA. Every key is ECDSA P-256, so the
/// same server certificate serves TLS 1.3 and IEEE 2030.5's ECDHE-ECDSA-AES128-CCM8.
public final class TLSFixture {
    public let directory: URL

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("bessd-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try makeCA("ca")
        try makeCA("otherca")
        try makeLeaf("server", issuer: "ca", subject: "/CN=bessd-test-server")
        try makeLeaf("client", issuer: "ca", subject: "/CN=scada-client/O=Grid Operator")
        try makeLeaf("revoked", issuer: "ca", subject: "/CN=revoked-client")
        try makeLeaf("foreign", issuer: "otherca", subject: "/CN=foreign-client")
        try revoke("revoked", issuer: "ca")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The path of `name` in the fixture's directory (`client.pem`, `client.key`, `crl.pem`).
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The SHA-256 fingerprint of `name`.pem as the openssl command prints it (`AB:CD:…`).
    public func fingerprint(_ name: String) throws -> String {
        let out = try openssl(["x509", "-in", path("\(name).pem"), "-noout", "-fingerprint", "-sha256"])
        guard let value = out.split(separator: "=", maxSplits: 1).last else { throw FixtureFailure("no fingerprint: \(out)") }
        return value.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    public func openssl(_ arguments: [String]) throws -> String {
        let result = try Package.capture(URL(fileURLWithPath: "/usr/bin/openssl"), arguments, directory: directory, merged: true)
        guard result.status == 0 else { throw FixtureFailure("openssl \(arguments.joined(separator: " ")): \(result.out)") }
        return result.out
    }

    private func makeKey(_ name: String) throws {
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path("\(name).key")])
    }

    private func makeCA(_ name: String) throws {
        try makeKey(name)
        try openssl(["req", "-x509", "-new", "-key", path("\(name).key"), "-subj", "/CN=bessd test \(name)", "-days", "2",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                     "-out", path("\(name).pem")])
        // What `openssl ca` needs to revoke and to issue CRLs.
        try Data().write(to: directory.appendingPathComponent("\(name).index"))
        try Data("01\n".utf8).write(to: directory.appendingPathComponent("\(name).crlnumber"))
        let config = """
            [ca]
            default_ca = fixture
            [fixture]
            database = \(path("\(name).index"))
            crlnumber = \(path("\(name).crlnumber"))
            default_md = sha256
            default_crl_days = 2
            """
        try Data(config.utf8).write(to: directory.appendingPathComponent("\(name).cnf"))
    }

    private func makeLeaf(_ name: String, issuer: String, subject: String) throws {
        try makeKey(name)
        try openssl(["req", "-new", "-key", path("\(name).key"), "-subj", subject, "-out", path("\(name).csr")])
        try openssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(issuer).pem"), "-CAkey", path("\(issuer).key"),
                     "-CAcreateserial", "-days", "2", "-out", path("\(name).pem")])
    }

    /// Revokes `name` and writes the issuer's CRL to crl.pem.
    private func revoke(_ name: String, issuer: String) throws {
        let common = ["-config", path("\(issuer).cnf"), "-keyfile", path("\(issuer).key"), "-cert", path("\(issuer).pem")]
        try openssl(["ca"] + common + ["-revoke", path("\(name).pem")])
        try openssl(["ca"] + common + ["-gencrl", "-out", path("crl.pem")])
    }
}

public struct FixtureFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
