import Foundation
import Glibc

/// `metrics_listen`: a plain-HTTP endpoint answering `GET /metrics` in the Prometheus text format.
/// Served from the service thread by `poll(timeout:)`, like the control socket.
final class MetricsServer {
    let listener: Int32
    let render: () -> String

    /// Listens on `address` (`HOST:PORT`).
    init(address: String, render: @escaping () -> String) throws(RunError) {
        self.render = render
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else {
            throw RunError(code: "METRICS_LISTEN_FAILED", message: "metrics_listen must be HOST:PORT (got \(address))")
        }
        listener = socket(AF_INET, 1 /* SOCK_STREAM: written out, a clean build of this file did not see the constant */, 0)
        var on: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, String(parts[0]), &addr.sin_addr) == 1 else {
            close(listener)
            throw RunError(code: "METRICS_LISTEN_FAILED", message: "metrics_listen host must be an IPv4 address (got \(parts[0]))")
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            let reason = String(cString: strerror(errno))
            close(listener)
            throw RunError(code: "METRICS_LISTEN_FAILED", message: "cannot listen on \(address): \(reason)")
        }
    }

    deinit { close(listener) }

    /// Answers the scrapes waiting now (a scrape is one short request).
    func poll() {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        while Glibc.poll(&pfd, 1, 0) > 0 {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            var tv = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 2048)
            let n = read(client, &buffer, buffer.count)
            let request = n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : ""
            let ok = request.hasPrefix("GET /metrics")
            let body = ok ? render() : "not found\n"
            let head = "HTTP/1.1 \(ok ? "200 OK" : "404 Not Found")\r\nContent-Type: text/plain; version=0.0.4\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            let bytes = Array((head + body).utf8)
            _ = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            close(client)
            pfd.revents = 0
        }
    }
}

/// Builds the Prometheus text.
struct MetricsText {
    var lines: [String] = []

    mutating func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Double)]) {
        lines.append("# HELP \(name) \(help)")
        lines.append("# TYPE \(name) \(type)")
        for sample in samples where sample.value.isFinite {
            lines.append("\(name)\(sample.labels.isEmpty ? "" : "{\(sample.labels)}") \(sample.value)")
        }
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    static func label(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
