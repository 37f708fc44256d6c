public import BessBase
import ControlCore

/// A device's identity in IEEE 2030.5 (2018 §6.3.4), derived from its certificate: the long form
/// (LFDI) the utility's server keys the EndDevice on and the short form (SFDI) installers type into a
/// portal.
///
/// - LFDI: the first 160 bits of the SHA-256 of the certificate's DER encoding, as 40 hex digits
///   (upper case, as the standard's examples write them).
/// - SFDI: the first 36 bits of the same hash as a decimal number, followed by one check digit that
///   makes the sum of all the digits a multiple of 10.
public struct DeviceIdentity: Hashable, Sendable {
    /// The 20 bytes of the LFDI.
    public let lfdiBytes: [UInt8]
    /// The SFDI: the 36-bit value times ten plus its check digit (at most 12 decimal digits).
    public let sfdi: UInt64

    /// The LFDI as 40 upper-case hex digits.
    public var lfdi: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(40)
        for byte in lfdiBytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What hashes a certificate: the SHA-256 of its DER bytes, nil when they are not one whole X.509
    /// certificate. The TLS transport's `CertificateDigest.sha256(certificateDER:)` is the one;
    /// this module reads no certificate itself and links no OpenSSL.
    public typealias CertificateHash = ([UInt8]) -> [UInt8]?

    /// The identity of the certificate whose DER encoding is `der`, hashed by `sha256`; the bytes must
    /// be one whole X.509 certificate.
    public init(certificateDER der: [UInt8], sha256: CertificateHash) throws(SEP2Error) {
        guard !der.isEmpty, der.count <= Self.maximumCertificateBytes else {
            throw SEP2Error(.certificateInvalid, message: "a DER certificate of \(der.count) bytes (1 to \(Self.maximumCertificateBytes))")
        }
        guard let digest = sha256(der), digest.count >= 20 else {
            throw SEP2Error(.certificateInvalid, message: "\(der.count) bytes are not one DER X.509 certificate")
        }
        self.init(sha256: digest)
    }

    /// The identity of the first certificate in a PEM file's text (the device's own certificate comes
    /// first in a chain file), hashed by `sha256`.
    public init(certificatePEM text: String, sha256: CertificateHash) throws(SEP2Error) {
        try self.init(certificateDER: Self.firstPEMCertificate(text), sha256: sha256)
    }

    /// The identity from a certificate's SHA-256 (at least its first 20 bytes).
    public init(sha256 digest: [UInt8]) {
        precondition(digest.count >= 20, "an LFDI takes 20 bytes of the hash")
        lfdiBytes = Array(digest.prefix(20))
        let top36 = digest.prefix(5).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 4
        sfdi = top36 * 10 + Self.checkDigit(top36)
    }

    /// No identity: what the 2030.5 worker runs as when the certificate cannot be read and no device is
    /// stored (all zeros; shown as unknown, never as an LFDI).
    public static let unknown = DeviceIdentity(sha256: [UInt8](repeating: 0, count: 32))

    /// An identity as the server wrote it (an EndDevice's `lFDI`, 40 hex digits, and `sFDI`), for when
    /// the certificate cannot be read; nil for any other `lfdi`.
    public init?(lfdi: String, sfdi: UInt64) {
        guard let bytes = Self.hexBytes(lfdi, count: 20) else { return nil }
        lfdiBytes = bytes
        self.sfdi = sfdi
    }

    /// The identity of the certificate whose SHA-256 fingerprint is `fingerprint` (64 hex digits,
    /// any case, as `TLSPeer.fingerprint` gives a TLS peer's): the LFDI and SFDI of a server's
    /// certificate, for a pin and the journal. Nil for anything else.
    public init?(fingerprint: String) {
        guard let digest = Self.hexBytes(fingerprint, count: 32) else { return nil }
        self.init(sha256: digest)
    }

    /// The `count` bytes that 2 × `count` hex digits (any case) spell; nil for anything else.
    static func hexBytes(_ text: String, count: Int) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 2 * count, digits.allSatisfy(\.isHexDigit) else { return nil }
        func nibble(_ c: UInt8) -> UInt8 { c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
    }

    /// The digit that brings the sum of `value`'s decimal digits to a multiple of 10.
    public static func checkDigit(_ value: UInt64) -> UInt64 {
        var sum: UInt64 = 0
        var rest = value
        while rest > 0 { sum += rest % 10; rest /= 10 }
        return (10 - sum % 10) % 10
    }

    /// No device certificate comes near this (a P-256 one is about 600 bytes).
    public static let maximumCertificateBytes = 16_384

    /// The DER bytes of the first `CERTIFICATE` block of a PEM text.
    static func firstPEMCertificate(_ text: String) throws(SEP2Error) -> [UInt8] {
        let begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----"
        guard text.utf8.count <= 4 * maximumCertificateBytes * 8,
              let start = text.firstRange(of: begin), let stop = text[start.upperBound...].firstRange(of: end) else {
            throw SEP2Error(.certificateInvalid, message: "no PEM CERTIFICATE block")
        }
        guard let der = base64Decoded(text[start.upperBound..<stop.lowerBound]) else {
            throw SEP2Error(.certificateInvalid, message: "the PEM CERTIFICATE block is not base64")
        }
        return der
    }

    /// Strict base64 (RFC 4648, padded), white space ignored; nil for anything else.
    static func base64Decoded(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var accumulator: UInt32 = 0, bits = 0, padding = 0
        for byte in text.utf8 {
            let sextet: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): sextet = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): sextet = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sextet = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): sextet = 62
            case UInt8(ascii: "/"): sextet = 63
            case UInt8(ascii: "="): padding += 1; continue
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            accumulator = accumulator << 6 | sextet
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard padding <= 2, !out.isEmpty else { return nil }
        return out
    }
}
