import Foundation
import Glibc

/// The control socket bessctl talks to: a Unix stream socket, one JSON object per line each way.
/// Served from the service thread by `poll(timeout:)`; never touches the cycle directly.
public final class ControlServer {
    public let path: String
    private let listener: Int32
    private var clients: [Int32: [UInt8]] = [:]
    /// Answers one request: the request object and the caller's uid.
    let handle: ([String: Any], UInt32) -> [String: Any]

    /// Creates the socket (mode 0660, group `bess` when that group exists), replacing a stale one.
    public init(path: String, handle: @escaping ([String: Any], UInt32) -> [String: Any]) throws(RunError) {
        self.path = path
        self.handle = handle
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        unlink(path)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0, var address = unixAddress(path) else {
            throw RunError(code: "CONTROL_SOCKET_FAILED", message: "cannot create \(path)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            let reason = String(cString: strerror(errno))
            close(listener)
            throw RunError(code: "CONTROL_SOCKET_FAILED", message: "cannot listen on \(path): \(reason)")
        }
        chmod(path, 0o660)
        if let group = getgrnam("bess") { chown(path, uid_t.max, group.pointee.gr_gid) }
    }

    deinit {
        for fd in clients.keys { close(fd) }
        close(listener)
        unlink(path)
    }

    /// Accepts connections and answers complete requests, waiting at most `timeout`.
    public func poll(timeout: Duration) {
        var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
        fds += clients.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ms = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard Glibc.poll(&fds, nfds_t(fds.count), max(0, ms)) > 0 else { return }
        if fds[0].revents & Int16(POLLIN) != 0 {
            let client = accept(listener, nil, nil)
            if client >= 0 {
                _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                clients[client] = []
            }
        }
        for entry in fds.dropFirst() where entry.revents != 0 {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(entry.fd, &chunk, chunk.count)
            if count <= 0 {
                drop(entry.fd)
                continue
            }
            clients[entry.fd, default: []] += chunk.prefix(count)
            if (clients[entry.fd]?.count ?? 0) > 65536 {
                reply(entry.fd, ["ok": false, "code": "BAD_REQUEST", "message": "request too large"])
                drop(entry.fd)
                continue
            }
            while let buffer = clients[entry.fd], let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                clients[entry.fd] = Array(buffer[(newline + 1)...])
                reply(entry.fd, answer(line, peer: entry.fd))
            }
        }
    }

    private func answer(_ line: [UInt8], peer: Int32) -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)), let request = object as? [String: Any] else {
            return ["ok": false, "code": "BAD_REQUEST", "message": "expected one JSON object per line"]
        }
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        let uid: UInt32 = getsockopt(peer, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 ? credentials.uid : UInt32.max
        return handle(request, uid)
    }

    private func reply(_ fd: Int32, _ object: [String: Any]) {
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        data.append(0x0A)
        _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    private func drop(_ fd: Int32) {
        close(fd)
        clients[fd] = nil
    }
}

/// The client side, for bessctl and tests.
public enum ControlClient {
    /// Sends one request and waits for its answer.
    public static func request(_ object: [String: Any], socket path: String, timeout: Duration = .seconds(5))
        throws(RunError) -> [String: Any]
    {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard fd >= 0, var address = unixAddress(path) else {
            throw RunError(code: "CONTROL_SOCKET_FAILED", message: "bad socket path \(path)")
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            throw RunError(code: "CONTROL_SOCKET_UNREACHABLE",
                           message: "cannot connect to \(path): \(String(cString: strerror(errno))) (is bessd running? --socket PATH)")
        }
        var tv = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        guard var data = try? JSONSerialization.data(withJSONObject: object) else {
            throw RunError(code: "BAD_REQUEST", message: "request is not JSON")
        }
        data.append(0x0A)
        _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !received.contains(0x0A) {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk.prefix(count)
        }
        guard let end = received.firstIndex(of: 0x0A),
              let answer = try? JSONSerialization.jsonObject(with: Data(received[..<end])) as? [String: Any]
        else {
            throw RunError(code: "CONTROL_NO_ANSWER", message: "bessd did not answer in time")
        }
        return answer
    }
}

/// `struct ucred` (needs _GNU_SOURCE in C, so Swift does not see it): pid, uid, gid.
struct PeerCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// A `sockaddr_un` for `path`, or nil when the path does not fit (108 bytes with its terminator).
func unixAddress(_ path: String) -> sockaddr_un? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in for (i, b) in bytes.enumerated() { buffer[i] = b } }
    return address
}
