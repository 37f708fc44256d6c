/// The rule for the names an operator gives in bessd's configuration — unit ids and the uplink's
/// site id: 1–64 ASCII letters, digits, `_`, `-` or `.`. The configuration loader holds a file to it,
/// and the aggregator holds what a gateway sends to it: a name bessd would refuse in its
/// configuration never reaches a store or a page.
public enum IdentifierRule {
    /// The rule in words, for diagnostics.
    public static let text = "1–64 letters, digits, '_', '-' or '.'"

    /// Whether `name` keeps the rule.
    public static func accepts(_ name: String) -> Bool { accepts(name, maximumBytes: 64, colon: false) }

    /// The rule for an aggregator's command id, in words: the names' rule plus `:` (ids such as
    /// `site:42`), up to 128.
    public static let commandIDText = "1–128 letters, digits, '_', '-', '.' or ':'"

    /// Whether `id` keeps the command ids' rule (`commandIDText`): nothing in it can break a log
    /// line, a JSON string or a page.
    public static func acceptsCommandID(_ id: String) -> Bool { accepts(id, maximumBytes: 128, colon: true) }

    private static func accepts(_ text: String, maximumBytes: Int, colon: Bool) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumBytes else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                true
            case UInt8(ascii: ":"):
                colon
            default:
                false
            }
        }
    }
}
