import Foundation
import Glibc

/// HTTP/1.1 on loopback for the rig's bess-aggregator: one request, the whole answer.
enum LoopbackHTTP {
    /// A one-shot HTTP/1.1 request to 127.0.0.1:`port`; the whole answer, or nil.
    static func request(port: Int, _ method: String, _ path: String, body: String?) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        var tv = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let payload = body ?? ""
        let request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(payload.utf8.count)\r\nConnection: close\r\n\r\n\(payload)"
        _ = request.withCString { write(fd, $0, strlen($0)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk.prefix(count)
        }
        return received.isEmpty ? nil : String(decoding: received, as: UTF8.self)
    }
}
