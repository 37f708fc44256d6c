import BessBase
import ControlCore

/// Text a peer sent (an id, a name, a reason), made fit for a log line, a reply or a page: nothing a
/// peer sends reaches an operator unescaped. A forward to ControlCore's `TextQuoting`, the escaper the
/// protocol modules that do not depend on BessSystem share.
public enum PeerText {
    /// `text` in double quotes: printable ASCII kept (`"` and `\` escaped), every other scalar
    /// written as `\u{hex}` (control characters, line breaks, escape sequences, non-ASCII), cut with
    /// `…` after `limit` scalars.
    public static func quoted(_ text: String, limit: Int = 48) -> String {
        TextQuoting.quoted(text, limit: limit)
    }
}
