/// An IPv4 network: `10.1.2.0/24`, or one address (`/32`).
public struct IPv4Network: Sendable, Equatable, CustomStringConvertible {
    /// The address in host byte order.
    public var address: UInt32
    public var prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.parse(String(parts[0])) else { return nil }
        let prefix = parts.count == 2 ? Int(parts[1]) : 32
        guard let prefix, (0...32).contains(prefix) else { return nil }
        self.address = address & Self.mask(prefix)
        self.prefix = prefix
    }

    /// The mask of a `prefix`-bit network, host byte order.
    static func mask(_ prefix: Int) -> UInt32 { prefix == 0 ? 0 : UInt32.max << UInt32(32 - prefix) }

    /// Dotted quad to host byte order.
    public static func parse(_ text: String) -> UInt32? { ListenAddress.dottedQuad(text) }

    public func contains(_ address: UInt32) -> Bool { address & Self.mask(prefix) == self.address }

    public var description: String {
        "\(address >> 24).\(address >> 16 & 255).\(address >> 8 & 255).\(address & 255)/\(prefix)"
    }
}
