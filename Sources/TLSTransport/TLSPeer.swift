public import BessSystem
import COpenSSL

/// The authenticated peer of a TLS connection: who its certificate names and the certificate's
/// SHA-256 fingerprint.
public struct TLSPeer: Sendable, Equatable {
    /// The certificate's subject in RFC 2253 form as OpenSSL prints it (special characters and
    /// every non-ASCII octet escaped by OpenSSL), e.g. `CN=sldc-scada,O=Grid Operator`; empty when
    /// the certificate has none (IEEE 2030.5 device certificates).
    public var subject: String
    /// SHA-256 of the DER-encoded certificate, 64 lower-case hex digits (what an allow-list names).
    public var fingerprint: String

    /// The name every audit line gives this peer: the subject, quoted and escaped by `PeerText` so
    /// that nothing the peer chose reaches a log unescaped; `sha256:<fingerprint>` when the
    /// subject is empty.
    public var identity: String {
        subject.isEmpty ? "sha256:\(fingerprint)" : PeerText.quoted(subject, limit: 256)
    }

    /// The subject and fingerprint of `certificate` (an `X509 *`; borrowed, not freed).
    init(certificate: OpaquePointer) {
        subject = Self.subject(of: certificate)
        fingerprint = Self.fingerprint(of: certificate) ?? ""
    }

    /// SHA-256 over the DER encoding, in hex. The corresponding C function is `X509_digest`.
    static func fingerprint(of certificate: OpaquePointer) -> String? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else { return nil }
        return digest.prefix(Int(length)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The subject, printed by OpenSSL in RFC 2253 form into a memory BIO. The corresponding C
    /// function is `X509_NAME_print_ex`.
    static func subject(of certificate: OpaquePointer) -> String {
        guard let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, bessd_xn_flag_rfc2253) >= 0 else { return "" }
        let pending = Int(BIO_ctrl_pending(bio))
        guard pending > 0 else { return "" }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = BIO_read(bio, &bytes, Int32(pending))
        return String(decoding: bytes.prefix(max(0, Int(read))), as: UTF8.self)
    }

    /// `text` as a fingerprint (`CertificateFingerprint.normalized`).
    public static func normalizedFingerprint(_ text: String) -> String? { CertificateFingerprint.normalized(text) }
}
