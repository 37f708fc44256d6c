/// The rule for the names an operator gives in bessd's configuration — unit ids and the uplink's
/// site id: 1–64 ASCII letters, digits, `_`, `-` or `.`. The configuration loader holds a file to it,
/// and the aggregator holds what a gateway sends to it: a name bessd would refuse in its
/// configuration never reaches a store or a page.
public enum IdentifierRule {
    /// The rule in words, for diagnostics.
    public static let text = "1–64 letters, digits, '_', '-' or '.'"

    /// Whether `name` keeps the rule.
    public static func accepts(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                true
            default:
                false
            }
        }
    }
}
