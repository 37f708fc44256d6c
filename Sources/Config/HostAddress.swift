import Foundation

/// The rule for every host the configuration names (a Modbus endpoint's `host`, the host of an
/// aggregator URL, `metrics_listen`): an IPv4 literal, an IPv6 literal (a link-local one may carry
/// `%interface`) or a DNS host name of RFC 1123 labels.
///
/// A dotted name whose labels are all digits is read as IPv4 and nothing else, so `192.168.1.300`
/// or `10.0.0` is refused at check-config rather than handed to the resolver at the first connect.
enum HostAddress {
    /// What is wrong with `text` as a host, or nil when it is one.
    static func problem(_ text: String) -> String? {
        if text.isEmpty { return "is empty" }
        if text.contains(":") { return ipv6Problem(text) }
        let name = text.hasSuffix(".") ? String(text.dropLast()) : text
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigitCharacter) }) {
            return ipv4Problem(labels)
        }
        if name.utf8.count > 253 { return "is longer than 253 characters" }
        for label in labels {
            if label.isEmpty { return "has an empty label (two dots, or a leading dot)" }
            if label.utf8.count > 63 { return "has a label longer than 63 characters" }
            if !label.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }) {
                return "may hold only letters, digits, '-' and '.'"
            }
            if label.hasPrefix("-") || label.hasSuffix("-") { return "has a label that begins or ends with '-'" }
        }
        if labels.last!.allSatisfy(\.isASCIIDigitCharacter) {
            return "ends in a number, which no host name does (an IPv4 address has four numbers)"
        }
        return nil
    }

    /// The rule as said in an error message.
    static let rule = "must be an IPv4 address, an IPv6 address or a host name"

    private static func ipv4Problem(_ labels: [Substring]) -> String? {
        guard labels.count == 4 else { return "is not an IPv4 address: \(labels.count) numbers where it has 4" }
        for label in labels {
            guard let value = Int(label), value <= 255 else { return "is not an IPv4 address: \(label) is above 255" }
            if label.count > 1, label.hasPrefix("0") { return "is not an IPv4 address: \(label) has a leading zero" }
        }
        return nil
    }

    private static func ipv6Problem(_ text: String) -> String? {
        var address = text
        if let percent = text.firstIndex(of: "%") {
            let zone = text[text.index(after: percent)...]
            guard !zone.isEmpty, zone.utf8.count <= 15, !zone.contains("/"), !zone.contains(" ") else {
                return "is not an IPv6 address: the part after '%' must be an interface name"
            }
            address = String(text[..<percent])
        }
        var storage = in6_addr()
        return inet_pton(AF_INET6, address, &storage) == 1 ? nil : "is not an IPv6 address"
    }

    /// Whether `host` names this machine's loopback and nothing else: `localhost`, an address in
    /// 127.0.0.0/8, `::1`, or 127.0.0.0/8 mapped into IPv6. Any other name may resolve elsewhere.
    static func isLoopback(_ host: String) -> Bool {
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        if name.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        return bytes[..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }

    /// Whether `url`'s host (``host(ofURL:)``) is an address or a host name.
    static func urlHasValidHost(_ url: String) -> Bool {
        host(ofURL: url).map { problem($0) == nil } ?? false
    }

    /// The host of an `http://`, `https://`, `mqtt://` or `mqtts://` URL (brackets of an IPv6 literal
    /// removed), or nil when the URL has no authority part.
    static func host(ofURL url: String) -> String? {
        guard let scheme = url.range(of: "://") else { return nil }
        var authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        return String(authority.prefix { $0 != ":" })
    }
}

private extension Character {
    var isASCIIDigitCharacter: Bool { isASCII && isWholeNumber }
}
