/// Where a TCP server listens: `IPV4:PORT` as the configuration writes it (`scada.listen`,
/// `iec104.listen`, `metrics_listen`). The one parser of that text: the configuration checks a key
/// with it and the listener binds what it gave.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The address as written (a dotted quad), bound as the kernel reads it (`inet_pton`).
    public let host: String
    /// The same address in host byte order.
    public let address: UInt32
    /// The port; 0 asks the kernel to choose one.
    public let port: UInt16

    /// The address `text` names, or nil when it is not `IPV4:PORT`.
    /// - Parameter allowsPortZero: `metrics_listen` takes port 0 (the kernel's choice), a protocol
    ///   port does not.
    public init?(_ text: String, allowsPortZero: Bool = false) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]), allowsPortZero || port > 0,
              let address = Self.dottedQuad(String(parts[0])) else { return nil }
        self.init(host: String(parts[0]), address: address, port: port)
    }

    /// `host` (a dotted quad) and `port`, e.g. a protocol's default port.
    public init?(host: String, port: UInt16) {
        guard let address = Self.dottedQuad(host) else { return nil }
        self.init(host: host, address: address, port: port)
    }

    private init(host: String, address: UInt32, port: UInt16) {
        self.host = host
        self.address = address
        self.port = port
    }

    public var description: String { "\(host):\(port)" }

    /// A dotted quad (`10.1.2.3`) in host byte order, or nil: four decimal octets, each 0…255.
    public static func dottedQuad(_ text: String) -> UInt32? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        var value: UInt32 = 0
        for octet in octets {
            guard !octet.isEmpty, octet.count <= 3, let byte = UInt8(octet) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }

    /// `address` (host byte order) as a dotted quad.
    public static func dotted(_ address: UInt32) -> String {
        "\(address >> 24).\(address >> 16 & 255).\(address >> 8 & 255).\(address & 255)"
    }
}
