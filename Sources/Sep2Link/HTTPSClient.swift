public import ControlCore
public import TLSTransport

/// HTTP/1.1 over TLS (TLSTransport) to one IEEE 2030.5 server: blocking calls bounded by a timeout,
/// one connection kept alive and opened again when the server closed it.
///
/// Used from ONE thread (the 2030.5 worker's): the TLS connection lives on it.
public final class HTTPSClient {
    /// The server's host name or address.
    public let host: String
    /// The server's TCP port.
    public let port: UInt16
    /// Certificates, CA and suites every connection is made with.
    public let context: TLSClientContext
    /// The bound on connecting, the handshake, sending and the whole answer.
    public let timeout: Duration
    /// The largest body accepted; a larger one is `SEP2_HTTP_TOO_LARGE`.
    public let maximumBody: Int

    /// A client of `host`:`port`; nothing is connected until the first `send`.
    public init(host: String, port: UInt16, context: TLSClientContext, timeout: Duration, maximumBody: Int = 262_144) {
        self.host = host
        self.port = port
        self.context = context
        self.timeout = timeout
        self.maximumBody = maximumBody
    }

    /// Sends `request` and waits for the whole answer, connecting first when no connection is open.
    /// - Throws: `SEP2_HTTP_CONNECT`, `SEP2_HTTP_TLS`, `SEP2_HTTP_TIMEOUT`, `SEP2_HTTP_MALFORMED`,
    ///   `SEP2_HTTP_TOO_LARGE`, `SEP2_HTTP_CLOSED`.
    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        throw HTTPClientError(.connect, message: "not implemented yet")
    }

    /// Closes the connection, if one is open; the next `send` opens a new one.
    public func close() {}

    /// The cipher suite of the open connection in OpenSSL's naming, nil when none is open.
    public var negotiatedCipher: String? { nil }
}
