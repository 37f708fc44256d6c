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

    /// A configuration's text fit for a support ticket: the value of any key naming a password,
    /// token or secret (not the `…_file` keys, which hold paths) and the credentials of any URL
    /// become `<redacted>`.
    public static func configurationText(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { raw -> String in
            var line = urlCredentials(in: String(raw))
            let trimmed = line.drop { $0 == " " || $0 == "-" }
            if let colon = trimmed.firstIndex(of: ":") {
                let key = trimmed[..<colon].lowercased()
                let secret = ["password", "token", "secret", "passphrase"].contains { key.contains($0) } && !key.hasSuffix("_file")
                if secret, trimmed[trimmed.index(after: colon)...].contains(where: { !$0.isWhitespace }) {
                    line = String(line[..<line.index(after: colon)]) + " " + marker
                }
            }
            return line
        }.joined(separator: "\n")
    }
}
