public import IEEE2030_5
import TLSTransport

extension DeviceIdentity {
    /// The identity of the first certificate in a PEM file's text (the device's own certificate comes
    /// first in a chain file), hashed by the TLS transport (`CertificateDigest`).
    public init(certificatePEM text: String) throws(SEP2Error) {
        try self.init(certificatePEM: text, sha256: CertificateDigest.sha256(certificateDER:))
    }
}
