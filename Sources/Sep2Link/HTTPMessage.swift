/// One HTTP/1.1 request to the utility's IEEE 2030.5 server.
public struct HTTPRequest: Sendable, Equatable {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    public var method: String
    /// The absolute path and query, e.g. `/derp/1/derc?s=0&l=10`.
    public var path: String
    /// The body; empty for GET.
    public var body: [UInt8]
    /// The body's media type, `application/sep+xml` for 2030.5 documents; nil without a body.
    public var contentType: String?

    /// A request for `path` with `method`, and a body of `contentType` when there is one.
    public init(method: String, path: String, body: [UInt8] = [], contentType: String? = nil) {
        self.method = method
        self.path = path
        self.body = body
        self.contentType = contentType
    }
}

/// The server's answer to one `HTTPRequest`: status, headers in the order sent, and the whole body.
public struct HTTPResponse: Sendable, Equatable {
    /// The status code, 100…599.
    public var status: Int
    /// The header fields as sent (names as the server spelled them, values trimmed).
    public var headers: [(name: String, value: String)]
    /// The body, after chunked transfer coding is removed.
    public var body: [UInt8]

    /// A response with `status`, `headers` and `body`.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (case-insensitive), nil when there is none.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// Retry-After as delta-seconds; nil when absent or an HTTP-date (or not a number that fits).
    public var retryAfterSeconds: UInt32? {
        guard let value = header("Retry-After"), !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return UInt32(value)
    }

    /// The Location header (a created resource's path), nil when absent.
    public var location: String? { header("Location") }

    /// Equal when status, body and every header (name and value, in order) are.
    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers.count == rhs.headers.count
            && zip(lhs.headers, rhs.headers).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}
