import COpenSSL

/// The SHA-256 of an X.509 certificate given as its DER bytes, for what names a certificate by its
/// hash: IEEE 2030.5's LFDI and SFDI (`DeviceIdentity`). Here, beside the TLS contexts that read
/// every other certificate, so that the protocol modules and Config link no OpenSSL.
public enum CertificateDigest {
    /// The SHA-256 of `der` (32 bytes), or nil when the bytes are not one whole DER X.509 certificate
    /// (OpenSSL's `d2i_X509` must read all of them) or the hash fails; OpenSSL's error queue is left
    /// empty either way. The corresponding C functions are `d2i_X509` and `EVP_Digest`.
    public static func sha256(certificateDER der: [UInt8]) -> [UInt8]? {
        guard !der.isEmpty else { return nil }
        let whole = der.withUnsafeBufferPointer { buffer -> Bool in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return false }
            defer { X509_free(certificate) }
            return cursor.map { $0 - buffer.baseAddress! } == buffer.count
        }
        guard whole else {
            OpenSSLErrors.clear()
            return nil
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let done = der.withUnsafeBytes { bytes in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(bytes.baseAddress, bytes.count, out.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        guard done == 1, length == 32 else {
            OpenSSLErrors.clear()
            return nil
        }
        return digest
    }
}
