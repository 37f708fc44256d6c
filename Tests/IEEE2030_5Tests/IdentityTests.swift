import BessBase
import Foundation
import ControlCore
import IEEE2030_5
import TestSupport
import Testing
import TLSTransport

/// LFDI and SFDI as IEEE 2030.5 defines them, against the standard's own example, the openssl
/// command's SHA-256 fingerprint and sep2cert (PyPI, hil/peers/sep2_peer.py) on certificates made at
/// test time.
@Suite("IEEE 2030.5 device identity")
struct IdentityTests {
    /// The certificate hash bessd uses: the TLS transport's (IEEE2030_5 links no OpenSSL).
    static func hash(_ der: [UInt8]) -> [UInt8]? { CertificateDigest.sha256(certificateDER: der) }

    /// Hex digits to bytes.
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    @Test("the standard's example: LFDI 3E4F…23E5 has SFDI 16726121139 and check digit 1")
    func standardExample() {
        let lfdi = "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5"
        let identity = DeviceIdentity(sha256: Self.bytes(lfdi) + [UInt8](repeating: 0xAA, count: 12))
        #expect(identity.lfdi == lfdi)
        #expect(identity.sfdi == 167_261_211_391)
        #expect(DeviceIdentity.checkDigit(16_726_121_139) == 1)
        #expect(DeviceIdentity.checkDigit(0) == 0)
        #expect(DeviceIdentity.checkDigit(11111) == 5, "the PIN example: 11111 → 111115")
    }

    @Test("LFDI is the first 40 hex digits of the certificate's SHA-256 as the openssl command prints it")
    func lfdiFromOpenSSL() throws {
        let fixture = try TLSFixture()
        for name in ["client", "server", "ca"] {
            let pem = try String(contentsOfFile: fixture.path("\(name).pem"), encoding: .utf8)
            let identity = try DeviceIdentity(certificatePEM: pem, sha256: Self.hash)
            let fingerprint = try fixture.fingerprint(name).replacingOccurrences(of: ":", with: "")
            #expect(identity.lfdi == String(fingerprint.prefix(40)), "\(name)")
            try fixture.openssl(["x509", "-in", fixture.path("\(name).pem"), "-outform", "DER", "-out", fixture.path("\(name).der")])
            let derBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture.path("\(name).der"))))
            #expect(try DeviceIdentity(certificateDER: derBytes, sha256: Self.hash) == identity, "\(name): DER and PEM agree")
        }
    }

    @Test("LFDI and SFDI equal sep2cert's for P-256 certificates made by openssl and by sep2cert")
    func againstSep2cert() throws {
        let fixture = try TLSFixture()
        let names = ["client", "server", "ca", "foreign"]
        let run = try Package.tool([try Package.sep2Python(), "hil/peers/sep2_peer.py", "identity", "--make", fixture.directory.path]
                                   + names.map { fixture.path("\($0).pem") })
        #expect(run.status == 0, "sep2_peer.py identity: \(run.err.suffix(600))")
        let lines = run.out.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(lines.count == names.count + 1, "the four openssl certificates and sep2cert's own device certificate: \(run.out.suffix(600))")
        for line in lines {
            let path = try #require(line["path"] as? String)
            let pem = try String(contentsOfFile: path, encoding: .utf8)
            let ours = try DeviceIdentity(certificatePEM: pem, sha256: Self.hash)
            #expect(ours.lfdi == (line["lfdi"] as? String)?.uppercased(), "\(path)")
            #expect(ours.sfdi == (line["sfdi"] as? NSNumber)?.uint64Value, "\(path)")
        }
    }

    @Test("what is not one certificate is SEP2_CERTIFICATE_INVALID", arguments: [
        ("no block", "hello"),
        ("bad base64", "-----BEGIN CERTIFICATE-----\nMII*BAD\n-----END CERTIFICATE-----\n"),
        ("not DER", "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n"),
    ])
    func refusals(_ name: String, _ text: String) {
        #expect { try DeviceIdentity(certificatePEM: text, sha256: Self.hash) } throws: { ($0 as? SEP2Error)?.code == .certificateInvalid }
    }

    @Test("a certificate cut short or with a byte after it is refused")
    func truncatedDER() throws {
        let fixture = try TLSFixture()
        let pem = try String(contentsOfFile: fixture.path("client.pem"), encoding: .utf8)
        let body = pem.components(separatedBy: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try #require(Data(base64Encoded: body)).map { $0 }
        #expect(throws: SEP2Error.self) { try DeviceIdentity(certificateDER: Array(der.dropLast()), sha256: Self.hash) }
        #expect(throws: SEP2Error.self) { try DeviceIdentity(certificateDER: der + [0], sha256: Self.hash) }
        #expect(throws: SEP2Error.self) { try DeviceIdentity(certificateDER: [], sha256: Self.hash) }
        _ = try DeviceIdentity(certificateDER: der, sha256: Self.hash)
    }
}
