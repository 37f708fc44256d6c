/// A certificate's SHA-256 fingerprint as configuration and allow-lists write it: 64 hex digits,
/// lower case, no colons. The one reader of that text, for the YAML (which names certificates)
/// and the TLS transport (which compares them), so neither needs the other.
public enum CertificateFingerprint {
    /// `text` as a fingerprint: 64 hex digits once colons and spaces are dropped, in lower case
    /// (`openssl x509 -fingerprint -sha256` prints `AB:CD:…`); nil for anything else.
    public static func normalized(_ text: String) -> String? {
        let digits = text.lowercased().filter { $0 != ":" && $0 != " " }
        guard digits.count == 64, digits.allSatisfy({ $0.isHexDigit }) else { return nil }
        return digits
    }
}
