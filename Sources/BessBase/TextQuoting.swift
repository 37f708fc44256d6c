/// Text a peer sent (an id, a name, a reason, a utility server's XML), made fit for a log line, a reply
/// or a page: nothing a peer sends reaches an operator unescaped. The one escaper of the project, here
/// so the pure protocol modules (IEEE2030_5) share it with BessSystem (`PeerText.quoted` forwards to it).
public enum TextQuoting {
    /// `text` in double quotes: printable ASCII kept (`"` and `\` escaped), every other scalar
    /// written as `\u{hex}` (control characters, line breaks, escape sequences, non-ASCII), cut with
    /// `…` after `limit` scalars.
    public static func quoted(_ text: some StringProtocol, limit: Int) -> String {
        var out = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else {
                out += "…"
                break
            }
            count += 1
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return out + "\""
    }
}
