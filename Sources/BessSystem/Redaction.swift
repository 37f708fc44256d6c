/// Secrets kept out of every output: status, /metrics, the support bundle, the journal.
///
/// bessd reads secrets from files (`token_file`, `password_file`), but a URL may still carry
/// credentials (`https://user:password@host/`), and a configuration pasted into a ticket may name a
/// password. Every text bessd shows that could hold one passes through here, once, where it is made.
public enum Redaction {
    /// What replaces a secret.
    public static let marker = "<redacted>"

    /// `text` with the user information of every URL in it (`scheme://user:password@host`)
    /// replaced by `<redacted>`: `https://<redacted>@host/`. Text without such a URL is returned as it is.
    public static func urlCredentials(in text: String) -> String {
        guard text.contains("@"), end(of: "://", in: Substring(text)) != nil else { return text }
        var out = ""
        var rest = Substring(text)
        while let afterScheme = Self.end(of: "://", in: rest) {
            out += rest[..<afterScheme]
            rest = rest[afterScheme...]
            // The authority ends at the first '/', '?', '#' or white space; credentials end at its last '@'.
            let authorityEnd = rest.firstIndex { "/?#".contains($0) || $0.isWhitespace || $0 == "\"" || $0 == "'" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                out += marker
                rest = rest[at...]
            }
        }
        return out + rest
    }

    /// The index just past the first occurrence of `needle` in `text`.
    static func end(of needle: String, in text: Substring) -> Substring.Index? {
        let pattern = Array(needle)
        var index = text.startIndex
        while index < text.endIndex {
            var probe = index
            var matched = 0
            while matched < pattern.count, probe < text.endIndex, text[probe] == pattern[matched] {
                matched += 1
                probe = text.index(after: probe)
            }
            if matched == pattern.count { return probe }
            index = text.index(after: index)
        }
        return nil
    }

    /// Whether a configuration key names a secret held in the file itself: a password, token,
    /// secret or passphrase, or a PIN (the 2030.5 registration `pin`). The `…_file` keys hold paths,
    /// not secrets (the files they name are checked for their mode instead, `KEY_PERMISSIONS`).
    /// One rule for every output that shows configuration: `bessctl config`, the support bundle,
    /// and the values a configuration error repeats.
    public static func isSecretKey(_ key: String) -> Bool {
        let name = key.lowercased()
        if name.hasSuffix("_file") { return false }
        if name == "pin" || name.hasPrefix("pin_") || name.hasSuffix("_pin") { return true }
        return ["password", "passwd", "token", "secret", "passphrase"].contains { name.contains($0) }
    }
}
